"""The package layout's import rules (docs/architecture.md), checked on every import of every
module, function-level imports included: cli -> serving -> decoding -> summarizing ->
training / search / evaluation -> models -> layers, with data and runtime below them and
errors / hparams at the bottom; data_tools uses the library, never the reverse."""

import ast
import os

import pytest

from tests import helpers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "pointer_generator")

RANK = {
    "errors": 0,
    "hparams": 0,
    "exit_codes": 0,
    "data": 1,
    "runtime": 1,
    "layers": 2,
    "models": 3,
    "training": 4,
    "search": 4,  # the beam search over any family's step
    "evaluation": 4,
    "summarizing": 5,  # the public API for raw text; opening a trained experiment
    "decoding": 6,  # decode mode's job, its folder, records and shards
    "serving": 7,  # the HTTP server over summarizing
    "cli": 8,
    "run_summarization": 9,  # the original's entry point name, a shim over cli
    "rouge": 9,  # the ROUGE command under the name earlier docs gave it, a shim
}
# Arrows that break the ranks on purpose (docs/architecture.md).
SIDEWAYS = {
    ("pointer_generator.training.epochs", "pointer_generator.evaluation.evaluate"),
    ("pointer_generator.summarizing.summarizer", "pointer_generator.decoding.folder"),
    # A kept search is the graph `export` writes (summarizing/kept_search.py: keep_decoder).
    ("pointer_generator.summarizing.kept_search", "pointer_generator.serving.saved_model"),
}


def _modules():
    for root, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                yield rel.removesuffix(".__init__"), path


def _imports(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a.b import c` imports module a.b.c when there is one, else from a.b.
            yield from (_module_of(f"{node.module}.{a.name}") for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def _module_of(dotted: str) -> str:
    """The longest prefix of `dotted` that is a module or package of this repository."""
    parts = dotted.split(".")
    while len(parts) > 1:
        path = os.path.join(ROOT, *parts)
        if os.path.isfile(path + ".py") or os.path.isdir(path):
            return ".".join(parts)
        parts.pop()
    return parts[0]


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "pointer_generator" and len(parts) > 1 else None


def test_every_package_is_ranked():
    parts = {_part(m) for m, _ in _modules()} - {None}
    assert parts <= set(RANK), parts - set(RANK)


def test_imports_point_down_the_layers():
    found = set()
    for module, path in _modules():
        source = _part(module)
        if source is None:  # the package's own __init__ (the public API) may import anything
            continue
        for target in _imports(path):
            dest = _part(target)
            if dest is None or dest == source:
                continue
            if RANK[dest] >= RANK[source] and RANK[dest] > 0:
                found.add((module, target))
    assert found - SIDEWAYS == set(), sorted(found - SIDEWAYS)


def test_only_the_command_line_reads_flags():
    """Configs are built from flags in cli/ only: absl is imported nowhere else."""
    for module, path in _modules():
        if _part(module) in ("cli", "run_summarization"):
            continue
        for target in _imports(path):
            assert not target.startswith("absl"), (module, target)


# Where a command's argv `main()` and `if __name__ == "__main__"` may be: cli/ and the
# top-level shims that keep older command names (rank 9 above).
COMMAND_PARTS = {"cli"} | {part for part, rank in RANK.items() if rank == 9}


def _is_main_guard(node) -> bool:
    """`if __name__ == "__main__":` (either side)."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    texts = {s.value for s in sides if isinstance(s, ast.Constant)}
    return names == {"__name__"} and texts == {"__main__"}


def _says_moved(node) -> bool:
    """A main guard that only says where its command moved (`exit_codes.command_moved`)."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return len(calls) == 1 and getattr(calls[0].func, "id", "") == "command_moved"


@pytest.mark.parametrize(
    "old, new",
    [
        ("pointer_generator.evaluation.rouge", "pointer_generator.cli.score_rouge"),
        ("pointer_generator.data.binfile", "pointer_generator.cli.check_bin_files"),
        ("pointer_generator.data.ptb_tokenizer", "pointer_generator.cli.ptb_tokenize"),
    ],
)
def test_a_moved_command_says_where_it_went(old, new):
    done = helpers.run_python(["-m", old, "--help"], timeout=120)
    assert done.returncode == 2, done
    assert done.stderr.strip() == f"error: this command moved: run python -m {new} (same arguments)"


def test_commands_live_in_cli_and_the_library_holds_no_main():
    """Issue 43, item 5: a command's argument parsing and `main()` are in cli/ (or a
    top-level shim); library modules hold only library code (no `def main(`, no
    `if __name__ == "__main__"`)."""
    found = []
    for module, path in _modules():
        if _part(module) in COMMAND_PARTS:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "main":
                found.append(f"{module}:{node.lineno}: def main(")
            elif _is_main_guard(node) and not _says_moved(node):
                found.append(f"{module}:{node.lineno}: if __name__ == '__main__'")
    assert found == [], "move these commands to pointer_generator/cli/: " + ", ".join(found)


def test_the_library_never_imports_data_tools_or_experiments():
    for module, path in _modules():
        for target in _imports(path):
            assert target.split(".")[0] not in ("data_tools", "experiments", "tests"), (
                module,
                target,
            )
