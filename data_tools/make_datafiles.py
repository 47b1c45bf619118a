"""`python -m data_tools.make_datafiles`: CNN / Daily Mail stories -> `.bin` files + vocab.

Reproduces the original `make_datafiles.py` (spec sections 2.1-2.6) without Java: each story
listed in `url_lists/all_{test,val,train}.txt` is found by the SHA-1 of its URL (CNN folder
first, then Daily Mail), tokenized with the built-in PTB tokenizer, turned into an
(article, abstract) pair, and written in list order to `{set}.bin` and
`chunked/{set}_NNN.bin` (1000 per file); the vocabulary is counted over the training set.

Differences from the original, all reported in the final summary: a missing training list
skips the training set (and the vocab); empty articles are dropped (the original wrote them
and the reader skipped them); stories without `@highlight` are dropped from the training set
only; bytes that are not UTF-8 are replaced (U+FFFD, which the tokenizer then deletes, as
CoreNLP did) and counted. The exact story counts of the full corpus are only checked with
`--check_counts`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

from data_tools.finished_files import CHUNK_SIZE, FinishedFilesWriter
from data_tools.progress import Issue, ordered_map, plural
from data_tools.vocab_counts import DEFAULT_VOCAB_SIZE, VocabCounter
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.data.stories import process_raw_story
from pointer_generator.data.vocab import ascii_strip
from pointer_generator.errors import DataError

SETS = ("test", "val", "train")  # the order the original produced them in
EXPECTED_STORIES = {"cnn": 92_579, "dm": 219_506}


def url_hash(url: str) -> str:
    """Hex SHA-1 of a URL line (surrounding whitespace stripped): the story's file name."""
    return hashlib.sha1(ascii_strip(url).encode("utf-8")).hexdigest()


