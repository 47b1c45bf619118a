"""A model family defined in this file alone (issue 43, item 2): a bag-of-words language
model, registered through the public contract (`pg.ModelFamily`, `pg.register_family`, and
`$POINTER_GENERATOR_FAMILIES` for other processes), then trained, evaluated, decoded,
summarized, exported and served through the command line and `pg`, touching no other
file of the project. docs/architecture.md walks the same example.

The model: log P(y_t | y_<t, x) = log_softmax(W tanh(E y_{t-1} + a mean_j F x_j) + b), the
article read as the mean of its word embeddings (its "attention" is uniform over it),
weighted by a, the family's own option --article_weight (a `pg.FamilyOption`: a flag,
stored with the experiment, read back by every command).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

import keras
import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.models import family_registry
from pointer_generator.models.family import EXAMPLES, embedding_mismatches, parameter_summary
from tests import helpers

NAME = "bag_of_words_lm"
# How another process finds the family (`family_registry.PLUGINS_ENV`).
PLUGIN = {family_registry.PLUGINS_ENV: "tests.test_family_from_outside:FAMILY"}
EMBEDDING_KEY = "model/prev_words/_embeddings/.ATTRIBUTES/VARIABLE_VALUE"
TEXT = "W3 w4 w5 w6 said . w7 w8 w9 w10 and w4 . w11 w12 w13 w3 w4 ."


class BagOfWordsLM(keras.Model):
    """E (previous word), F (article words) [V, D]; the output layer W, b [D, V]."""

    def __init__(self, emb_dim: int, vocab_size: int, article_weight: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.emb_dim, self.vocab_size = emb_dim, vocab_size
        self.article_weight = article_weight
        self.prev_words = keras.layers.Embedding(vocab_size, emb_dim, name="prev_words")
        self.article_words = keras.layers.Embedding(vocab_size, emb_dim, name="article_words")
        self.out = keras.layers.Dense(vocab_size, name="out")

    def _article(self, enc_batch, enc_padding_mask):
        """The mean of the article's word embeddings [B, D]."""
        mask = tf.cast(enc_padding_mask, tf.float32)[..., None]
        total = tf.reduce_sum(self.article_words(enc_batch) * mask, axis=1)
        return self.article_weight * total / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)

    def _log_probs(self, prev, article):
        return tf.nn.log_softmax(self.out(tf.tanh(self.prev_words(prev) + article)), -1)

    def build_weights(self):
        ids = tf.zeros([1, 2], tf.int32)
        self._log_probs(ids, self._article(ids, tf.ones([1, 2]))[:, None])
        return self

    def call(self, batch, training=False):
        """{"step_nll": [B, T]}: all that the default loss terms read."""
        article = self._article(batch["enc_batch"], batch["enc_padding_mask"])
        log_probs = self._log_probs(batch["dec_batch"], article[:, None])
        return {"step_nll": -tf.gather(log_probs, batch["target_batch"], batch_dims=2)}

    def search_start(self, inputs, beam_size: int, full_final_dist: bool = False):
        mask = tf.cast(inputs.enc_padding_mask, tf.float32)
        articles = {
            "article": self._article(inputs.enc_batch, mask),
            "attention": mask / tf.maximum(tf.reduce_sum(mask, 1, keepdims=True), 1.0),
        }
        rows = tf.shape(mask)[0] * beam_size
        carry = {"steps": tf.zeros([rows], tf.int32)}

        def step(tokens, carry, articles):
            tiled = {k: tf.repeat(v, beam_size, axis=0) for k, v in articles.items()}
            probs = tf.exp(self._log_probs(tokens, tiled["article"]))
            p_gen = tf.ones([tf.shape(tokens)[0]])
            return probs, tiled["attention"], p_gen, {"steps": carry["steps"] + 1}

        return pg.SearchStart(step, carry, articles)

    def checkpoint_mismatches(self, shapes: dict) -> list[str]:
        shape = shapes.get(EMBEDDING_KEY)
        if shape is None:
            return [f"it is not a --model={NAME} checkpoint"]
        return embedding_mismatches(shape, self.vocab_size, self.emb_dim)

    def parameter_summary(self) -> str:
        return parameter_summary(self, "bag-of-words language model")


