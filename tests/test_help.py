"""Help that helps (issue 19): every flag is in exactly one help group, every command
answers --help with status 0, and `summarize --help` lists its own flags."""

from __future__ import annotations

import pytest

from pointer_generator.cli import help as help_lib
from pointer_generator.cli import summarize
from tests import helpers


def test_every_flag_is_in_exactly_one_help_group():
    from absl import flags

    from pointer_generator.cli import flags as flags_lib

    names = list(flags_lib.define_flags(flags.FlagValues()))
    grouped = [n for group in help_lib.FLAG_GROUPS.values() for n in group]
    assert sorted(grouped) == sorted(names)


@pytest.mark.parametrize(
    "command, expect",
    [
        (["-m", "pointer_generator.cli.entry", "--help"], "data flags:"),
        (["-m", "pointer_generator.cli.entry", "--helpfull"], "All flags, absl's included"),
        (["-m", "pointer_generator.run_summarization", "-h"], "decoding flags:"),
        (["-m", "pointer_generator.cli.entry", "summarize", "--help"], "--beam_size"),
        (["-m", "pointer_generator.cli.entry", "quickstart", "--help"], "--train_steps"),
        (["-m", "pointer_generator.cli.inspect_checkpoint", "--help"], "shapes imply"),
        (["-m", "data_tools.convert", "--help"], "--format"),
        (["-m", "data_tools.make_datafiles", "--help"], "--url_lists_dir"),
        (["-m", "data_tools.toy_data", "--help"], "--num_train"),
        (["-m", "pointer_generator.cli.score_rouge", "--help"], "--decoded_dir"),
        (["-m", "pointer_generator.cli", "--help"], "data flags:"),
        (["-m", "pointer_generator.cli.check_bin_files", "--help"], "FILE_OR_GLOB"),
        (["-m", "pointer_generator.cli.ptb_tokenize", "--help"], "standard input"),
        (["-m", "experiments.benchmarks.padding", "--help"], "python -m experiments.benchmarks"),
    ],
)
def test_every_command_answers_help_with_status_0(command, expect):
    proc = helpers.run_python(command, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expect in proc.stdout


def test_summarize_help_lists_its_flags():
    from pointer_generator.cli import flags as flags_lib

    text = summarize.help_text(flags_lib.FLAGS)
    assert "pointer-generator summarize --log_root=L --exp_name=E" in text
    assert "--tokens" in text and "Example:" in text
