"""`pg.Summarizer` (issue 21, item 2): a trained experiment summarizes a list of raw texts,
with attention and p_gen, the same summaries as `pointer-generator summarize`."""

from __future__ import annotations

import numpy as np
import pytest

import pointer_generator as pg
from pointer_generator.cli import entry
from tests import helpers

TEXTS = [
    "W3 w4 w5 w6 said . w7 w8 w9 w10 .",
    "The w11 w12 w13 and w14 . w15 w16 w17 w18 w19 w20 .",
    "W21 w22 w23 w24 w25 w26 w27 w28 .",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    data = helpers.tiny_setup(tmp_path_factory.mktemp("summarizer"), n_train=8, n_val=2)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    return data


def test_summaries_equal_the_command_lines(trained, tmp_path, capfd):
    summarizer = pg.Summarizer.from_experiment(
        trained.log_root, "exp", beam_size=3, min_dec_steps=2, max_dec_steps=6, batch_size=2
    )
    results = summarizer.summarize(TEXTS)
    assert len(results) == len(TEXTS)
    for text, result in zip(TEXTS, results, strict=True):
        path = tmp_path / "a.txt"
        path.write_text(text + "\n")
        capfd.readouterr()
        args = [f"--log_root={trained.log_root}", "--exp_name=exp", "--beam_size=3",
                "--min_dec_steps=2", "--max_dec_steps=6", "--tokens", str(path)]  # fmt: skip
        assert entry.run_subcommand("summarize", args) == 0
        assert capfd.readouterr().out.split() == result.tokens
        n, m = len(result.tokens), len(result.article_tokens)
        assert result.attention.shape == (n, m) and result.p_gens.shape == (n,)
        np.testing.assert_array_less(result.attention.sum(axis=1), 1.0 + 1e-5)
        assert np.all((result.p_gens >= 0) & (result.p_gens <= 1))
        assert result.article_tokens[0] == text.split()[0].lower()
        assert result.text and isinstance(result.score, float)


def test_bad_arguments_are_clear_errors(trained, tmp_path):
    with pytest.raises(pg.PointerGeneratorError, match="unknown decode options"):
        pg.Summarizer.from_experiment(trained.log_root, "exp", beam=3)
    with pytest.raises(pg.PointerGeneratorError, match="settings.json"):
        pg.Summarizer.from_experiment(str(tmp_path), "nothing")
    summarizer = pg.Summarizer.from_experiment(trained.log_root, "exp", beam_size=2)
    with pytest.raises(pg.PointerGeneratorError):
        summarizer.summarize(["   "])


def test_the_readme_example_runs(trained, capsys):
    import os
    import re

    from tests.conftest import REPO_ROOT

    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        (block,) = [
            b for b in re.findall(r"```python\n(.*?)```", f.read(), re.S) if "Summarizer" in b
        ]
    code = block.replace('"quickstart_run/log", "toy"', f'{trained.log_root!r}, "exp"')
    assert code != block
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) >= 2 and printed[0].strip() and printed[1].startswith("(")


@pytest.mark.parametrize(
    "n, batch_size, rows", [(1, 16, 1), (3, 16, 4), (5, 16, 8), (16, 16, 16), (5, 6, 6)]
)
def test_batch_rows_are_powers_of_two_up_to_the_batch_size(n, batch_size, rows):
    from pointer_generator.summarizing.article_texts import batch_rows

    assert batch_rows(n, batch_size) == rows


def test_new_lengths_and_counts_compile_nothing_after_warm_up(trained):
    """Interactive decoding pads to fixed shapes: after `warm_up`, texts of other lengths,
    one call each, trace the search no more, and a text's summary is the same alone,
    in a padded batch of 3 (-> 4 rows), or after any other call."""
    from pointer_generator.data.input_pipeline import bucket_lengths

    summarizer = pg.Summarizer.from_experiment(
        trained.log_root, "exp", beam_size=2, min_dec_steps=1, max_dec_steps=5, batch_size=4
    )
    hps = summarizer.decoder.hps
    assert hps.static_shapes is None  # the stored default: length buckets
    shapes = summarizer.warm_up(rows=(1, 4))
    assert shapes == 2 * len(bucket_lengths(hps.max_enc_steps, hps.length_buckets))
    search = summarizer.decoder._search
    traces = search.experimental_get_tracing_count()
    words = "w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 w20".split()
    texts = [" ".join(words[:n]) + " ." for n in (2, 5, 9, 14, 18)]
    alone = [summarizer.summarize([t])[0].tokens for t in texts]
    together = [r.tokens for r in summarizer.summarize(texts[:3])]
    assert search.experimental_get_tracing_count() == traces
    assert together == alone[:3]


