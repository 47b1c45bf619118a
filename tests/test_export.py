"""`pointer-generator export` (issue 21, item 1): a SavedModel with tokenization, the
vocabulary, article OOVs and the beam search inside, loaded in a fresh process that
cannot import this package, summarizing exactly as `pointer-generator summarize`."""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import pointer_generator as pg
from pointer_generator.cli import entry
from pointer_generator.data.binfile import write_bin
from pointer_generator.data.stories import texts_to_examples
from pointer_generator.data.vocab import SPECIAL_TOKENS
from tests import helpers

# Run in a fresh interpreter: any import of this package fails, so the SavedModel must
# stand on TensorFlow alone. Reads {"dir", "signature", "inputs"} on stdin, prints the
# outputs as JSON.
LOADER = r"""
import importlib.abc, json, sys

class NoProject(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pointer_generator", "data_tools", "tests"):
            raise ImportError(f"the exported model imported {name}")
        return None

sys.meta_path.insert(0, NoProject())
import tensorflow as tf

request = json.load(sys.stdin)
model = tf.saved_model.load(request["dir"])
fn = model.signatures[request["signature"]]
(arg,) = fn.structured_input_signature[1]
out = fn(**{arg: tf.constant(request["inputs"], tf.string)})
def plain(v):
    v = v.numpy()
    return v.astype(str).tolist() if v.dtype == object else v.tolist()
print(json.dumps({k: plain(v) for k, v in out.items()}))
"""


