"""Sentence-summarization pairs -> the preprocessed-release layout -> `.bin` files.

The second half of the ABS release's pipeline (spec abs-ras.md §4.1 steps 4-5), shared
by `gigaword_raw` and `proxy_task`: given the filtered (article tokens, title tokens)
pairs of each split, it

1. counts separate article and title dictionaries over the training split (words seen at
   least `min_count` times, NAMAS `make_dict.py`) and writes them as `article.dict` /
   `title.dict` (`word count` lines);
2. applies NAMAS `pull.py` (lower-case, `<unk>`, the title punctuation drop; the test
   titles, which are ROUGE's references, keep their rare words) and writes the release's
   text files, so that the same `sumdata` reader serves real Gigaword later:
   `sumdata/train/train.{article,title}.txt`,
   `sumdata/train/valid.{article,title}.filter.txt`, `sumdata/test/{input,task1_ref0}.txt`;
3. converts those with `data_tools.sumdata` into `finished/{train,val,test}.bin` (+ chunks)
   and the project's `finished/vocab`.

The model reads one vocabulary (the project's `Vocab`): `finished/vocab` counts the
pulled text, so it holds exactly the union of the two dictionaries (a deviation listed in
docs/families.md: one embedding table for both sides).
"""

from __future__ import annotations

import argparse
import os

from data_tools import gigaword_rules, sumdata
from pointer_generator.cli import arg_types
from pointer_generator.data.binfile import AtomicWriter
from pointer_generator.errors import DataError

# split -> (folder, article file, title file) in the release's layout; and the .bin set.
LAYOUT = {
    "train": ("train", "train.article.txt", "train.title.txt", "train"),
    "valid": ("train", "valid.article.filter.txt", "valid.title.filter.txt", "val"),
    "test": ("test", "input.txt", "task1_ref0.txt", "test"),
}


def _write_lines(path: str, lines) -> None:
    with AtomicWriter(path) as f:
        f.write("".join(line + "\n" for line in lines).encode("utf-8"))


def write_dictionary(path: str, counts) -> None:
    items = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))
    _write_lines(path, (f"{w} {c}" for w, c in items))


class _Every:
    """The dictionary of `keep_words`: every word is in it."""

    def __contains__(self, word) -> bool:
        return True


EVERY_WORD = _Every()  # (also the highlight pairs' dictionary of the titles' words)


def write_dataset(splits: dict, out_dir: str, min_count: int = 5, keep_words: bool = False) -> dict:
    """Write the text files and the `.bin` files of `splits` ({"train"|"valid"|"test":
    [(article tokens, title tokens)]}); returns {split: examples}.

    keep_words: the articles and titles keep their rare words (lower-cased, never
    `<unk>`): inputs for a model that can copy, such as the pointer-generator. The
    dictionaries are the same; `finished/vocab` then counts every word, so train such a
    model with the vocab of the `<unk>` build (`--vocab_path`) to keep the rare words
    outside its vocabulary.
    """
    text_dir = os.path.join(out_dir, "sumdata")
    articles = gigaword_rules.dictionary((a for a, _ in splits["train"]), min_count)
    titles = gigaword_rules.dictionary((t for _, t in splits["train"]), min_count)
    os.makedirs(text_dir, exist_ok=True)
    write_dictionary(os.path.join(text_dir, "article.dict"), articles)
    write_dictionary(os.path.join(text_dir, "title.dict"), titles)
    finished = os.path.join(out_dir, "finished")
    counts = {}
    for split, pairs in splits.items():
        folder, article_file, title_file, set_name = LAYOUT[split]
        os.makedirs(os.path.join(text_dir, folder), exist_ok=True)
        a_path = os.path.join(text_dir, folder, article_file)
        t_path = os.path.join(text_dir, folder, title_file)
        source_words = EVERY_WORD if keep_words else articles
        _write_lines(a_path, (" ".join(gigaword_rules.pull(a, source_words)) for a, _ in pairs))
        # Test titles keep their rare words: they are the references ROUGE scores against
        # (with `<unk>` in them a model would earn matches by writing [UNK]).
        words = titles if split != "test" and not keep_words else EVERY_WORD
        _write_lines(t_path, (" ".join(gigaword_rules.pull(t, words, True)) for _, t in pairs))
        counts[split] = sumdata.convert(a_path, [t_path], finished, set_name)
    return counts


def add_min_count_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--min_count",
        type=arg_types.positive_int,
        default=5,
        help="dictionary threshold (NAMAS: 5)",
    )


def check_min_count(min_count: int) -> None:
    if min_count < 1:
        raise DataError(f"--min_count must be >= 1, got {min_count}")
