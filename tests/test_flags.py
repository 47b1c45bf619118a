"""Flags: the original's names and defaults, the additions, and start-up checks."""

import os

import pytest

import pointer_generator as pg
from pointer_generator.cli import configs, flag_checks
from pointer_generator.errors import FlagError
from tests import helpers

# Spec section 1.1: every flag of the original release with its default.
ORIGINAL_DEFAULTS = {
    "data_path": "",
    "vocab_path": "",
    "mode": "train",
    "single_pass": False,
    "log_root": "",
    "exp_name": "",
    "hidden_dim": 256,
    "emb_dim": 128,
    "batch_size": 16,
    "max_enc_steps": 400,
    "max_dec_steps": 100,
    "beam_size": 4,
    "min_dec_steps": 35,
    "vocab_size": 50000,
    "lr": 0.15,
    "adagrad_init_acc": 0.1,
    "rand_unif_init_mag": 0.02,
    "trunc_norm_init_std": 1e-4,
    "max_grad_norm": 2.0,
    "pointer_gen": True,
    "coverage": False,
    "cov_loss_wt": 1.0,
    "convert_to_coverage_model": False,
    "restore_best_model": False,
    "debug": False,
}

ADDED_DEFAULTS = {
    "max_steps": 0,
    "seed": 111,
    "distribution_strategy": "default",
    "tpu": "",
    "num_gpus": -1,
    "num_cpu_devices": 1,
    "tf1_checkpoint": "",
    "xla": False,
    "save_checkpoint_secs": 60,
    "static_shapes": None,  # length buckets; 0 = the original's padding
    "length_buckets": 4,
    "decoder_buckets": 1,  # the original's: every summary padded to max_dec_steps
    "max_oovs": 400,
    "decode_attention": "original",
    "safe_numerics": True,
    "eval_interval_secs": 10.0,
    "max_eval_iterations": 0,
    "checkpoint_data_position": True,
    "log_every_n_steps": 0,  # a line every log_every_secs (1: the original's every step)
    "log_every_secs": 10.0,
    "eval_idle_secs": 0.0,  # 0: the original's endless eval
    "save_search": False,  # a decode changes no later command's search unless asked
    "decode_batch_size": 32,
    "full_final_dist": False,
    "trigram_blocking": False,
    "length_penalty": 0.0,
    "attention_pages": 100,
    "max_decode_examples": 0,
    "fused_recurrence": True,
    "mixed_precision": False,
}


def test_original_flags_have_the_original_defaults():
    defaults = helpers.flag_defaults()
    for name, value in ORIGINAL_DEFAULTS.items():
        assert defaults[name] == value, name
        assert type(defaults[name]) is type(value), name


def test_added_flags_and_their_defaults():
    defaults = helpers.flag_defaults()
    assert {k: defaults[k] for k in ADDED_DEFAULTS} == ADDED_DEFAULTS


def test_hparams_built_from_default_flags_are_the_hparams_defaults():
    values = helpers.flag_defaults()
    assert configs.hparams(type("F", (), values)) == pg.HParams()


@pytest.fixture
def setup(tmp_path):
    return helpers.tiny_setup(tmp_path, n_train=4, n_val=4)


def _flags(setup, **overrides):
    values = dict(
        data_path=setup.train_path,
        vocab_path=setup.vocab_path,
        log_root=setup.log_root,
        exp_name=setup.exp_name,
    )
    values.update(overrides)
    return helpers.flag_namespace(**values)


