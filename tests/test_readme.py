"""The README opens with exactly two set-up commands, and CI runs both verbatim."""

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


def test_ci_runs_the_readme_commands_in_order():
    """CI runs the quick-start line, then the test line, each verbatim (issue 45 item 1)."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        quickstart, tests = _blocks(f.read())[:2]
    with open(os.path.join(REPO_ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci_lines = [line.strip() for line in f]
    assert quickstart in ci_lines and tests in ci_lines
    assert ci_lines.index(quickstart) < ci_lines.index(tests)


def test_the_set_up_commands_install_into_a_virtual_environment():
    """Debian's python3 refuses `pip install` outside a virtual environment
    (externally-managed-environment) and has no `python` command (issue 45, item 1): both
    commands make one with python3 and use it for everything after."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        first_two = _blocks(f.read())[:2]
    for command in first_two:
        steps = [s.strip() for s in command.split("&&")]
        venv = next(i for i, s in enumerate(steps) if s.startswith("python3 -m venv "))
        activate = steps.index(". .venv/bin/activate")
        pip = next(i for i, s in enumerate(steps) if s.startswith("pip install"))
        assert venv < activate < pip, command
        assert not any(s.startswith("python ") for s in steps[:activate]), command
    with open(os.path.join(REPO_ROOT, ".gitignore"), encoding="utf-8") as f:
        assert "/.venv/" in f.read().split()
