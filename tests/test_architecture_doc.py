"""docs/architecture.md's layout names every module of the package, each in its own
package's paragraph (issue 43, item 7: a module added without a line there fails here)."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "pointer_generator")
SKIPPED = {"__init__.py", "__main__.py"}


def _layout_sections() -> dict[str, str]:
    """{package name ("" for pointer_generator itself): the text of its paragraph} from
    the fenced block under "## Layout", up to the first folder outside the package."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    block = block.split("\ndata_tools/", 1)[0]  # the package's part only
    sections, name = {"": ""}, ""
    for line in block.splitlines():
        m = re.match(r"^  ([a-z_]+)/\s", line)
        if m:
            name = m.group(1)
            sections.setdefault(name, "")
        elif re.match(r"^  \S", line):
            name = ""  # a top-level module's line
        sections[name] += line + "\n"
    return sections


def _modules() -> dict[str, list[str]]:
    """{package name: its module files}, "" for the top-level modules."""
    out = {}
    for entry in sorted(os.listdir(PACKAGE)):
        path = os.path.join(PACKAGE, entry)
        if entry.endswith(".py") and entry not in SKIPPED:
            out.setdefault("", []).append(entry)
        elif os.path.isdir(path) and os.path.isfile(os.path.join(path, "__init__.py")):
            out[entry] = sorted(
                f for f in os.listdir(path) if f.endswith(".py") and f not in SKIPPED
            )
    return out


def test_every_module_is_named_in_its_packages_paragraph():
    sections = _layout_sections()
    missing = []
    for package, files in _modules().items():
        text = sections.get(package, "")
        missing += [
            f"{package}/{f}" if package else f
            for f in files
            if not re.search(r"(?<![\w/.])" + re.escape(f) + r"(?!\w)", text)
        ]
    assert missing == [], "not in docs/architecture.md's layout: " + ", ".join(missing)


def test_the_layout_names_no_module_that_is_not_there():
    """The other direction: a module removed or renamed leaves no stale line."""
    modules = _modules()
    stale = []
    for package, text in _layout_sections().items():
        if not package:
            continue
        named = set(re.findall(r"(?<![\w/.])([a-z_0-9]+\.py)(?!\w)", text))
        stale += [f"{package}/{n}" for n in sorted(named - set(modules.get(package, [])))]
    assert stale == [], "named in docs/architecture.md but not in the package: " + ", ".join(stale)
