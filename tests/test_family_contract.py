"""The model-family contract (models/family.py): every family builds from the flags,
gives the shared search its step, and reads and explains checkpoints of its own; the
search, the runtime and the trainer never ask which family they hold; one opener of a
trained experiment; the package's command names."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.models import family_registry
from pointer_generator.models.family import SearchInputs
from pointer_generator.runtime import checkpointing
from tests import helpers

VOCAB = 30
TINY = {
    "pointer_generator": {},
    "abs": {"abs_encoder": "attention", "context_window": 3, "pointer_gen": False},
    "ras_elman": {"conv_width": 3, "max_positions": 20, "pointer_gen": False},
    "ras_lstm": {"conv_width": 3, "max_positions": 20, "pointer_gen": False},
}


def _model(name: str, **sizes):
    hps = helpers.hparams(model=name, **{**TINY[name], **sizes})
    tf.keras.utils.set_random_seed(0)
    return hps, family_registry.build_model(hps, VOCAB)


def _checkpoint_shapes(model, tmp_path, name: str) -> dict:
    prefix = tf.train.Checkpoint(model=model).write(str(tmp_path / name))
    return checkpointing.variable_shapes(prefix)


@pytest.mark.parametrize("name", list(family_registry.FAMILIES))
def test_each_family_gives_the_search_its_step(name):
    hps, model = _model(name)
    b, t, k = 3, 7, 2
    rng = np.random.default_rng(0)
    enc = tf.constant(rng.integers(4, VOCAB, (b, t)), tf.int32)
    mask = tf.constant((np.arange(t)[None] < np.array([[7], [5], [2]])).astype(np.float32))
    inputs = SearchInputs(enc, mask, enc, tf.constant(0))
    start = model.search_start(inputs, k, full_final_dist=True)
    rows = tf.nest.flatten(start.carry)[0].shape[0]
    assert rows == b * k
    tokens = tf.fill([b * k], 2)
    probs, attn, p_gen, carry = start.step(tokens, start.carry, start.articles)
    assert probs.shape[0] == b * k and attn.shape == (b * k, t) and p_gen.shape == (b * k,)
    np.testing.assert_allclose(tf.reduce_sum(probs, -1), 1.0, atol=1e-5)
    assert tf.nest.map_structure(lambda x: x.shape, carry) == tf.nest.map_structure(
        lambda x: x.shape, start.carry
    )


@pytest.mark.parametrize("name", list(family_registry.FAMILIES))
def test_each_family_reads_and_explains_its_checkpoints(name, tmp_path):
    hps, model = _model(name)
    shapes = _checkpoint_shapes(model, tmp_path, name)
    assert model.checkpoint_mismatches(shapes) == []
    implied = family_registry.implied_settings(shapes)
    width = "emb_dim" if name in ("pointer_generator", "abs") else "hidden_dim"
    assert implied["vocab_size"] == VOCAB and implied[width] == getattr(hps, width)
    assert implied.get("model", "pointer_generator") == name
    assert family_registry.embedding_key(shapes) in shapes
    # Other sizes: the phrase names the flag and both values.
    _, wider = _model(name, **{width: getattr(hps, width) + 2})
    problems = wider.checkpoint_mismatches(shapes)
    assert any(f"--{width}={getattr(hps, width) + 2}" in p for p in problems), problems
    # Another family's checkpoint is named as such.
    other = "abs" if name != "abs" else "ras_elman"
    _, stranger = _model(other)
    assert stranger.checkpoint_mismatches(shapes), (other, name)


def test_ras_checkpoints_tell_elman_from_lstm(tmp_path):
    _, elman = _model("ras_elman")
    _, lstm = _model("ras_lstm")
    shapes = _checkpoint_shapes(elman, tmp_path, "elman")
    assert family_registry.implied_settings(shapes)["model"] == "ras_elman"
    assert "it is a --model=ras_elman checkpoint but --model=ras_lstm" in " ".join(
        lstm.checkpoint_mismatches(shapes)
    )


def test_search_options_a_family_lacks_are_refused_by_the_family(tmp_path):
    from pointer_generator.errors import FlagError

    hps, model = _model("pointer_generator")
    helpers.write_vocab(str(tmp_path / "vocab"), VOCAB - 4)
    vocab = pg.Vocab(str(tmp_path / "vocab"), VOCAB)
    assert vocab.size() == VOCAB
    with pytest.raises(FlagError, match=r"^--feature_weights \(ABS\+\) is for --model=abs"):
        settings = pg.SearchSettings.from_hparams(hps, feature_weights={"lm": 1.0})
        pg.BeamSearchDecoder(model, vocab, hps, settings)
    # [UNK] blocking is the decoder's, for every family (its candidates keep a spare).
    pg.BeamSearchDecoder(model, vocab, hps, pg.SearchSettings.from_hparams(hps, block_unk=True))


# Where code outside models/ may still name a family's switch, and why.
SWITCH_READERS = {
    # The original's data format: targets in extended ids when the pointer copies (the
    # family fixes pointer_gen; the pipeline reads the setting, not the family).
    "data/input_pipeline.py": "extended-id targets",
}
_ASKS_NAME = re.compile(
    r"\.model\s*[!=]=|[!=]=\s*[\"'](pointer_generator|abs|ras_\w+)[\"']"
    r"|[\"'](pointer_generator|abs|ras_\w+)[\"']\s*(==|!=|in\b)|model\.hps\b"
)
_READS_SWITCH = re.compile(
    r"\b(hps|fv|cfg|self\.hps|FLAGS)\.(pointer_gen|coverage|loss_reduction|cov_loss_wt"
    r"|abs_\w+|ras_\w+|context_window|smoothing_window|conv_width|max_positions|family_init)\b"
    # ... or by its name: compared, looked up, or in a parameter named after it
    r"|([!=]=|\bin)\s*[(\[{]?\s*[\"'](pointer_gen|coverage|cov_loss_wt)[\"']"
    r"|(\[|getattr\(\w+,\s*|\.get\()[\"'](pointer_gen|coverage|cov_loss_wt)[\"']"
)
# ... or names a code path after a switch (the layers, which the families are built
# from, may: `CoverageAttention(use_coverage=...)` is eq. 11, not a family question).
_NAMES_SWITCH = re.compile(r"\w+_coverage\b(?!_model)|\bCOVERAGE_\w+")
BUILDING_BLOCKS = ("layers",)


def test_nothing_outside_models_asks_which_family():
    """No family name compared and no family switch read anywhere in the package outside
    models/ (issue 43, item 1): the code asks the family (`models/family_registry.py`)."""
    root = os.path.join(helpers.REPO_ROOT, "pointer_generator")
    found = []
    for dirpath, _, names in os.walk(root):
        part = os.path.relpath(dirpath, root)
        if part.split(os.sep)[0] == "models":
            continue
        for name in sorted(n for n in names if n.endswith(".py")):
            rel = os.path.normpath(os.path.join(part, name))
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                for number, line in enumerate(f, start=1):
                    code = line.split("#", 1)[0]
                    if (
                        _ASKS_NAME.search(code)
                        or (_READS_SWITCH.search(code) and rel not in SWITCH_READERS)
                        or (
                            _NAMES_SWITCH.search(code)
                            and part.split(os.sep)[0] not in BUILDING_BLOCKS
                        )
                    ):
                        found.append(f"{rel}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "code",
    [
        'and not (mode == "train" and name == "coverage")',  # the resolver's, before
        'x = fv["coverage"].value',
        'if name in ("pointer_gen", "coverage"):',
        'getattr(hps, "coverage")',
        "trainer.load_tf1(path, allow_missing_coverage=True)",  # the trainer's, before
        "prefix + checkpointing.COVERAGE_INIT_SUFFIX",  # runtime's, before
        "if hps.pointer_gen:",
        'if hps.model == "abs":',
    ],
)
def test_the_guard_sees_the_leaks_it_is_for(code):
    assert _ASKS_NAME.search(code) or _READS_SWITCH.search(code) or _NAMES_SWITCH.search(code)


def test_one_search_settings_dataclass_and_hparams_without_mode():
    import dataclasses

    import pointer_generator as pg

    assert "mode" not in {f.name for f in dataclasses.fields(pg.HParams)}
    search_fields = {f.name for f in dataclasses.fields(pg.SearchSettings)}
    decode_fields = {f.name for f in dataclasses.fields(pg.DecodeConfig)}
    assert not (search_fields & decode_fields)  # the decode job holds one `search`
    settings = pg.SearchSettings(length_penalty=None)
    assert settings.record()["length_penalty"] == 0.0  # earlier decode folders still resume


@pytest.mark.parametrize(
    "module, expected",
    [
        ("pointer_generator.cli", "pointer-generator --mode=train"),
        ("pointer_generator.rouge", "usage"),
    ],
)
def test_the_package_command_names_run(module, expected):
    proc = helpers.run_python(["-m", module, "--help"], timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert expected.lower() in (proc.stdout + proc.stderr).lower()


@pytest.mark.parametrize(
    "name, extra",
    [
        ("pointer_generator", {"coverage": True}),
        ("abs", {"abs_encoder": "bow"}),
        ("abs", {"abs_encoder": "conv"}),
        ("abs", {"abs_encoder": "attention"}),
        ("abs", {"abs_encoder": "bow", "abs_namas": True}),
        ("abs", {"abs_encoder": "conv", "abs_namas": True}),
        ("abs", {"abs_encoder": "attention", "abs_namas": True}),
        ("ras_elman", {"ras_initial_state": "learned"}),
        ("ras_lstm", {"ras_initial_state": "learned"}),
    ],
)
def test_every_weight_of_every_family_is_saved_and_restored(name, extra, tmp_path):
    """A weight the checkpoint does not hold is re-drawn at every restore: ABS's
    convolutional encoder lost its kernels that way (issue 29), so eval and decode ran
    an untrained encoder."""
    hps = helpers.hparams(model=name, **{**TINY[name], **extra})
    tf.keras.utils.set_random_seed(0)
    model = family_registry.build_model(hps, VOCAB)
    prefix = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    tf.keras.utils.set_random_seed(1)
    fresh = family_registry.build_model(hps.replace(seed=hps.seed + 1), VOCAB)
    tf.train.Checkpoint(model=fresh).read(prefix).assert_existing_objects_matched()
    assert len(fresh.weights) == len(model.weights)
    for saved, restored in zip(model.weights, fresh.weights, strict=True):
        np.testing.assert_array_equal(saved.numpy(), restored.numpy(), err_msg=saved.path)


def test_a_conv_checkpoint_without_its_encoder_is_refused(tmp_path):
    """Checkpoints written before the fix lack the convolutions: one clear problem, not
    a silently re-drawn encoder."""
    from pointer_generator.models.abs_model import CONV_KERNEL_KEY

    hps, model = _model("abs", abs_encoder="conv")
    shapes = _checkpoint_shapes(model, tmp_path, "conv")
    assert CONV_KERNEL_KEY in shapes and model.checkpoint_mismatches(shapes) == []
    old = {k: v for k, v in shapes.items() if "/encoder/" not in k}
    (problem,) = model.checkpoint_mismatches(old)
    assert "no convolutional encoder" in problem and "train the model again" in problem


def test_the_families_load_without_tensorflow():
    """The command line asks the families about settings before it starts TensorFlow
    (--help and flag errors in a fraction of a second)."""
    code = (
        "import sys\n"
        "from pointer_generator.models import family_registry\n"
        "assert family_registry.model_flags() and family_registry.settings({'model': 'abs'})\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "from pointer_generator.layers import torch_init\n"
        "from pointer_generator.models import sentence_family\n"
        "assert sentence_family.INITS == torch_init.SCHEMES\n"
    )
    proc = helpers.run_python(["-c", code], timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_model_that_lacks_a_method_of_the_contract_is_one_error():
    """A registered family whose model has no `search_start` is refused when it is built,
    naming what it lacks, not at the first decode's AttributeError."""
    from pointer_generator.errors import FlagError
    from pointer_generator.models.family import ModelFamily

    class NoSearch(ModelFamily):
        name = "no_search"

        def build(self, hps, vocab_size):
            model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
            model.checkpoint_mismatches = lambda shapes: []
            model.parameter_summary = lambda: "a model"
            return model

    family_registry.register(NoSearch())
    try:
        with pytest.raises(FlagError, match="--model=no_search: .* lacks search_start"):
            family_registry.build_model(helpers.hparams(model="no_search"), VOCAB)
    finally:
        family_registry.unregister("no_search")