def test_after_warm_up_a_batch_of_a_new_size_runs_as_compiled_shapes(trained, monkeypatch):
    """`serve`'s mode (`only_compiled_shapes`): after a warm-up of one text per length, a
    call of 3 texts runs only shapes the warm-up ran (one text each), with the summaries
    of the texts alone; without the mode the same call runs a batch of 4 rows."""
    summarizer = pg.Summarizer.from_experiment(
        trained.log_root, "exp", beam_size=2, min_dec_steps=1, max_dec_steps=5, batch_size=4
    )
    summarizer.warm_up(rows=(1,))
    warmed = set(summarizer._ready)
    assert {rows for rows, _ in warmed} == {1}
    shapes = []
    real = summarizer.decoder.decode_batch
    monkeypatch.setattr(
        summarizer.decoder,
        "decode_batch",
        lambda batch: shapes.append(tuple(batch["enc_batch"].shape)) or real(batch),
    )
    alone = [summarizer.summarize([t])[0].tokens for t in TEXTS]
    summarizer.only_compiled_shapes()
    shapes.clear()
    split = [r.tokens for r in summarizer.summarize(TEXTS)]
    assert split == alone
    assert len(shapes) == 3 and set(shapes) <= warmed
    summarizer.compiled_shapes_only = False
    shapes.clear()
    summarizer.summarize(TEXTS)
    assert [rows for rows, _ in shapes] == [4]
    assert shapes[0] in summarizer._ready  # now compiled: the mode would use it
    summarizer.only_compiled_shapes()
    shapes.clear()
    summarizer.summarize(TEXTS)
    assert shapes and shapes[0][0] == 4


def test_a_checked_text_is_tokenized_once(trained, monkeypatch):
    """`serve` checks each text (tokenizing it) before `summarize`: the check's tokens are
    reused, once, and give the summary of an unchecked call; other texts are tokenized as
    before, with errors naming their position."""
    from pointer_generator.data import stories

    summarizer = pg.Summarizer.from_experiment(
        trained.log_root, "exp", beam_size=2, min_dec_steps=1, max_dec_steps=5
    )
    plain = [r.tokens for r in summarizer.summarize(TEXTS[:2])]
    tokenized = []
    real = stories.texts_to_examples
    monkeypatch.setattr(
        stories, "texts_to_examples", lambda texts: tokenized.extend(texts) or real(texts)
    )
    summarizer.check_text(TEXTS[0])
    assert tokenized == [TEXTS[0]]
    assert [r.tokens for r in summarizer.summarize(TEXTS[:2])] == plain
    assert tokenized == [TEXTS[0], TEXTS[1]]  # the checked text was not tokenized again
    assert [r.tokens for r in summarizer.summarize(TEXTS[:1])] == plain[:1]
    assert tokenized == [TEXTS[0], TEXTS[1], TEXTS[0]]  # its tokens were used once
    with pytest.raises(pg.PointerGeneratorError, match="text 2: no article"):
        summarizer.summarize([TEXTS[0], "   "])


@pytest.mark.parametrize("batch_size, rows", [(16, (1, 2, 4, 8, 16)), (6, (1, 2, 4, 6)), (1, (1,))])
def test_warm_up_rows_cover_every_batch_size(batch_size, rows):
    from pointer_generator.summarizing.article_texts import all_batch_rows, batch_rows

    assert all_batch_rows(batch_size) == rows
    assert {batch_rows(n, batch_size) for n in range(1, batch_size + 1)} == set(rows)
