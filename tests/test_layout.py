"""The repo's shape: dependencies point app -> labs -> model, no import cycle, nothing swaps methods."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, at the top or hidden inside a function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_layout_card_does_not_import_train():
    assert not {".train", "training.train"} & imports_of(ROOT / "training" / "card.py")


def test_layout_model_imports_nothing_else_of_the_repo():
    others = {"app", "labs", "training", "bench", "tests"}
    for path in (ROOT / "model").glob("*.py"):
        assert not {m.split(".")[0] for m in imports_of(path)} & others, path


def test_layout_no_method_is_swapped_at_run_time():
    for area in ("model", "training", "labs", "app"):
        for path in (ROOT / area).rglob("*.py"):
            text = path.read_text()
            assert "MethodType" not in text and ".attend = " not in text, path


@pytest.mark.parametrize("module", ["training.train", "training.corpus"])
def test_layout_command_line_help(module):
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "usage" in done.stdout, done.stderr


PACKAGES = ("model", "labs", "training", "app")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(importer: str, is_package: bool, name: str) -> str:
    """An import as written (".x", "..y.z", "labs.cost") -> the absolute module name."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    rest = name[level:]
    return ".".join(base + ([rest] if rest else []))


def import_graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p): p for p in files}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = resolve(name, path.name == "__init__.py", "." * node.level + (node.module or ""))
                # "from labs import cost" imports the module labs.cost, not only the package.
                targets |= {base} | {f"{base}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_layout_dependencies_point_app_labs_model():
    allowed = {"model": {"model"}, "labs": {"labs", "model"}, "training": {"training", "labs", "model"},
               "app": {"app", "labs", "model"}}  # fmt: skip
    for name, targets in import_graph().items():
        top = name.split(".")[0]
        wrong = {t for t in targets if t.split(".")[0] not in allowed[top]}
        assert not wrong, f"{name} imports {sorted(wrong)}"


def test_layout_no_import_cycle():
    graph = import_graph()
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