def read_url_list(path: str) -> tuple[list[str], int]:
    """URLs of a split list, in order; also returns the number of blank lines skipped."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not valid UTF-8 at byte {e.start}") from None
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()  # the newline ending the last line does not start another one
    lines = [ascii_strip(line) for line in pieces]
    urls = [u for u in lines if u]
    return urls, len(lines) - len(urls)


def list_stories(story_dir: str) -> set[str]:
    """Names of the `.story` files in a folder."""
    if not os.path.isdir(story_dir):
        raise DataError(f"stories folder {story_dir!r} does not exist or is not a folder")
    try:
        with os.scandir(story_dir) as it:
            return {e.name for e in it if e.name.endswith(".story")}
    except OSError as e:
        raise DataError(f"cannot list {story_dir!r} ({e.strerror})") from None


@dataclass(frozen=True)
class StoryResult:
    """One processed story file."""

    path: str
    article: str
    abstract: str
    has_highlights: bool
    bad_bytes: int
    untokenizable: int
    empty_file: bool


def process_story_file(job: tuple[str, bool]) -> StoryResult:
    """Read, decode, tokenize and build one story (runs in a worker process)."""
    path, unicode_text = job
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from None
    try:
        text, bad = data.decode("utf-8"), 0
    except UnicodeDecodeError:
        # Keep the story: undecodable bytes become U+FFFD (as Java's reader did), which the
        # tokenizer deletes. Count the replacements that were not in the file already.
        text = data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - data.count("\ufffd".encode("utf-8"))
    processed = process_raw_story(text, unicode_text)
    s = processed.story
    return StoryResult(
        path,
        s.article,
        s.abstract,
        s.num_highlights > 0,
        bad,
        processed.untokenizable,
        not text.strip(),
    )


@dataclass
class Summary:
    """Counts per set and problems found, printed at the end of a run."""

    listed: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    skipped_sets: list[str] = field(default_factory=list)
    vocab_words: int | None = None
    blank_url_lines: int = 0
    untokenizable_chars: int = 0
    issues: dict[str, Issue] = field(default_factory=dict)

    def issue(self, key: str, message: str) -> Issue:
        return self.issues.setdefault(key, Issue(message))

    def lines(self) -> list[str]:
        out = ["summary:"]
        for s in SETS:
            if s in self.listed:
                out.append(
                    f"  {s}: {self.listed[s]} listed, {self.written[s]} written "
                    f"({plural(self.chunks[s], 'chunk file')})"
                )
        for s in self.skipped_sets:
            out.append(f"  {s}: skipped (url list all_{s}.txt missing or empty)")
        if self.vocab_words is not None:
            out.append(f"  vocab: {self.vocab_words} words (training set)")
        else:
            out.append("  vocab: not written (no training set)")
        if self.blank_url_lines:
            out.append(f"  blank lines in url lists: {self.blank_url_lines} (ignored)")
        if self.untokenizable_chars:
            out.append(f"  untokenizable characters deleted: {self.untokenizable_chars}")
        out += [issue.summary_line() for issue in self.issues.values() if issue.count]
        return out


def locate(hashes: list[str], dirs: list[tuple[str, set[str]]]) -> tuple[list[str], list[str]]:
    """Paths of the listed stories (first folder that has each) and the hashes not found."""
    paths, missing = [], []
    for h in hashes:
        name = h + ".story"
        for d, names in dirs:
            if name in names:
                paths.append(os.path.join(d, name))
                break
        else:
            missing.append(h)
    return paths, missing


def make_datafiles(
    cnn_stories_dir: str | None,
    dm_stories_dir: str | None,
    url_lists_dir: str,
    out_dir: str,
    num_workers: int = 1,
    check_counts: bool = False,
    chunk_size: int = CHUNK_SIZE,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    unicode_text: bool = False,
    stream: TextIO | None = None,
) -> Summary:
    """Build the finished files; raises DataError before writing anything on bad input."""
    stream = stream if stream is not None else sys.stderr
    dirs = _story_dirs(cnn_stories_dir, dm_stories_dir, check_counts)
    if not os.path.isdir(url_lists_dir):
        raise DataError(f"url lists folder {url_lists_dir!r} does not exist")
    summary = Summary()
    jobs = _stories_of_sets(url_lists_dir, dirs, summary, stream)

    counter = VocabCounter()
    with FinishedFilesWriter(out_dir) as writer:
        for s in SETS:
            if s not in jobs:
                continue
            results = ordered_map(
                process_story_file,
                ((p, unicode_text) for p in jobs[s]),
                num_workers,
                label=f"tokenizing {s}",
                total=len(jobs[s]),
                stream=stream,
            )
            out = writer.write_set(
                s, _keep_examples(results, s, summary, counter, stream), chunk_size
            )
            summary.written[s] = out.count
            summary.chunks[s] = len(out.chunk_files)
            if not out.count:
                print(f"warning: no usable {s} stories: no {s} files written", file=stream)
        if "train" in jobs:
            summary.vocab_words = writer.write_vocab(counter, vocab_size)
    for line in summary.lines():
        print(line, file=stream)
    return summary


def _story_dirs(
    cnn_stories_dir: str | None, dm_stories_dir: str | None, check_counts: bool
) -> list[tuple[str, list[str]]]:
    """(folder, its .story names) of each given folder; with `check_counts`, the full
    corpora's counts are required."""
    if not cnn_stories_dir and not dm_stories_dir:
        raise DataError("give at least one of --cnn_stories_dir and --dm_stories_dir")
    given = {"cnn": cnn_stories_dir, "dm": dm_stories_dir}
    listed = {key: list_stories(d) for key, d in given.items() if d}
    if check_counts:
        for key, expected in EXPECTED_STORIES.items():
            n = len(listed.get(key, ()))
            if n != expected:
                raise DataError(
                    f"--check_counts: {given[key] or 'no ' + key + ' folder'} "
                    f"holds {n} .story files, but the full {key.upper()} corpus "
                    f"has {expected}; leave out --check_counts to build from a "
                    "subset"
                )
    return [(given[key], names) for key, names in listed.items()]


