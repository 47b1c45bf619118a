"""Readable summaries (issue 19): the model's lower-cased PTB tokens become readable text
(detokenize, with the article's casing put back), which `summarize` prints and decode
writes beside its token files on request."""

from __future__ import annotations

import os

import pytest

from pointer_generator.cli import entry
from pointer_generator.data.detokenize import detokenize
from tests import helpers, trained_experiment


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_experiment.build(tmp_path_factory)


def test_the_articles_casing_is_put_back():
    from pointer_generator.data.detokenize import detokenize, text_casing

    raw = (
        "Maria Santos, 41, was arrested in Lisbon on Tuesday. Santos was charged by the "
        "LAPD. Residents said the McDonald's was closed. The police left."
    )
    casing = text_casing(raw)
    # Names keep their capitals; words seen capitalized only at a sentence's start
    # (Maria, Residents, The) are not names.
    assert casing == {
        "santos": "Santos",
        "lisbon": "Lisbon",
        "tuesday": "Tuesday",
        "lapd": "LAPD",
        "mcdonald": "McDonald",
    }
    tokens = "maria santos was charged by the lapd in lisbon . residents said the police left ."
    assert detokenize(tokens.split(), casing) == (
        "Maria Santos was charged by the LAPD in Lisbon. Residents said the police left."
    )


@pytest.mark.parametrize(
    "tokens, text",
    [
        ("the -lrb- bbc -rrb- said it was n't true .", "The (bbc) said it wasn't true."),
        ("`` it 's over , '' he said .", "\u201cIt's over,\u201d he said."),
        ("i think i 'm right -- really .", "I think I'm right \u2014 really."),
        ("he paid $ 5 and # 10 for a 50 % share .", "He paid $5 and \u00a310 for a 50% share."),
        ("one . two ! three ? four", "One. Two! Three? Four"),
        ("the parents ' car -lsb- sic -rsb- .", "The parents' car [sic]."),
        # A sentence that starts with a number keeps its next word in lower case.
        (
            "6.2 earthquake struck lima . `` it shook , '' he said .",
            "6.2 earthquake struck lima. \u201cIt shook,\u201d he said.",
        ),
        ("he the . . then .", "He the. Then."),  # no doubled period
    ],
)
def test_detokenize(tokens, text):
    assert detokenize(tokens.split()) == text


def test_summarize_needs_only_the_experiment_and_prints_readable_text(trained, capfd, tmp_path):
    article = tmp_path / "article.txt"
    article.write_text("W3 w4 (w5) w6 said . w7 w8 w9 .\n\n@highlight\n\nw3 w4\n")
    base = [f"--log_root={trained.log_root}", "--exp_name=exp", "--min_dec_steps=3"]
    assert entry.run_subcommand("summarize", [*base, str(article)]) == 0
    readable = capfd.readouterr().out.strip()
    assert entry.run_subcommand("summarize", [*base, "--tokens", str(article)]) == 0
    tokens = capfd.readouterr().out.strip()
    lines = tokens.splitlines()
    assert readable.splitlines() == [detokenize(line.split()) for line in lines]
    assert all(line == line.lower() for line in lines)  # the model's own tokens


def test_decode_can_write_readable_summaries(trained, capfd):
    args = trained_experiment.mode_args(trained, "decode", "--readable_summaries")
    assert helpers.run_main_in_process(args) == 0, capfd.readouterr().err[-2000:]
    (folder,) = [d for d in os.listdir(trained.exp_dir) if d.startswith("decode_val")]
    folder = os.path.join(trained.exp_dir, folder)
    decoded = open(os.path.join(folder, "decoded", "000000_decoded.txt"), encoding="utf-8")
    readable = open(os.path.join(folder, "readable", "000000.txt"), encoding="utf-8")
    assert readable.read().splitlines() == [
        detokenize(line.split()) for line in decoded.read().splitlines()
    ]
