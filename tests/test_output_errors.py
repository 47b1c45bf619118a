"""A full disk, an unwritable place or a standard output that cannot be written is one
`error:` line and status 2 in every command, never a traceback or status 3; a reader of
standard output that went away (`| head`) ends the command quietly (issue 42, item 6;
`exit_codes.run_command`).

Full disks are a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: writes then fail with
EFBIG, as on a full disk with ENOSPC) or /dev/full for standard output.
"""

from __future__ import annotations

import errno
import io
import json
import os
import resource
import signal
import subprocess
import sys

import pytest

from pointer_generator import exit_codes
from tests import helpers

TIMEOUT = 300
FREE_SPACE = "; free space (or fix the permissions) and run the same command again"
STDOUT_FULL = f"error: cannot write to standard output: No space left on device{FREE_SPACE}\n"


def _file_size_limit(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _python(args, stdout=subprocess.PIPE, limit: int | None = None, stdin_text=None):
    return subprocess.run(
        [sys.executable, *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        input=stdin_text,
        text=True,
        timeout=TIMEOUT,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
        preexec_fn=_file_size_limit(limit) if limit else None,
    )


def _to_dev_full(args, stdin_text=None):
    with open("/dev/full", "w") as full:
        return _python(args, stdout=full, stdin_text=stdin_text)


def _files_under(path) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(path) for f in files]


# ------------------------------------------------------------------- full disk, files
def _jsonl_input(tmp_path) -> list[str]:
    path = tmp_path / "in.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(300):
            article = f"Article number {i} says that the council met on Monday. " * 4
            f.write(json.dumps({"article": article, "highlights": f"Council met {i}."}) + "\n")
    return ["-m", "data_tools.convert", f"--input={path}", "--format=jsonl"]


@pytest.mark.parametrize("tool", ["toy_data", "convert"])
def test_a_full_disk_while_writing_a_dataset_is_one_error_and_leaves_nothing(tmp_path, tool):
    out = tmp_path / "out"
    args = (
        ["-m", "data_tools.toy_data", "--num_train=200"]
        if tool == "toy_data"
        else _jsonl_input(tmp_path)
    )
    proc = _python([*args, f"--out_dir={out}"], limit=20_000)
    assert proc.returncode == exit_codes.BAD_INPUT, proc.stderr
    # One error line (convert's progress counter may still print its count).
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert errors == [
        f"error: cannot write the dataset in {out}: File too large; nothing was written{FREE_SPACE}"
    ]
    assert _files_under(out) == []  # no staging folder, no temporary, no partial set
    # The same command without the limit writes the dataset.
    assert _python([*args, f"--out_dir={out}"]).returncode == 0
    assert os.path.getsize(out / "vocab") > 0


def test_a_file_that_fails_when_closed_leaves_no_temporary(tmp_path):
    # 5,000 bytes stay in the file's buffer: the write fails only when it is closed.
    code = (
        "import sys\n"
        "from pointer_generator.data.binfile import AtomicWriter\n"
        "with AtomicWriter(sys.argv[1]) as f:\n"
        "    f.write(b'x' * 5000)\n"
    )
    proc = _python(["-c", code, str(tmp_path / "out.bin")], limit=1000)
    assert proc.returncode == 1 and "File too large" in proc.stderr
    assert _files_under(tmp_path) == []


# ------------------------------------------------------------------- standard output
def _bin_file(tmp_path) -> str:
    from pointer_generator.data import binfile

    path = str(tmp_path / "test.bin")
    binfile.write_bin(path, [("an article .", "<s> a summary . </s>")] * 3)
    return path


@pytest.mark.parametrize(
    "command",
    ["binfile", "ptb_tokenizer", "argparse_help", "cli_help"],
)
def test_a_full_standard_output_is_one_error(tmp_path, command):
    args = {
        "binfile": ["-m", "pointer_generator.cli.check_bin_files", _bin_file(tmp_path)],
        "ptb_tokenizer": ["-m", "pointer_generator.cli.ptb_tokenize"],
        "argparse_help": ["-m", "data_tools.toy_data", "--help"],
        "cli_help": ["-m", "pointer_generator.cli", "--help"],  # ends through process_exit
    }[command]
    proc = _to_dev_full(args, stdin_text="Hello, world.\n")
    assert (proc.returncode, proc.stderr) == (exit_codes.BAD_INPUT, STDOUT_FULL)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    data = helpers.tiny_setup(tmp_path_factory.mktemp("output_errors"), n_train=8, n_val=2)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=2)) == 0
    return data


