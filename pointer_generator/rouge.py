"""`python -m pointer_generator.rouge`, the name earlier docs gave the ROUGE command: it
is `pointer_generator.cli.score_rouge` now (`python -m pointer_generator.cli.score_rouge`),
and this name keeps running it."""

import sys

from pointer_generator.cli.score_rouge import main

if __name__ == "__main__":
    sys.exit(main())
