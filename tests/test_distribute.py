"""Multi-replica training gives the single-device loss and update for the same global batch.

The CPU is split into 2 logical devices for MirroredStrategy; that must happen before
TensorFlow initialises its devices, so each check runs in a fresh Python process. The
multi-worker check starts two local worker processes joined through TF_CONFIG.
"""

import json
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests import helpers

# Compares one train step of a 2-replica MirroredStrategy Trainer with the single-device
# step on the same global batch of 4 rows, whose two halves differ in encoder and decoder
# lengths (so wrongly combined per-replica averages would show).
MIRRORED_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import numpy as np
    from tests import helpers
    from pointer_generator.training.train import Trainer

    out_dir = sys.argv[1]
    # One strategy per process: separate instances would reuse collective instance keys.
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    KEYS = ("loss", "coverage_loss", "total_loss", "global_norm", "p_gen_mean")

    def single_device_step(trainer, batch, max_grad_norm, lr):
        # The single-device step computed eagerly: loss, global norm, clipped TF1 Adagrad
        # (tests/test_train.py checks the compiled single-device step against the same).
        variables = trainer.model.trainable_variables
        with tf.GradientTape() as tape:
            out = trainer.model(batch, training=True)
        raw = tape.gradient(out["total_loss"], variables)
        grads = [tf.convert_to_tensor(g).numpy().astype(np.float64) for g in raw]
        # The original's tf.global_norm: embedding rows per lookup, not summed by word.
        parts = [g.values.numpy() if isinstance(g, tf.IndexedSlices) else g.numpy()
                 for g in raw]
        norm = float(np.sqrt(sum(np.sum(p.astype(np.float64) ** 2) for p in parts)))
        scale = min(1.0, max_grad_norm / norm)
        weights, accs = {}, []
        for v, g in zip(variables, grads, strict=True):
            g = g * scale
            acc = 0.1 + g * g
            weights[v.path] = v.numpy() - lr * g / np.sqrt(acc)
            accs.append(acc)
        mask = batch["dec_padding_mask"]
        p_gen = float(np.sum(out["p_gens"].numpy() * mask) / max(mask.sum(), 1.0))
        metrics = {"loss": float(out["loss"]), "coverage_loss": float(out["coverage_loss"]),
                   "total_loss": float(out["total_loss"]), "global_norm": norm,
                   "p_gen_mean": p_gen}
        return metrics, [weights.get(w.path, w.numpy()) for w in trainer.model.weights], accs

    def run(name, pointer_gen, coverage, max_grad_norm, fused):
        lr = 0.5
        hps = helpers.hparams(pointer_gen=pointer_gen, coverage=coverage, batch_size=4,
                              max_grad_norm=max_grad_norm, lr=lr, fused_recurrence=fused)
        batch = helpers.numpy_batch(4, 100, seed=3, pointer_gen=pointer_gen)
        mirrored = Trainer(hps, 100, strategy)
        before = [w.numpy() for w in mirrored.model.weights]
        m1, w1, acc1 = single_device_step(mirrored, batch, max_grad_norm, lr)
        m2 = mirrored.train_step(helpers.repeat_iterator(batch))
        w2 = [w.numpy() for w in mirrored.model.weights]
        acc2 = [mirrored.optimizer.accumulator(v).numpy()
                for v in mirrored.model.trainable_variables]
        # For the multi-worker test: the start weights and the single-device result.
        np.savez(os.path.join(out_dir, f"{name}_before.npz"),
                 **{f"w{i}": w for i, w in enumerate(before)})
        np.savez(os.path.join(out_dir, f"{name}_single.npz"),
                 **{f"w{i}": w for i, w in enumerate(w1)})
        mask = batch["dec_padding_mask"]
        return {
            "replicas": strategy.num_replicas_in_sync,
            "single": m1,
            "mirrored": {k: m2[k] for k in KEYS},
            "max_weight_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2)),
            "worst_weight": max(((float(np.max(np.abs(a - b))), w.path)
                                 for a, b, w in zip(w1, w2, mirrored.model.weights)))[1],
            "max_update": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, before)),
            "max_acc_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(acc1, acc2)),
            "steps": [1, int(mirrored.step.numpy())],
            # The replicas' halves differ (else averaging mistakes could not show).
            "half_tokens": [float(mask[:2].sum()), float(mask[2:].sum())],
        }

    # The default model path (fused XLA loops) and the Keras/autodiff path.
    out = {"pointer_coverage": run("pointer_coverage", True, True, 1e6, True),
           "baseline_clipped": run("baseline_clipped", False, False, 0.05, False)}
    print("RESULT " + json.dumps(out))