class BagOfWordsFamily(pg.ModelFamily):
    name = NAME
    summary = "a bag-of-words language model (a test's family; --emb_dim is its D)"
    model_class = BagOfWordsLM
    search_option_note = "is not something a bag-of-words language model does"
    options = (
        pg.FamilyOption(
            "article_weight",
            1.0,
            f"--model={NAME}: a, the article's weight in the hidden state (0 = a language "
            "model that ignores it).",
            low=0.0,
        ),
    )

    def build(self, hps, vocab_size: int):
        weight = self.config(hps).article_weight
        return BagOfWordsLM(hps.emb_dim, vocab_size, weight).build_weights()

    def loss_terms(self, hps, out, batch):
        # The default loss, and a scalar of its own: the first summary word's NLL, a
        # mean over the examples (its TensorBoard tag is its name).
        terms = super().loss_terms(hps, out, batch)
        terms.sums["first_word_nll"] = tf.reduce_sum(out["step_nll"][:, 0])
        terms.per["first_word_nll"] = EXAMPLES
        return terms

    def scalars(self, hps):
        return ("first_word_nll",)

    def implied_settings(self, shapes):
        shape = shapes.get(EMBEDDING_KEY)
        if shape is None:
            return None
        return {"vocab_size": int(shape[0]), "emb_dim": int(shape[1]), "model": NAME}

    def embedding_key(self, shapes):
        return EMBEDDING_KEY if EMBEDDING_KEY in shapes else None


FAMILY = BagOfWordsFamily()


@pytest.fixture(scope="module")
def registered():
    pg.register_family(FAMILY)
    yield FAMILY
    family_registry.unregister(NAME)
    # Its option's flag went onto the command line's flags when they were parsed: gone
    # with the family (other tests check every flag against the registered families).
    from pointer_generator.cli import flags as flags_lib

    for option in FAMILY.options:
        if option.name in flags_lib.FLAGS:
            delattr(flags_lib.FLAGS, option.name)


@pytest.fixture(scope="module")
def trained(registered, tmp_path_factory):
    """A tiny experiment of the family, trained through the command line."""
    data = helpers.tiny_setup(tmp_path_factory.mktemp("bow_lm"), n_train=40, n_val=8)
    run = helpers.run_args(
        data,
        "exp",
        model=NAME,
        max_steps=150,
        lr=0.5,
        batch_size=8,
        max_dec_steps=6,
        article_weight=2.0,
    )
    assert helpers.run_main_in_process(run) == 0
    data.experiment = [f"--log_root={data.log_root}", "--exp_name=exp"]
    return data


def _single_pass_results(data) -> dict:
    path = os.path.join(data.log_root, "exp", "eval", "single_pass_loss.txt")
    with open(path, encoding="utf-8") as f:
        return {k: float(v) for k, v in (line.split(": ") for line in f) if k != "checkpoint"}


def test_the_family_is_a_model_choice_once_registered(registered):
    assert NAME in family_registry.names() and family_registry.get(NAME) is FAMILY
    assert pg.HParams(model=NAME).model == NAME
    assert pg.register_family(FAMILY) is FAMILY  # again: the same family, no error

    class Impostor(BagOfWordsFamily):
        pass

    with pytest.raises(pg.PointerGeneratorError, match="registered already"):
        pg.register_family(Impostor())
    built_in = type("Built", (BagOfWordsFamily,), {"name": "abs"})()
    with pytest.raises(pg.PointerGeneratorError, match="'abs' is a built-in model family"):
        pg.register_family(built_in)
    assert family_registry.get("abs") is not built_in
    # A loss reduction the family does not declare is refused, not ignored.
    with pytest.raises(pg.PointerGeneratorError, match="--loss_reduction=sum is not one of"):
        FAMILY.check(pg.HParams(model=NAME, pointer_gen=False, loss_reduction="sum"))
    # Its option is checked by the family: another family's option, a value out of range.
    with pytest.raises(pg.PointerGeneratorError, match="--abs_encoder is no setting of"):
        FAMILY.check(pg.HParams(model=NAME, options={"abs_encoder": "bow"}))
    with pytest.raises(pg.PointerGeneratorError, match="--article_weight must be >= 0"):
        FAMILY.check(pg.HParams(model=NAME, options={"article_weight": -1.0}))
    assert FAMILY.option_values(pg.HParams(model=NAME)) == {"article_weight": 1.0}
    config = FAMILY.config(pg.HParams(model=NAME, options={"article_weight": 0.5}))
    assert type(config).__name__ == "BagOfWordsLmConfig" and config.article_weight == 0.5
    with pytest.raises(AttributeError):  # frozen
        config.article_weight = 2.0


