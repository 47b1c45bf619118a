"""docs/reliability.md cites only tests that exist."""

from __future__ import annotations

import os

from tests import helpers


def test_reliability_doc_names_only_tests_that_exist():
    """Every test docs/reliability.md cites (`file.py::test_name`, or `::test_name` for
    the file cited last in the same row) is defined in that file."""
    import re

    with open(os.path.join(helpers.REPO_ROOT, "docs", "reliability.md"), encoding="utf-8") as f:
        rows = [line for line in f if line.startswith("|")]
    cited = []
    for row in rows:
        current = None
        for cell in row.split("|"):
            for file, name in re.findall(r"`(test_\w+\.py)?::(test_\w+|\*)", cell):
                current = file or current
                cited.append((current, name))
    assert len(cited) > 40
    for file, name in cited:
        assert file is not None, name
        with open(os.path.join(helpers.REPO_ROOT, "tests", file), encoding="utf-8") as f:
            source = f.read()
        assert name == "*" or f"def {name}(" in source, f"{file}::{name} does not exist"
