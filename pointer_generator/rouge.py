"""`python -m pointer_generator.rouge`, the name earlier docs gave the ROUGE command: it
lives in `pointer_generator.evaluation.rouge` now (`python -m
pointer_generator.evaluation.rouge`), and this name keeps running it."""

import sys

from pointer_generator.evaluation.rouge import main

if __name__ == "__main__":
    sys.exit(main())
