"""Single-pass decoding split over processes or machines (`--decode_shards=N
--decode_shard=I`), merged into one decode folder and one ROUGE result.

Shard I decodes examples I, I + N, I + 2N, ... of the data (its sorted single pass) into
`<decode dir>/shards/I-of-N/`, a decode folder of its own (resumable like any, numbered
0, 1, 2, ... locally), and marks it finished. The shard that finds every other one
finished merges them: each file of local example j of shard I becomes global example
j*N + I in the decode folder (reference/, decoded/, attention pages, readable/, the p_gen
lines), the shard folders go, and ROUGE scores the whole. The result is the folder a
one-process decode of the same data writes (tested). Shards may run anywhere that sees
the same experiment folder (a shared file system across machines).
"""

from __future__ import annotations

import os
import re
import shutil

from pointer_generator.decoding import decode_output

SHARDS_SUBDIR = "shards"
DONE_FILE = ".shard_done"
_NUMBERED = re.compile(r"^(\d{6})(.*)$")


def shard_dir(decode_dir: str, index: int, count: int) -> str:
    return os.path.join(decode_dir, SHARDS_SUBDIR, f"{index}-of-{count}")


def mark_done(directory: str, examples: int) -> None:
    decode_output.atomic_write_text(os.path.join(directory, DONE_FILE), f"{examples}\n")


def finished(decode_dir: str, count: int) -> bool:
    return all(
        os.path.exists(os.path.join(shard_dir(decode_dir, i, count), DONE_FILE))
        for i in range(count)
    )


def _global_name(name: str, index: int, count: int) -> str:
    """`000003_decoded.txt` of shard `index` -> the name of its global example."""
    match = _NUMBERED.match(name)
    if not match:
        return name
    return "%06d%s" % (int(match.group(1)) * count + index, match.group(2))


def merge(decode_dir: str, count: int) -> int:
    """Move every shard's files into `decode_dir` under their global numbers; returns
    the number of examples. The shard folders are removed afterwards."""
    p_gens = []
    total = 0
    for index in range(count):
        src = shard_dir(decode_dir, index, count)
        total += decode_output.count_complete(src)
        for root, _, files in os.walk(src):
            rel = os.path.relpath(root, src)
            for name in files:
                path = os.path.join(root, name)
                if name == decode_output.P_GENS_FILE:
                    with open(path, encoding="utf-8") as f:
                        for line in f:
                            local, rest = line.split("\t", 1)
                            p_gens.append((int(local) * count + index, rest))
                    continue
                if name.startswith(".") or not _NUMBERED.match(name):
                    # markers, locks, the shard's attention index (rewritten after)
                    continue
                target_dir = os.path.join(decode_dir, rel)
                os.makedirs(target_dir, exist_ok=True)
                os.replace(path, os.path.join(target_dir, _global_name(name, index, count)))
    if p_gens:
        lines = "".join(f"{k}\t{rest}" for k, rest in sorted(dict(p_gens).items()))
        decode_output.atomic_write_text(os.path.join(decode_dir, decode_output.P_GENS_FILE), lines)
    shutil.rmtree(os.path.join(decode_dir, SHARDS_SUBDIR))
    return total
