"""Split the shared CNN/DM sample into fixed train / val / test sets of `.bin` files.

    python -m experiments.cpu_scale.split_sample --out_dir D [--seed 0] \
        [--input ../shared/data/cnndm_sample.jsonl.gz] [--val_size 500] [--test_size 500]

The rule (deterministic, independent of Python's random module and of the file order):
every example with a non-empty article is ranked by the SHA-256 hex digest of
`"<seed>:<id>"`; the first `test_size` in that ranking form the test set, the next
`val_size` the validation set, the rest the training set. Within each set the examples
keep their order in the input file (CNN ids first, then Daily Mail, like the original's
url lists). With the defaults on the 9,490-pair sample: 8,490 / 500 / 500.

Output in `D` (the `finished_files` layout the trainer and `run_recipe` read):
`{train,val,test}.bin`, `chunked/{set}_NNN.bin` (1,000 records a chunk), `vocab` (word
counts over the training set only, as the original built it; data_tools.vocab_counts) and
`split.json` (source, seed, rule, sizes and the ids of every set).

The sample is drawn from the CNN/DM *test* split: numbers measured on these sets are not
CNN/DM test results.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys

from data_tools.convert import abstract_from_sentences
from data_tools.finished_files import FinishedFilesWriter
from data_tools.vocab_counts import VocabCounter
from experiments.benchmarks.common import shared_data_dir
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.errors import DataError
from pointer_generator.runtime import json_files, owned_files

SAMPLE_NAME = "cnndm_sample.jsonl.gz"
SETS = ("train", "val", "test")


def default_input() -> str | None:
    d = shared_data_dir()
    return os.path.join(d, SAMPLE_NAME) if d else None


def read_sample(path: str) -> list[tuple[str, str, str]]:
    """(id, article, abstract in `<s> .. </s>` form) of every line of the JSONL(.gz) file."""
    opener = gzip.open if path.endswith(".gz") else open
    out = []
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json_files.loads(line)
                    ex_id, article, abstract = obj["id"], obj["article"], obj["abstract"]
                except (ValueError, KeyError, TypeError) as e:
                    raise DataError(
                        f"{path}:{lineno}: expected a JSON object with id, "
                        f"article, abstract ({type(e).__name__}: {e})"
                    ) from None
                if not (
                    isinstance(article, str)
                    and isinstance(abstract, list)
                    and all(isinstance(s, str) for s in abstract)
                ):
                    raise DataError(
                        f"{path}:{lineno}: article must be a string and abstract "
                        "a list of sentence strings"
                    )
                out.append((str(ex_id), article, abstract_from_sentences(abstract)))
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None
    return out


def rank_key(seed: int, ex_id: str) -> str:
    return hashlib.sha256(f"{seed}:{ex_id}".encode()).hexdigest()


def assign_sets(ids: list[str], seed: int, val_size: int, test_size: int) -> dict[str, str]:
    """{id: set name} by the rule of the module doc."""
    if len(set(ids)) != len(ids):
        raise DataError("the input has duplicate ids; the split is defined on unique ids")
    if val_size < 0 or test_size < 0 or val_size + test_size >= len(ids):
        raise DataError(
            f"cannot take {test_size} test + {val_size} val examples from "
            f"{len(ids)} and keep any for training"
        )
    ranked = sorted(ids, key=lambda i: rank_key(seed, i))
    sets = {i: "test" for i in ranked[:test_size]}
    sets.update({i: "val" for i in ranked[test_size : test_size + val_size]})
    sets.update({i: "train" for i in ranked[test_size + val_size :]})
    return sets


def split_sample(
    input_path: str, out_dir: str, seed: int = 0, val_size: int = 500, test_size: int = 500
) -> dict:
    """Write the three sets, the vocab and split.json; returns the split.json content."""
    examples = [e for e in read_sample(input_path) if e[1].strip()]
    sets = assign_sets([e[0] for e in examples], seed, val_size, test_size)
    counter = VocabCounter()
    manifest = {
        "source": os.path.abspath(input_path),
        "seed": seed,
        "rule": "rank by sha256('<seed>:<id>'): first test_size -> test, next val_size -> "
        "val, rest -> train; input order kept within each set",
        "sizes": {},
        "ids": {},
    }
    with FinishedFilesWriter(out_dir) as writer:
        for name in SETS:
            members = [e for e in examples if sets[e[0]] == name]
            if name == "train":
                for _, article, abstract in members:
                    counter.add(article, abstract)
            writer.write_set(name, ((a, b) for _, a, b in members))
            manifest["sizes"][name] = len(members)
            manifest["ids"][name] = [e[0] for e in members]
        manifest["vocab_words"] = writer.write_vocab(counter)
    owned_files.replace_file(os.path.join(out_dir, "split.json"), json.dumps(manifest, indent=1))
    return manifest


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.cpu_scale.split_sample",
        description="Fixed train/val/test split of the shared CNN/DM sample as .bin files + vocab.",
    )
    parser.add_argument("--out_dir", required=True)
    parser.add_argument(
        "--input",
        default=None,
        help=f"JSONL(.gz) with id/article/abstract (default: ../shared/data/{SAMPLE_NAME})",
    )
    parser.add_argument("--seed", type=arg_types.non_negative_int, default=0)
    parser.add_argument("--val_size", type=arg_types.positive_int, default=500)
    parser.add_argument("--test_size", type=arg_types.positive_int, default=500)
    args = parser.parse_args(argv)
    input_path = args.input or default_input()
    if not input_path or not os.path.isfile(input_path):
        raise DataError(
            f"input {input_path or '../shared/data/' + SAMPLE_NAME} not found; pass --input"
        )
    m = split_sample(input_path, args.out_dir, args.seed, args.val_size, args.test_size)
    print(
        f"train {m['sizes']['train']}, val {m['sizes']['val']}, test {m['sizes']['test']} "
        f"examples and a vocab of {m['vocab_words']} words written to {args.out_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
