"""Inline our ES modules into one classic script, for a page that must work from a file:// path.

Browsers refuse to load module files from disk, so the offline export cannot `import` the views. This
follows the static `import ... from "./x.js"` lines from an entry module, and wraps each module once,
dependencies first, in a function that returns its exports:

    const __m1 = (() => { "use strict"; ...module body without `export`...; return { a, b }; })();
    const { a, b: c } = __m1;   // was: import { a, b as c } from "./x.js";

It understands the forms our code uses (named imports, `import * as x`, `export function/const/let/
class`) and refuses anything else with the file and line, so a new form fails loudly, not silently.
"""

from __future__ import annotations

import re
from pathlib import Path

IMPORT = re.compile(r'^import\s+(?:\{([^}]*)\}|\*\s+as\s+(\w+))\s+from\s+"([^"]+)";[ \t]*$', re.M)
EXPORT = re.compile(r"^export\s+(?:async\s+)?(?:function\*?|const|let|class)\s+(\w+)", re.M)
AS = re.compile(r"\s+as\s+")
UNSUPPORTED = re.compile(
    r"^\s*(export\s+(?:default|\{|\*)|import\s*\(|import\s+\w+\s+from|import\s+\")|\bimport\(", re.M
)


class BundleError(ValueError):
    pass


def bundle(entry: Path) -> str:
    """One script with `entry` and every module it imports, each evaluated once, in dependency order."""
    order: list[Path] = []
    names: dict[Path, str] = {}
    _visit(entry.resolve(), order, names, [])
    return "\n".join(_wrap(path, names) for path in order)


def _visit(path: Path, order: list[Path], names: dict[Path, str], stack: list[Path]) -> None:
    if path in names:
        return
    if path in stack:
        raise BundleError(f"import cycle through {path.name}")
    text = path.read_text(encoding="utf-8")
    bad = UNSUPPORTED.search(text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        raise BundleError(f"{path}:{line}: the bundler does not handle {bad.group(0).strip()!r}")
    for m in IMPORT.finditer(text):
        _visit((path.parent / m.group(3)).resolve(), order, names, stack + [path])
    names[path] = f"__m{len(names) + 1}"
    order.append(path)


def _wrap(path: Path, names: dict[Path, str]) -> str:
    text = path.read_text(encoding="utf-8")

    def as_const(m: re.Match) -> str:
        source = names[(path.parent / m.group(3)).resolve()]
        if m.group(2):
            return f"const {m.group(2)} = {source};"
        parts = [AS.sub(": ", p.strip()) for p in m.group(1).split(",") if p.strip()]
        return f"const {{ {', '.join(parts)} }} = {source};"

    body = IMPORT.sub(as_const, text)
    exported = EXPORT.findall(body)
    body = re.sub(r"^export\s+", "", body, flags=re.M)
    return (
        f"// ---- {path.parent.name}/{path.name}\n"
        f'const {names[path]} = (() => {{\n"use strict";\n{body}\nreturn {{ {", ".join(exported)} }};\n}})();'
    )
