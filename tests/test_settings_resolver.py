"""One resolver of an experiment's settings (runtime/experiment_settings.resolve): every
way of opening a trained experiment gets the same model and search from it.

The case that used to split: a RAS experiment whose settings.json predates
--ras_attention (and the other flags added since) ran with the paper's dot product. The
command line read it so (the family's `predating`) while `pg.Summarizer` and
`serve` built the cosine form: two summaries of one experiment, and no error.
"""

from __future__ import annotations

import json
import os

import pytest

import pointer_generator as pg
from pointer_generator.cli import entry
from pointer_generator.cli import flags as flags_lib
from pointer_generator.decoding import job
from pointer_generator.errors import FlagError
from pointer_generator.models import family_registry
from pointer_generator.runtime import experiment_settings
from pointer_generator.summarizing import trained
from tests import helpers

TEXT = "W3 W4 W5 W6 said . w7 W8 W9 W10 and W4 ."
# Keys an older settings.json lacks: the flags added after it was written.
NEWER_KEYS = ("ras_attention", "ras_attention_scale", "ras_initial_state")
SEARCH = {"beam_size": 2, "min_dec_steps": 1, "max_dec_steps": 5}


@pytest.fixture(scope="module")
def older(tmp_path_factory):
    """A tiny RAS-Elman experiment trained with the dot product, its settings.json then
    made as an experiment of an older version wrote it (without NEWER_KEYS)."""
    data = helpers.tiny_setup(tmp_path_factory.mktemp("resolver"), n_train=8, n_val=2)
    flags = dict(model="ras_elman", conv_width=3, max_positions=40, ras_attention="dot")
    assert helpers.run_main_in_process(helpers.run_args(data, "old", max_steps=2, **flags)) == 0
    data.root = os.path.join(data.log_root, "old")
    path = experiment_settings.settings_path(data.root)
    with open(path, encoding="utf-8") as f:
        stored = json.load(f)
    for key in NEWER_KEYS:
        del stored["flags"][key]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(stored, f)
    return data


@pytest.fixture
def opened(monkeypatch):
    """The hyper-parameters of every model a command opens (every command opens its
    experiment through `open_trained`), in order, and the search settings of every
    search it builds over one (`searches`)."""
    seen = _Seen()
    seen.searches = []
    real = trained.open_trained
    real_decoder = trained.TrainedModel.decoder

    def recording(root, hps, vocab, **options):
        seen.append(hps)
        return real(root, hps, vocab, **options)

    def decoder(self, settings=None, **options):
        built = real_decoder(self, settings, **options)
        seen.searches.append(built.settings)
        return built

    monkeypatch.setattr(trained, "open_trained", recording)
    monkeypatch.setattr(job, "open_trained", recording)
    monkeypatch.setattr(trained.TrainedModel, "decoder", decoder)
    return seen


class _Seen(list):
    searches: list


def _subcommand(name: str, args: list[str]) -> int:
    """`pointer-generator <name> args...` in this process, its flags reset afterwards."""
    try:
        return entry.run_subcommand(name, args)
    finally:
        flags_lib.FLAGS.unparse_flags()


def _serve(monkeypatch, experiment: list[str]):
    """The summarizer `serve` builds for the experiment (not compiled for every length,
    and stopped before it listens)."""
    services = helpers.stop_serve_before_listening(monkeypatch)
    assert _subcommand("serve", experiment) == 0
    return services[0].summarizer


