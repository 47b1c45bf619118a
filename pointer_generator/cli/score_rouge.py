"""`python -m pointer_generator.cli.score_rouge --reference_dir D/reference --decoded_dir
D/decoded [--out_dir D] [--style original|duc|gigaword] [--per_document]`: score any two
directories in the decode layout with official ROUGE-1.5.5 (`evaluation/rouge.py`:
`rouge_eval`, `rouge_log`) and print the results in the original's format.
`--per_document` also writes every summary's ROUGE-1, -2, -L to `--out_dir`'s
rouge_per_document.json, the file of decode mode's `--rouge_per_document`.

Bad input (a missing directory, unpaired files, no Perl) is one `error: ...` line and
status 2; SIGTERM or Ctrl-C while ROUGE-1.5.5.pl runs stops and reaps it (status 143 / 130).
"""

from __future__ import annotations

import argparse
import logging
import os

from pointer_generator import exit_codes
from pointer_generator.decoding.config import PER_DOCUMENT_FILE, write_per_document
from pointer_generator.evaluation.rouge import STYLES, rouge_eval, rouge_log


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pointer_generator.cli.score_rouge",
        description="Score NNNNNN_decoded.txt files against NNNNNN_reference.txt files with "
        "official ROUGE-1.5.5 (pyrouge defaults, as the original release).",
    )
    parser.add_argument("--reference_dir", required=True)
    parser.add_argument("--decoded_dir", required=True)
    parser.add_argument("--out_dir", default=None, help="also write ROUGE_results.txt here")
    parser.add_argument(
        "--style",
        choices=list(STYLES),
        default="original",
        help="original: the pointer-generator release's arguments; duc: recall of the first "
        "75 bytes against every NNNNNN_reference_K.txt (-m -b 75 -n 2 -w 1.2 -a), as ABS "
        "and RAS were scored on DUC-2004; gigaword: full-length F1 (-m -n 2 -w 1.2 -a)",
    )
    parser.add_argument(
        "--per_document",
        action="store_true",
        help=f"also write every summary's ROUGE-1, -2, -L (recall, precision, F) to "
        f"--out_dir/{PER_DOCUMENT_FILE} (needs --out_dir)",
    )
    args = parser.parse_args(argv)
    if args.per_document and not args.out_dir:
        parser.error("--per_document writes its file into --out_dir: give --out_dir")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    results = rouge_eval(
        args.reference_dir, args.decoded_dir, style=args.style, per_document=args.per_document
    )
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
    text = rouge_log(results, args.out_dir)
    if args.per_document:
        write_per_document(results, args.out_dir)
    print(text.lstrip("\n"), end="")
    return exit_codes.OK


if __name__ == "__main__":
    raise SystemExit(main())
