"""ROUGE-1.5.5's per-document scores (`rouge_eval(..., per_document=True)`, its `-d`).

Checked: every document's scores come back under its own decode file number (12 documents
with gaps in the numbering, each with a different hand-computed score, one perfect);
the averages are those ROUGE computes from exactly these scores; the results without the
option are unchanged. ROUGE-1.5.5 reports as a measure's "Average" not the plain mean of
the per-document scores but the mean of its 1000 bootstrap resample means (resample i
drawn after Perl's `srand(i)`), so the test reproduces that with Perl's drand48 (Perl
>= 5.20 uses its own; glibc's is the same generator) and also bounds the plain mean.
"""

import pytest

from pointer_generator.evaluation import rouge
from tests import test_rouge

WORDS = [f"w{k}" for k in range(12)]  # short, distinct: no stemming, no repeats
IDS = [5 * k + 2 for k in range(12)]  # 2, 7, ..., 57: not 0..n-1


# ROUGE's copy in a cache folder of this module; skips (fails on CI) without ROUGE's Perl.
rouge_home = test_rouge.rouge_home


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Document IDS[k]: reference w0 .. w11, decoded its first k + 1 words (k = 11:
    perfect). ROUGE-1 and -L: R = (k + 1) / 12, P = 1."""
    root = tmp_path_factory.mktemp("decode")
    ref, dec = root / "reference", root / "decoded"
    ref.mkdir()
    dec.mkdir()
    for k, doc in enumerate(IDS):
        (ref / ("%06d_reference.txt" % doc)).write_text(" ".join(WORDS))
        (dec / ("%06d_decoded.txt" % doc)).write_text(" ".join(WORDS[: k + 1]))
    return str(ref), str(dec)


def _r5(x):
    return float("%.5f" % x)  # ROUGE's sprintf("%7.5f")


def _rouge_average(scores_by_test_id, resamples=1000):
    """ROUGE-1.5.5's computeAverages: resample i seeds Perl's rand with srand(i) and draws
    n test ids, int(rand() * n), from the ids sorted as strings; the reported Average is
    the mean of the resample means, printed with %7.5f."""
    keys = sorted(scores_by_test_id)
    n = len(keys)
    total = 0.0
    for seed in range(resamples):
        state = (seed << 16) + 0x330E  # drand48 seeding
        s = 0.0
        for _ in range(n):
            state = (0x5DEECE66D * state + 0xB) % (1 << 48)
            s += scores_by_test_id[keys[int(state / 2.0**48 * n)]]
        total += s / n
    return _r5(total / resamples)


@pytest.fixture(scope="module")
def both(rouge_home, folder):
    plain = rouge.rouge_eval(*folder, rouge_dir=rouge_home)
    with_docs = rouge.rouge_eval(*folder, rouge_dir=rouge_home, per_document=True)
    return plain, with_docs


def test_each_document_scored_under_its_own_number(both):
    per_doc = both[1]["per_document"]
    assert sorted(per_doc) == IDS
    for k, doc in enumerate(IDS):
        r = _r5((k + 1) / 12)
        want = (r, 1.0, _r5(2 * r / (1 + r)))
        for measure in ("1", "l"):
            assert per_doc[doc][measure] == pytest.approx(want, abs=1e-9), (doc, measure)
    assert per_doc[IDS[-1]]["1"] == (1.0, 1.0, 1.0)
    assert per_doc[IDS[-1]]["2"] == (1.0, 1.0, 1.0)
    assert per_doc[IDS[0]]["2"] == (0.0, 0.0, 0.0)  # one word: no bigram
    assert set(per_doc[2]) == {"1", "2", "3", "4", "l", "w_1.2", "s*", "su*"}


def test_averages_are_rouges_over_these_scores(both):
    res = both[1]
    n = len(IDS)
    # test ids "<EVAL ID>.1": EVAL k + 1 is the k-th decoded file in sorted order.
    for measure in ("1", "2", "l"):
        for i, name in enumerate(("recall", "precision", "f_score")):
            by_test = {f"{k + 1}.1": res["per_document"][d][measure][i] for k, d in enumerate(IDS)}
            reported = res[f"rouge_{measure}_{name}"]
            assert _rouge_average(by_test) == pytest.approx(reported, abs=1e-9), (measure, name)
            # The plain mean is close (resampling noise: here up to 4.2e-4, ROUGE-2 P).
            assert sum(by_test.values()) / n == pytest.approx(reported, abs=1e-3)


def test_results_unchanged_without_the_option(both):
    plain, with_docs = both
    assert "per_document" not in plain
    assert {k: v for k, v in with_docs.items() if k != "per_document"} == plain


def test_other_styles_and_several_references(rouge_home, tmp_path):
    ref, dec = tmp_path / "reference", tmp_path / "decoded"
    ref.mkdir()
    dec.mkdir()
    for doc, (refs, out) in {
        3: (["the cat sat", "a cat sat down"], "the cat sat"),
        9: (["dogs run far"], "birds fly"),
    }.items():
        for j, text in enumerate(refs):
            (ref / ("%06d_reference_%d.txt" % (doc, j))).write_text(text)
        (dec / ("%06d_decoded.txt" % doc)).write_text(out)
    res = rouge.rouge_eval(str(ref), str(dec), rouge_home, style="gigaword", per_document=True)
    per_doc = res["per_document"]
    assert set(per_doc) == {3, 9}
    assert set(per_doc[3]) == {"1", "2", "l", "w_1.2"}  # -n 2, no skip-bigrams
    assert per_doc[9]["1"] == (0.0, 0.0, 0.0)
    # Doc 3, ROUGE-1 against both references pooled (-f A): hits 3 + 2 of 3 + 4 model
    # words; precision the same way over 2 x 3 peer words.
    r, p = _r5(5 / 7), _r5(5 / 6)
    assert per_doc[3]["1"] == pytest.approx((r, p, _r5(2 * p * r / (p + r))), abs=1e-9)


# ------------------------------------------------------------------ parsing, no Perl needed
EVAL = """
    <EVAL ID="{}">
        <PEERS>
            <P ID="1">{}</P>
        </PEERS>
        <MODELS>
            {}
        </MODELS>
    </EVAL>"""
CONFIG = (  # as pyrouge writes it (ROOT and INPUT-FORMAT elements left out)
    '<ROUGE-EVAL version="1.55">'
    + EVAL.format(1, "000004_decoded.txt", '<M ID="A">000004_reference.txt</M>')
    + EVAL.format(
        2,
        "000010_decoded.txt",
        '<M ID="A">000010_reference_0.txt</M><M ID="B">000010_reference_1.txt</M>',
    )
    + "</ROUGE-EVAL>"
)

OUTPUT = """---------------------------------------------
1 ROUGE-1 Average_R: 0.50000 (95%-conf.int. 0.00000 - 1.00000)
1 ROUGE-1 Average_P: 0.50000 (95%-conf.int. 0.00000 - 1.00000)
1 ROUGE-1 Average_F: 0.50000 (95%-conf.int. 0.00000 - 1.00000)
.............................................
1 ROUGE-1 Eval 1.1 R:1.00000 P:1.00000 F:1.00000
1 ROUGE-1 Eval 2.1 R:0.00000 P:0.00000 F:0.00000
---------------------------------------------
1 ROUGE-SU* Average_R: 0.25000 (95%-conf.int. 0.00000 - 0.50000)
.............................................
1 ROUGE-SU* Eval 1.1 R:0.50000 P:0.25000 F:0.33333
1 ROUGE-SU* Eval 2.1 R:0.00000 P:0.00000 F:0.00000
"""


def test_parsing_maps_eval_ids_through_the_configuration():
    files = rouge.config_eval_files(CONFIG)
    assert files == {"1": "000004_decoded.txt", "2": "000010_decoded.txt"}
    assert rouge.per_document_scores(OUTPUT, files) == {
        4: {"1": (1.0, 1.0, 1.0), "su*": (0.5, 0.25, 0.33333)},
        10: {"1": (0.0, 0.0, 0.0), "su*": (0.0, 0.0, 0.0)},
    }


def test_parsing_refuses_incomplete_output():
    files = rouge.config_eval_files(CONFIG)
    with pytest.raises(rouge.RougeError, match="no su\\* for document 10"):
        rouge.per_document_scores(OUTPUT.rsplit("\n", 2)[0], files)
    with pytest.raises(rouge.RougeError, match="evaluation 2, not in its configuration"):
        rouge.per_document_scores(OUTPUT, {"1": "000004_decoded.txt"})
    with pytest.raises(rouge.RougeError, match="no per-document scores"):
        rouge.per_document_scores("1 ROUGE-1 Average_R: 0.5 (95%-conf.int. 0.1 - 0.9)", files)
