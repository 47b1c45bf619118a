"""`python -m data_tools.convert`: other article collections -> the original `.bin` format.

Inputs (`--format`):
  csv    columns `article` and `highlights` (newline-separated), e.g. the common
         `,id,article,highlights` CNN/DM export; extra columns are ignored.
  json   a list of objects with the same fields.
  jsonl  one such object per line. With `--tokenized` the fields are `article` (one string)
         and `abstract` (a list of sentences), as in the PTB-tokenized CNN/DM JSONL files.
  text   a .txt file, a folder of .txt files, or `-` for stdin: one article per file and no
         abstract (text to summarize). A file laid out like a .story file (`@highlight`
         lines) gets its highlights as the abstract.
  parquet, arrow   Hugging Face `cnn_dailymail` 3.0.0 files (`article`, `highlights`,
         `id`), as downloaded or as `datasets` caches them; `--input` may be a glob.
  tfrecord   TensorFlow Datasets `cnn_dailymail` TFRecord files (a glob).
Any input file may be gzip-compressed (`.gz`).

Raw text goes through the same pipeline as the stories (PTB tokenization, lower-casing, the
missing-period fix; pointer_generator.data.stories); `--tokenized` text is used verbatim.
The output is `{set}.bin` and `chunked/{set}_NNN.bin` in `--out_dir`, and for training
data a `vocab`.
"""

from __future__ import annotations

import argparse
import codecs
import csv
import gzip
import io
import json
import os
import sys
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

from data_tools.finished_files import CHUNK_SIZE, FinishedFilesWriter, add_output_arguments
from data_tools.progress import Issue, ordered_map, plural
from data_tools.vocab_counts import DEFAULT_VOCAB_SIZE, VocabCounter
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.data.stories import process_raw_story, story_text
from pointer_generator.data.vocab import SENTENCE_END, SENTENCE_START, abstract2sents, ascii_strip
from pointer_generator.errors import DataError
from pointer_generator.runtime import json_files

FORMATS = ("csv", "json", "jsonl", "text", "parquet", "arrow", "tfrecord")
TEXT_SUFFIXES = (".txt", ".txt.gz", ".story")

# Undecodable bytes are replaced (U+FFFD, deleted later by the tokenizer) and counted here.
_bad_bytes = [0]


def _count_and_replace(err: UnicodeDecodeError):
    _bad_bytes[0] += err.end - err.start
    return "\ufffd", err.end


codecs.register_error("data_tools.count_replace", _count_and_replace)


@dataclass(frozen=True)
class Record:
    """One input article: where it came from, its text, and its highlights/abstract sentences.

    `highlights` is None when the input has no such field at all.
    """

    name: str
    article: str
    highlights: list[str] | None
    id: str | None = None  # the input's `id` field, where it has one


