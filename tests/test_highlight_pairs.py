"""`data_tools.highlight_pairs`: the CNN/DM best-sentence -> highlight task. Its pieces
(sentence cuts, the best sentence, the filter) on hand-made tokens, and the whole command
on 30 constructed stories of 3 highlights each: one split a story, a vocabulary of the
training pairs only, the test ceiling computed here by hand, and bad input as one line."""

from __future__ import annotations

import json

import pytest

from data_tools import highlight_pairs
from data_tools.proxy_task import split_of
from pointer_generator import exit_codes
from pointer_generator.data.binfile import read_records

# ------------------------------------------------------------------------------ pieces


def test_sentences_cut_at_each_end_token_and_keep_a_closing_quote():
    tokens = "a b . c d ! e f ? '' g h".split()
    assert highlight_pairs.sentences(tokens) == [
        ["a", "b", "."],
        ["c", "d", "!"],
        ["e", "f", "?", "''"],
        ["g", "h"],  # the words after the last end token
    ]
    # A `''` that closes no sentence stays where it is; no end token: one sentence.
    assert highlight_pairs.sentences("he said '' hi .".split()) == [["he", "said", "''", "hi", "."]]
    assert highlight_pairs.sentences(["no", "end"]) == [["no", "end"]]
    assert highlight_pairs.sentences([]) == []


def test_best_sentence_shares_most_words_and_the_earliest_wins_ties():
    article = [
        "the cat sat .".split(),
        "a dog ran far , fast .".split(),
        "The Dog ran home .".split(),
        "dog ran .".split(),
    ]
    # "dog ran" in sentences 1, 2, 3; "far" only in 1 (lower-cased compare: "Dog" = "dog").
    assert highlight_pairs.best_sentence(article, "dog ran far".split()) == article[1]
    assert highlight_pairs.best_sentence(article, "DOG RAN HOME".split()) == article[2]
    # A tie (dog ran: sentences 1, 2 and 3) goes to the earliest.
    assert highlight_pairs.best_sentence(article, "dog ran".split()) == article[1]
    # The title punctuation NAMAS drops is not a shared word: "." and "," do not make
    # sentence 0 (one of them) or 1 (both) better than sentence 2's "home".
    assert highlight_pairs.best_sentence(article, "home , .".split()) == article[2]
    # Nothing shared: the first sentence.
    assert highlight_pairs.best_sentence(article, "zebra".split()) == article[0]


SOURCE = "police arrested two men after a robbery at the central bank on friday !".split()


def test_rejection_drops_bad_words_and_keeps_a_sentence_ending_in_an_exclamation_mark():
    assert "." not in SOURCE
    assert (
        highlight_pairs.rejection(SOURCE, "police arrest two men after bank robbery".split())
        is None
    )
    assert (
        highlight_pairs.rejection(SOURCE, "update : police arrest two men".split())
        == "bad word in title"
    )
    # The title is checked without NAMAS's dropped punctuation: 3 words and a "!" are too few.
    assert highlight_pairs.rejection(SOURCE, "police arrest men !".split()) == "title length"
    assert highlight_pairs.rejection(SOURCE, "two men held now".split()) == "no shared word"


@pytest.mark.parametrize("length, kept", [(10, False), (11, True), (99, True), (100, False)])
def test_rejection_counts_the_source_as_it_is(length, kept):
    """NAMAS's 10 < article tokens < 100 on the sentence itself, its end token included."""
    source = ["word"] * (length - 2) + ["police", "!"]
    reason = highlight_pairs.rejection(source, "police arrest two men".split())
    assert reason == (None if kept else "article length")


# ------------------------------------------------------------------------------ the command

STORIES = 30
MIN_COUNT = 2


def _tag(i: int) -> str:
    """A letters-only mark of story i (digits would become `#`): 0 -> "aa", 12 -> "bc"."""
    return "".join(chr(ord("a") + int(d)) for d in f"{i:02d}")


def _words(i: int) -> dict:
    t = _tag(i)
    return {
        "u0": f"bridge{t}",  # in sentence 1 and highlight 0: twice in a story's pairs
        "u1": f"bank{t}",  # in sentence 2 and highlight 1
        "u2": f"forest{t}",  # in sentence 3 and highlight 2
        "t2": f"birdsong{t}",  # in highlight 2 only: once
        "once": f"once{t}",  # in sentence 1 only: once
        "filler": f"weather{t}",  # in sentence 0, which no highlight picks
    }


def _story(i: int) -> dict:
    w = _words(i)
    article = (
        f"london -lrb- cnn -rrb- -- it was a quiet day in the town with {w['filler']} . "
        f"the mayor said the new {w['u0']} over the river will open next spring , "
        f"officials confirmed on {w['once']} . "
        f"police arrested two men after a robbery at the central {w['u1']} on friday night ! "
        f"`` scientists found that the ancient {w['u2']} holds many rare birds and old "
        "trees ? ''"
    )
    highlights = [
        f"new {w['u0']} over river will open next spring",
        f"police arrest two men after {w['u1']} robbery",
        f"ancient {w['u2']} holds rare birds , {w['t2']} says",
    ]
    if i == 0:
        highlights.append("update : police arrest two men")  # bad word: dropped
    return {"id": f"s{i}", "article": article, "highlights": highlights}


