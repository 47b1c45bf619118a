"""`python -m data_tools.gigaword_raw`: Gigaword articles and headlines -> the ABS
release's preprocessing -> `.bin` files (spec abs-ras.md §4.1).

Reads (English) Gigaword documents in the LDC's SGML/XML form, plain or gzipped,
Annotated Gigaword included (its annotations are ignored):

    <DOC id="AFP_ENG_19940512.0004" type="story">
    <HEADLINE> ... </HEADLINE>
    <TEXT> <P> ... </P> <P> ... </P> </TEXT>
    </DOC>

For every story document (type="story", or no type) the headline is the title and the
first paragraph's first sentence the input: both tokenized with the project's Stanford-
compatible PTB tokenizer (Annotated Gigaword's tokens are Stanford's), lower-cased, digits
as `#`, the input cut after its first `.` token (NAMAS `process_agiga.py`). The files of
`--train` and `--valid` then pass NAMAS's filter (`gigaword_rules.rejection`; the test
split is not filtered, as in NAMAS), the dictionaries count words seen `--min_count`
times in the training split, separately for inputs and titles, and
`sentence_dataset.write_dataset` writes the release's text files and the `.bin` files.
NAMAS splits by month files (its `train.splits`, ...): pass the matching globs.

    python -m data_tools.gigaword_raw --train 'gigaword/data/*/*_199[4-9]*' \\
        --valid 'gigaword/data/*/*_2003*' --test 'gigaword/data/*/*_2004*' --out_dir giga
"""

from __future__ import annotations

import argparse
import glob
import html
import re
import sys
from collections import Counter

from data_tools import gigaword_rules
from data_tools.convert import _open_text
from data_tools.sentence_dataset import add_min_count_argument, check_min_count, write_dataset
from pointer_generator import exit_codes
from pointer_generator.data.ptb_tokenizer import tokenize
from pointer_generator.errors import DataError

_DOC = re.compile(r"<DOC\b([^>]*)>(.*?)</DOC>", re.S | re.I)
_TYPE = re.compile(r'type\s*=\s*"([^"]*)"', re.I)
_HEADLINE = re.compile(r"<HEADLINE>(.*?)</HEADLINE>", re.S | re.I)
_TEXT = re.compile(r"<TEXT>(.*?)</TEXT>", re.S | re.I)
_PARAGRAPH = re.compile(r"<P>(.*?)</P>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def _plain(markup: str) -> str:
    """Text of an SGML fragment: tags dropped, entities decoded, one line."""
    return " ".join(html.unescape(_TAG.sub(" ", markup)).split())


def _tokens(text: str) -> list[str]:
    words = [w for line in tokenize(text) for w in line]
    return gigaword_rules.mask_digits(" ".join(words).lower()).split()


def documents(path: str):
    """(headline, first paragraph) of each story document of one file."""
    with _open_text(path) as f:
        content = f.read()
    found = False
    for match in _DOC.finditer(content):
        found = True
        kind = _TYPE.search(match.group(1))
        if kind and kind.group(1).lower() != "story":
            continue
        body = match.group(2)
        headline, text = _HEADLINE.search(body), _TEXT.search(body)
        if not headline or not text:
            continue
        paragraphs = _PARAGRAPH.findall(text.group(1)) or [text.group(1)]
        yield _plain(headline.group(1)), _plain(paragraphs[0])
    if not found:
        raise DataError(f"{path}: no <DOC> ... </DOC> document (is it Gigaword SGML/XML?)")


def pairs(paths: list[str], filtered: bool, dropped: Counter) -> list:
    out = []
    for path in paths:
        for headline, paragraph in documents(path):
            title = _tokens(headline)
            article = gigaword_rules.first_sentence(_tokens(paragraph))
            reason = None
            if not title or not article:
                reason = "empty headline or text"
            elif filtered:
                reason = gigaword_rules.rejection(article, title)
            if reason is None and not gigaword_rules.pull(title, {}, title=True):
                reason = "title only punctuation"
            if reason:
                dropped[reason] += 1
                continue
            out.append((article, title))
    return out


def _files(pattern: str, flag: str) -> list[str]:
    files = sorted(f for f in glob.glob(pattern) if not f.endswith("/"))
    if not files:
        raise DataError(f"--{flag} {pattern!r} matches no files")
    return files


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m data_tools.gigaword_raw",
        description="Gigaword SGML/XML documents -> the ABS preprocessing -> .bin files.",
    )
    for split in ("train", "valid", "test"):
        p.add_argument(f"--{split}", required=True, help=f"glob of the {split} split's files")
    p.add_argument("--out_dir", required=True)
    add_min_count_argument(p)
    return p


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    check_min_count(args.min_count)
    dropped = Counter()
    splits = {
        name: pairs(_files(getattr(args, name), name), name != "test", dropped)
        for name in ("train", "valid", "test")
    }
    for name, kept in splits.items():
        if not kept:
            raise DataError(f"--{name}: no document passed the preprocessing; nothing written")
    counts = write_dataset(splits, args.out_dir, args.min_count)
    for reason, n in sorted(dropped.items(), key=lambda x: -x[1]):
        print(f"dropped {n:,}: {reason}")
    print(", ".join(f"{k}: {v:,} pairs" for k, v in counts.items()) + f" -> {args.out_dir}")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