""")


def _result(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("mirrored")
    results = _result(helpers.run_python(["-c", MIRRORED_SCRIPT, str(out_dir)], timeout=300))
    return results, out_dir


@pytest.mark.parametrize("case", ["pointer_coverage", "baseline_clipped"])
def test_mirrored_step_equals_single_device(mirrored, case):
    r = mirrored[0][case]
    assert r["replicas"] == 2
    assert r["half_tokens"][0] != r["half_tokens"][1]
    for key, value in r["single"].items():
        assert r["mirrored"][key] == pytest.approx(value, rel=1e-5, abs=1e-7), (key, r)
    assert r["steps"] == [1, 1]
    # The step moved the weights, and both runs moved them the same way.
    assert r["max_update"] > 1e-4
    assert r["max_weight_diff"] < 1e-6, r
    assert r["max_acc_diff"] < 1e-6, r


def test_clipping_was_active_in_the_clipped_case(mirrored):
    assert mirrored[0]["baseline_clipped"]["single"]["global_norm"] > 0.05


# Each worker process: MultiWorkerMirroredStrategy from TF_CONFIG, its half of the global
# batch, one step from the given start weights; it writes its updated weights.
WORKER_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    from tests import helpers
    from pointer_generator.training import distribution
    from pointer_generator.training.train import Trainer

    out_dir, weights_in = sys.argv[1], sys.argv[2]
    hps = helpers.hparams(coverage=True, batch_size=4, max_grad_norm=1e6, lr=0.5,
                          fused_recurrence=True)
    trainer = Trainer(hps, 100, strategy)
    init = np.load(weights_in)
    for i, w in enumerate(trainer.model.weights):
        w.assign(init[f"w{i}"])
    batch = helpers.numpy_batch(4, 100, seed=3)
    index = distribution.worker_index(strategy)
    half = {k: (v if np.ndim(v) == 0 else v[2 * index:2 * index + 2]) for k, v in batch.items()}
    metrics = trainer.train_step(helpers.repeat_iterator(half))
    # Time- and signal-based decisions are agreed on: here only worker 1 wants to save.
    agreed = trainer.agree(index == 1, False)
    result = {"index": index, "workers": distribution.num_workers(strategy),
              "chief": distribution.is_chief(strategy), "step": int(trainer.step.numpy()),
              "metrics": {k: metrics[k] for k in ("loss", "coverage_loss", "global_norm")},
              "agreed": agreed}
    np.savez(os.path.join(out_dir, f"worker{index}.npz"),
             **{f"w{i}": w.numpy() for i, w in enumerate(trainer.model.weights)})
    print("RESULT " + json.dumps(result), flush=True)
""")


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_multi_worker_step_equals_single_device(mirrored, tmp_path):
    """Two local worker processes, one replica each, each with half of the global batch."""
    results, out_dir = mirrored
    expected = results["pointer_coverage"]["single"]
    weights_in = str(out_dir / "pointer_coverage_before.npz")
    ports = _free_ports(2)
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    procs = []
    for index in range(2):
        env = helpers.subprocess_env(
            TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WORKER_SCRIPT, str(tmp_path), weights_in],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=helpers.REPO_ROOT,
            )
        )
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=240))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.communicate()
        pytest.skip(
            "the two local workers did not finish within 240 s (collectives over "
            "localhost gRPC may be blocked in this sandbox)"
        )
    workers = []
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err[-3000:]
        workers.append(
            json.loads(
                [x for x in out.splitlines() if x.startswith("RESULT ")][-1][len("RESULT ") :]
            )
        )
    workers.sort(key=lambda r: r["index"])
    assert [r["index"] for r in workers] == [0, 1]
    assert [r["chief"] for r in workers] == [True, False]
    assert all(r["workers"] == 2 and r["step"] == 1 for r in workers)
    assert all(r["agreed"] == [True, False] for r in workers)
    for r in workers:
        for key, value in r["metrics"].items():
            assert value == pytest.approx(expected[key], rel=1e-5), key
    single = np.load(out_dir / "pointer_coverage_single.npz")
    for index in range(2):
        got = np.load(tmp_path / f"worker{index}.npz")
        assert sorted(got.files) == sorted(single.files)
        for name in single.files:
            np.testing.assert_allclose(
                got[name],
                single[name],
                rtol=1e-5,
                atol=1e-6,
                err_msg=f"worker {index}, weight {name}",
            )
