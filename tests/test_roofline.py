"""The roofline benchmark (issue 46, item 1): its analytical counts against hand counts
of the paper configuration, and a tiny run end to end."""

from __future__ import annotations

import json

import pytest

from experiments.benchmarks import roofline

PAPER = {"batch": 16, "enc_len": 400, "dec_len": 100, "decode_steps": 120, "hidden": 256,
         "emb": 128, "vocab": 50_000}  # fmt: skip


def test_the_counts_of_the_paper_configuration():
    # The 328M tanh a training step: 16 x 400 x 512 x 100.
    assert roofline.energy_elements(16, 400, 256, 100) == 327_680_000
    # Kept for the backward pass: those values as float32, written and read once.
    assert roofline.kept_bytes(16, 400, 256, 100) == 2 * 4 * 327_680_000
    # One decoded article: encoder (2 directions x 400 steps of [1, 384] x [384, 1024]),
    # reduce_state, W_h h (400 x [512 x 512]) once; then each step for 4 rows.
    h, e, t, v, k = 256, 128, 400, 50_000, 4
    once = 2 * t * 2 * (e + h) * 4 * h + 2 * 2 * 2 * h * h + 2 * t * 2 * h * 2 * h
    step = k * 2 * (
        (e + 2 * h) * e + (e + h) * 4 * h + 2 * h * 2 * h + t * 2 * h + t * 2 * h
        + 3 * h * h + h * v + (4 * h + e)
    )  # fmt: skip
    assert roofline.decode_products(PAPER, 10.0) == pytest.approx(once + 10 * step)
    assert roofline.train_products(PAPER) == pytest.approx(
        3
        * (
            2 * t * 2 * 16 * (e + h) * 4 * h
            + 2 * 2 * 16 * 2 * h * h
            + 2 * 16 * t * 2 * h * 2 * h
            + 100 * step / k * 16
        )  # fmt: skip
    )


def test_the_products_a_recurrent_step_waits_for():
    """Per decoder step and row: input merge (E + 2H) x E, LSTM (E + H) x 4H, W_s 2H x 2H;
    per encoder step and row, each direction: H x 4H (training only)."""
    from experiments.benchmarks import flops

    h, e, t = 256, 128, 400
    step = 2 * (2 * h * e + (e + h) * 4 * h + 2 * h * 2 * h)
    train = roofline.recurrent_flops(PAPER, 16, 100, True)
    assert train["decoder"] == pytest.approx(100 * 16 * step)
    assert train["encoder"] == pytest.approx(2 * t * 2 * 16 * h * 4 * h)
    decode = roofline.recurrent_flops(PAPER, 4, 10.5, False)
    assert decode == {"encoder": 0.0, "decoder": pytest.approx(10.5 * 4 * step)}
    # Parts of what flops.forward_flops counts: the decoder's wait within its
    # decoder_steps term, the encoder's within its encoder term.
    forward = flops.forward_flops(16, t, 100, 50_000, h, e)
    assert train["decoder"] < forward["decoder_steps"] and train["encoder"] < forward["encoder"]
    # The energies' v . tanh(.) that the products leave to energies_seconds: 2 B T A a step.
    assert roofline.energy_dot_flops(16, t, h, 100) == 2 * 16 * t * 2 * h * 100


def test_a_tiny_run_writes_every_part_and_both_shares(tmp_path, capsys, monkeypatch):
    from experiments.benchmarks import common

    monkeypatch.setattr(common, "TABLE", str(tmp_path / "benchmarks.md"))  # not the committed
    out = tmp_path / "roofline.json"
    argv = ["--batch_size=2", "--max_enc_steps=16", "--max_dec_steps=4", "--decode_steps=6",
            "--hidden_dim=8", "--emb_dim=8", "--vocab_size=300", "--steps=2",
            "--decode_articles=4", "--decode_batch_size=2", "--rate_seconds=0.05",
            f"--out_json={out}"]  # fmt: skip
    assert roofline.main(argv) == 0
    figures = json.loads(out.read_text())["figures"]
    for part in ("products", "recurrent", "energies", "softmax", "kept"):
        assert figures[f"train_{part}_s"] >= 0
    assert figures["decode_recurrent_s_per_article"] >= 0  # (tiny: rounds to 0 here)
    for rate in ("encoder", "decoder", "decode"):  # each recurrence's products, measured
        assert figures[f"chain_gflop_per_s_{rate}"] > 0
    assert figures["train_energies_s"] > 0 and figures["decode_energies_s_per_article"] > 0
    assert figures["decode_kept_s_per_article"] == 0
    assert figures["train_energies_rows_per_chunk"] in (1, 2)  # 2 rows at once, or 2 chunks of 1
    # Keeping the tanh values or computing them again: the limit counts the cheaper.
    both = (figures["train_kept_stored_s"], figures["train_kept_recomputed_s"])
    assert figures["train_kept_s"] == pytest.approx(min(both), abs=1e-4)
    assert "load_avg_1min_before" in figures
    names = ("products", "recurrent", "energies", "softmax", "kept")
    parts = sum(figures[f"train_{p}_s"] for p in names)
    assert figures["train_roofline_s"] == pytest.approx(parts, abs=2e-3)
    assert 0 < figures["train_of_roofline"] and 0 < figures["decode_of_roofline"]
    assert figures["decode_steps_per_article"] == 6  # untrained: every step (min 6)
    printed = capsys.readouterr().out
    assert "training step:" in printed and "matmul-only share" in printed
    assert "AMD" in printed or "Intel" in printed or "CPU" in printed or "cores" in printed


def test_the_energies_are_priced_at_the_best_row_chunking(monkeypatch):
    """All rows at once, or chunks of 8, 4, 2, 1 rows one after another: the limit takes
    the cheapest whole-batch time (a chunk that stays in cache is faster per row)."""
    per_call = {
        16: 1.0,
        8: 0.40,
        6: 0.5,
        4: 0.15,
        2: 0.09,
        1: 0.05,
    }  # seconds of one call of c rows
    calls = []

    def fake(tf, rows, enc_len, hidden, backward, s):
        calls.append(rows)
        return per_call[rows]

    monkeypatch.setattr(roofline, "energies_seconds", fake)
    seconds, chunk = roofline.best_energies_seconds(None, 16, 400, 256, True, 0.1)
    assert sorted(calls) == [1, 2, 4, 8, 16]
    assert chunk == 4 and seconds == pytest.approx(4 * 0.15)  # 16 x 0.05 = 0.8 is dearer
    calls.clear()
    seconds, chunk = roofline.best_energies_seconds(None, 6, 400, 256, False, 0.1)
    assert sorted(calls) == [1, 2, 6]  # only chunk sizes that divide the rows
