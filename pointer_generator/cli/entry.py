"""The `pointer-generator` console script.

    pointer-generator [flags]              = python -m pointer_generator.cli.run_summarization
    pointer-generator summarize ARGS...    -> pointer_generator.cli.summarize.main(ARGS)
    pointer-generator quickstart ARGS...   -> pointer_generator.cli.quickstart.main(ARGS)
    pointer-generator tune_features ARGS... -> pointer_generator.cli.tune_features.main(ARGS)
    pointer-generator serve ARGS...        -> pointer_generator.cli.serve.main(ARGS)
    pointer-generator export ARGS...       -> pointer_generator.cli.export.main(ARGS)

Subcommand modules are imported only when used; they receive the arguments after the
subcommand's name. Exit statuses are those of `pointer_generator.exit_codes` (a
`PointerGeneratorError` is one `error: ...` line and status 2).
"""

from __future__ import annotations

import sys

from pointer_generator import exit_codes


def _summarize(args: list[str]) -> int:
    from pointer_generator.cli import summarize

    return summarize.main(args)


def _quickstart(args: list[str]) -> int:
    from pointer_generator.cli import quickstart

    return quickstart.main(args)


def _tune_features(args: list[str]) -> int:
    from pointer_generator.cli import tune_features

    return tune_features.main(args)


def _serve(args: list[str]) -> int:
    from pointer_generator.cli import serve

    return serve.main(args)


def _export(args: list[str]) -> int:
    from pointer_generator.cli import export

    return export.main(args)


# Imported only when used; each gets the arguments after the subcommand's name.
SUBCOMMANDS = {
    "serve": _serve,
    "export": _export,
    "summarize": _summarize,
    "quickstart": _quickstart,
    "tune_features": _tune_features,
}


def run_subcommand(name: str, args: list[str]) -> int:
    """Run `pointer-generator <name> args...`; returns the exit status (exit_codes)."""
    return exit_codes.run_command(SUBCOMMANDS[name], args)


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    argv = list(sys.argv if argv is None else argv)
    from pointer_generator.cli import console

    console.quiet_tensorflow()
    if len(argv) > 1 and argv[1] in SUBCOMMANDS:
        from pointer_generator.runtime.process_exit import run_and_exit

        run_and_exit(run_subcommand, argv[1], argv[2:])
    from pointer_generator.cli import run_summarization

    run_summarization.run(argv)


if __name__ == "__main__":
    run()
