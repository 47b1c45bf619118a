"""`python -m pointer_generator.cli.check_bin_files FILE_OR_GLOB...`: check `.bin` files
(the original's format, `data/binfile.py`) record by record.

Prints one line per file (`data/binfile.py: check_file`); exit status 1 when a file is
malformed or holds examples the pipeline cannot use as meant, 2 when a file does not exist.
"""

from __future__ import annotations

import argparse
import glob
import sys

from pointer_generator import exit_codes
from pointer_generator.data.binfile import check_file
from pointer_generator.errors import DataError


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pointer_generator.cli.check_bin_files",
        description="Check .bin files (the original's format) record by record: one line "
        "per file; status 1 when a file is malformed or holds examples the pipeline cannot "
        "use as meant, 2 when a file does not exist.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE_OR_GLOB", help="e.g. 'chunked/*.bin'")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    missing = [p for p in args.files if not glob.glob(p)]
    if missing:
        print(
            f"error: {missing[0]}: no such file (give .bin files or a glob that matches some)",
            file=sys.stderr,
        )
        return exit_codes.BAD_INPUT
    bad = 0
    for pattern in args.files:
        for path in sorted(glob.glob(pattern)):
            try:
                line, problems = check_file(path)
            except DataError as e:
                print(f"error: {e}", flush=True)
                bad += 1
            else:
                print(line, flush=True)
                bad += bool(problems)
    return exit_codes.CHECK_FAILED if bad else exit_codes.OK


if __name__ == "__main__":
    raise SystemExit(main())