# The highlights' tokens as ROUGE sees them (the "," dropped): 8 + 7 + 7.
TITLE_TOKENS = 22


@pytest.fixture
def stories(tmp_path):
    path = tmp_path / "stories.jsonl"
    path.write_text("".join(json.dumps(_story(i)) + "\n" for i in range(STORIES)))
    return path


def _splits_of_stories() -> dict:
    return {i: split_of(f"s{i}") for i in range(STORIES)}


def title_word(title: list[str]) -> str:
    """Which of a story's words its highlight `title` holds."""
    return {"new": "u0", "police": "u1", "ancient": "u2"}[title[0]]


def test_every_pair_of_a_story_is_in_its_storys_split(stories):
    splits, dropped, count = highlight_pairs.build(str(stories))
    assert count == STORIES and dropped == {"bad word in title": 1}
    by_story = _splits_of_stories()
    assert set(by_story.values()) == {"train", "valid", "test"}  # the ids reach every split
    seen = {}
    for split, pairs in splits.items():
        for source, title in pairs:
            (i,) = [i for i in range(STORIES) if _words(i)[title_word(title)] in title]
            seen.setdefault(i, []).append(split)
            # Each highlight's source is its own sentence (the dateline stripped).
            if title[0] == "new":
                assert source[:3] == ["the", "mayor", "said"] and source[-1] == "."
            elif title[0] == "police":
                assert source[0] == "police" and source[-1] == "!"
            else:
                assert source[0] == "``" and source[-2:] == ["?", "''"]
    assert sorted(seen) == list(range(STORIES))
    for i, in_splits in seen.items():
        assert in_splits == [by_story[i]] * 3, i


def _vocab(path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        word, count = line.split()
        out[word] = int(count)
    return out


def test_main_writes_bins_a_training_vocabulary_and_the_ceiling(stories, tmp_path, capsys):
    out = tmp_path / "pairs"
    argv = [f"--input={stories}", f"--out_dir={out}", f"--min_count={MIN_COUNT}"]
    assert highlight_pairs.main(argv) == 0
    printed = capsys.readouterr().out
    assert f"kept {3 * STORIES} pairs from {STORIES} stories" in printed
    finished = out / "finished"
    by_story = _splits_of_stories()
    n = {s: sum(1 for v in by_story.values() if v == s) for s in ("train", "valid", "test")}
    records = {}
    for split, name in (("train", "train"), ("valid", "val"), ("test", "test")):
        records[split] = list(read_records(str(finished / f"{name}.bin")))
        assert len(records[split]) == 3 * n[split]

    vocab = _vocab(finished / "vocab")
    assert min(vocab.values()) >= MIN_COUNT
    for i, split in by_story.items():
        w = _words(i)
        if split == "train":
            assert vocab[w["u0"]] == 2  # its sentence and its highlight
        else:
            assert w["u0"] not in vocab  # seen twice, but outside the training pairs
        assert w["t2"] not in vocab and w["once"] not in vocab  # once in training at most
        assert w["filler"] not in vocab  # in no pair at all
    assert vocab["police"] == 2 * n["train"] and vocab["arrest"] == n["train"]

    # The test references keep their rare words, outside the vocabulary.
    test_abstracts = " ".join(abstract for _, abstract in records["test"])
    for i in (i for i, s in by_story.items() if s == "test"):
        w = _words(i)
        for word in (w["u0"], w["u1"], w["u2"], w["t2"]):
            assert word in test_abstracts.split()
    assert "[UNK]" not in test_abstracts and "<unk>" not in test_abstracts

    # By hand: a test story's 22 reference tokens; outside the vocabulary its own u0, u1,
    # u2 (in their sources) and t2 (in no source).
    ceiling = json.loads((finished / "ceiling.json").read_text())
    assert ceiling["test_ceiling"] == {
        "reference_tokens": TITLE_TOKENS * n["test"],
        "share_in_vocab": pytest.approx((TITLE_TOKENS - 4) / TITLE_TOKENS),
        "share_in_vocab_or_source": pytest.approx((TITLE_TOKENS - 1) / TITLE_TOKENS),
    }
    assert ceiling["stories"] == STORIES and ceiling["min_count"] == MIN_COUNT
    assert ceiling["pairs"] == {s: 3 * n[s] for s in ("train", "valid", "test")}
    assert ceiling["dropped"] == {"bad word in title": 1}
    assert ceiling["vocab_words"] == len(vocab)


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot open"),  # no input file
        ('{"article": "a b c .", "highlights": ["a b"]}\n', "no 'id' field"),
    ],
)
def test_bad_input_is_one_error_line(tmp_path, capfd, content, message):
    path = tmp_path / "in.jsonl"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out"
    assert highlight_pairs.main([f"--input={path}", f"--out_dir={out}"]) == exit_codes.BAD_INPUT
    captured = capfd.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert str(path) in lines[0]
    assert not out.exists()
