"""Official ROUGE-1.5.5 through pyrouge, checked against hand-computed ROUGE values.

Expected values below are worked out from the ROUGE-N / ROUGE-L definitions as ROUGE-1.5.5
applies them: lower-casing, non-alphanumerics dropped, Porter stemming (-m) only for words
longer than 3 characters (most test words are 3 letters or fewer, so stemming cannot
matter), n-grams running across sentence boundaries, ROUGE-L as the union LCS of each
reference sentence with every decoded sentence, F = 2PR/(P+R), and multi-document scores
as the plain mean of per-document R, P and F (macro average).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from pointer_generator import exit_codes
from pointer_generator.cli import score_rouge
from pointer_generator.decoding.folder import write_for_rouge
from pointer_generator.evaluation import rouge
from tests.conftest import REPO_ROOT

TOL = 2e-5  # ROUGE-1.5.5 prints 5 decimals and rounds R and P before computing F


def _require_perl():
    try:
        rouge.check_perl(rouge.wheel_rouge_dir())
    except rouge.RougeError as e:
        if os.environ.get("CI"):
            pytest.fail(
                f"CI must provide ROUGE's Perl dependencies (run experiments/setup_system.sh): {e}"
            )
        pytest.skip(f"official ROUGE-1.5.5 cannot run here: {e}")


@pytest.fixture(scope="module")
def rouge_home(tmp_path_factory):
    _require_perl()
    old = os.environ.get("POINTER_GENERATOR_CACHE")
    os.environ["POINTER_GENERATOR_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        yield rouge.ensure_rouge()
    finally:
        if old is None:
            del os.environ["POINTER_GENERATOR_CACHE"]
        else:
            os.environ["POINTER_GENERATOR_CACHE"] = old


def _write_pairs(root, pairs):
    """pairs: list of (reference lines, decoded lines) -> root/{reference,decoded}."""
    ref, dec = root / "reference", root / "decoded"
    ref.mkdir()
    dec.mkdir()
    for k, (r, d) in enumerate(pairs):
        (ref / ("%06d_reference.txt" % k)).write_text("\n".join(r))
        (dec / ("%06d_decoded.txt" % k)).write_text("\n".join(d))
    return str(ref), str(dec)


def _assert_scores(res, rouge_type, f, r, p):
    for measure, want in (("f_score", f), ("recall", r), ("precision", p)):
        key = f"rouge_{rouge_type}_{measure}"
        assert res[key] == pytest.approx(want, abs=TOL), key


def test_two_documents_match_hand_computed_macro_average(rouge_home, tmp_path):
    pairs = [
        # doc 0: ref the cat sat on the mat (6 words) / dec a cat sat on the big red mat (8)
        (["the cat sat on the mat"], ["a cat sat on the big red mat"]),
        # doc 1: same 4 words in another order
        (["the dog ran far"], ["far ran the dog"]),
    ]
    res = rouge.rouge_eval(*_write_pairs(tmp_path, pairs), rouge_dir=rouge_home)
    # ROUGE-1. doc 0: clipped hits the(min 2,1) cat sat on mat = 5 -> R 5/6, P 5/8,
    # F 10/14. doc 1: R = P = F = 1.
    r0, p0, f0 = 5 / 6, 5 / 8, 10 / 14
    _assert_scores(res, "1", (f0 + 1) / 2, (r0 + 1) / 2, (p0 + 1) / 2)
    # ROUGE-2. doc 0: ref bigrams the-cat cat-sat sat-on on-the the-mat (5); dec a-cat
    # cat-sat sat-on on-the the-big big-red red-mat (7); hits 3 -> R 3/5, P 3/7, F 6/12.
    # doc 1: ref the-dog dog-ran ran-far, dec far-ran ran-the the-dog: 1 hit -> 1/3 each.
    _assert_scores(res, "2", (0.5 + 1 / 3) / 2, (3 / 5 + 1 / 3) / 2, (3 / 7 + 1 / 3) / 2)
    # ROUGE-L. doc 0: LCS "cat sat on the mat" = 5 -> as ROUGE-1. doc 1: LCS "the dog"
    # = 2 of 4 -> 0.5 each.
    _assert_scores(res, "l", (f0 + 0.5) / 2, (r0 + 0.5) / 2, (p0 + 0.5) / 2)
    # Bootstrap CIs of a mean of two documents lie between the per-document values.
    assert res["rouge_1_f_score_cb"] >= f0 - TOL and res["rouge_1_f_score_ce"] <= 1 + TOL
    assert res["rouge_1_f_score_cb"] <= res["rouge_1_f_score"] <= res["rouge_1_f_score_ce"]
    assert res["rouge_2_f_score_cb"] >= 1 / 3 - TOL and res["rouge_2_f_score_ce"] <= 0.5 + TOL


def test_identical_files_score_one(rouge_home, tmp_path):
    text = ["police killed the gunman .", "the hostages were freed on friday ."]
    res = rouge.rouge_eval(*_write_pairs(tmp_path, [(text, text)] * 3), rouge_dir=rouge_home)
    for x in ("1", "2", "l"):
        for m in ("f_score", "recall", "precision"):
            key = f"rouge_{x}_{m}"
            assert (res[key], res[key + "_cb"], res[key + "_ce"]) == (1.0, 1.0, 1.0)


def test_porter_stemming_and_wordnet_exceptions_are_on(rouge_home, tmp_path):
    pairs = [
        # Porter (-m): dogs -> dog, barked/barks -> bark; without it R-1 would be 0.
        (["dogs barked"], ["dog barks"]),
        # The WordNet exception DB maps "went" to "go"; without the DB only "they" matches.
        (["they went"], ["they go"]),
    ]
    res = rouge.rouge_eval(*_write_pairs(tmp_path, pairs), rouge_dir=rouge_home)
    _assert_scores(res, "1", 1.0, 1.0, 1.0)
    _assert_scores(res, "2", 1.0, 1.0, 1.0)


def test_sentence_split_decides_rouge_l(rouge_home, tmp_path):
    # Decoded "dog ran . big red ." is split after each "." into two lines. Summary-level
    # ROUGE-L takes the union of the reference sentence's LCS with each line:
    # {dog ran} + {big red} = all 4 words -> 1.0. ROUGE-2 joins lines: dec bigrams
    # dog-ran ran-big big-red vs ref big-red red-dog dog-ran: 2 of 3.
    split = tmp_path / "split"
    write_for_rouge(["big red dog ran ."], ["dog", "ran", ".", "big", "red", "."], 0, str(split))
    res = rouge.rouge_eval(str(split / "reference"), str(split / "decoded"), rouge_dir=rouge_home)
    _assert_scores(res, "l", 1.0, 1.0, 1.0)
    _assert_scores(res, "2", 2 / 3, 2 / 3, 2 / 3)
    # The same words as one sentence: plain LCS "dog ran" = 2 of 4.
    joined = tmp_path / "joined"
    write_for_rouge(["big red dog ran ."], ["dog", "ran", "big", "red", "."], 0, str(joined))
    res = rouge.rouge_eval(str(joined / "reference"), str(joined / "decoded"), rouge_dir=rouge_home)
    _assert_scores(res, "l", 0.5, 0.5, 0.5)


def test_angle_bracket_original_behaviour_and_html_safe_option(rouge_home, tmp_path):
    words = ["cat", "<", "dog"]
    # Original (no-op helper): ROUGE reads the line "cat < dog" only up to "<":
    # dec = {cat}, ref = {cat, dog} -> R 1/2, P 1/1, F 2/3.
    write_for_rouge(["cat dog"], words, 0, str(tmp_path / "orig"))
    res = rouge.rouge_eval(
        str(tmp_path / "orig/reference"), str(tmp_path / "orig/decoded"), rouge_dir=rouge_home
    )
    _assert_scores(res, "1", 2 / 3, 1 / 2, 1.0)
    # Escaped: "cat &lt; dog" -> tokens cat lt dog -> R 2/2, P 2/3, F 0.8.
    write_for_rouge(["cat dog"], words, 0, str(tmp_path / "safe"), html_safe=True)
    res = rouge.rouge_eval(
        str(tmp_path / "safe/reference"), str(tmp_path / "safe/decoded"), rouge_dir=rouge_home
    )
    _assert_scores(res, "1", 0.8, 1.0, 2 / 3)


def test_no_side_files_in_home_or_temp(rouge_home, tmp_path, monkeypatch):
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    text = ["a short text ."]
    rouge.rouge_eval(*_write_pairs(tmp_path, [(text, text)]), rouge_dir=rouge_home)
    assert os.listdir(home) == []  # no ~/.pyrouge/settings.ini
    assert os.listdir(tmp) == []  # pyrouge's converted files and config removed


def test_results_file_format(tmp_path):
    res = {}
    for i, x in enumerate(("1", "2", "l")):
        for j, m in enumerate(("f_score", "recall", "precision")):
            key = f"rouge_{x}_{m}"
            v = 0.1 * (i + 1) + 0.01 * j + 0.123456
            res[key], res[key + "_cb"], res[key + "_ce"] = v, v - 0.0123, v + 0.02346
    text = rouge.rouge_log(res, str(tmp_path))
    expected = (
        "\nROUGE-1:\n"
        "rouge_1_f_score: 0.2235 with confidence interval (0.2112, 0.2469)\n"
        "rouge_1_recall: 0.2335 with confidence interval (0.2212, 0.2569)\n"
        "rouge_1_precision: 0.2435 with confidence interval (0.2312, 0.2669)\n"
        "\nROUGE-2:\n"
        "rouge_2_f_score: 0.3235 with confidence interval (0.3112, 0.3469)\n"
        "rouge_2_recall: 0.3335 with confidence interval (0.3212, 0.3569)\n"
        "rouge_2_precision: 0.3435 with confidence interval (0.3312, 0.3669)\n"
        "\nROUGE-l:\n"
        "rouge_l_f_score: 0.4235 with confidence interval (0.4112, 0.4469)\n"
        "rouge_l_recall: 0.4335 with confidence interval (0.4212, 0.4569)\n"
        "rouge_l_precision: 0.4435 with confidence interval (0.4312, 0.4669)\n"
    )
    assert text == expected
    assert (tmp_path / "ROUGE_results.txt").read_text() == expected


def test_cli_scores_a_directory_pair(rouge_home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POINTER_GENERATOR_CACHE", os.path.dirname(rouge_home))
    ref, dec = _write_pairs(tmp_path, [(["the cat sat"], ["the cat sat"])])
    out = tmp_path / "out"
    assert (
        score_rouge.main(["--reference_dir", ref, "--decoded_dir", dec, "--out_dir", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    assert printed.startswith(
        "ROUGE-1:\nrouge_1_f_score: 1.0000 with confidence interval (1.0000, 1.0000)\n"
    )
    assert "rouge_l_precision: 1.0000" in printed
    assert (out / "ROUGE_results.txt").read_text().lstrip("\n") == printed


def test_cli_reports_bad_input_in_one_line(tmp_path, capsys):
    assert (
        score_rouge.main(
            ["--reference_dir", str(tmp_path / "nope"), "--decoded_dir", str(tmp_path)]
        )
        == exit_codes.BAD_INPUT
    )
    err = capsys.readouterr().err
    assert err.startswith("error: reference directory") and "does not exist" in err


def test_input_errors_name_the_problem(tmp_path):
    ref, dec = _write_pairs(tmp_path, [(["a b"], ["a b"]), (["c d"], ["c d"])])
    os.remove(os.path.join(ref, "000001_reference.txt"))
    with pytest.raises(rouge.RougeError, match="000001_reference.txt"):
        rouge.rouge_eval(ref, dec)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(rouge.RougeError, match="no decoded summaries"):
        rouge.rouge_eval(ref, str(empty))
    (tmp_path / "decoded" / "000000_decoded.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(rouge.RougeError, match="not valid UTF-8"):
        rouge.rouge_eval(ref, dec)


def test_missing_perl_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no perl on an empty PATH
    with pytest.raises(rouge.RougeError, match="apt-get install perl libxml-dom-perl"):
        rouge.check_perl()


def test_missing_perl_module_says_which_package(monkeypatch):
    _require_perl()
    from pointer_generator.evaluation import rouge_install  # where check_perl reads it

    monkeypatch.setattr(
        rouge_install,
        "REQUIRED_PERL_MODULES",
        {"XML::DOM": "libxml-dom-perl", "No::Such::Mod": "libno-such-mod-perl"},
    )
    with pytest.raises(rouge.RougeError) as e:
        rouge.check_perl(rouge.wheel_rouge_dir())
    assert "No::Such::Mod" in str(e.value) and "XML::DOM" not in str(e.value)
    assert "apt-get install libno-such-mod-perl" in str(e.value)


def test_ensure_rouge_concurrent_idempotent_and_repairs(tmp_path):
    _require_perl()
    env = dict(os.environ, POINTER_GENERATOR_CACHE=str(tmp_path))
    code = "from pointer_generator.evaluation.rouge import ensure_rouge; print(ensure_rouge())"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    final = os.path.join(str(tmp_path), "ROUGE-1.5.5")
    assert [o.strip() for o, _ in outs] == [final, final]
    # Nothing half-made left behind; the script is executable; the DB is where -e expects it.
    assert sorted(n for n in os.listdir(tmp_path) if not n.endswith(".lock")) == ["ROUGE-1.5.5"]
    assert os.access(os.path.join(final, "ROUGE-1.5.5.pl"), os.X_OK)
    assert os.path.isfile(os.path.join(final, "data", "WordNet-2.0.exc.db"))
    # Idempotent: a further call reuses the copy.
    marker = os.path.join(final, ".complete.json")
    stamp = os.stat(marker).st_mtime_ns
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == final and os.stat(marker).st_mtime_ns == stamp
    # A copy left unfinished (no completion marker) is rebuilt rather than used.
    os.remove(marker)
    os.remove(os.path.join(final, "data", "WordNet-2.0.exc.db"))
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == final and os.path.isfile(marker)
    assert os.path.isfile(os.path.join(final, "data", "WordNet-2.0.exc.db"))
    assert sorted(n for n in os.listdir(tmp_path) if not n.endswith(".lock")) == ["ROUGE-1.5.5"]


def test_script_interpreter_must_exist(tmp_path):
    (tmp_path / "ROUGE-1.5.5.pl").write_text("#!/nonexistent/perl -w\nprint 1;\n")
    if not shutil.which("perl"):
        pytest.skip("perl is not installed")
    with pytest.raises(rouge.RougeError, match="#!/nonexistent/perl, which does not exist"):
        rouge.check_perl(str(tmp_path))


# ------------------------------------------------------------------ DUC-style (issue 20)
def _duc_recall(peer: str, refs: list[str], n: int, limit: int = 75) -> float:
    """Independent ROUGE-N recall with pooled references (ROUGE's `-f A`): the first
    `limit` bytes of every text, Σ over references of the clipped n-gram hits divided by
    Σ of the references' n-grams. (Short lower-case words: no stemming effect.)"""

    def grams(text):
        words = text.encode()[:limit].decode().split()
        out: dict = {}
        for i in range(len(words) - n + 1):
            g = tuple(words[i : i + n])
            out[g] = out.get(g, 0) + 1
        return out

    p = grams(peer)
    hits = total = 0
    for ref in refs:
        r = grams(ref)
        hits += sum(min(c, p.get(g, 0)) for g, c in r.items())
        total += sum(r.values())
    return hits / total


def test_duc_style_pools_four_references_and_scores_the_first_75_bytes(rouge_home, tmp_path):
    docs = [
        (
            # The first 75 bytes end with "ok ": the tail ("mat", "fox", ...) cannot count.
            "the cat sat on the mat and the dog ran to the red car in a big old town ok mat "
            "fox owl bee",
            ["the cat sat on a mat", "a dog ran to the car", "cat and dog in town", "the mat"],
        ),
        ("a red fox ran", ["the red fox ran far", "a fox ran", "red fox", "fox ran to a den"]),
    ]
    ref_dir, dec_dir = tmp_path / "reference", tmp_path / "decoded"
    ref_dir.mkdir(), dec_dir.mkdir()
    for k, (peer, refs) in enumerate(docs):
        (dec_dir / ("%06d_decoded.txt" % k)).write_text(peer + "\n")
        for j, ref_text in enumerate(refs):
            (ref_dir / ("%06d_reference_%d.txt" % (k, j))).write_text(ref_text + "\n")
    assert docs[0][0].encode()[:75].decode().split()[-1] == "ok"
    results = rouge.rouge_eval(str(ref_dir), str(dec_dir), rouge_home, style="duc")
    for n in (1, 2):
        want = sum(_duc_recall(peer, refs, n) for peer, refs in docs) / len(docs)
        assert results[f"rouge_{n}_recall"] == pytest.approx(want, abs=TOL)
    # The peer's tail beyond 75 bytes does not count: cut, it scores the same.
    (dec_dir / "000000_decoded.txt").write_text(docs[0][0].encode()[:75].decode() + "\n")
    again = rouge.rouge_eval(str(ref_dir), str(dec_dir), rouge_home, style="duc")
    assert again["rouge_1_recall"] == pytest.approx(results["rouge_1_recall"], abs=TOL)
    with pytest.raises(rouge.RougeError, match="style must be one of"):
        rouge.rouge_eval(str(ref_dir), str(dec_dir), rouge_home, style="bleu")


def test_prefix_baseline_scores_the_first_75_characters_against_four_references(
    rouge_home, tmp_path
):
    """experiments.prefix on a DUC-like set written by data_tools.sumdata (short words:
    ROUGE's stemming and token rules change nothing, so the independent count holds)."""
    from data_tools import sumdata
    from experiments import prefix

    inputs = [
        "the cat sat on the mat and the dog ran to the red car in a big old town ok mat fox",
        "a red fox ran to the den at dawn and a cat saw it",
    ]
    refs = [
        ["the cat sat on a mat", "a dog ran to the car", "cat and dog in town", "the mat"],
        ["the red fox ran far", "a fox ran", "red fox", "fox ran to a den"],
    ]
    data = tmp_path / "data"
    data.mkdir()
    (data / "input.txt").write_text("".join(line + "\n" for line in inputs))
    titles = []
    for k in range(4):
        (data / f"task1_ref{k}.txt").write_text("".join(r[k] + "\n" for r in refs))
        titles.append(str(data / f"task1_ref{k}.txt"))
    sumdata.convert(str(data / "input.txt"), titles, str(tmp_path / "giga"), "duc2004")
    out = tmp_path / "prefix"
    status = prefix.main(
        [
            "--data_path",
            str(tmp_path / "giga" / "chunked" / "duc2004_*"),
            "--out_dir",
            str(out),
            "--references_dir",
            str(tmp_path / "giga" / "duc2004.references"),
        ]
    )
    assert status == 0
    assert (out / "decoded" / "000000_decoded.txt").read_text() == inputs[0][:75]
    assert sorted(os.listdir(out / "reference"))[:4] == [
        f"000000_reference_{k}.txt" for k in range(4)
    ]
    text = (out / "ROUGE_results.txt").read_text()
    recall = float(text.split("rouge_1_recall: ")[1].split()[0])
    want = sum(_duc_recall(i[:75], r, 1) for i, r in zip(inputs, refs, strict=True)) / 2
    assert recall == pytest.approx(want, abs=5e-5)  # the file has 4 decimals
