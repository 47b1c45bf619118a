"""`python -m data_tools.highlight_pairs`: the CNN/Daily Mail "best article sentence ->
highlight" task, the families' real-text task (spec abs-ras.md §7.2, last row).

Every highlight of a story becomes one pair, its source the article sentence that shares
the most of its words: about 33K pairs from the 9,490 shared stories, five times the
lead-sentence proxy (`data_tools.proxy_task`, one pair a story), so that models of the
papers' kind have a fair chance on a CPU.

1. a CNN dateline is stripped from the article and digits become `#` (as the proxy);
2. the article is cut into sentences at `.`, `!` and `?` tokens (a closing `''` kept);
3. for each highlight, the sentence with the most highlight words in common (lower-cased,
   the title punctuation NAMAS drops left out; ties go to the earlier sentence);
4. NAMAS's filter on (sentence, highlight without its dropped punctuation), except its
   "the article has a `.` token" rule, which a sentence ending in `!` or `?` would fail;
5. the split is by story (the SHA-1 of its id, 80 / 10 / 10 %), so no story's sentences
   are in two splits;
6. one vocabulary for every family and every split: the words seen at least `--min_count`
   times in the training pairs (articles and highlights together). The text keeps its rare
   words in all three splits; a model maps a word outside the vocabulary to [UNK] the same
   way in training, validation and test (the pointer-generator can also copy it from its
   source). `finished/ceiling.json` says how much of the test references the vocabulary
   can write at all (and with the source's words, what a copying model can).

    python -m data_tools.highlight_pairs --input ../shared/data/cnndm_sample.jsonl.gz \\
        --out_dir pairs

Writes `finished/{train,val,test}.bin` (+ `chunked/`), `finished/vocab`,
`finished/ceiling.json` and the text files under `sumdata/`. The sample is drawn from the
CNN/DM test split: these pairs are neither Gigaword nor CNN/DM results.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

from data_tools import gigaword_rules, sentence_dataset
from data_tools.convert import read_jsonl
from data_tools.proxy_task import SENTENCE_ENDS, SPLITS, split_of, strip_dateline
from data_tools.sentence_dataset import (
    add_min_count_argument,
    check_min_count,
    write_dataset,
    write_dictionary,
)
from pointer_generator import exit_codes
from pointer_generator.errors import DataError
from pointer_generator.runtime import owned_files


def sentences(tokens: list[str]) -> list[list[str]]:
    """The article's sentences: cut after each of SENTENCE_ENDS (and a closing `''`)."""
    out, start, i = [], 0, 0
    while i < len(tokens):
        if tokens[i] in SENTENCE_ENDS:
            end = i + 1
            if end < len(tokens) and tokens[end] == "''":
                end += 1
            out.append(tokens[start:end])
            start, i = end, end
            continue
        i += 1
    if start < len(tokens):
        out.append(tokens[start:])
    return out


def content(tokens: list[str]) -> set[str]:
    """The words two texts are compared by: lower-cased, NAMAS's title punctuation out."""
    return {t.lower() for t in tokens if t.lower() not in gigaword_rules.TITLE_DROP}


def best_sentence(article: list[list[str]], highlight: list[str]) -> list[str]:
    """The sentence sharing the most of `highlight`'s words (the earliest of equals)."""
    words = content(highlight)
    best, best_overlap = [], -1
    for sentence in article:
        overlap = len(words & content(sentence))
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best


def rejection(source: list[str], title: list[str]) -> str | None:
    """NAMAS's filter (`gigaword_rules.rejection`) on the title without its dropped
    punctuation, less the `.`-token rule (the source is one sentence by construction).

    The other rules, in NAMAS's order, on the source as it is: a `.` appended to pass the
    first rule would count in the article-length rule (10 < tokens < 100), keeping a
    10-token sentence and dropping a 99-token one."""
    title = [t for t in title if t.lower() not in gigaword_rules.TITLE_DROP]
    reasons = gigaword_rules.REASONS
    if gigaword_rules.has_bad_word(title):
        return reasons[1]
    if not 10 < len(source) < 100:
        return reasons[2]
    if not 3 < len(title) < 50:
        return reasons[3]
    long_words = {w.lower() for w in source if len(w) > 3}
    if not any(w.lower() in long_words for w in title):
        return reasons[4]
    return None


