"""The proxy task's runner (experiments/families/run_proxy.py): its stages are resumable
and never redo finished work, with one runner or two sharing a work folder."""

from __future__ import annotations

import json

import pytest

from experiments.families import run_proxy


@pytest.fixture
def stages(monkeypatch, tmp_path):
    """main_stages with the subprocess stages replaced by recorders."""
    calls = []

    def train(work, name, scale):
        calls.append(("train", name))
        (tmp_path / "runs" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "runs" / name / run_proxy.TRAINED).write_text("done\n")

    def decode(work, name, row, flags, extra=()):
        calls.append(("decode", name + row))
        return f"{work}/runs/{name}/decode{row.strip()}"

    monkeypatch.setattr(run_proxy, "build_data", lambda *a: None)
    monkeypatch.setattr(run_proxy, "_run", lambda cmd, log: calls.append(("run", cmd[2])))
    monkeypatch.setattr(run_proxy, "train", train)
    monkeypatch.setattr(run_proxy, "decode", decode)
    monkeypatch.setattr(run_proxy, "input_gap", lambda w, n: calls.append(("gap", n)) or {})
    monkeypatch.setattr(run_proxy, "score", lambda d: {"gigaword": {"1": 1.0}})
    monkeypatch.setitem(run_proxy.RUNS, "ras_lstm", ("p", [], 1, [(" (k=10)", []), (" (k=1)", [])]))
    return calls


def _run(tmp_path, name, results_name=""):
    return run_proxy.main_stages(str(tmp_path), [name], 1.0, results_name=results_name)


def test_a_run_is_trained_once_and_each_row_decoded_once(stages, tmp_path, monkeypatch):
    _run(tmp_path, "ras_lstm")
    assert stages == [("train", "ras_lstm"), ("gap", "ras_lstm"), ("decode", "ras_lstm (k=10)"),
                      ("decode", "ras_lstm (k=1)"), ("run", "experiments.prefix")]  # fmt: skip
    stages.clear()
    # A row added to the run later: only that row is decoded; the trained run is not
    # trained again (that would retrain from its restored best epoch).
    rows = [*run_proxy.RUNS["ras_lstm"][3], (" (k=5)", [])]
    monkeypatch.setitem(run_proxy.RUNS, "ras_lstm", ("p", [], 1, rows))
    _run(tmp_path, "ras_lstm")
    assert stages == [("decode", "ras_lstm (k=5)")]


def test_a_second_runner_reads_the_first_runners_results(stages, tmp_path):
    """A run measured before the trained marker existed, its results in results.json: a
    runner writing results_more.json decodes only what is missing, into its own file."""
    (tmp_path / "results.json").write_text(json.dumps({
        run_proxy.GAP + "ras_lstm": {"input_gap": 0.1},
        "ras_lstm (k=10)": {"decode_dir": "d10"}}))  # fmt: skip
    _run(tmp_path, "ras_lstm", results_name="results_more.json")
    assert stages == [("decode", "ras_lstm (k=1)")]
    assert set(json.loads((tmp_path / "results_more.json").read_text())) == {"ras_lstm (k=1)"}
    assert "ras_lstm (k=1)" not in json.loads((tmp_path / "results.json").read_text())


def test_decode_returns_the_folder_the_decoder_named(monkeypatch, tmp_path):
    """A resumed decode adds no folder: the runner takes the decoder's own line."""
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "abs_bow(k=1).decode.log"
    log.write_text("Decoding data/test.bin into /w/runs/abs_bow/decode_old\n")

    def fake_run(cmd, log_path):
        with open(log_path, "a") as f:
            # As the decoder prints it: after its time of day (`progress.stamp`).
            f.write("Vocab of 10 words\n")
            f.write("01:02:03 Decoding /d/test.bin into /w/runs/abs_bow/decode_1beam\n")

    monkeypatch.setattr(run_proxy, "_run", fake_run)
    assert run_proxy.decode(str(tmp_path), "abs_bow", " (k=1)", []) == (
        "/w/runs/abs_bow/decode_1beam"
    )
    monkeypatch.setattr(run_proxy, "_run", lambda cmd, log_path: None)
    with pytest.raises(SystemExit, match="named no output folder"):
        run_proxy.decode(str(tmp_path), "abs_bow", " (k=1)", [])
