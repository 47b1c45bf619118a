"""`--rouge_per_document` (decode mode) and `score_rouge --per_document`: the scoring at the
end of a single-pass decode (`job.score`, also after a sharded decode's merge) and the
ROUGE command write every summary's ROUGE-1, -2, -L to rouge_per_document.json, keyed by
the decode file's number as 6 digits. Skipped (failed on CI) where ROUGE-1.5.5 cannot run,
as tests/test_rouge.py."""

from __future__ import annotations

import json
import os

import pytest

from pointer_generator.cli import score_rouge
from pointer_generator.decoding import config as decode_config
from pointer_generator.decoding.folder import write_for_rouge
from tests import helpers, test_rouge

# ROUGE's copy in a cache folder of this module ($POINTER_GENERATOR_CACHE meanwhile, which
# `job.score` finds it through); skips (fails on CI) without ROUGE's Perl.
rouge_home = test_rouge.rouge_home

# Example k: (reference sentences, decoded words). 0 is perfect; 1 shares 2 of its 4
# reference words and has 4 words (ROUGE-1 R = P = F = 0.5, ROUGE-2: one bigram of 3);
# 2 shares nothing.
EXAMPLES = [
    (["the cat sat down ."], ["the", "cat", "sat", "down", "."]),
    (["a dog ran far"], ["a", "dog", "is", "big"]),
    (["red sky at night"], ["no", "match", "here", "ok"]),
]


def _decode_folder(root) -> str:
    decode_dir = str(root)
    for k, (ref, dec) in enumerate(EXAMPLES):
        write_for_rouge(ref, dec, k, decode_dir)
    return decode_dir


def _check_scores(path: str, ids: list[str]) -> dict:
    with open(path, encoding="utf-8") as f:
        scores = json.load(f)
    assert sorted(scores) == ids
    for doc in scores.values():
        assert sorted(doc) == ["1", "2", "l"]
        assert all(len(v) == 3 for v in doc.values())  # [R, P, F]
    return scores


def test_job_score_writes_per_document_scores(rouge_home, tmp_path):
    from pointer_generator.decoding import job

    decode_dir = _decode_folder(tmp_path / "dec")
    text = job.score(decode_dir, per_document=True)
    assert "rouge_1_f_score:" in text
    assert os.path.isfile(os.path.join(decode_dir, "ROUGE_results.txt"))
    scores = _check_scores(
        os.path.join(decode_dir, decode_config.PER_DOCUMENT_FILE), ["000000", "000001", "000002"]
    )
    assert scores["000000"] == {"1": [1.0, 1.0, 1.0], "2": [1.0, 1.0, 1.0], "l": [1.0, 1.0, 1.0]}
    assert scores["000001"]["1"] == pytest.approx([0.5, 0.5, 0.5], abs=test_rouge.TOL)
    assert scores["000001"]["2"] == pytest.approx([1 / 3, 1 / 3, 1 / 3], abs=test_rouge.TOL)
    assert scores["000002"]["1"] == [0.0, 0.0, 0.0]


def test_job_score_without_the_option_writes_no_file(rouge_home, tmp_path):
    from pointer_generator.decoding import job

    decode_dir = _decode_folder(tmp_path / "dec")
    assert job.score(decode_dir)
    assert not os.path.exists(os.path.join(decode_dir, decode_config.PER_DOCUMENT_FILE))


def test_sharded_decode_scores_per_document_after_its_merge(rouge_home, tmp_path):
    """`_decode_shard` (a model-free decoder, two shards run one after the other): the
    last shard merges, scores, and writes the file under the merged (global) numbers."""
    import pointer_generator as pg
    from pointer_generator.decoding import job
    from tests.test_kill_recovery import _FakeDecoder

    data = helpers.tiny_setup(tmp_path, n_train=4, n_val=5)
    vocab = pg.Vocab(data.vocab_path, 100)
    decoder = _FakeDecoder(vocab)
    decode_dir = str(tmp_path / "decode")
    os.makedirs(decode_dir)
    for i in range(2):
        cfg = pg.DecodeConfig(data_path=data.val_path, attention_pages=0, decode_shards=2,
                              decode_shard=i, rouge_per_document=True)  # fmt: skip
        job._decode_shard(decoder, vocab, decoder.hps.replace(batch_size=2), cfg, decode_dir, None)
    _check_scores(
        os.path.join(decode_dir, decode_config.PER_DOCUMENT_FILE), ["%06d" % k for k in range(5)]
    )


def test_score_rouge_per_document_writes_the_file(rouge_home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POINTER_GENERATOR_CACHE", os.path.dirname(rouge_home))
    decode_dir = _decode_folder(tmp_path / "dec")
    out = tmp_path / "out"
    ref, dec = os.path.join(decode_dir, "reference"), os.path.join(decode_dir, "decoded")
    argv = ["--reference_dir", ref, "--decoded_dir", dec, "--out_dir", str(out)]
    assert score_rouge.main(argv + ["--per_document"]) == 0
    assert capsys.readouterr().out.startswith("ROUGE-1:\n")
    scores = _check_scores(
        str(out / decode_config.PER_DOCUMENT_FILE), ["000000", "000001", "000002"]
    )
    assert scores["000000"]["l"] == [1.0, 1.0, 1.0]
    assert (out / "ROUGE_results.txt").is_file()


def test_score_rouge_per_document_needs_out_dir(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        score_rouge.main(["--reference_dir", str(tmp_path), "--decoded_dir", str(tmp_path),
                          "--per_document"])  # fmt: skip
    assert e.value.code == 2
    assert "--per_document writes its file into --out_dir" in capsys.readouterr().err


def test_the_flag_reaches_the_decode_config_and_the_help():
    from pointer_generator.cli import configs

    assert configs.decode_config(helpers.flag_namespace(mode="decode")).rouge_per_document is False
    cfg = configs.decode_config(helpers.flag_namespace(mode="decode", rouge_per_document=True))
    assert cfg.rouge_per_document is True
    proc = helpers.run_python(["-m", "pointer_generator.cli.entry", "--help"], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("  --rouge_per_document:")]
    assert "rouge_per_document.json" in line and "(default: 0)" in line
    assert "output flags:" in proc.stdout
