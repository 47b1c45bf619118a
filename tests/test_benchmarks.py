"""Smoke runs of the paper-config benchmarks on a few articles (real ones from
../shared/data, or `.bin` files a user built; the full runs are minutes:
`docs/performance.md`): each finishes, writes its JSON and a table row, and its figures are
consistent with each other. Speed itself is not asserted here."""

import io
import json
import os

import pytest

from experiments.benchmarks import common

DATA = common.shared_data_dir()
needs_shared_data = pytest.mark.skipif(
    DATA is None or not os.path.exists(os.path.join(DATA or "", "cnndm_sample.jsonl.gz")),
    reason="../shared/data (cnndm_sample.jsonl.gz, vocab_200k) is absent",
)


@pytest.fixture
def table(tmp_path, monkeypatch):
    path = tmp_path / "benchmarks.md"
    monkeypatch.setattr(common, "TABLE", str(path))  # never the committed table
    return path


def _figures(path):
    with open(path) as f:
        return json.load(f)


def test_decode_benchmark_runs_every_comparison_on_data_a_user_built(tmp_path, table):
    """On `.bin` chunks and a vocab written by data_tools (as a user without ../shared
    would pass them), not the shared sample."""
    from data_tools import toy_data
    from experiments.benchmarks import decode

    data = tmp_path / "finished"
    toy_data.make_toy_data(str(data), num_train=20, num_val=2, num_test=4, stream=io.StringIO())
    out = tmp_path / "decode.json"
    assert (
        decode.main(
            [
                "--data_path",
                str(data / "chunked" / "test_*.bin"),
                "--vocab_path",
                str(data / "vocab"),
                "--vocab_size",
                "0",
                "--articles",
                "2",
                "--batch_size",
                "2",
                "--single_articles",
                "1",
                "--matmul_seconds",
                "0.2",
                "--out_json",
                str(out),
            ]
        )
        == 0
    )
    result = _figures(out)
    fig = result["figures"]
    assert fig["steps_per_article"] == 120.0  # untrained weights never stop early
    for key in (
        "batched",
        "original_single",
        "single",
        "batch1",
        "full_dist",
        "no_compaction",
        "reference",
    ):
        assert fig[f"{key}_articles_per_s"] > 0, key
    assert fig["speedup_vs_original_single"] == pytest.approx(
        fig["batched_articles_per_s"] / fig["original_single_articles_per_s"], rel=0.05
    )
    assert fig["identical_summaries_vs_no_compaction"] == "2/2"
    assert fig["speedup_vs_no_compaction"] == pytest.approx(
        fig["batched_articles_per_s"] / fig["no_compaction_articles_per_s"], rel=0.05
    )
    assert result["machine"] in table.read_text()
    with open(data / "vocab") as f:
        words = sum(1 for _ in f)
    assert f"vocab {words + 4}," in result["configuration"]  # the user's vocab, all of it


@needs_shared_data
def test_train_step_benchmark_weighs_decoder_buckets(tmp_path, table):
    """--decoder_buckets: the original's batches and bucketed ones, side by side; the
    bucketed ones no longer (small sizes: what is checked is the comparison)."""
    from experiments.benchmarks import train_step

    out = tmp_path / "train.json"
    args = ["--steps", "2", "--rounds", "1", "--batches", "3", "--matmul_seconds", "0.2",
            "--batch_size", "4", "--max_enc_steps", "40", "--max_dec_steps", "24",
            "--decoder_buckets", "3", "--out_json", str(out)]  # fmt: skip
    assert train_step.main(args) == 0
    fig = _figures(out)["figures"]
    assert fig["mean_decoder_length_fixed"] == 24
    assert 8 <= fig["mean_decoder_length_buckets"] <= fig["mean_decoder_length_fixed"]
    assert fig["speedup_decoder_buckets"] == pytest.approx(
        fig["s_per_step"] / fig["decoder_buckets_s_per_step"], rel=0.02
    )
    assert "--decoder_buckets=3" in _figures(out)["configuration"]