def build(path: str) -> tuple[dict, Counter, int]:
    """({split: [(source, title)]} of the pairs kept, {reason: pairs dropped}, stories)."""
    splits = {name: [] for name, _ in SPLITS}
    dropped = Counter()
    stories = 0
    for record in read_jsonl(path, tokenized=True):
        if record.id is None:
            raise DataError(f"{record.name}: no 'id' field (the split is made from the ids)")
        stories += 1
        if not record.highlights:
            dropped["no highlight"] += 1
            continue
        article = sentences(strip_dateline(gigaword_rules.mask_digits(record.article).split()))
        split = split_of(record.id)
        for highlight in record.highlights:
            title = gigaword_rules.mask_digits(highlight).split()
            source = best_sentence(article, title)
            reason = rejection(source, title)
            if reason:
                dropped[reason] += 1
                continue
            splits[split].append((source, title))
    return splits, dropped, stories


def vocabulary(train: list[tuple[list[str], list[str]]], min_count: int) -> Counter:
    """{word: count} of the lower-cased words seen >= min_count times in the training
    pairs, articles and titles together (the titles without their dropped punctuation,
    as the models see them)."""
    lines = [a for a, _ in train] + [gigaword_rules.pull(t, _EVERY, True) for _, t in train]
    return gigaword_rules.dictionary(lines, min_count)


_EVERY = sentence_dataset.EVERY_WORD


def ceiling(test: list[tuple[list[str], list[str]]], vocab) -> dict:
    """How much of the test references the models can write: the share of reference
    tokens in the vocabulary, and in the vocabulary or the pair's own source (a model that
    copies). Both count the tokens ROUGE sees (lower-cased, dropped punctuation out)."""
    total = in_vocab = in_vocab_or_source = 0
    for source, title in test:
        words = {w.lower() for w in source}
        for t in gigaword_rules.pull(title, _EVERY, True):
            total += 1
            in_vocab += t in vocab
            in_vocab_or_source += t in vocab or t in words
    return {
        "reference_tokens": total,
        "share_in_vocab": in_vocab / max(total, 1),
        "share_in_vocab_or_source": in_vocab_or_source / max(total, 1),
    }


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m data_tools.highlight_pairs",
        description="Build the CNN/DM best-sentence -> highlight task (one pair per "
        "highlight, split by story) as text files and .bin files.",
    )
    p.add_argument("--input", required=True, help="tokenized CNN/DM records (.jsonl[.gz])")
    p.add_argument("--out_dir", required=True, help="output folder (sumdata/ and finished/)")
    add_min_count_argument(p)
    return p


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    check_min_count(args.min_count)
    splits, dropped, stories = build(args.input)
    kept = sum(len(v) for v in splits.values())
    if not splits["train"]:
        raise DataError(f"{args.input}: no pair passed the filters; nothing written")
    counts = write_dataset(splits, args.out_dir, args.min_count, keep_words=True)
    # write_dataset's vocab counts every kept word: the models' vocabulary is the
    # training dictionary only, so rare words stay outside it in every split.
    vocab = vocabulary(splits["train"], args.min_count)
    finished = os.path.join(args.out_dir, "finished")
    write_dictionary(os.path.join(finished, "vocab"), vocab)
    limit = ceiling(splits["test"], vocab)
    summary = {
        "stories": stories,
        "pairs": counts,
        "dropped": dict(dropped),
        "min_count": args.min_count,
        "vocab_words": len(vocab),
        "test_ceiling": limit,
    }
    owned_files.replace_file(
        os.path.join(finished, "ceiling.json"), json.dumps(summary, indent=1, sort_keys=True)
    )
    print(f"kept {kept:,} pairs from {stories:,} stories")
    for reason, n in sorted(dropped.items(), key=lambda x: -x[1]):
        print(f"  dropped {n:,}: {reason}")
    for split, n in counts.items():
        print(f"  {split}: {n:,} pairs")
    print(
        f"vocabulary: {len(vocab):,} words (seen >= {args.min_count} times in training); it "
        f"can write {100 * limit['share_in_vocab']:.1f} % of the test reference tokens, "
        f"{100 * limit['share_in_vocab_or_source']:.1f} % with the source's words"
    )
    print(f"written to {finished} (text in sumdata/)")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
