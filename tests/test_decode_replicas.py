"""Decoding over the devices of one machine (issue 21, item 5): `--distribution_strategy=
mirrored` splits each batch over the replicas, each running the batched search on its
share; the summaries, the decode folder and ROUGE equal a one-device decode.

Logical CPU devices must be made before TensorFlow starts, so the two-device runs are
fresh processes."""

from __future__ import annotations

import json
import os
import shutil
import textwrap

import numpy as np
import pytest

from pointer_generator.search.replicated import share_bounds
from tests import helpers

# One-device and two-replica decoding of the same pipeline batches (3, 3 and 1 articles:
# the last leaves a replica idle), every Summary compared.
SCRIPT = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import numpy as np
    from tests import helpers
    from pointer_generator.data.input_pipeline import make_dataset
    from pointer_generator.data.vocab import Vocab
    from pointer_generator.search.beam_decoder import BeamSearchDecoder
    from pointer_generator.search.replicated import ReplicatedDecoder
    from pointer_generator.models.family_registry import build_model
    from pointer_generator.runtime.devices import local_mirrored_strategy

    vocab_path, data_path = sys.argv[1:3]
    hps = helpers.hparams(max_dec_steps=7, coverage=True, batch_size=3)
    search = helpers.search(hps, beam_size=3, min_dec_steps=2)
    vocab = Vocab(vocab_path, hps.vocab_size)
    strategy = local_mirrored_strategy()
    with strategy.scope():
        mirrored = build_model(hps, vocab.size())
    single = build_model(hps, vocab.size())
    rng = np.random.default_rng(0)
    for m, s in zip(mirrored.variables, single.variables, strict=True):
        value = rng.normal(0, 0.5, m.shape).astype(np.float32)
        m.assign(value)
        s.assign(value)
    one = BeamSearchDecoder(single, vocab, hps, search)
    two = ReplicatedDecoder(BeamSearchDecoder(mirrored, vocab, hps, search), strategy)
    rows = []
    for batch in make_dataset(data_path, vocab, hps, "decode", True):
        for a, b in zip(one.decode_batch(batch), two.decode_batch(batch), strict=True):
            rows.append({"words": [a.words, b.words], "score": [a.score, b.score],
                         "attn": float(np.abs(a.attn - b.attn).max()) if a.attn.size else 0,
                         "p_gens": float(np.abs(a.p_gens - b.p_gens).max()) if a.p_gens.size else 0,
                         "batch": int(batch["enc_lens"].shape[0])})
    print("RESULT " + json.dumps({"replicas": strategy.num_replicas_in_sync, "rows": rows}))
""")


def test_share_bounds_cover_every_row_once():
    for rows in range(1, 12):
        for replicas in (1, 2, 3, 4):
            bounds = share_bounds(rows, replicas)
            assert len(bounds) == replicas
            covered = [i for lo, hi in bounds for i in range(lo, hi)]
            assert covered == list(range(rows))
            sizes = [hi - lo for lo, hi in bounds]
            assert max(sizes) - min(sizes) <= 1


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return helpers.tiny_setup(tmp_path_factory.mktemp("replicas"), n_train=8, n_val=7)


def test_two_replicas_give_the_one_device_summaries(tiny):
    proc = helpers.run_python(["-c", SCRIPT, tiny.vocab_path, tiny.val_path], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(
        [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1][len("RESULT ") :]
    )
    assert result["replicas"] == 2
    rows = result["rows"]
    assert len(rows) == 7 and [r["batch"] for r in rows][-1] == 1  # an idle replica
    for r in rows:
        assert r["words"][0] == r["words"][1]
        assert r["score"][0] == pytest.approx(r["score"][1], abs=1e-6)
        assert r["attn"] < 1e-6 and r["p_gens"] < 1e-6
    assert len({" ".join(r["words"][0]) for r in rows}) > 1  # not one summary for all


def _folder_files(decode_dir: str) -> dict[str, str]:
    out = {}
    for sub in ("decoded", "reference"):
        for name in sorted(os.listdir(os.path.join(decode_dir, sub))):
            with open(os.path.join(decode_dir, sub, name), encoding="utf-8") as f:
                out[f"{sub}/{name}"] = f.read()
    for name in ("ROUGE_results.txt", "p_gens.tsv"):
        with open(os.path.join(decode_dir, name), encoding="utf-8") as f:
            out[name] = f.read()
    return out


def test_decode_mode_on_two_devices_writes_the_one_device_folder(tiny):
    assert helpers.run_main_in_process(helpers.run_args(tiny, "one", max_steps=3)) == 0
    root = tiny.log_root
    shutil.copytree(os.path.join(root, "one"), os.path.join(root, "two"))
    decode = dict(mode="decode", single_pass=True, beam_size=3, decode_batch_size=3)
    one = helpers.run_cli(helpers.run_args(tiny, "one", **decode), timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    two = helpers.run_cli(
        helpers.run_args(
            tiny, "two", distribution_strategy="mirrored", num_cpu_devices=2, **decode
        ),
        timeout=300,
    )
    assert two.returncode == 0, two.stderr[-3000:]
    assert "Decoding on 2 devices" in two.stdout
    (dir_one,) = [d for d in os.listdir(os.path.join(root, "one")) if d.startswith("decode_")]
    (dir_two,) = [d for d in os.listdir(os.path.join(root, "two")) if d.startswith("decode_")]
    files_one = _folder_files(os.path.join(root, "one", dir_one))
    files_two = _folder_files(os.path.join(root, "two", dir_two))
    assert sum(k.startswith("decoded/") for k in files_one) == 7
    assert files_one == files_two


def test_decode_refuses_strategies_of_several_machines(tiny):
    os.makedirs(os.path.join(tiny.log_root, "refuse"), exist_ok=True)
    proc = helpers.run_cli(
        helpers.run_args(
            tiny, "refuse", mode="decode", single_pass=True, distribution_strategy="tpu", tpu="x"
        ),  # (TPU decoding would also need --static_shapes: this error comes first)
        timeout=120,
    )
    assert proc.returncode == 2 and "--decode_shards" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    np.testing.assert_equal(proc.stdout.strip(), "")
