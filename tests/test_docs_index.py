"""docs/README.md indexes every page of docs/, and every relative link in docs/*.md and
experiments/results/*.md points at a file that exists (the part after '#' ignored)."""

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
INDEX = os.path.join(DOCS, "README.md")

# [text](target) or [text](target "title"); images too.
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _links(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = INLINE_CODE.sub("", FENCE.sub("", text))
    return LINK.findall(text)


def _relative(target):
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith("#")


def _pages():
    return sorted(glob.glob(os.path.join(DOCS, "*.md"))) + sorted(
        glob.glob(os.path.join(ROOT, "experiments", "results", "*.md"))
    )


def test_every_docs_page_is_in_the_index():
    linked = {
        os.path.normpath(os.path.join(DOCS, target.split("#")[0]))
        for target in _links(INDEX)
        if _relative(target)
    }
    pages = [p for p in glob.glob(os.path.join(DOCS, "*.md")) if p != INDEX]
    assert len(pages) >= 13
    missing = sorted(os.path.basename(p) for p in pages if os.path.normpath(p) not in linked)
    assert missing == [], "not linked from docs/README.md: " + ", ".join(missing)


@pytest.mark.parametrize("page", _pages(), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_relative_link_points_at_a_file_that_exists(page):
    broken = []
    for target in _links(page):
        if not _relative(target):
            continue
        path = target.split("#")[0]
        if path and not os.path.exists(os.path.join(os.path.dirname(page), path)):
            broken.append(target)
    assert broken == [], f"{os.path.relpath(page, ROOT)} links to missing files: {broken}"
