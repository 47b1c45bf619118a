"""Single-pass decoding split over processes (issue 21, item 5): two local processes
decode their shards at the same time; the last to finish merges one decode folder with
one ROUGE result, identical to a one-process decode of the same data. A shard with no
examples still finishes and may merge; every shard loads the checkpoint the first one
pinned, so all write one folder while training goes on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from pointer_generator.decoding import shards
from tests import helpers


def _folder(log_root: str, exp: str) -> str:
    (name,) = [d for d in os.listdir(os.path.join(log_root, exp)) if d.startswith("decode_")]
    return os.path.join(log_root, exp, name)


def _files(folder: str, sub: str) -> dict:
    d = os.path.join(folder, sub)
    return {n: open(os.path.join(d, n), encoding="utf-8").read() for n in sorted(os.listdir(d))}


def test_two_processes_decode_what_one_does(tmp_path):
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=7)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    other_root = str(tmp_path / "other")
    shutil.copytree(data.log_root, other_root)
    decode = helpers.run_args(data, "exp", mode="decode", single_pass=True, beam_size=2,
                              min_dec_steps=1, max_dec_steps=5, decode_batch_size=2,
                              attention_pages=3)  # fmt: skip
    assert helpers.run_main_in_process(decode) == 0
    one = _folder(data.log_root, "exp")
    sharded = [a.replace(data.log_root, other_root) for a in decode]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pointer_generator.cli.run_summarization",
                *sharded,
                "--decode_shards=2",
                f"--decode_shard={i}",
            ],
            env=helpers.subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    # Each failing shard's exit status and the end of its output (where its error is).
    failed = [
        f"shard {i} exited {p.returncode}:\n{out[-3000:]}"
        for i, (p, out) in enumerate(zip(procs, outputs, strict=True))
        if p.returncode != 0
    ]
    assert not failed, "\n".join(failed)
    assert sum("Merged 2 shards: 7 examples" in out for out in outputs) == 1, outputs
    two = _folder(other_root, "exp")
    assert not os.path.exists(os.path.join(two, shards.SHARDS_SUBDIR))
    for sub in ("decoded", "reference"):
        assert _files(two, sub) == _files(one, sub) and len(_files(one, sub)) == 7
    pages = sorted(n for n in os.listdir(os.path.join(two, "attention")) if n != "index.html")
    assert pages[:3] == ["000000.html", "000001.html", "000002.html"]
    rouge = [open(os.path.join(f, "ROUGE_results.txt")).read() for f in (one, two)]
    assert rouge[0] == rouge[1]
    with open(os.path.join(two, "p_gens.tsv")) as f:
        assert [int(line.split("\t")[0]) for line in f] == list(range(7))


def test_shard_flags_are_checked(tmp_path, capfd):
    data = helpers.tiny_setup(tmp_path, n_train=4, n_val=2)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=1)) == 0
    for flags, message in (
        ({"decode_shards": 2, "decode_shard": 2}, "--decode_shard must be in [0, --decode_shards)"),
        ({"decode_shards": 2}, "--decode_shards splits a single-pass decode"),
    ):
        args = helpers.run_args(data, "exp", mode="decode", **flags)
        assert helpers.run_main_in_process(args) == 2
        assert message in capfd.readouterr().err


def _decode_shards(data, exp, count, extra=()):
    args = helpers.run_args(data, exp, mode="decode", single_pass=True, beam_size=2,
                            min_dec_steps=1, max_dec_steps=4, decode_batch_size=2)  # fmt: skip
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pointer_generator.cli.run_summarization",
                *args,
                *extra,
                f"--decode_shards={count}",
                f"--decode_shard={i}",
            ],
            env=helpers.subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for i in range(count)
    ]
    return [(p.communicate(timeout=600)[0], p.returncode) for p in procs]


def test_more_shards_than_examples_still_merge(tmp_path):
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=2)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=2)) == 0
    results = _decode_shards(data, "exp", 3)
    outputs = [out for out, _ in results]
    assert all(code == 0 for _, code in results), outputs
    assert sum("has no examples" in out for out in outputs) == 1
    assert sum("Merged 3 shards: 2 examples" in out for out in outputs) == 1, outputs
    exp = os.path.join(data.log_root, "exp")
    folder = [d for d in os.listdir(exp) if d.startswith("decode_")]
    assert len(folder) == 1
    assert sorted(os.listdir(os.path.join(exp, folder[0], "decoded"))) == [
        f"{i:06d}_decoded.txt" for i in range(2)
    ]
    assert not os.path.exists(os.path.join(exp, "decode_shard_pins", ""))  # unpinned


def test_shards_share_the_first_shards_checkpoint(tmp_path, capfd):
    """Shards that loaded different checkpoints (training going on) wrote different
    `..._ckpt-N` folders and never merged."""
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=4)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=2)) == 0
    decode = helpers.run_args(data, "exp", mode="decode", single_pass=True, beam_size=2,
                              min_dec_steps=1, max_dec_steps=4, decode_batch_size=2)  # fmt: skip
    assert helpers.run_main_in_process([*decode, "--decode_shards=2", "--decode_shard=0"]) == 0
    first = capfd.readouterr().out
    assert "Pinned" in first and "model.ckpt-2" in first
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=4)) == 0
    assert helpers.run_main_in_process([*decode, "--decode_shards=2", "--decode_shard=1"]) == 0
    second = capfd.readouterr().out
    assert "pinned by the first shard" in second and "newer now" in second
    assert "Merged 2 shards: 4 examples" in second
    exp = os.path.join(data.log_root, "exp")
    folders = [d for d in os.listdir(exp) if d.startswith("decode_")]
    assert len(folders) == 1 and folders[0].endswith("ckpt-2")
