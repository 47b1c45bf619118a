"""The public API: the names of docs/api.md, importing them lazily, and its example run as
written."""

import os
import re
import subprocess
import sys

import pointer_generator as pg
from tests import helpers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_DOC = os.path.join(ROOT, "docs", "api.md")


def test_every_public_name_resolves_and_has_a_docstring():
    assert len(pg.__all__) <= 24  # a short list (20, and the family contract's 4)
    for name in pg.__all__:
        obj = getattr(pg, name)
        assert (obj.__doc__ or "").strip(), name
        assert name in dir(pg)


def test_docs_list_every_public_name():
    with open(API_DOC, encoding="utf-8") as f:
        text = f.read()
    for name in pg.__all__:
        assert f"pg.{name}" in text, name


def test_importing_the_package_does_not_start_tensorflow():
    code = "import sys, pointer_generator; print('tensorflow' in sys.modules)"
    out = helpers.run_python(["-c", code], timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_unknown_names_are_attribute_errors():
    try:
        pg.not_a_name  # noqa: B018
    except AttributeError as e:
        assert "not_a_name" in str(e)
    else:
        raise AssertionError("no AttributeError")


def test_the_documented_example_runs(tmp_path):
    with open(API_DOC, encoding="utf-8") as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(code)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=helpers.subprocess_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    loss = [line for line in lines if line.startswith("loss after 20 steps: ")]
    assert loss and "global norm" in loss[0]
    summary = [line for line in lines if line.startswith("summary: ")]
    assert len(summary) == 1 and len(summary[0].split()) >= 1 + 3  # min_dec_steps=3
    assert any(line.startswith("attention (") and "p_gen (" in line for line in lines)