class _CheckedGzip(gzip.GzipFile):
    """A gzip file whose truncation or damage is a DataError naming it, not a bare
    EOFError from deep inside the text reader."""

    def _checked(self, read, size):
        try:
            return read(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise DataError(
                f"{self.name}: the compressed file is truncated or damaged ({e}); "
                "download or compress it again"
            ) from None

    def read(self, size=-1):
        return self._checked(super().read, size)

    def read1(self, size=-1):
        return self._checked(super().read1, size)


def _open_text(path: str) -> TextIO:
    try:
        raw = _CheckedGzip(path, "rb") if path.endswith(".gz") else open(path, "rb")
    except OSError as e:
        raise DataError(f"{path}: cannot open ({e.strerror})") from None
    return io.TextIOWrapper(
        raw, encoding="utf-8-sig", errors="data_tools.count_replace", newline=""
    )


def _sentences(value, where: str, tokenized: bool) -> list[str] | None:
    """Highlights / abstract sentences from a string (one per line) or a list of strings."""
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    if isinstance(value, str):
        if tokenized and SENTENCE_START in value:
            return abstract2sents(value)
        return [s for s in (ascii_strip(x) for x in value.split("\n")) if s]
    raise DataError(
        f"{where}: highlights/abstract must be a string or a list of strings, "
        f"got {type(value).__name__}"
    )


def _record(obj, where: str, tokenized: bool) -> Record:
    if not isinstance(obj, dict):
        raise DataError(
            f"{where}: expected an object with an 'article' field, got {type(obj).__name__}"
        )
    if "article" not in obj:
        raise DataError(f"{where}: no 'article' field (fields: {', '.join(map(str, obj))})")
    article = obj["article"]
    if isinstance(article, list) and all(isinstance(a, str) for a in article):
        article = "\n".join(article)  # a list of paragraphs
    if not isinstance(article, str):
        raise DataError(f"{where}: 'article' must be a string, got {type(article).__name__}")
    # Raw exports call the summary "highlights", tokenized ones "abstract"; accept either.
    keys = ("abstract", "highlights") if tokenized else ("highlights", "abstract")
    key = next((k for k in keys if k in obj), keys[0])
    name = f"{where} (id {obj['id']})" if "id" in obj else where
    ident = str(obj["id"]) if obj.get("id") is not None else None
    return Record(name, article, _sentences(obj.get(key), where, tokenized), ident)


def read_csv(path: str, tokenized: bool = False) -> Iterator[Record]:
    csv.field_size_limit(sys.maxsize)  # articles are far longer than csv's 128 kB default
    with _open_text(path) as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or "article" not in reader.fieldnames:
            raise DataError(
                f"{path}: the CSV header must have an 'article' column "
                f"(found: {', '.join(reader.fieldnames or []) or 'no header'})"
            )
        try:
            for i, row in enumerate(reader, start=1):
                if None in row:
                    raise DataError(f"{path}: row {i} has more fields than the header")
                yield _record(row, f"{path} row {i}", tokenized)
        except csv.Error as e:
            raise DataError(f"{path}: malformed CSV near line {reader.line_num} ({e})") from None


def read_json(path: str, tokenized: bool = False) -> Iterator[Record]:
    with _open_text(path) as f:
        try:
            data = json_files.load(f)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
        except json_files.NestingError as e:
            raise DataError(f"{path}: cannot be read as JSON ({e})") from None
    if not isinstance(data, list):
        raise DataError(
            f"{path}: expected a JSON list of article objects, got "
            f"{type(data).__name__} (one object per line? use --format jsonl)"
        )
    for i, obj in enumerate(data):
        yield _record(obj, f"{path} item {i}", tokenized)


def read_jsonl(path: str, tokenized: bool = False) -> Iterator[Record]:
    with _open_text(path) as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json_files.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}: line {lineno} is not valid JSON ({e.msg})") from None
            except json_files.NestingError as e:
                raise DataError(f"{path}: line {lineno} cannot be read as JSON ({e})") from None
            yield _record(obj, f"{path} line {lineno}", tokenized)


def _text_files(path: str) -> list[str]:
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(TEXT_SUFFIXES))
        if not files:
            raise DataError(f"{path}: no {', '.join(TEXT_SUFFIXES)} files in this folder")
        return files
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file or folder")
    return [path]


def read_text(path: str, tokenized: bool = False) -> Iterator[Record]:
    """One record per file (or stdin for '-'); the whole file is the article."""

    def article(text: str) -> str:
        if not tokenized:
            return text
        # Tokenized text: one article on one line, as in the .bin files.
        return " ".join(s for s in (ascii_strip(x) for x in text.split("\n")) if s)

    if path == "-":
        yield Record("<stdin>", article(sys.stdin.read()), None)
        return
    for p in _text_files(path):
        with _open_text(p) as f:
            yield Record(p, article(f.read()), None)


def _dataset_reader(name: str):
    """The reader of a downloaded-dataset format (data_tools/dataset_files.py)."""

    def read(path: str, tokenized: bool = False) -> Iterator[Record]:
        from data_tools import dataset_files

        yield from getattr(dataset_files, f"read_{name}")(
            path, lambda row, where: _record(row, where, tokenized)
        )

    return read


READERS = {
    "csv": read_csv,
    "json": read_json,
    "jsonl": read_jsonl,
    "text": read_text,
    "parquet": _dataset_reader("parquet"),
    "arrow": _dataset_reader("arrow"),
    "tfrecord": _dataset_reader("tfrecord"),
}


def _process_raw(job: tuple[str, bool]) -> tuple[str, str, int, int]:
    raw, unicode_text = job
    p = process_raw_story(raw, unicode_text)
    return p.story.article, p.story.abstract, p.story.num_highlights, p.untokenizable


def abstract_from_sentences(sentences: list[str]) -> str:
    """`<s> s1 </s> <s> s2 </s>`: the abstract layout of the .bin files."""
    return " ".join(f"{SENTENCE_START} {s} {SENTENCE_END}" for s in sentences)


@dataclass
class ConvertSummary:
    """What a conversion read, wrote and dropped."""

    read: int = 0
    written: int = 0
    chunk_files: int = 0
    vocab_words: int | None = None
    bad_bytes: int = 0
    untokenizable_chars: int = 0
    issues: dict[str, Issue] = field(default_factory=dict)

    def issue(self, key: str, message: str) -> Issue:
        return self.issues.setdefault(key, Issue(message))


