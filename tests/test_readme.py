"""The README's Python examples run as written: every ```python runnable block, in order, in one
namespace (a notebook's cells), in a temporary folder (the export example writes a file)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python runnable\n(.*?)^```", re.M | re.S)


def test_readme_python_blocks_run(tmp_path, monkeypatch, capsys):
    blocks = BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    text = "".join(blocks)
    for used in (
        "run_with_cache",
        "run_with_hooks",
        "export_html",
        "show(",
        "accumulated_resid",
        "stack_head_results",
    ):
        assert used in text, f"the README's runnable examples no longer show {used}"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"README.md python block {i + 1}", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert re.search(r"best induction head: L\d+H\d+ 0\.\d+", printed), printed
    assert (tmp_path / "lesson.html").stat().st_size > 10_000
    assert "<iframe srcdoc=" in namespace["show"](namespace["lm"], "The cat")._repr_html_()