def test_train_step_benchmark_cycles_its_batches_through_the_compiled_step():
    """The cached batches reach the traced step one after another, their shapes too (a
    Python iterator was read once, at tracing: the benchmark timed its first batch)."""
    import tensorflow as tf

    from experiments.benchmarks.train_step import _Cycle

    class Trainer:  # the part of Trainer.train_step the benchmark relies on
        def __init__(self):
            self.step = tf.function(lambda it: next(it)["x"], autograph=False)

        def train_step(self, iterator):
            return self.step(iterator).numpy().tolist()

    batches = [{"x": tf.fill([2, n], float(n))} for n in (3, 5, 4)]
    cycle, trainer = _Cycle(batches), Trainer()
    got = []
    for _ in range(7):
        want = batches[cycle.i % len(batches)]["x"].numpy().tolist()
        got.append(cycle.take(trainer))
        assert got[-1] == want
    assert [len(x[0]) for x in got] == [3, 5, 4, 3, 5, 4, 3] and cycle.i == 7


@needs_shared_data
def test_train_step_benchmark_reports_the_flop_ratio(tmp_path, table):
    from experiments.benchmarks import train_step

    out = tmp_path / "train.json"
    assert (
        train_step.main(
            [
                "--steps",
                "1",
                "--rounds",
                "1",
                "--batches",
                "1",
                "--matmul_seconds",
                "0.2",
                "--out_json",
                str(out),
            ]
        )
        == 0
    )
    fig = _figures(out)["figures"]
    assert fig["gflop_per_step_paper_shape"] == pytest.approx(176.1, abs=0.1)
    assert fig["ratio_achieved_over_matmul"] == pytest.approx(
        fig["achieved_gflop_per_s"] / fig["matmul_gflop_per_s"], rel=0.01
    )
    assert 0 < fig["ratio_achieved_over_matmul"] < 1.5
    assert "train_step" in table.read_text()


@needs_shared_data
def test_export_benchmark_compares_the_saved_model_with_python(tmp_path, table):
    from experiments.benchmarks import export

    out = tmp_path / "export.json"
    args = ["--train_steps", "3", "--articles", "4", "--batch", "2", "--out_json", str(out)]
    assert export.main(args) == 0
    fig = _figures(out)["figures"]
    identical, total = map(int, fig["identical_summaries"].split("/"))
    assert total == 4 and identical >= 2, fig
    # A summary that differs must be a tie the two executors' rounding broke differently
    # (a 3-step model's "," and "." are near-equal; seen on an AVX-512 host: 2.4e-7),
    # not another search: that would differ in score by far more.
    assert fig["differing_score_gap_max"] <= 1e-5, fig
    ratio = fig["python_articles_per_s"] / fig["saved_model_articles_per_s"]
    assert fig["saved_model_over_python"] == pytest.approx(1 / ratio, rel=0.05)
    assert fig["tokenizer"]["stories"] == 100 and fig["tokenizer"]["identical"] >= 95
    assert "export" in table.read_text()


def test_the_checkouts_benchmark_refuses_a_folder_that_is_no_checkout(tmp_path, table, capfd):
    from experiments.benchmarks import checkouts

    assert checkouts.main(["--before", str(tmp_path)]) == 2
    err = capfd.readouterr().err
    assert f"error: --before={tmp_path} is no checkout of this project" in err
    assert not table.exists()


@pytest.mark.parametrize("module", ["decode", "decoder_padding", "pipeline", "train_step"])
def test_a_benchmark_without_data_says_how_to_give_it(module, tmp_path, monkeypatch, capfd):
    """No ../shared/data and no --data_path: one SKIPPED line naming the flags that give
    a user's own data, exit 0, nothing written."""
    import importlib

    monkeypatch.setenv("POINTER_GENERATOR_SHARED_DATA", str(tmp_path / "absent"))
    bench = importlib.import_module(f"experiments.benchmarks.{module}")
    before = set(os.listdir(common.RESULTS_DIR))
    assert bench.main([]) == 0
    err = capfd.readouterr().err
    assert "SKIPPED: no real data" in err and "--data_path" in err and "--vocab_path" in err
    assert set(os.listdir(common.RESULTS_DIR)) == before


