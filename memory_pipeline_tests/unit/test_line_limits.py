"""The package stays readable in pieces: no product module over 500 lines, and the Dagster assets and the
command line stay thin (no function over 80 lines): what they do lives in the modules they call."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "memory_pipeline"
MODULE_LINES = 500
FUNCTION_LINES = 80
THIN = [PACKAGE / "assets", PACKAGE / "cli.py"]


def long_functions(path: Path, limit: int = FUNCTION_LINES) -> list[str]:
    """`file:line name (lines)` for every function of `path` longer than `limit` lines, its decorators counted."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > limit:
                found.append(f"{path.name}:{node.lineno} {node.name} ({length})")
    return found


def test_no_product_module_is_over_500_lines() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100  # the walk sees the package
    lines = {str(p.relative_to(PACKAGE.parent)): len(p.read_text().splitlines()) for p in modules}
    assert not {p: n for p, n in lines.items() if n > MODULE_LINES}


def test_assets_and_the_command_line_have_no_function_over_80_lines() -> None:
    files = [f for place in THIN for f in ([place] if place.is_file() else sorted(place.rglob("*.py")))]
    assert len(files) > 3 and PACKAGE / "cli.py" in files
    assert [line for f in files for line in long_functions(f)] == []


def test_the_count_sees_a_long_function_and_its_decorators(tmp_path: Path) -> None:
    # A counter that saw no function would pass any code.
    code = tmp_path / "long.py"
    code.write_text("@decorated\ndef long():\n" + "    x = 1\n" * 79 + "\n\ndef short():\n    pass\n")
    assert long_functions(code) == ["long.py:2 long (81)"]
    assert long_functions(code, limit=81) == []
