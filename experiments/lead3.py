"""The lead-3 baseline (paper Table 1): the first three sentences of each article.

    python -m experiments.lead3 --data_path 'D/chunked/test_*' --out_dir DIR \
        [--max_examples N] [--lines period|sentence] [--no_rouge] [--overwrite]

Examples are read as single-pass decoding reads them (files sorted by name, records in
file order, empty articles skipped), so example k here is example k of a decode dir. For
each, `DIR/reference/%06d_reference.txt` (the abstract's sentences) and
`DIR/decoded/%06d_decoded.txt` (the lead) are written with the decoder's own
`folder.write_for_rouge`, then the set is scored with the same official ROUGE-1.5.5
call as decode, into `DIR/ROUGE_results.txt`.

Sentence splitting of the tokenized, lower-cased article: `experiments.sentences` (a
sentence ends after `.`, `!` or `?` plus any closing quotes or brackets right after it;
`...` does not end one). The analysis's "copied whole article sentences" uses the same
splitter.

Lines of the decoded file: by default (`--lines period`) the lead's words are handed to
`write_for_rouge`, which, like for model output, starts a new line after every "." token
only (a sentence ending in `?` shares its line with the next one). `--lines sentence`
writes one lead sentence per line instead. Only ROUGE-L depends on this.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from experiments import sentences
from experiments.analysis import iter_examples
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.data.vocab import abstract2sents
from pointer_generator.decoding import folder
from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import owned_files

LEAD_SENTENCES = 3


def split_article(article: str) -> list[list[str]]:
    """The article's sentences as token lists (`experiments.sentences`)."""
    return sentences.split_text(article)


def lead(article: str, n: int = LEAD_SENTENCES) -> list[str]:
    """The first `n` sentences of the article, each as a space-joined string."""
    return [" ".join(s) for s in split_article(article)[:n]]


def write_lead(
    data_path: str,
    out_dir: str,
    n: int = LEAD_SENTENCES,
    max_examples: int | None = None,
    lines: str = "period",
) -> int:
    """Write the reference/ and decoded/ files of the lead-`n` baseline; returns the count."""
    if lines not in ("period", "sentence"):
        raise ValueError(f"lines must be 'period' or 'sentence', got {lines!r}")
    count = 0
    for k, (article, abstract) in enumerate(iter_examples(data_path)):
        if max_examples is not None and k >= max_examples:
            break
        sents = lead(article, n)
        words = [w for s in sents for w in s.split(" ")]
        folder.write_for_rouge(abstract2sents(abstract), words, k, out_dir)
        if lines == "sentence":
            # Same file, one lead sentence a line instead of write_for_rouge's "."-split.
            folder.atomic_write_text(
                os.path.join(out_dir, folder.DECODED_SUBDIR, folder.DECODED_NAME % k),
                "\n".join(sents),
            )
        count += 1
    return count


def prepare_out_dir(out_dir: str, overwrite: bool) -> None:
    """Refuse to mix with summaries of an earlier run (ROUGE would score stale files)."""
    subdirs = [os.path.join(out_dir, d) for d in (folder.REFERENCE_SUBDIR, folder.DECODED_SUBDIR)]
    for d in [*subdirs, os.path.join(out_dir, "ROUGE_results.txt")]:
        owned_files.refuse_link(d)  # --overwrite would empty wherever it points
    used = [d for d in subdirs if os.path.isdir(d) and os.listdir(d)]
    if used and not overwrite:
        raise PointerGeneratorError(
            f"{used[0]} already holds files; choose an empty --out_dir or pass --overwrite"
        )
    for d in used:
        shutil.rmtree(d)
    stale = os.path.join(out_dir, "ROUGE_results.txt")
    if os.path.exists(stale):
        os.remove(stale)
    os.makedirs(out_dir, exist_ok=True)


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.lead3", description="Lead-3 baseline, scored with ROUGE-1.5.5."
    )
    parser.add_argument("--data_path", required=True, help="glob of .bin files")
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--num_sentences", type=arg_types.positive_int, default=LEAD_SENTENCES)
    parser.add_argument(
        "--max_examples",
        type=arg_types.positive_int,
        default=None,
        help="only the first N examples",
    )
    parser.add_argument(
        "--lines",
        choices=("period", "sentence"),
        default="period",
        help="decoded-file lines: split after '.' like decode (default) "
        "or one lead sentence a line",
    )
    parser.add_argument("--no_rouge", action="store_true", help="write the files only")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace reference/ and decoded/ of an earlier run"
    )
    args = parser.parse_args(argv)
    prepare_out_dir(args.out_dir, args.overwrite)
    n = write_lead(args.data_path, args.out_dir, args.num_sentences, args.max_examples, args.lines)
    print(f"Wrote {n} lead-{args.num_sentences} summaries to {args.out_dir}", flush=True)
    if n == 0:
        raise PointerGeneratorError(f"{args.data_path!r} holds no examples")
    if not args.no_rouge:
        from pointer_generator.evaluation import rouge

        results = rouge.rouge_eval(
            os.path.join(args.out_dir, folder.REFERENCE_SUBDIR),
            os.path.join(args.out_dir, folder.DECODED_SUBDIR),
        )
        print(rouge.rouge_log(results, args.out_dir).lstrip("\n"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
