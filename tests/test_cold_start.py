"""The cold_start benchmark (issue 46 item 4): each setting a fresh process in turn, the
cache empty for each round's cold run, medians and ratios from what the children report."""

from __future__ import annotations

import json

import pytest

from experiments.benchmarks import cold_start, common


def test_settings_run_in_turn_with_a_fresh_cache_each_round(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "TABLE", str(tmp_path / "benchmarks.md"))  # not the committed
    calls = []
    first = {"off": 4.0, "cold": 4.2, "warm": 3.0, "shifted": 4.1}

    def child(folder, cache, steps, setting):
        calls.append((setting, cache))
        kept = None if cache == "off" else cache
        r = len([c for c in calls if c[0] == setting])  # this setting's round
        return {"kept": kept, "first_step_s": first[setting] + r / 100, "step_s": 0.8,
                "first_decode_batch_s": 3.0, "decode_batch_s": 1.4, "process_s": 15.0}  # fmt: skip

    monkeypatch.setattr(cold_start, "_run_child", child)
    out = tmp_path / "cold.json"
    assert cold_start.main(["--rounds", "2", "--steps", "1", "--out_json", str(out)]) == 0
    assert [c[0] for c in calls] == list(cold_start.SETTINGS) * 2
    caches = [c[1] for c in calls if c[0] != "off"]
    assert all(c == caches[0] for c in caches[:3]) and caches[3] != caches[0]  # new per round
    assert all(c[1] == "off" for c in calls if c[0] == "off")
    fig = json.loads(out.read_text())["figures"]
    assert fig["warm_first_step_s"] == pytest.approx(3.015)  # median of 3.01, 3.02
    assert fig["warm_over_off_first_step_s"] == pytest.approx(3.015 / 4.015, abs=1e-3)
    assert fig["shifted_over_off_first_step_s"] == pytest.approx(4.115 / 4.015, abs=1e-3)
