"""The tree stays `ruff check` clean (lint rules and the complexity limit of ruff.toml)
and `ruff format` clean, so that CI catches a change that forgot either."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run([*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module", autouse=True)
def _ruff_installed():
    if shutil.which("ruff") is None and _ruff("--version").returncode != 0:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")


def test_ruff_check_is_clean():
    proc = _ruff("check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_format_leaves_every_file_unchanged():
    proc = _ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_complexity_limit_is_configured():
    with open(os.path.join(ROOT, "ruff.toml"), encoding="utf-8") as f:
        text = f.read()
    assert '"C90"' in text and "max-complexity = 12" in text
