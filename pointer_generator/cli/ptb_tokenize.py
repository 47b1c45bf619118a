"""`python -m pointer_generator.cli.ptb_tokenize < in.txt > out.txt`: tokenize standard
input to standard output as the data tools do (`data/ptb_tokenizer.py`, Stanford
PTBTokenizer's rules in Python; one output line per input line)."""

from __future__ import annotations

import argparse
import sys

from pointer_generator import exit_codes
from pointer_generator.data.ptb_tokenizer import tokenize_text


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m pointer_generator.cli.ptb_tokenize",
        description="Tokenize standard input to standard output as the data tools do "
        "(Stanford PTBTokenizer's rules, in Python): python -m "
        "pointer_generator.cli.ptb_tokenize < in.txt > out.txt",
    ).parse_args(sys.argv[1:] if argv is None else argv)
    if sys.stdin.isatty():
        print("(reading the text to tokenize from standard input; Ctrl-D ends it)", file=sys.stderr)
    sys.stdout.write(tokenize_text(sys.stdin.read()))
    sys.stdout.write("\n")
    return exit_codes.OK


if __name__ == "__main__":
    raise SystemExit(main())
