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

All shards decode with one checkpoint: the first shard to start pins the newest intact
one in `<experiment>/decode_shard_pins/<digest>.json` (the digest of the data, the
vocabulary, the settings and the shard count), and the others load that one even when
training has saved newer ones meanwhile; the merge removes the pin. A shard that gets no
example (more shards than examples) marks itself finished at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time

from pointer_generator.decoding import folder
from pointer_generator.runtime import owned_files

SHARDS_SUBDIR = "shards"
DONE_FILE = ".shard_done"
_NUMBERED = re.compile(r"^(\d{6})(.*)$")


PINS_SUBDIR = "decode_shard_pins"


def pin_file(exp_root: str, record: dict, count: int) -> str:
    """Where the shards of one decode (its inputs `record`, without the checkpoint, and
    the shard count) keep the checkpoint they share."""
    key = json.dumps({"inputs": record, "shards": count}, sort_keys=True)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]
    return os.path.join(exp_root, PINS_SUBDIR, f"{digest}.json")


def pinned_checkpoint(path: str, newest: str) -> tuple[str, bool]:
    """(checkpoint, pinned_here): the checkpoint pinned in `path`, or `newest` pinned
    now if no shard has pinned one yet (an exclusive create: of shards starting at the
    same moment exactly one pins, the others read its choice)."""
    owned_files.make_dir(os.path.dirname(path))
    text = json.dumps({"checkpoint": newest}) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        for _ in range(50):  # the pinning shard may still be writing it
            try:
                with open(path, encoding="utf-8") as f:
                    pinned = json.load(f)["checkpoint"]
                if isinstance(pinned, str):
                    return pinned, False
            except (ValueError, KeyError, TypeError, RecursionError):
                pass
            time.sleep(0.1)
        folder.atomic_write_text(path, text)  # unreadable: ours from now on
        return newest, True
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return newest, True


def unpin(path: str) -> None:
    """Remove a pin file (after the merge), and its folder once empty."""
    try:
        os.remove(path)
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


def shard_dir(decode_dir: str, index: int, count: int) -> str:
    return os.path.join(decode_dir, SHARDS_SUBDIR, f"{index}-of-{count}")


def mark_done(directory: str, examples: int) -> None:
    folder.atomic_write_text(os.path.join(directory, DONE_FILE), f"{examples}\n")


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
    shards = os.path.join(decode_dir, SHARDS_SUBDIR)
    owned_files.refuse_link(shards)  # moved from and removed whole: never a link's target
    p_gens = []
    total = 0
    for index in range(count):
        src = shard_dir(decode_dir, index, count)
        total += folder.count_complete(src)
        for root, _, files in os.walk(src):
            rel = os.path.relpath(root, src)
            for name in files:
                path = os.path.join(root, name)
                if name == folder.P_GENS_FILE:
                    with open(path, encoding="utf-8") as f:
                        for line in f:
                            local, rest = line.split("\t", 1)
                            p_gens.append((int(local) * count + index, rest))
                    continue
                if name.startswith(".") or not _NUMBERED.match(name):
                    # markers, locks, the shard's attention index (rewritten after)
                    continue
                target_dir = os.path.join(decode_dir, rel)
                owned_files.make_dir(target_dir, root=decode_dir)
                os.replace(path, os.path.join(target_dir, _global_name(name, index, count)))
    if p_gens:
        lines = "".join(f"{k}\t{rest}" for k, rest in sorted(dict(p_gens).items()))
        folder.atomic_write_text(os.path.join(decode_dir, folder.P_GENS_FILE), lines)
    shutil.rmtree(shards)
    return total
