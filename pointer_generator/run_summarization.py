"""`python -m pointer_generator.run_summarization --mode=...`: the original release's entry
point, kept under its old name. The command line itself is `pointer_generator.cli`."""

from pointer_generator.cli.run_summarization import run

if __name__ == "__main__":
    run()
