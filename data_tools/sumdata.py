"""`python -m data_tools.sumdata`: the preprocessed Gigaword / DUC release into `.bin` files.

The sentence-summarization papers (ABS, RAS; spec abs-ras.md §4.2-4.3) are trained and
tested on a widely shared preprocessed release ("sumdata"): parallel text files with one
example per line, space-separated lower-cased tokens, digits as `#`, and rare words as
`UNK` (or `<unk>`, as the official ABS scripts write them):

    train/train.article.txt + train.title.txt            training pairs
    train/valid.article.filter.txt + valid.title.filter.txt
    Giga/input.txt + task1_ref0.txt                        Gigaword test (1,951 pairs)
    DUC2003/input.txt, DUC2004/input.txt + task1_ref0..3.txt   four references each

One command per set:

    python -m data_tools.sumdata --articles train.article.txt --titles train.title.txt \\
        --out_dir finished_giga --set_name train
    python -m data_tools.sumdata --articles DUC2004/input.txt \\
        --titles DUC2004/task1_ref0.txt DUC2004/task1_ref1.txt ... --set_name duc2004

writes `{set}.bin` + `chunked/{set}_NNN.bin` (and a `vocab` for the training set, counted
over it) in the layout of `make_datafiles`. The title becomes the abstract, one sentence
(`<s> title </s>`); with several reference files the first is the abstract and the others
are kept as `{set}.references/ref1.txt`, ... (one line per example) for multi-reference
ROUGE. The release's rare-word markers become the project's `[UNK]`, so the vocabulary
never learns them as a word. Files of different lengths, or an empty line (an example
with no text), are one error naming the file and line; nothing is written then.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator

from data_tools.finished_files import CHUNK_SIZE, FinishedFilesWriter, add_output_arguments
from data_tools.vocab_counts import DEFAULT_VOCAB_SIZE, VocabCounter
from pointer_generator import exit_codes
from pointer_generator.data.text_files import read_lines
from pointer_generator.data.vocab import SENTENCE_END, SENTENCE_START, UNK_TOKEN
from pointer_generator.errors import DataError
from pointer_generator.runtime import owned_files

# How the release marks words outside its vocabulary.
RARE_WORD_MARKERS = frozenset({"UNK", "<unk>"})
REFERENCES_SUFFIX = ".references"


def _lines(path: str) -> list[str]:
    return read_lines(path)


def normalize(line: str) -> str:
    """Tokens of one line, single-spaced, with the release's rare-word markers as [UNK]."""
    return " ".join(UNK_TOKEN if w in RARE_WORD_MARKERS else w for w in line.split())


def read_parallel(articles: str, titles: list[str]) -> list[tuple[str, list[str]]]:
    """(article, [title per reference file]) for every line; DataError for files of
    different lengths or an empty line (naming the file and the line number)."""
    columns = [_lines(articles)] + [_lines(t) for t in titles]
    paths = [articles, *titles]
    lengths = {p: len(c) for p, c in zip(paths, columns, strict=True)}
    if len(set(lengths.values())) > 1:
        counts = ", ".join(f"{p}: {n}" for p, n in lengths.items())
        raise DataError(
            f"the files are not parallel ({counts} lines): each line of one must be the "
            "same example as that line of the others"
        )
    if not columns[0]:
        raise DataError(f"{articles}: no lines")
    for path, column in zip(paths, columns, strict=True):
        for number, line in enumerate(column, start=1):
            if not line.split():
                raise DataError(
                    f"{path}:{number}: empty line (an example with no text); remove the "
                    "example from every file, keeping them parallel"
                )
    return [(normalize(a), [normalize(t) for t in ts]) for a, *ts in zip(*columns, strict=True)]


def _pairs(examples, counter: VocabCounter | None) -> Iterator[tuple[str, str]]:
    for article, titles in examples:
        abstract = f"{SENTENCE_START} {titles[0]} {SENTENCE_END}"
        if counter is not None:
            counter.add(article, abstract)
        yield article, abstract


def convert(
    articles: str,
    titles: list[str],
    out_dir: str,
    set_name: str = "train",
    write_vocab: bool | None = None,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    chunk_size: int = CHUNK_SIZE,
) -> int:
    """Write `{set_name}.bin` (+ chunks, extra references, vocab); returns the examples."""
    examples = read_parallel(articles, titles)
    if write_vocab is None:
        write_vocab = set_name == "train"
    counter = VocabCounter() if write_vocab else None
    with FinishedFilesWriter(out_dir) as writer:
        out = writer.write_set(set_name, _pairs(examples, counter), chunk_size)
        if counter is not None:
            writer.write_vocab(counter, vocab_size)
    if len(titles) > 1:
        ref_dir = owned_files.make_dir(os.path.join(out_dir, set_name + REFERENCES_SUFFIX))
        for k in range(1, len(titles)):
            # Whole or not at all (a full disk leaves no partial file), never via a link.
            text = "".join(ts[k] + "\n" for _, ts in examples)
            with exit_codes.writing(f"{ref_dir}/ref{k}.txt"):
                owned_files.replace_file(os.path.join(ref_dir, f"ref{k}.txt"), text)
    return out.count


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m data_tools.sumdata",
        description="Convert the preprocessed Gigaword / DUC release (parallel article and "
        "title files, one example per line) into the project's .bin files.",
    )
    p.add_argument("--articles", required=True, help="input.txt / *.article*.txt")
    p.add_argument(
        "--titles",
        required=True,
        nargs="+",
        help="*.title*.txt, or task1_ref0.txt [task1_ref1.txt ...] (several references)",
    )
    add_output_arguments(p)
    return p


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    n = convert(
        args.articles,
        args.titles,
        args.out_dir,
        args.set_name,
        args.write_vocab,
        args.vocab_size,
        args.chunk_size,
    )
    print(f"{n} examples written to {os.path.join(args.out_dir, args.set_name)}.bin")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