def test_its_option_is_a_flag_with_its_range(registered, tmp_path, capfd):
    data = helpers.tiny_setup(tmp_path)
    for value, problem in (("-1", "must be >= 0, got -1.0"), ("nan", "finite")):
        run = helpers.run_args(data, "bad", model=NAME, max_steps=1, article_weight=value)
        assert helpers.run_main_in_process(run) == 2
        err = capfd.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: --article_weight ") and problem in err[0]
    # Another family's option is refused for this one, and this one's for another family.
    run = helpers.run_args(data, "bad", model=NAME, max_steps=1, abs_encoder="bow")
    assert helpers.run_main_in_process(run) == 2
    assert capfd.readouterr().err.strip().splitlines() == [
        f"error: --abs_encoder is a setting of --model=abs, not of --model={NAME}: drop it"
    ]
    run = helpers.run_args(data, "bad", model="abs", max_steps=1, article_weight=2.0)
    assert helpers.run_main_in_process(run) == 2
    assert capfd.readouterr().err.strip().splitlines() == [
        f"error: --article_weight is a setting of --model={NAME}, not of --model=abs: drop it"
    ]


def test_it_learns_and_reads_its_input_through_train_and_eval(trained):
    """The loss the eval job reports is the family's (the mean token NLL, computed here
    with NumPy from the model's probabilities), and a wrong article costs it (on the 40
    pairs it trained on: 8 validation pairs of this tiny corpus make too small a sample)."""
    run = helpers.run_args(
        trained,
        "exp",
        mode="eval",
        single_pass=True,
        input_gap=True,
        max_dec_steps=6,
        data_path=trained.train_path,
    )
    assert helpers.run_main_in_process(run) == 0
    result = _single_pass_results(trained)
    assert result["loss"] < np.log(100) - 0.5, result  # learned: well below uniform
    assert result["input_gap"] > 0.05, result  # reads the article
    assert set(result) >= {"loss", "perplexity", "examples"}
    assert "coverage_loss" not in result  # the family reports no coverage
    # Its own scalar reached TensorBoard under its name, beside the loss.
    scalars = helpers.read_scalars(os.path.join(trained.log_root, "exp", "train"))
    assert "first_word_nll" in scalars and "seq2seq/loss/loss" in scalars, sorted(scalars)
    assert all(np.isfinite(v) and v > 0 for _, v in scalars["first_word_nll"])
    # The same loss from the model's own outputs, by NumPy.
    summarizer = pg.Summarizer.from_experiment(trained.log_root, "exp")
    model = summarizer.decoder.model
    hps = summarizer.decoder.hps.replace(max_dec_steps=6, batch_size=4)
    assert hps.model == NAME and not hps.pointer_gen  # its fixed settings
    # Its option, given to training, was stored with the experiment and read back.
    with open(os.path.join(trained.log_root, "exp", "settings.json"), encoding="utf-8") as f:
        assert json.load(f)["flags"]["article_weight"] == 2.0
    assert hps.option("article_weight") == 2.0 and model.article_weight == 2.0
    vocab = pg.Vocab(trained.vocab_path, hps.vocab_size)
    nll, tokens = 0.0, 0.0
    for batch in pg.make_dataset(trained.train_path, vocab, hps, "eval", single_pass=True):
        out = model(pg.model_inputs(batch))
        mask = batch["dec_padding_mask"].numpy()
        nll += float(np.sum(out["step_nll"].numpy() * mask))
        tokens += float(mask.sum())
    np.testing.assert_allclose(result["loss"], nll / tokens, rtol=1e-4)


