"""The `pointer-generator` console script.

    pointer-generator [flags]              = python -m pointer_generator.cli.run_summarization
    pointer-generator summarize ARGS...    -> pointer_generator.decoding.summarize.main(ARGS)
    pointer-generator quickstart ARGS...   -> pointer_generator.cli.quickstart.main(ARGS)

Subcommand modules are imported only when used; they receive the arguments after the
subcommand's name. A `PointerGeneratorError` from any of them is printed as one
`error: ...` line with exit status 2.
"""

from __future__ import annotations

import importlib
import sys

from pointer_generator.errors import PointerGeneratorError

SUBCOMMANDS = {
    "summarize": "pointer_generator.decoding.summarize",
    "quickstart": "pointer_generator.cli.quickstart",
}
ERROR_EXIT_CODE = 2


def _error(message) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return ERROR_EXIT_CODE


def run_subcommand(name: str, args: list[str]) -> int:
    """Run `pointer-generator <name> args...`; returns the exit status."""
    module_name = SUBCOMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            return _error(
                f"the '{name}' command is not available in this installation "
                f"({module_name} is missing)"
            )
        raise
    try:
        status = module.main(args)
    except PointerGeneratorError as e:
        return _error(e)
    return int(status or 0)


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    argv = list(sys.argv if argv is None else argv)
    if len(argv) > 1 and argv[1] in SUBCOMMANDS:
        from pointer_generator.runtime.process_exit import run_and_exit

        run_and_exit(run_subcommand, argv[1], argv[2:])
    from pointer_generator.cli import run_summarization

    run_summarization.run(argv)


if __name__ == "__main__":
    run()
