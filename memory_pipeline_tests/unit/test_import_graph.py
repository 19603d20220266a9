"""The package's folders import only downward: a layer may use the layers below it, never one above or beside
it, so no circle can form. A new folder or top-level module must be given its place here."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "memory_pipeline"
# Lowest first. Each folder (or top-level module) of memory_pipeline/ in exactly one layer.
LAYERS: list[set[str]] = [
    {"names", "sentences", "settings", "limits", "ports", "language", "__init__"},
    {"sessions", "locks", "io_managers", "partitions"},
    {"stores", "recall"},
    {"summarize", "local"},
    {"reflect", "checks", "instance"},
    {"search", "resources"},
    {"curation", "jobs"},
    {"assets", "schedules", "sensors", "control"},
    {"definitions"},
    {"backfill"},
    {"fresh"},
    {"service"},
    {"commands", "folders_command"},
    {"cli"},
    {"__main__"},
]


def _unit(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def import_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) between different folders of the package, with the files that make each edge."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = _unit(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if parts[0] == "memory_pipeline" and len(parts) > 1 and parts[1] != unit:
                    edges[(unit, parts[1])].append(str(path.relative_to(PACKAGE.parent)))
    return edges


def test_every_folder_has_one_layer() -> None:
    units = {_unit(p) for p in PACKAGE.rglob("*.py")}
    placed = [name for layer in LAYERS for name in layer]
    assert len(placed) == len(set(placed)), "a folder is in two layers"
    assert units <= set(placed), f"give these a layer: {sorted(units - set(placed))}"


def test_imports_point_only_down() -> None:
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    upward = {
        f"{a} -> {b}": files
        for (a, b), files in import_edges().items()
        if b in layer and a in layer and layer[b] >= layer[a]
    }
    assert not upward, upward


def test_the_walk_reads_the_imports() -> None:
    # The walk reads both import forms: a checker that saw none would pass any graph.
    edges = import_edges()
    assert ("service", "search") in edges and ("cli", "service") in edges
    assert any(a == "assets" and b == "stores" for a, b in edges)


def _top_level_imports(folder: Path) -> dict[str, set[str]]:
    """file -> the top-level packages it imports (both import forms, at any depth of the file)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found[str(path.relative_to(ROOT))].add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                found[str(path.relative_to(ROOT))] |= {alias.name.split(".")[0] for alias in node.names}
    return found


ROOT = PACKAGE.parent
# What each top-level folder must never import: tests and benchmarks share testkit, never each other, and the
# product imports none of the three.
FORBIDDEN = {
    "memory_pipeline": {"memory_pipeline_tests", "bench", "testkit"},
    "testkit": {"memory_pipeline_tests", "bench"},
    "memory_pipeline_tests": {"bench"},
    "bench": {"memory_pipeline_tests"},
}


def test_tests_and_benchmarks_share_only_testkit() -> None:
    crossing = {
        path: sorted(imported & FORBIDDEN[folder])
        for folder in FORBIDDEN
        for path, imported in _top_level_imports(ROOT / folder).items()
        if imported & FORBIDDEN[folder]
    }
    assert not crossing, crossing
    # The walk sees the imports it forbids elsewhere: both test suites do use testkit.
    assert any("testkit" in imported for imported in _top_level_imports(ROOT / "bench").values())
    assert any("testkit" in imported for imported in _top_level_imports(ROOT / "memory_pipeline_tests").values())


WRITES = {"index", "create", "update", "delete", "bulk", "put_mapping", "delete_by_query", "update_by_query"}


def test_only_the_stores_write_to_elasticsearch() -> None:
    """An Elasticsearch write is a call of one of `WRITES` with an `index=` keyword (the client's API); outside
    `stores/` there is none: notes, edits and forgets go through `MemoryStore`, runs through the stores."""
    writes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in WRITES
                and any(k.arg == "index" for k in node.keywords)
            ):
                writes.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    outside = [w for w in writes if not w.startswith("memory_pipeline/stores/")]
    assert not outside, outside
    assert any(w.startswith("memory_pipeline/stores/memory_store.py") for w in writes)  # the walk sees writes