def test_summarize_and_inspect_checkpoint_into_a_full_standard_output(trained, tmp_path):
    article = tmp_path / "a.txt"
    article.write_text("W3 w4 w5 w6 said . w7 w8 w9 w10 .\n")
    experiment = [f"--log_root={trained.log_root}", "--exp_name=exp"]
    summarize = ["-m", "pointer_generator.cli", "summarize", *experiment, str(article)]
    train_dir = os.path.join(trained.log_root, "exp", "train")
    inspect = ["-m", "pointer_generator.cli.inspect_checkpoint", train_dir]
    for args in (summarize, inspect):
        assert _python(args).returncode == 0  # both print to a writable output
        proc = _to_dev_full(args)
        assert proc.returncode == exit_codes.BAD_INPUT, proc.stderr
        assert proc.stderr.endswith(STDOUT_FULL) and "Traceback" not in proc.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly():
    # `python -m pointer_generator.cli.ptb_tokenize < big.txt | head -c 10`
    proc = subprocess.Popen(
        [sys.executable, "-m", "pointer_generator.cli.ptb_tokenize"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
    )
    try:
        # Larger than a pipe holds: the tokenizer is still writing when the reader leaves.
        text = b"The council met on Monday, and it said so.\n" * 20_000
        proc.stdin.write(text)
        proc.stdin.close()
        assert len(proc.stdout.read(10)) == 10
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(TIMEOUT) == exit_codes.BROKEN_PIPE
        assert err == b""
    finally:
        proc.kill()
        proc.wait(30)


# ---------------------------------------------------------- the wrapper, in process
class _FullStream(io.StringIO):
    """A standard output whose writes reach a full disk (or a closed pipe) when flushed."""

    def __init__(self, error: int):
        super().__init__()
        self.error = error

    def flush(self):
        if self.getvalue():
            raise OSError(self.error, os.strerror(self.error))


@pytest.mark.parametrize(
    "error, status, message",
    [
        (errno.ENOSPC, exit_codes.BAD_INPUT, STDOUT_FULL),
        (errno.EDQUOT, exit_codes.BAD_INPUT, "error: cannot write to standard output: Disk quota"),
        (errno.EPIPE, exit_codes.BROKEN_PIPE, ""),
    ],
)
def test_output_that_fails_only_at_the_final_flush_is_reported(
    monkeypatch, capsys, error, status, message
):
    stream = _FullStream(error)
    monkeypatch.setattr(sys, "stdout", stream)
    assert exit_codes.run_command(lambda: print("a summary")) == status
    assert capsys.readouterr().err.startswith(message)
    assert sys.stdout is stream  # the command's stand-in is gone


@pytest.mark.parametrize(
    "error, message",
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/out/vocab"),
            f"error: cannot write /out/vocab: No space left on device{FREE_SPACE}\n",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "/out/report.md"),
            f"error: cannot write /out/report.md: Read-only file system{FREE_SPACE}\n",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied", "/out/a.json"),
            "error: /out/a.json: Permission denied\n",
        ),
        (
            OSError(errno.EFBIG, "File too large"),
            f"error: cannot write an output file: File too large{FREE_SPACE}\n",
        ),
    ],
)
def test_a_write_failure_of_a_file_is_one_error_line(capsys, error, message):
    def main():
        raise error

    assert exit_codes.run_command(main) == exit_codes.BAD_INPUT
    assert capsys.readouterr().err == message


def test_other_os_errors_are_still_bugs(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    def main():
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/x")

    assert exit_codes.run_command(main) == exit_codes.INTERNAL_ERROR
    assert capsys.readouterr().err.startswith("internal error: FileNotFoundError")
