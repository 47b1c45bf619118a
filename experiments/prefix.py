"""The PREFIX baseline of the sentence-summarization papers (ABS, RAS; spec abs-ras.md
§4.3): the first 75 characters of the input, scored as DUC-2004 was.

    python -m experiments.prefix --data_path 'finished_giga/chunked/duc2004_*' \\
        --out_dir DIR [--references_dir finished_giga/duc2004.references] \\
        [--style duc|gigaword|original] [--chars 75] [--overwrite]

Examples are read as single-pass decoding reads them (`experiments.analysis.iter_examples`),
so example k is example k of a decode folder. `DIR/decoded/NNNNNN_decoded.txt` holds the
prefix; the references are the example's abstract and, with `--references_dir` (written
by `data_tools.sumdata` for DUC's four references), the further ones, as
`DIR/reference/NNNNNN_reference_K.txt`; ROUGE-1.5.5 then scores them in the chosen
style (`pointer_generator.evaluation.rouge.STYLES`).
"""

from __future__ import annotations

import argparse
import os
import sys

from experiments.analysis import iter_examples
from experiments.lead3 import prepare_out_dir
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.data.text_files import read_lines
from pointer_generator.data.vocab import abstract2sents
from pointer_generator.decoding import folder
from pointer_generator.errors import DataError, PointerGeneratorError

PREFIX_CHARS = 75


def prefix(article: str, chars: int = PREFIX_CHARS) -> str:
    """The first `chars` characters of the (tokenized) input."""
    return article[:chars]


def _extra_references(references_dir: str | None) -> list[list[str]]:
    """[reference k][example]: the lines of ref1.txt, ref2.txt, ... (none without a dir)."""
    if not references_dir:
        return []
    names = sorted(n for n in os.listdir(references_dir) if n.startswith("ref"))
    if not names:
        raise DataError(f"{references_dir}: no ref1.txt, ref2.txt, ... files")
    return [read_lines(os.path.join(references_dir, n)) for n in names]


def write_prefix(data_path: str, out_dir: str, chars: int, references_dir: str | None) -> int:
    """Write decoded/ and reference/ files of the PREFIX baseline; returns the count."""
    extra = _extra_references(references_dir)
    ref_dir = os.path.join(out_dir, folder.REFERENCE_SUBDIR)
    dec_dir = os.path.join(out_dir, folder.DECODED_SUBDIR)
    os.makedirs(ref_dir, exist_ok=True)
    os.makedirs(dec_dir, exist_ok=True)
    count = 0
    for k, (article, abstract) in enumerate(iter_examples(data_path)):
        refs = ["\n".join(abstract2sents(abstract))]
        for column in extra:
            if k >= len(column):
                raise DataError(
                    f"{references_dir}: the references have {len(column)} lines but "
                    f"{data_path!r} has more examples"
                )
            refs.append(column[k])
        for j, ref in enumerate(refs):
            folder.atomic_write_text(os.path.join(ref_dir, "%06d_reference_%d.txt" % (k, j)), ref)
        folder.atomic_write_text(
            os.path.join(dec_dir, folder.DECODED_NAME % k), prefix(article, chars)
        )
        count += 1
    return count


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    from pointer_generator.evaluation import rouge

    parser = argparse.ArgumentParser(
        prog="python -m experiments.prefix",
        description="PREFIX baseline (the first 75 characters of the input), scored with "
        "ROUGE-1.5.5.",
    )
    parser.add_argument("--data_path", required=True, help="glob of .bin files")
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--references_dir", default=None, help="ref1.txt, ref2.txt, ...")
    parser.add_argument("--chars", type=arg_types.positive_int, default=PREFIX_CHARS)
    parser.add_argument("--style", choices=list(rouge.STYLES), default="duc")
    parser.add_argument("--no_rouge", action="store_true", help="write the files only")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace reference/ and decoded/ of an earlier run"
    )
    args = parser.parse_args(argv)
    prepare_out_dir(args.out_dir, args.overwrite)
    n = write_prefix(args.data_path, args.out_dir, args.chars, args.references_dir)
    if n == 0:
        raise PointerGeneratorError(f"{args.data_path!r} holds no examples")
    print(f"Wrote {n} PREFIX summaries to {args.out_dir}", flush=True)
    if not args.no_rouge:
        results = rouge.rouge_eval(
            os.path.join(args.out_dir, folder.REFERENCE_SUBDIR),
            os.path.join(args.out_dir, folder.DECODED_SUBDIR),
            style=args.style,
        )
        print(rouge.rouge_log(results, args.out_dir).lstrip("\n"), end="")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