def test_every_family_has_its_settings_as_a_frozen_config_dataclass():
    """`ModelFamily.config(hps)`: the HParams fields only the family reads and its
    options, defaults filled (the pointer-generator's switches; ABS's encoder, ...)."""
    import dataclasses

    pg_config = family_registry.get("pointer_generator").config(
        helpers.hparams(pointer_gen=False, coverage=True)
    )
    assert dataclasses.asdict(pg_config) == {"pointer_gen": False, "coverage": True}
    abs_config = family_registry.get("abs").config(helpers.hparams(model="abs", context_window=3))
    assert (abs_config.context_window, abs_config.abs_encoder) == (3, "attention")
    with pytest.raises(dataclasses.FrozenInstanceError):
        abs_config.context_window = 4


def test_a_family_conversion_is_checked_where_it_is_registered():
    """A conversion whose checkpoints training's scan of train/ would not know (its
    suffix), or whose flag is a setting already, is refused by `register`."""
    from pointer_generator.errors import FlagError
    from pointer_generator.models.family import Conversion, ModelFamily

    def family(flag: str, suffix: str):
        conversion = Conversion(flag, {}, {}, lambda key: False, "nothing", suffix, "", "")
        return type("F", (ModelFamily,), {"name": "f", "CONVERSIONS": (conversion,),
                                          "build": lambda self, hps, v: None})()  # fmt: skip

    for flag, suffix, message in (
        ("to_f", "_f", "must look like _<word>_init"),
        ("coverage", "_f_init", "must be a new flag name"),
    ):
        with pytest.raises(FlagError, match=message):
            family_registry.register(family(flag, suffix))
    assert "f" not in family_registry.names()
    good = family_registry.register(family("to_f", "_f_init"))
    try:
        assert good.conversions == frozenset({"to_f"}) and good.conversion("to_f").suffix
    finally:
        family_registry.unregister("f")


def test_a_setting_its_models_never_read_is_refused_from_python_too():
    from pointer_generator.errors import FlagError

    hps = helpers.hparams(model="abs", decode_attention="train_consistent")
    with pytest.raises(FlagError, match="^--decode_attention is no setting of --model=abs"):
        family_registry.get("abs").check(hps)
    family_registry.get("pointer_generator").check(hps.replace(model="pointer_generator"))