def _stories_of_sets(
    url_lists_dir: str, dirs, summary: Summary, stream: TextIO
) -> dict[str, list[str]]:
    """{set: story paths in url-list order} of every set whose url list exists; raises
    DataError, before anything is written, when a listed story is missing."""
    jobs: dict[str, list[str]] = {}
    missing: dict[str, tuple[int, list[str], list[str]]] = {}
    for s in SETS:
        list_path = os.path.join(url_lists_dir, f"all_{s}.txt")
        if not os.path.exists(list_path):
            summary.skipped_sets.append(s)
            print(
                f"note: {list_path} not found: the {s} set is skipped"
                + (" and no vocab is written" if s == "train" else ""),
                file=stream,
            )
            continue
        urls, blank = read_url_list(list_path)
        summary.blank_url_lines += blank
        if not urls:
            summary.skipped_sets.append(s)
            print(f"note: {list_path} lists no URLs: the {s} set is skipped", file=stream)
            continue
        hashes = [url_hash(u) for u in urls]
        paths, miss = locate(hashes, dirs)
        summary.listed[s] = len(hashes)
        jobs[s] = paths
        if miss:
            by_hash = dict(zip(hashes, urls, strict=True))
            missing[s] = (len(miss), miss[:5], [by_hash[h] for h in miss[:5]])
    if not jobs:
        raise DataError(f"{url_lists_dir} holds none of all_test.txt, all_val.txt, all_train.txt")
    if missing:
        where = " or ".join(repr(d) for d, _ in dirs)
        # The first few of each set, one a line, above the one error line.
        for s, (_, hs, us) in missing.items():
            for h, u in zip(hs, us, strict=True):
                print(f"missing ({s}): {h}.story  {u}", file=stream)
        counts = ", ".join(f"{s}: {n} of {summary.listed[s]}" for s, (n, _, _) in missing.items())
        raise DataError(
            f"stories the url lists name are not in {where} ({counts}; the first are listed "
            "above); nothing was written: download them or fix the url lists"
        )
    return jobs


def _keep_examples(results, set_name: str, summary: Summary, counter: VocabCounter, stream: TextIO):
    """Yield the (article, abstract) pairs worth writing; note the problems of the others."""
    for r in results:
        summary.untokenizable_chars += r.untokenizable
        if r.bad_bytes:
            summary.issue("utf8", "files with bytes that are not UTF-8 (replaced, story kept)").add(
                r.path, stream, f" ({plural(r.bad_bytes, 'byte')})"
            )
        if r.empty_file:
            summary.issue("empty_file", "empty story files (dropped)").add(r.path, stream)
            continue
        if not r.article:
            summary.issue("empty_article", "empty articles (dropped)").add(r.path, stream)
            continue
        if not r.has_highlights:
            dropped = set_name == "train"
            summary.issue(
                f"no_highlight_{set_name}",
                f"{set_name}: stories without @highlight "
                f"({'dropped' if dropped else 'kept with an empty abstract'})",
            ).add(r.path, stream)
            if dropped:
                continue
        if set_name == "train":
            counter.add(r.article, r.abstract)
        yield r.article, r.abstract


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m data_tools.make_datafiles",
        description="Turn the DMQA CNN / Daily Mail stories into the original .bin files "
        "(train/val/test, 1000-example chunks) and vocab.",
    )
    p.add_argument("--cnn_stories_dir", help="folder of CNN .story files (cnn/stories)")
    p.add_argument("--dm_stories_dir", help="folder of Daily Mail .story files")
    p.add_argument(
        "--url_lists_dir",
        required=True,
        help="folder holding all_train.txt, all_val.txt, all_test.txt",
    )
    p.add_argument("--out_dir", required=True, help="output folder (finished_files)")
    p.add_argument(
        "--num_workers",
        type=arg_types.positive_int,
        default=os.cpu_count() or 1,
        help="tokenizer processes (default: all CPUs)",
    )
    p.add_argument(
        "--check_counts",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="require the full corpus (92,579 CNN and 219,506 DM stories)",
    )
    p.add_argument(
        "--chunk_size",
        type=arg_types.positive_int,
        default=CHUNK_SIZE,
        help="records per chunk file",
    )
    p.add_argument(
        "--vocab_size",
        type=arg_types.positive_int,
        default=DEFAULT_VOCAB_SIZE,
        help="words in the vocab file",
    )
    p.add_argument(
        "--unicode_text",
        action="store_true",
        help="Python 3 text semantics (Unicode lower-casing) instead of the "
        "original's byte semantics",
    )
    return p


@exit_codes.command(interrupted="interrupted: nothing was written")
def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    make_datafiles(
        args.cnn_stories_dir,
        args.dm_stories_dir,
        args.url_lists_dir,
        args.out_dir,
        max(1, args.num_workers),
        args.check_counts,
        args.chunk_size,
        args.vocab_size,
        args.unicode_text,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
