"""Writing the `finished_files` layout: `{set}.bin`, `chunked/{set}_NNN.bin` and `vocab`.

Everything is first written into a staging folder inside the output folder and moved into
place only when the whole run has succeeded, so a failed or interrupted run leaves no partial
or half-replaced data behind. Committing a set also removes that set's chunk files left by an
earlier, larger run (otherwise a stale `train_287.bin` would silently join a new dataset).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

from data_tools.vocab_counts import DEFAULT_VOCAB_SIZE, VocabCounter
from pointer_generator.cli import arg_types
from pointer_generator.data.binfile import AtomicWriter, encode_record, write_chunked
from pointer_generator.errors import DataError, FlagError
from pointer_generator.exit_codes import is_write_failure, writing
from pointer_generator.runtime import owned_files, staging

log = logging.getLogger(__name__)

CHUNK_SIZE = 1000  # records per chunk file, as in the original
_SET_NAME_RE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class SetOutput:
    """What was written for one set."""

    name: str
    count: int
    chunk_files: list[str]


STAGING_KIND = "staging"


def remove_stale_staging(out_dir: str) -> None:
    """Remove the staging folders of writers on this host that no longer run (a killed
    `convert` or `make_datafiles`): they hold only unfinished copies of output files."""
    staging.remove_stale(out_dir, STAGING_KIND)


class FinishedFilesWriter:
    """Stage a dataset's files, then `commit()` them into `out_dir` (or `abort()`).

    Used as a context manager it commits on success and aborts on an exception.
    """

    def __init__(self, out_dir: str):
        self.out_dir = out_dir
        try:
            os.makedirs(out_dir, exist_ok=True)
            remove_stale_staging(out_dir)
            self._staging = staging.make(out_dir, STAGING_KIND)
        except OSError as e:
            raise DataError(f"cannot create output folder {out_dir!r} ({e.strerror})") from None
        self._sets: dict[str, SetOutput] = {}
        self._vocab_staged = False

    def write_set(
        self, name: str, examples: Iterable[tuple[str, str]], chunk_size: int = CHUNK_SIZE
    ) -> SetOutput:
        """Stage `{name}.bin` and its chunks from (article, abstract) pairs, in order."""
        if chunk_size < 1:
            raise FlagError(f"--chunk_size must be at least 1, got {chunk_size}")
        if not _SET_NAME_RE.fullmatch(name):
            raise FlagError(
                f"set name {name!r} must be letters, digits, '-' or '_' (it "
                "becomes part of the file names)"
            )
        count = 0
        with AtomicWriter(os.path.join(self._staging, f"{name}.bin")) as whole:

            def tee():
                nonlocal count
                for article, abstract in examples:
                    whole.write(encode_record(article, abstract))
                    count += 1
                    yield article, abstract

            chunks = write_chunked(os.path.join(self._staging, "chunked"), name, tee(), chunk_size)
        out = SetOutput(
            name,
            count,
            [os.path.join(self.out_dir, "chunked", os.path.basename(c)) for c in chunks],
        )
        if count:
            self._sets[name] = out
        else:
            # Nothing to write: an empty .bin would only make a reader wait for examples.
            os.remove(os.path.join(self._staging, f"{name}.bin"))
        return out

    def write_vocab(self, counter: VocabCounter, max_size: int = DEFAULT_VOCAB_SIZE) -> int:
        """Stage the `vocab` file; returns the number of words written."""
        self._vocab_staged = True
        return counter.write(os.path.join(self._staging, "vocab"), max_size)

    def commit(self) -> None:
        chunk_dir = os.path.join(self.out_dir, "chunked")
        staged_chunks = os.path.join(self._staging, "chunked")
        owned_files.make_dir(chunk_dir)  # a link there would have its files replaced
        for name in self._sets:
            stale = re.compile(re.escape(name) + r"_\d{3,}\.bin")
            for f in os.listdir(chunk_dir):
                if stale.fullmatch(f):
                    os.remove(os.path.join(chunk_dir, f))
            os.replace(
                os.path.join(self._staging, f"{name}.bin"),
                os.path.join(self.out_dir, f"{name}.bin"),
            )
        if os.path.isdir(staged_chunks):
            for f in sorted(os.listdir(staged_chunks)):
                os.replace(os.path.join(staged_chunks, f), os.path.join(chunk_dir, f))
        if self._vocab_staged:
            os.replace(os.path.join(self._staging, "vocab"), os.path.join(self.out_dir, "vocab"))
        self.abort()
        self._make_readable()

    def _make_readable(self) -> None:
        # Temporary files are created private (0600); finished data should get the usual
        # permissions of a new file under the user's umask.
        paths = [os.path.join(self.out_dir, f"{n}.bin") for n in self._sets]
        paths += [c for out in self._sets.values() for c in out.chunk_files]
        if self._vocab_staged:
            paths.append(os.path.join(self.out_dir, "vocab"))
        for path in paths:
            owned_files.follow_umask(path)

    def abort(self) -> None:
        shutil.rmtree(self._staging, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # A full disk or an unwritable folder: one error that names the dataset's folder
        # (the OSError of a write() names no file) and says that nothing was kept.
        with writing(f"the dataset in {self.out_dir}", "; nothing was written"):
            if exc_type is None:
                self.commit()
            else:
                self.abort()
                if is_write_failure(exc):
                    raise exc
        return False


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a converter's output set: folder, set name, chunks, vocabulary."""
    parser.add_argument("--out_dir", required=True, help="output folder (finished_files layout)")
    parser.add_argument(
        "--set_name",
        default="train",
        help="name of the output set: {set}.bin, chunked/{set}_NNN.bin",
    )
    parser.add_argument(
        "--chunk_size",
        type=arg_types.positive_int,
        default=CHUNK_SIZE,
        help="records per chunk file",
    )
    parser.add_argument(
        "--write_vocab",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write a vocab file (default: only when --set_name is train)",
    )
    parser.add_argument("--vocab_size", type=arg_types.positive_int, default=DEFAULT_VOCAB_SIZE)
