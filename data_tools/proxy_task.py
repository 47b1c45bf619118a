"""`python -m data_tools.proxy_task`: the CNN/Daily Mail "lead sentence -> first
highlight" task, a Gigaword-style stand-in that runs here (spec abs-ras.md §7).

Gigaword and DUC are licensed; to see the ABS and RAS families learn on real text, this
builds Rush-style pairs from tokenized CNN/DM records (`id`, `article`, `abstract` or
`highlights`; the shared `cnndm_sample.jsonl.gz`):

1. a CNN dateline (`... -lrb- cnn -rrb-` and a following `--`, within the first 25
   tokens) is stripped from the article;
2. source = the article's first sentence (up to the first `.`, `!` or `?` token);
   title = the first highlight; digits become `#` in both;
3. NAMAS's filter (`gigaword_rules.rejection`, bad words per token unless
   `--substring_bad_words`);
4. a fixed split by the SHA-1 of the record's id: 80 % train, 10 % valid, 10 % test;
5. `sentence_dataset.write_dataset`: count-`--min_count` dictionaries over train, the
   release's text files, `.bin` files and the vocabulary. Rare words become `<unk>` as
   in the Gigaword release; `--keep_rare_words` keeps them (the pointer-generator's
   variant: with `<unk>` inputs it can only copy `<unk>`).

    python -m data_tools.proxy_task --input ../shared/data/cnndm_sample.jsonl.gz \\
        --out_dir proxy

From the 9,490 shared records it keeps 6,836 pairs (spec §7.2). These are drawn from the
CNN/DM test split and are neither Gigaword nor CNN/DM results: see §7.3's limitations.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections import Counter

from data_tools import gigaword_rules
from data_tools.convert import read_jsonl
from data_tools.sentence_dataset import add_min_count_argument, check_min_count, write_dataset
from pointer_generator import exit_codes
from pointer_generator.errors import DataError

DATELINE = ("-lrb-", "cnn", "-rrb-")
DATELINE_WITHIN = 25
SENTENCE_ENDS = (".", "!", "?")
SPLITS = (("train", 8), ("valid", 1), ("test", 1))  # tenths of the records, by id


def strip_dateline(tokens: list[str]) -> list[str]:
    """The article after a `... -lrb- cnn -rrb- [--]` dateline in its first 25 tokens."""
    n = len(DATELINE)
    for i in range(min(DATELINE_WITHIN, len(tokens)) - n + 1):
        if tuple(tokens[i : i + n]) == DATELINE:
            j = i + n
            if j < len(tokens) and tokens[j] == "--":
                j += 1
            return tokens[j:]
    return tokens


def make_pair(article: str, first_highlight: str) -> tuple[list[str], list[str]]:
    """(source tokens, title tokens) of one record, before filtering."""
    tokens = strip_dateline(gigaword_rules.mask_digits(article).split())
    source = gigaword_rules.first_sentence(tokens, SENTENCE_ENDS)
    return source, gigaword_rules.mask_digits(first_highlight).split()


def split_of(ident: str) -> str:
    """The fixed split of a record: by the SHA-1 of its id, in tenths."""
    tenth = int(hashlib.sha1(ident.encode("utf-8")).hexdigest(), 16) % 10
    for name, share in SPLITS:
        if tenth < share:
            return name
        tenth -= share
    raise AssertionError("the shares add up to 10")


def build(path: str, substring: bool = False) -> tuple[dict, Counter]:
    """{split: [(source, title)]} of the records kept, and {reason: pairs dropped}."""
    splits = {name: [] for name, _ in SPLITS}
    dropped = Counter()
    for record in read_jsonl(path, tokenized=True):
        if record.id is None:
            raise DataError(f"{record.name}: no 'id' field (the split is made from the ids)")
        if not record.highlights:
            dropped["no highlight"] += 1
            continue
        source, title = make_pair(record.article, record.highlights[0])
        reason = gigaword_rules.rejection(source, title, substring)
        if reason is None and not gigaword_rules.pull(title, {}, title=True):
            reason = "title only punctuation"
        if reason:
            dropped[reason] += 1
            continue
        splits[split_of(record.id)].append((source, title))
    return splits, dropped


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m data_tools.proxy_task",
        description="Build the CNN/DM lead-sentence -> first-highlight proxy task (Gigaword "
        "preprocessing and filters) as text files and .bin files.",
    )
    p.add_argument("--input", required=True, help="tokenized CNN/DM records (.jsonl[.gz])")
    p.add_argument("--out_dir", required=True, help="output folder (sumdata/ and finished/)")
    add_min_count_argument(p)
    p.add_argument(
        "--substring_bad_words",
        action="store_true",
        help="match the bad words as substrings of the title, as NAMAS's code does",
    )
    p.add_argument(
        "--keep_rare_words",
        action="store_true",
        help="inputs and titles keep their rare words instead of <unk> (for a model that "
        "copies, the pointer-generator: train it with the vocab of the <unk> build)",
    )
    return p


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    check_min_count(args.min_count)
    splits, dropped = build(args.input, args.substring_bad_words)
    kept = sum(len(v) for v in splits.values())
    if not splits["train"]:
        raise DataError(f"{args.input}: no pair passed the filters; nothing written")
    counts = write_dataset(splits, args.out_dir, args.min_count, args.keep_rare_words)
    print(f"kept {kept:,} pairs of {kept + sum(dropped.values()):,}")
    for reason, n in sorted(dropped.items(), key=lambda x: -x[1]):
        print(f"  dropped {n:,}: {reason}")
    for split, n in counts.items():
        print(f"  {split}: {n:,} pairs")
    print(f"written to {os.path.join(args.out_dir, 'finished')} (text in sumdata/)")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