def test_valid_train_flags_pass(setup):
    flag_checks.validate(_flags(setup), ["prog"])


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"single_pass": True}, "cannot be used in train mode"),
        ({"input_gap": True}, "--input_gap is for eval mode with --single_pass"),
        ({"input_gap": True, "mode": "eval"}, "--input_gap is for eval mode with --single_pass"),
        ({"mode": "evaluate"}, "--mode must be one of train, eval, decode"),
        ({"convert_to_coverage_model": True}, "needs --coverage=1"),
        (
            {"convert_to_coverage_model": True, "coverage": True, "restore_best_model": True},
            "one at a time",
        ),
        ({"restore_best_model": True, "mode": "decode"}, "train mode only"),
        ({"data_path": ""}, "--data_path is required"),
        ({"data_path": "/nonexistent/train_*"}, "matches no files"),
        ({"vocab_path": "/nonexistent/vocab"}, "is not a file"),
        ({"log_root": ""}, "--log_root is required"),
        ({"mode": "eval"}, "run in train mode to create it"),
        ({"mode": "decode", "exp_name": "other"}, "run in train mode to create it"),
        ({"max_steps": -1}, "--max_steps must be >= 0"),
        ({"batch_size": 0}, "--batch_size must be positive"),
        ({"lr": 0.0}, "--lr must be > 0"),
        ({"distribution_strategy": "tpu", "tpu": "local"}, "needs --static_shapes=1"),
        ({"distribution_strategy": "tpu", "static_shapes": True}, "needs --tpu"),
        ({"distribution_strategy": "mirrored", "tpu": "grpc://x:8470"}, "--tpu is given"),
        ({"num_cpu_devices": 2}, "only used by --distribution_strategy=mirrored"),
        ({"debug": True, "xla": True}, "--debug cannot be combined with --xla"),
        ({"tf1_checkpoint": "/nonexistent/model.ckpt-1"}, "neither a checkpoint prefix"),
    ],
)
def test_contradictions_are_one_flag_error(setup, overrides, message):
    with pytest.raises(FlagError, match=message):
        flag_checks.validate(_flags(setup, **overrides), ["prog"])


def test_leftover_arguments_are_rejected(setup):
    with pytest.raises(FlagError, match="unexpected command-line arguments"):
        flag_checks.validate(_flags(setup), ["prog", "stray"])


def test_one_off_operations_need_no_data(setup):
    flag_checks.validate(_flags(setup, data_path="", restore_best_model=True), ["prog"])


def test_eval_single_pass_is_allowed_once_the_experiment_exists(setup):
    os.makedirs(os.path.join(setup.log_root, setup.exp_name, "train"))
    flag_checks.validate(_flags(setup, mode="eval", single_pass=True), ["prog"])


# ------------------------------------------------------------------------------ the CLI
def _cli_error(args, **env):
    proc = helpers.run_cli(args, timeout=60, **env)
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    return proc, lines


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--mode=train", "--single_pass=1"], "error: --single_pass is for decode"),
        (
            ["--convert_to_coverage_model=1"],
            "error: --convert_to_coverage_model needs --coverage=1",
        ),
        (["--mode=eval", "--exp_name=missing"], "run in train mode to create it"),
        (["--no_such_flag=3"], "error: Unknown command line flag 'no_such_flag'"),
        (["--batch_size=many"], "error: flag --batch_size=many"),
    ],
)
def test_cli_reports_bad_flags_in_one_line_with_status_2(setup, extra, message):
    args = [
        f"--data_path={setup.train_path}",
        f"--vocab_path={setup.vocab_path}",
        f"--log_root={setup.log_root}",
        "--exp_name=exp",
        *extra,
    ]
    proc, lines = _cli_error(args)
    assert proc.returncode == 2
    assert len(lines) == 1, proc.stderr  # nothing else: TensorFlow is not even imported
    assert message in lines[0]
    assert "Traceback" not in proc.stderr


def test_flagfile_is_read(setup, tmp_path):
    flagfile = tmp_path / "exp.flags"
    flagfile.write_text(
        f"--data_path={setup.train_path}\n--vocab_path={setup.vocab_path}\n"
        f"--log_root={setup.log_root}\n--single_pass=true\n"
    )
    proc, lines = _cli_error([f"--flagfile={flagfile}"])
    assert proc.returncode == 2
    assert lines == [
        "error: --single_pass is for decode (and eval) mode; it cannot be used in train mode"
    ]