def test_decoder_padding_counts_what_buckets_would_save():
    """Issue 46's first candidate: batches whose longest summaries are 10, 30 and 100 of
    100 steps; with 4 buckets (32, 56, 80, 100) they pad to 32, 32 and 100, which saves
    1 - 164/300 of the decoder steps; with 1 (the original's) nothing."""
    from experiments.benchmarks.decoder_padding import padding_figures

    four = padding_figures([10, 30, 100], 100, 4)
    assert four["lengths"] == [32, 56, 80, 100]
    assert four["mean_padded"] == pytest.approx(164 / 3)
    assert four["saved"] == pytest.approx(1 - 164 / 300)
    assert padding_figures([10, 30, 100], 100, 1)["saved"] == 0.0


def test_decoder_padding_weighs_grouping_batches_by_summary_length():
    """Two pools of four (article, summary) lengths, batches of 2, encoder widths (104,
    200, 304, 400), decoder buckets (32, 56, 80, 100), worked by hand: grouping by
    summary length pads every article to 400 but stops two batches early; grouping by the
    article's bucket first keeps the short articles together."""
    from experiments.benchmarks.decoder_padding import grouping_figures

    pools = [
        [(400, 10), (400, 90), (400, 12), (400, 95)],
        [(50, 10), (390, 15), (60, 80), (380, 90)],
    ]
    g = grouping_figures(pools, 2, [104, 200, 304, 400], 100, 4)
    key = "mean_decoder_length_4_buckets"
    # By article length (ties keep their order): (10, 90) (12, 95) | (50, 60) (380, 390).
    assert g["articles"]["mean_encoder_width"] == pytest.approx((400 + 400 + 104 + 400) / 4)
    assert g["articles"]["mean_longest_summary"] == pytest.approx((90 + 95 + 80 + 90) / 4)
    assert g["articles"][key] == pytest.approx((100 + 100 + 80 + 100) / 4)
    # By summary length: (10, 12) (90, 95) | (10, 15) (80, 90): every batch 400 wide.
    assert g["summaries"]["mean_encoder_width"] == 400
    assert g["summaries"]["mean_longest_summary"] == pytest.approx((12 + 95 + 15 + 90) / 4)
    assert g["summaries"][key] == pytest.approx((32 + 100 + 32 + 100) / 4)
    # Bucket, then summary length: the first pool as by summaries, the second as by article.
    both = g["article_bucket_then_summaries"]
    assert both["mean_encoder_width"] == pytest.approx((400 + 400 + 104 + 400) / 4)
    assert both[key] == pytest.approx((32 + 100 + 80 + 100) / 4)


def test_decoder_padding_reads_the_training_batches_of_data_a_user_built(tmp_path, table):
    """On `.bin` chunks written by data_tools: every figure from the batches' own summary
    lengths, more buckets never saving less."""
    from data_tools import toy_data
    from experiments.benchmarks import decoder_padding

    data = tmp_path / "finished"
    toy_data.make_toy_data(str(data), num_train=40, num_val=2, num_test=2, stream=io.StringIO())
    out = tmp_path / "decoder_padding.json"
    args = ["--data_path", str(data / "chunked" / "train_*.bin"), "--vocab_path",
            str(data / "vocab"), "--vocab_size", "0", "--batch_size", "4", "--max_dec_steps",
            "12", "--batches", "6", "--buckets", "2", "4", "--out_json", str(out)]  # fmt: skip
    assert decoder_padding.main(args) == 0
    f = _figures(out)["figures"]
    assert f["batches"] == 6 and 1 <= f["mean_longest_summary"] <= 12
    assert 0 <= f["buckets_1_saved"] == 0.0 <= f["buckets_2_saved"] <= f["buckets_4_saved"]
    assert f["buckets_4_saved"] <= f["saved_if_each_batch_stopped_at_its_longest"] < 1
    assert f["mean_summary_length"] <= f["mean_longest_summary"]
    assert (
        f["saved_if_each_batch_stopped_at_its_longest"]
        <= f["saved_if_each_example_stopped_at_its_own"]
    )
    # Consecutive groups of the sorted pool are the narrowest: sorting by article length
    # never pads the encoder wider, nor sorting by summary length the decoder longer.
    assert (
        f["grouped_by_articles_mean_encoder_width"] <= f["grouped_by_summaries_mean_encoder_width"]
    )
    assert (
        f["grouped_by_summaries_mean_longest_summary"]
        <= f["grouped_by_articles_mean_longest_summary"]
    )
    assert "decoder_padding" in table.read_text()