def run_exported(export_dir: str, inputs: list[str], signature: str = "serving_default"):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    proc = subprocess.run(
        [sys.executable, "-c", LOADER],
        input=json.dumps({"dir": export_dir, "signature": signature, "inputs": inputs}),
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=os.path.dirname(export_dir),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cli_summary(capfd, log_root: str, exp: str, path: str, *flags: str) -> str:
    capfd.readouterr()
    args = [f"--log_root={log_root}", f"--exp_name={exp}", *flags, path]
    assert entry.run_subcommand("summarize", args) == 0
    return capfd.readouterr().out.rstrip("\n")


TEXTS = [
    # capitals mid-sentence: the summary's text gets them back, as `summarize` gives them
    "W3 W4 W5 W6 said . w7 W8 W9 W10 and W4 .",
    "The w11 w12 zork13 and w14 . w15 blarg16 w17 w18 w19 w20 .",
    'W21 w22 w23 w24 (w25) w26 "w27" w28\'s.',
]
DECODE = ["--beam_size=3", "--min_dec_steps=2", "--max_dec_steps=6"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    data = helpers.tiny_setup(tmp, n_train=8, n_val=2)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    export_dir = str(tmp / "exported" / "pgen" / "1")
    args = [f"--log_root={data.log_root}", "--exp_name=exp", f"--export_dir={export_dir}"]
    assert entry.run_subcommand("export", [*args, *DECODE]) == 0
    return data, export_dir


def test_exported_model_summarizes_like_the_command_line(toy, tmp_path, capfd):
    data, export_dir = toy
    out = run_exported(export_dir, [*TEXTS, " \n "])
    api = pg.Summarizer.from_experiment(
        data.log_root, "exp", beam_size=3, min_dec_steps=2, max_dec_steps=6
    ).summarize(TEXTS)
    for i, (text, want) in enumerate(zip(TEXTS, api, strict=True)):
        path = str(tmp_path / f"{i}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        assert out["summary"][i] == cli_summary(capfd, data.log_root, "exp", path, *DECODE)
        n = out["num_tokens"][i]
        assert out["tokens"][i][:n] == want.tokens and not any(out["tokens"][i][n:])
        m = out["article_length"][i]
        assert out["article_tokens"][i][:m] == want.article_tokens
        np.testing.assert_allclose(np.array(out["attention"][i])[:n, :m], want.attention, atol=1e-5)
        np.testing.assert_allclose(out["p_gens"][i][:n], want.p_gens, atol=1e-5)
        assert out["scores"][i] == pytest.approx(want.score, abs=1e-5)
    # Article OOVs come back as the article's words, with ids past the vocabulary.
    vocab_size = 100  # the 4 special tokens and the vocab file's first 96 words
    known = set(data.words[: vocab_size - 4]) | set(SPECIAL_TOKENS)  # [UNK] is id 0
    ids, tokens = np.array(out["token_ids"]), np.array(out["tokens"])
    for i in range(len(TEXTS)):
        for t, w in zip(ids[i][: out["num_tokens"][i]], tokens[i], strict=False):
            assert (t >= vocab_size) == (w not in known), (t, w)
    # A text with no words: an empty summary, not an error or NaN.
    assert out["summary"][-1] == "" and out["num_tokens"][-1] == 0
    assert np.isfinite(np.array(out["attention"])).all()


def test_the_search_is_exported_as_one_xla_computation(toy):
    """The export's search is XLA-compiled whole, as `pg.Summarizer`'s (one article in
    10 ms instead of 30 at toy size; the same numerics as the Summarizer)."""
    from tensorflow.core.protobuf import saved_model_pb2

    _, export_dir = toy
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    compiled = [
        f.signature.name
        for f in saved.meta_graphs[0].graph_def.library.function
        if "_XlaMustCompile" in f.attr and f.attr["_XlaMustCompile"].b
    ]
    assert any("_search_graph" in name for name in compiled), compiled


def test_tokens_signature_takes_tokenized_articles(toy):
    _, export_dir = toy
    raw = run_exported(export_dir, TEXTS)
    articles = [article for article, _ in texts_to_examples(TEXTS)]
    tok = run_exported(export_dir, articles, signature="summarize_tokens")
    assert tok["tokens"] == raw["tokens"]
    # Tokenized articles are lower case: their summaries capitalize sentence starts only.
    assert [s.lower() for s in tok["summary"]] == [s.lower() for s in raw["summary"]]
    assert tok["summary"][0] != raw["summary"][0]
    assert tok["summary"][1:] == raw["summary"][1:]


def test_export_refuses_what_it_would_overwrite(toy, tmp_path, capsys):
    data, _ = toy
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    base = [f"--log_root={data.log_root}", "--exp_name=exp"]
    assert entry.run_subcommand("export", [*base, f"--export_dir={taken}"]) == 2
    assert "exists already" in capsys.readouterr().err
    assert (taken / "notes.txt").read_text() == "mine" and len(list(taken.iterdir())) == 1
    assert entry.run_subcommand("export", base) == 2
    assert "--export_dir" in capsys.readouterr().err
    missing = [f"--log_root={data.log_root}", "--exp_name=nope", f"--export_dir={tmp_path}/x"]
    assert entry.run_subcommand("export", missing) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")
    assert entry.run_subcommand("export", ["--help"]) == 0
    assert "serving_default" in capsys.readouterr().out


def test_an_export_that_does_not_fit_on_the_disk_is_one_error(toy, tmp_path):
    """A full disk (here a 40 kB file-size limit, EFBIG where a disk gives ENOSPC) while
    the SavedModel is written: `internal error: ResourceExhaustedError`, exit 3, before;
    now one error line, exit 2, and neither the folder nor a staging folder is left."""
    import resource
    import signal

    data, _ = toy
    export_dir = tmp_path / "models" / "1"
    (tmp_path / "models").mkdir()

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    args = [f"--log_root={data.log_root}", "--exp_name=exp", f"--export_dir={export_dir}"]
    proc = subprocess.run(
        [sys.executable, "-m", "pointer_generator.cli.export", *args, *DECODE],
        capture_output=True,
        text=True,
        timeout=300,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
        preexec_fn=limit_file_size,
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert errors == [
        f"error: cannot write the SavedModel beside {export_dir} (File too large); nothing "
        "was written there: free space (or fix the permissions) and export again"
    ]
    assert os.listdir(tmp_path / "models") == []


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """A tiny model on real CNN/DM pairs, one training step, and its export. Its
    vocabulary is the real one less its 500 most frequent words (the, ., of ...), so
    those are article OOVs that the pointer copies."""
    from tests.conftest import shared_file

    sample, vocab = shared_file("cnndm_sample.jsonl.gz"), shared_file("vocab_200k")
    raw_csv = shared_file("raw_train_sample_100.csv")
    tmp = tmp_path_factory.mktemp("export_real")
    with gzip.open(sample, "rt", encoding="utf-8") as f:
        rows = [json.loads(next(f)) for _ in range(16)]
    pairs = [(r["article"], " ".join(f"<s> {s} </s>" for s in r["abstract"])) for r in rows]
    write_bin(str(tmp / "train_000.bin"), pairs)
    with open(vocab, encoding="utf-8") as f:
        lines = f.readlines()[500:2500]
    vocab = str(tmp / "vocab")
    with open(vocab, "w", encoding="utf-8") as f:
        f.writelines(lines)
    log_root = str(tmp / "logs")
    flags = dict(
        data_path=str(tmp / "train_*.bin"),
        vocab_path=vocab,
        vocab_size=2000,
        max_enc_steps=400,
        max_dec_steps=12,
        hidden_dim=16,
        emb_dim=16,
        log_root=log_root,
        exp_name="real",
        save_checkpoint_secs=3600,
    )
    assert helpers.run_main_in_process(helpers.cli_args(mode="train", max_steps=2, **flags)) == 0
    export_dir = str(tmp / "exported" / "1")
    decode = ["--beam_size=4", "--min_dec_steps=3", "--max_dec_steps=12"]
    args = [f"--log_root={log_root}", "--exp_name=real", f"--export_dir={export_dir}", *decode]
    assert entry.run_subcommand("export", args) == 0
    with open(raw_csv, encoding="utf-8") as f:
        texts = [row["article"] for row in csv.DictReader(f)][:20]
    return log_root, export_dir, decode, texts


def test_twenty_real_articles_equal_summarize(real, tmp_path, capfd):
    """20 real raw articles: the exported model's summaries are `pointer-generator
    summarize`'s wherever the in-graph tokenizer read the article as the Python one did
    (all 20 here); through `summarize_tokens`, for every article."""
    log_root, export_dir, decode, texts = real
    out = run_exported(export_dir, texts)
    articles = [article for article, _ in texts_to_examples(texts)]
    by_tokens = run_exported(export_dir, articles, signature="summarize_tokens")
    paths = [str(tmp_path / f"article{i:02d}.txt") for i in range(len(texts))]
    for path, text in zip(paths, texts, strict=True):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    # One `summarize` of all the files (its batches): "==> path <==", the summary, a blank.
    capfd.readouterr()
    args = [f"--log_root={log_root}", "--exp_name=real", *decode, *paths]
    assert entry.run_subcommand("summarize", args) == 0
    printed = capfd.readouterr().out
    wants = [block.split(" <==\n", 1)[1].strip("\n") for block in printed.split("==> ")[1:]]
    assert len(wants) == len(texts)
    same_input, copied = 0, 0
    for i, want in enumerate(wants):
        # summarize_tokens has no capitals to put back (its articles are lower case)
        assert by_tokens["summary"][i].lower() == want.lower()
        m = out["article_length"][i]
        if out["article_tokens"][i][:m] == articles[i].split()[:400]:
            same_input += 1
            assert out["summary"][i] == want
        copied += sum(t >= 2000 for t in out["token_ids"][i])
    assert same_input == len(texts)
    assert copied > 0  # the pointer copied article OOVs, mapped back to their words


def test_python_api_over_the_saved_model(toy):
    data, export_dir = toy
    exported = pg.Summarizer.from_saved_model(export_dir, batch_size=2).summarize(TEXTS)
    trained = pg.Summarizer.from_experiment(
        data.log_root, "exp", beam_size=3, min_dec_steps=2, max_dec_steps=6
    ).summarize(TEXTS)
    for got, want in zip(exported, trained, strict=True):
        assert got.tokens == want.tokens and got.text == want.text
        assert got.sentences == want.sentences and got.article_tokens == want.article_tokens
        np.testing.assert_allclose(got.attention, want.attention, atol=1e-5)
        np.testing.assert_allclose(got.p_gens, want.p_gens, atol=1e-5)
        assert got.score == pytest.approx(want.score, abs=1e-5)
    with pytest.raises(pg.PointerGeneratorError, match="no article text"):
        pg.Summarizer.from_saved_model(export_dir).summarize(["ok text .", "  "])
    with pytest.raises(pg.PointerGeneratorError, match="no SavedModel"):
        pg.Summarizer.from_saved_model(data.log_root)


def test_padded_rows_and_lengths_leave_every_texts_outputs_its_own(toy):
    """Inside the SavedModel a batch is padded to a power of two of rows (3 -> 4) and to
    the experiment's length bucket, so that new shapes seldom compile the search; the
    outputs keep one row per text and the longest article's width."""
    import tensorflow as tf

    from pointer_generator.serving.saved_model import padded_rows

    assert [int(padded_rows(tf.constant(n))) for n in (1, 2, 3, 4, 5, 8, 9, 33)] == [
        1, 2, 4, 4, 8, 8, 16, 64,
    ]  # fmt: skip
    _, export_dir = toy
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]

    def plain(out):
        return {k: v.numpy() for k, v in out.items()}

    together = plain(serve(texts=tf.constant(TEXTS)))
    assert len(together["tokens"]) == len(TEXTS)
    longest = int(together["article_length"].max())
    assert together["article_tokens"].shape[1] == longest
    assert together["attention"].shape[2] == longest
    for i, text in enumerate(TEXTS):
        alone = plain(serve(texts=tf.constant([text])))
        n = alone["num_tokens"][0]
        assert together["num_tokens"][i] == n
        assert list(together["tokens"][i][:n]) == list(alone["tokens"][0][:n])
        m = alone["article_length"][0]
        np.testing.assert_allclose(
            together["attention"][i][:n, :m], alone["attention"][0][:n, :m], atol=1e-5
        )


def test_warm_up_runs_every_length_the_export_pads_to(toy):
    data, export_dir = toy
    with open(os.path.join(export_dir, "assets", "export_info.json"), encoding="utf-8") as f:
        lengths = json.load(f)["encoder_lengths"]
    hps = pg.Summarizer.from_experiment(data.log_root, "exp").decoder.hps
    from pointer_generator.data.input_pipeline import bucket_lengths

    assert lengths == bucket_lengths(hps.max_enc_steps, hps.length_buckets) and len(lengths) > 1
    exported = pg.Summarizer.from_saved_model(export_dir, batch_size=2)
    assert exported.warm_up() == len(lengths)
    assert exported.warm_up(rows=(1, 2, 8)) == 2 * len(lengths)  # 8 texts: 2 a batch


def test_an_empty_batch_gives_empty_outputs(toy):
    """`serving_default` on an empty batch raised inside the search (issue 27)."""
    _, export_dir = toy
    out = run_exported(export_dir, [])
    assert out["summary"] == [] and out["num_tokens"] == [] and out["scores"] == []


def test_a_bad_text_fails_only_its_own_request_over_the_saved_model(toy):
    """With --saved_model, a lone surrogate gave every client of the batch a 500; a text
    of no words failed them all with 422 (issue 27, item 4)."""
    import threading

    from pointer_generator.serving.http_server import SummaryService, make_server
    from tests.test_serve_requests import post_concurrently

    _, export_dir = toy
    service = SummaryService(
        pg.Summarizer.from_saved_model(export_dir), "exported", max_batch=8, max_wait_s=0.3
    )
    httpd = make_server(service, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        bad = {"\ud800 w3": 400, "&nbsp;": 422, "@highlight": 422, "\u200b": 422}
        results = post_concurrently(url, [{"text": t} for t in [*TEXTS, *bad]])
        want = pg.Summarizer.from_saved_model(export_dir).summarize(TEXTS)
        for (code, body), w in zip(results[: len(TEXTS)], want, strict=True):
            assert code == 200 and body["summaries"][0]["tokens"] == w.tokens
        for (code, body), status in zip(results[len(TEXTS) :], bad.values(), strict=True):
            assert code == status and body["error"].startswith("text 0"), body
    finally:
        httpd.shutdown()
        httpd.server_close()
        service.batcher.close()


def test_serve_an_exported_model(toy):
    """`pointer-generator serve --saved_model=DIR`: the server over the SavedModel alone,
    with every batch size up to --serve_max_batch compiled before it serves."""
    import urllib.request

    data, export_dir = toy
    proc = subprocess.Popen(
        [sys.executable, "-m", "pointer_generator.cli.serve", f"--saved_model={export_dir}",
         "--serve_port=0", "--serve_warm_up_batches", "--serve_max_batch=2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
    )  # fmt: skip
    with open(os.path.join(export_dir, "assets", "export_info.json"), encoding="utf-8") as f:
        lengths = json.load(f)["encoder_lengths"]
    try:
        # The search is run at every padded length, for batches of 1 and 2 texts,
        # before "Serving DIR on http://...".
        before = [proc.stdout.readline() for _ in range(2)]
        assert "and batches of 1, 2 texts" in before[0], before
        assert f"  {2 * len(lengths)} shapes compiled" in before[1], before
        line = proc.stdout.readline()
        assert "Serving" in line, line + proc.stderr.read()[-2000:]
        url = line.split(" on ")[1].split()[0].rstrip("/")
        request = urllib.request.Request(
            url + "/api/summarize", data=json.dumps({"texts": TEXTS[:2]}).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=120) as r:
            body = json.loads(r.read())
        want = pg.Summarizer.from_saved_model(export_dir).summarize(TEXTS[:2])
        assert [s["tokens"] for s in body["summaries"]] == [w.tokens for w in want]
        assert [s["summary"] for s in body["summaries"]] == [w.text for w in want]
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    refused = helpers.run_python(
        ["-m", "pointer_generator.cli.serve", f"--saved_model={export_dir}", "--beam_size=5"],
        timeout=120,
    )
    assert refused.returncode == 2 and "fixed when it was exported" in refused.stderr


@pytest.mark.parametrize(
    "family, flags",
    [
        ("abs", {"abs_encoder": "attention", "context_window": 3}),
        ("ras_elman", {"conv_width": 3, "max_positions": 40}),
    ],
)
def test_the_earlier_families_export_too(tmp_path, family, flags):
    """ABS and RAS go through the same export: their search and step functions in the
    graph, the same summaries as the trained experiment's."""
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=2)
    run = helpers.run_args(data, family, max_steps=2, model=family, **flags)
    assert helpers.run_main_in_process(run) == 0
    export_dir = str(tmp_path / "exported")
    args = [f"--log_root={data.log_root}", f"--exp_name={family}", f"--export_dir={export_dir}"]
    assert entry.run_subcommand("export", [*args, *DECODE]) == 0
    got = pg.Summarizer.from_saved_model(export_dir).summarize(TEXTS)
    want = pg.Summarizer.from_experiment(
        data.log_root, family, beam_size=3, min_dec_steps=2, max_dec_steps=6
    ).summarize(TEXTS)
    assert [g.tokens for g in got] == [w.tokens for w in want]
    assert [g.text for g in got] == [w.text for w in want]
    assert [g.score for g in got] == pytest.approx([w.score for w in want], abs=1e-5)