def convert(
    input_path: str,
    fmt: str,
    out_dir: str,
    set_name: str = "train",
    chunk_size: int = CHUNK_SIZE,
    write_vocab: bool | None = None,
    tokenized: bool = False,
    num_workers: int = 1,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    unicode_text: bool = False,
    stream: TextIO | None = None,
) -> ConvertSummary:
    """Convert one input (file, folder or '-') into `{set_name}` .bin files in `out_dir`."""
    stream = stream if stream is not None else sys.stderr
    if fmt not in READERS:
        raise DataError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if write_vocab is None:
        write_vocab = set_name == "train"
    summary = ConvertSummary()
    _bad_bytes[0] = 0
    records = READERS[fmt](input_path, tokenized)
    counter = VocabCounter() if write_vocab else None
    with FinishedFilesWriter(out_dir) as writer:
        out = writer.write_set(
            set_name,
            _examples(
                records,
                fmt,
                set_name,
                tokenized,
                num_workers,
                unicode_text,
                summary,
                counter,
                stream,
            ),
            chunk_size,
        )
        summary.written, summary.chunk_files = out.count, len(out.chunk_files)
        if summary.written == 0:
            raise DataError(
                f"{input_path}: no usable articles ({summary.read} read); nothing was written"
            )
        if counter is not None:
            summary.vocab_words = writer.write_vocab(counter, vocab_size)
    summary.bad_bytes = _bad_bytes[0]
    for line in _summary_lines(summary, input_path, out_dir, set_name):
        print(line, file=stream)
    return summary


def _examples(
    records, fmt, set_name, tokenized, num_workers, unicode_text, summary, counter, stream
):
    """(article, abstract) pairs to write, with problems noted in `summary`."""
    names: deque[str] = deque()  # names of the records in flight, oldest first

    def jobs():
        for r in records:
            summary.read += 1
            names.append(r.name)
            if tokenized:
                yield r
            else:
                yield story_text(r.article, r.highlights or []), unicode_text

    if tokenized:
        results = (
            (r.article, abstract_from_sentences(r.highlights or []), len(r.highlights or []), 0)
            for r in jobs()
        )
    else:
        results = ordered_map(
            _process_raw, jobs(), num_workers, label=f"tokenizing {set_name}", stream=stream
        )
    for article, abstract, n_highlights, untokenizable in results:
        name = names.popleft()
        summary.untokenizable_chars += untokenizable
        if not ascii_strip(article):
            summary.issue("empty", "empty articles (dropped)").add(name, stream)
            continue
        if n_highlights == 0 and fmt != "text":
            dropped = set_name == "train"
            summary.issue(
                "no_highlights",
                "articles without highlights "
                + ("(dropped from training data)" if dropped else "(kept with an empty abstract)"),
            ).add(name, stream)
            if dropped:
                continue
        if counter is not None:
            counter.add(article, abstract)
        yield article, abstract


def _summary_lines(s: ConvertSummary, input_path: str, out_dir: str, set_name: str):
    yield (
        f"summary: {s.read} articles read from {input_path}, {s.written} written to "
        f"{os.path.join(out_dir, set_name)}.bin ({plural(s.chunk_files, 'chunk file')})"
    )
    if s.vocab_words is not None:
        yield f"  vocab: {s.vocab_words} words"
    if s.bad_bytes:
        yield f"  bytes that are not UTF-8 (replaced): {s.bad_bytes}"
    if s.untokenizable_chars:
        yield f"  untokenizable characters deleted: {s.untokenizable_chars}"
    for issue in s.issues.values():
        if issue.count:
            yield issue.summary_line()


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m data_tools.convert",
        description="Convert CSV / JSON / JSONL / plain-text articles into the original "
        ".bin format (and a vocab for training data).",
    )
    p.add_argument("--input", required=True, help="input file, folder (text), or - (stdin)")
    p.add_argument("--format", required=True, choices=FORMATS)
    add_output_arguments(p)
    p.add_argument(
        "--tokenized",
        action="store_true",
        help="the text is already PTB-tokenized and lower-cased: use it verbatim",
    )
    p.add_argument(
        "--num_workers", type=arg_types.positive_int, default=1, help="tokenizer processes"
    )
    p.add_argument(
        "--unicode_text", action="store_true", help="Python 3 text semantics (Unicode lower-casing)"
    )
    return p


@exit_codes.command(interrupted="interrupted: nothing was written")
def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    convert(
        args.input,
        args.format,
        args.out_dir,
        args.set_name,
        args.chunk_size,
        args.write_vocab,
        args.tokenized,
        max(1, args.num_workers),
        args.vocab_size,
        args.unicode_text,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