def test_every_command_and_the_python_api_resolve_an_older_experiment_alike(
    older, opened, monkeypatch, tmp_path, capfd
):
    experiment = [f"--log_root={older.log_root}", "--exp_name=old"]
    # Decode mode saving a search of its own: the later commands' default (search.json).
    search = [f"--{k}={v}" for k, v in SEARCH.items()] + ["--save_search"]
    decode = ["--mode=decode", "--single_pass", f"--data_path={older.val_path}", *experiment]
    assert helpers.run_main_in_process([*decode, *search]) == 0, capfd.readouterr().err[-2000:]
    article = tmp_path / "article.txt"
    article.write_text(TEXT, encoding="utf-8")
    capfd.readouterr()
    assert _subcommand("summarize", [*experiment, "--tokens", str(article)]) == 0
    printed = capfd.readouterr().out.strip().splitlines()
    export_dir = str(tmp_path / "exported")
    assert _subcommand("export", [*experiment, f"--export_dir={export_dir}"]) == 0
    served = _serve(monkeypatch, experiment)
    api = pg.Summarizer.from_experiment(older.log_root, "old")

    decoded, summarized, exported, serving, python = opened
    assert python.option("ras_attention") == "dot" and python.option("ras_initial_state") == "zeros"
    *_, python_search = opened.searches
    assert {k: getattr(python_search, k) for k in SEARCH} == SEARCH
    assert all(search == python_search for search in opened.searches), opened.searches
    assert python.adagrad_init_acc == 1e-4  # the family's default, as the command line's
    # Decode mode runs beam_size articles at once (run_summarization); nothing else differs.
    assert decoded == python.replace(batch_size=SEARCH["beam_size"])
    assert summarized == exported == serving == python
    with open(os.path.join(export_dir, "assets", "export_info.json"), encoding="utf-8") as f:
        assert json.load(f)["decode"].items() >= SEARCH.items()
    # The same summary of the same article, whichever way the experiment was opened.
    want = api.summarize([TEXT])[0]
    assert printed == want.sentences and want.tokens
    # Decode mode's summary of the first validation article is the API's too.
    (folder,) = [d for d in os.listdir(older.root) if d.startswith("decode_")]
    with open(os.path.join(older.root, folder, "decoded", "000000_decoded.txt")) as f:
        decoded_words = f.read().split()
    first_article = helpers.make_pairs(2, older.words, seed=2)[0][0]  # tiny_setup's val data
    assert decoded_words and api.summarize([first_article])[0].tokens == decoded_words
    assert served.summarize([TEXT])[0].tokens == want.tokens
    assert pg.Summarizer.from_saved_model(export_dir).summarize([TEXT])[0].tokens == want.tokens


def test_the_resolver_fills_what_the_settings_predate_and_keeps_what_is_given(older):
    resolved = experiment_settings.resolve(
        older.root, {"beam_size": 3}, families=family_registry, saved_search=True
    )
    assert resolved.values["ras_attention"] == "dot"  # RASFamily.predating
    assert "beam_size" not in resolved.values  # given: the caller's
    assert resolved.vocab_path == os.path.join(older.root, "vocab")  # its own copy
    hps, search, vocab = trained.stored_settings(older.root, beam_size=3)
    assert (hps.option("ras_attention"), search["beam_size"], vocab) == (
        "dot",
        3,
        resolved.vocab_path,
    )
    # A model flag that contradicts the experiment is one error, for the API as well.
    with pytest.raises(FlagError, match="--ras_attention=cosine contradicts this experiment's"):
        experiment_settings.resolve(
            older.root, {"ras_attention": "cosine"}, families=family_registry
        )


def test_what_a_family_predates_is_that_familys_only(older, tmp_path):
    """RAS's `predating` (ras_attention=dot) is no setting of a pointer-generator
    experiment: before, the resolver added it to every experiment, and a given
    --ras_attention was "contradicted" by a setting the experiment never had."""
    root = tmp_path / "pg"
    root.mkdir()
    stored = experiment_settings.read(older.root, family_registry)
    stored["flags"] = {"model": "pointer_generator", "hidden_dim": 8, "emb_dim": 8}
    (root / "settings.json").write_text(json.dumps(stored), encoding="utf-8")
    values = experiment_settings.stored_values(stored, family_registry)
    assert "ras_attention" not in values
    ras = dict(stored, flags={"model": "ras_elman"})
    assert experiment_settings.stored_values(ras, family_registry)["ras_attention"] == "dot"


def test_a_stored_value_is_never_replaced_by_a_before_value(older):
    stored = experiment_settings.read(older.root, family_registry)
    stored["flags"]["ras_attention"] = "cosine"
    assert experiment_settings.stored_values(stored, family_registry)["ras_attention"] == "cosine"