def test_it_decodes_through_the_command_line(trained):
    run = helpers.run_args(trained, "exp", mode="decode", single_pass=True, max_dec_steps=6)
    assert helpers.run_main_in_process(run) == 0
    decoded = [
        d
        for d in os.listdir(os.path.join(trained.log_root, "exp"))
        if d.startswith("decode_") and os.path.isdir(os.path.join(trained.log_root, "exp", d))
    ]
    assert len(decoded) == 1
    folder = os.path.join(trained.log_root, "exp", decoded[0], "decoded")
    assert len(os.listdir(folder)) == 8
    # Decode mode's summary of the first article is the Python API's with the same search.
    with open(os.path.join(folder, "000000_decoded.txt"), encoding="utf-8") as f:
        decoded_words = f.read().split()
    article = helpers.make_pairs(8, trained.words, seed=2)[0][0]  # tiny_setup's val data
    api = pg.Summarizer.from_experiment(
        trained.log_root, "exp", beam_size=2, min_dec_steps=2, max_dec_steps=6
    ).summarize([article])[0]
    assert decoded_words and api.tokens == decoded_words


def _serve(args: list[str], **env) -> tuple[subprocess.Popen, str]:
    """`pointer-generator serve args` in another process; (the process, its URL)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pointer_generator.cli.serve", "--serve_port=0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=helpers.REPO_ROOT,
        env=helpers.subprocess_env(**env),
    )
    lines = []
    for line in proc.stdout:
        lines.append(line)
        found = re.search(r"on (http://\S+/) ", line)
        if found:
            return proc, found.group(1)
    proc.wait(30)
    raise AssertionError("serve did not start:\n" + "".join(lines))


def _served_summary(args: list[str], **env) -> str:
    proc, url = _serve(args, **env)
    try:
        request = urllib.request.Request(
            url + "api/summarize",
            data=json.dumps({"texts": [TEXT]}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=120) as r:
            return json.loads(r.read())["summaries"][0]["summary"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def test_summarize_export_and_serve_give_one_summary(trained, tmp_path):
    """The Python API, `summarize` and `serve` in processes that find the family by
    $POINTER_GENERATOR_FAMILIES, and `export` with the SavedModel served and read back
    (which need no family at all), all give the same summary."""
    search = ["--beam_size=3", "--min_dec_steps=2", "--max_dec_steps=5"]
    api = pg.Summarizer.from_experiment(
        trained.log_root, "exp", beam_size=3, min_dec_steps=2, max_dec_steps=5
    ).summarize([TEXT])[0]
    assert api.text.strip()

    article = tmp_path / "article.txt"
    article.write_text(TEXT, encoding="utf-8")
    done = helpers.run_python(
        ["-m", "pointer_generator.cli.summarize", *trained.experiment, *search, str(article)],
        timeout=300,
        **PLUGIN,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " ".join(api.text.split()) in " ".join(done.stdout.split())

    export_dir = str(tmp_path / "exported")
    done = helpers.run_python(
        [
            "-m",
            "pointer_generator.cli.export",
            *trained.experiment,
            *search,
            f"--export_dir={export_dir}",
        ],
        timeout=300,
        **PLUGIN,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert pg.SavedModelSummarizer(export_dir).summarize([TEXT])[0].text == api.text

    assert _served_summary([*trained.experiment, *search], **PLUGIN) == api.text
    assert _served_summary([f"--saved_model={export_dir}"]) == api.text


def test_other_processes_without_the_plugin_name_the_choices(trained):
    done = helpers.run_cli(helpers.run_args(trained, "exp", mode="decode", model=NAME))
    assert done.returncode == 2
    assert "error:" in done.stderr and NAME in done.stderr and "pointer_generator" in done.stderr
    assert "Traceback" not in done.stderr
