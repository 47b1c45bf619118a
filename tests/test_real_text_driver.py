"""The driver of the families' real-text page (`experiments/families/real_text.py`): its
shuffled test split, its progress lines, its resumable results, and a smoke run of one
brief training that a second run of the same command does not repeat."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from experiments.families import real_text

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("n", [2, 3, 10, 101])
def test_derangement_moves_every_example(n):
    order = real_text.derangement(n, seed=3)
    assert sorted(order) == list(range(n))
    assert all(order[i] != i for i in range(n))
    assert order == real_text.derangement(n, seed=3)  # fixed: the same file every run


def test_shuffled_scores_each_reference_against_another_storys_summary(tmp_path):
    decode = tmp_path / "decode"
    for sub in ("reference", "decoded"):
        (decode / sub).mkdir(parents=True)
    for i in range(7):
        (decode / "reference" / f"{i:06d}_reference.txt").write_text(f"reference {i}")
        (decode / "decoded" / f"{i:06d}_decoded.txt").write_text(f"summary {i}")
    out = tmp_path / "shuffled"
    real_text.shuffled_decode(str(decode), str(out))
    order = real_text.derangement(7)
    for i in range(7):
        assert (out / "reference" / f"{i:06d}_reference.txt").read_text() == f"reference {i}"
        got = (out / "decoded" / f"{i:06d}_decoded.txt").read_text()
        assert got == f"summary {order[i]}" and got != f"summary {i}"
    (decode / "decoded" / "000003_decoded.txt").unlink()
    with pytest.raises(real_text.Failed, match="without gaps"):
        real_text.shuffled_decode(str(decode), str(tmp_path / "again"))


def test_progress_reads_the_newest_step_line(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        "03:31:17 step 50/2075 | loss 7.4210 | 1.99 steps/s | 127.4 examples/s | ETA 16:57\n"
        "03:31:18 Saved checkpoint x\n"
        "03:31:41 step 100/2075 | loss 7.1071 | 2.08 steps/s | 133.3 examples/s | ETA 15:48\n"
        "03:31:42 epoch 1 (step 100): validation perplexity 400\n"
    )
    assert real_text.last_step_line(str(log)) == (100, "7.1071", "15:48")
    assert real_text.last_step_line(str(tmp_path / "missing.log")) is None


def test_results_are_replaced_whole_and_read_back(tmp_path):
    path = str(tmp_path / "results.json")
    r = real_text.Results(path)
    r.set(("runs", "a_s0", "gap"), {"input_gap": 1.5})
    r.set(("runs", "a_s0", "valid_perplexity"), 80.0)
    again = real_text.Results(path)
    assert again.get("runs", "a_s0", "gap", "input_gap") == 1.5
    assert again.get("runs", "a_s0", "valid_perplexity") == 80.0
    assert again.get("runs", "b_s0") is None
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(Exception, match="not a results object"):
        real_text.Results(str(tmp_path / "bad.json"))


def test_every_system_has_two_seeds_and_one_search():
    runs = real_text.runs()
    seeds = {}
    for r in runs:
        seeds.setdefault(r.system, set()).add(r.seed)
    for system in ("abs_attention", "ras_elman", "ras_lstm", "pointer_generator"):
        assert seeds[system] == {0, 1}, system
    assert len({r.name for r in runs}) == len(runs)
    # One decoding variant for every claim (issue 44 item 7).
    assert sum(f.startswith("--beam_size=") for f in real_text.SEARCH) == 1


def test_recurrent_systems_train_alike_and_variants_change_one_thing():
    """RAS-Elman, RAS-LSTM and the pointer-generator are allowed the same passes (their
    orderings compare equal training); each ABS variant is the ABS recipe plus its change,
    the pointer-generator's the recipe without its Adagrad accumulator (the original's);
    ABS+ runs on every ABS seed, the first seed's under the page's first names."""
    runs = {r.name: r for r in real_text.runs()}
    passes = {runs[f"{s}_s{k}"].max_epochs for s in ("ras_elman", "ras_lstm",
              "pointer_generator") for k in (0, 1)}  # fmt: skip
    assert len(passes) == 1
    variants = [r for r in runs.values() if r.variant_of]
    assert {r.variant_of for r in variants} == {"abs_attention", "pointer_generator"}
    for r in variants:
        base = runs[f"{r.variant_of}_s0"].flags
        if r.variant_of == "abs_attention":  # the recipe plus its change
            assert r.flags[: len(base)] == base and len(r.flags) > len(base), r.name
        else:  # the recipe without its accumulator: the original's
            assert set(base) - set(r.flags) == {"--adagrad_init_acc=1e-4"}, r.name
            assert set(r.flags) <= set(base) and not r.coverage_steps
    assert [real_text.plus_suffix(b) for b in real_text.ABS_PLUS_BASES] == ["", "_s1"]
    assert set(real_text.ABS_PLUS_BASES) == {
        n for n, r in runs.items() if r.system == "abs_attention"
    }


def _small_input(src: str, path: str, stories: int = 60) -> None:
    with gzip.open(src, "rt") as f, gzip.open(path, "wt") as g:
        for i, line in enumerate(f):
            if i >= stories:
                break
            g.write(line)


def test_a_second_run_continues_instead_of_repeating(tmp_path, cnndm_sample_path):
    """A preset run (train briefly, validate) end to end, then the same command again:
    nothing is trained twice and the results stay."""
    src = str(tmp_path / "small.jsonl.gz")
    _small_input(cnndm_sample_path, src)
    work = str(tmp_path / "work")
    cmd = [sys.executable, "-m", "experiments.families.real_text", f"--work_dir={work}",
           f"--input={src}", "--only=abs_paper", "--smoke_max_steps=2",
           "--smoke_flags=--hidden_dim=8 --emb_dim=8 --xla=0",
           f"--out={tmp_path / 'page' / 'report.md'}"]  # fmt: skip
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert "abs_paper_s0: training" in first.stdout, first.stdout + first.stderr
    with open(os.path.join(work, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    run = results["runs"]["abs_paper_s0"]
    assert run["train"]["steps"] == 2
    assert run["valid_perplexity"] > 1
    assert results["baselines"]["fixed"]["rouge"]["1"][0] > 0
    assert results["data"]["pairs"]["train"] > 0
    log = os.path.join(work, "logs", "abs_paper_s0.train.log")
    size = os.path.getsize(log)
    second = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert "training" not in second.stdout, second.stdout
    assert os.path.getsize(log) == size


def test_the_training_sample_spreads_over_the_training_pairs_as_many_as_validation(tmp_path):
    from pointer_generator.data.binfile import read_records, write_bin

    finished = tmp_path / "finished"
    (finished / "chunked").mkdir(parents=True)
    train = [(f"article {i}", f"<s> title {i} </s>") for i in range(7)]
    write_bin(str(finished / "chunked" / "train_000.bin"), train[:4])
    write_bin(str(finished / "chunked" / "train_001.bin"), train[4:])
    write_bin(str(finished / "val.bin"), [("a", "<s> b </s>")] * 3)
    path = real_text.train_sample(str(finished))
    assert path == str(finished / real_text.TRAIN_SAMPLE)
    # Every 7 // 3 = 2nd pair across the chunks, in their order (not the first three: the
    # chunks are in story order, and the first stories are all CNN's).
    assert list(read_records(path)) == [train[0], train[2], train[4]]
    mtime = os.stat(path).st_mtime_ns
    assert real_text.train_sample(str(finished)) == path and os.stat(path).st_mtime_ns == mtime
