"""The README opens with exactly two set-up commands, and CI runs the second verbatim."""

import os
import re

from tests.conftest import REPO_ROOT


def _blocks(text):
    return re.findall(r"```\n(.*?)\n```", text, re.S)


def test_readme_has_quickstart_and_test_commands_first():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    first_two = _blocks(readme)[:2]
    assert "pointer-generator quickstart" in first_two[0]
    assert "pytest" in first_two[1]
    assert all("\n" not in b for b in first_two), "each set-up command is one line"


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        test_command = _blocks(f.read())[1]
    with open(os.path.join(REPO_ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci_lines = [line.strip() for line in f]
    assert test_command in ci_lines
