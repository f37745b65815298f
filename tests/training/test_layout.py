"""The training package's shape: card and train do not import each other, nothing swaps methods."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
