"""`python -m pointer_generator.cli ...` is the `pointer-generator` command."""

from pointer_generator.cli.entry import run

if __name__ == "__main__":
    run()
