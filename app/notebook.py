"""The lesson views inline in a notebook (Jupyter, JupyterLab, VS Code), offline:

    from app.notebook import show
    show(lm, "The cat sat on the mat")

`show` returns an object the notebook displays through `_repr_html_`: an <iframe srcdoc> holding the
same self-contained file `python -m app export` writes, so its script and styles run isolated from the
notebook's page (no clash with the notebook's CSS, and no server or network needed).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from model import LanguageModel

from .export import lesson_html


class LessonView:
    def __init__(self, page: str, height: int) -> None:
        self.page, self.height = page, height

    def _repr_html_(self) -> str:
        return (
            f'<iframe srcdoc="{html.escape(self.page, quote=True)}" sandbox="allow-scripts" '
            f'style="width: 100%; height: {self.height}px; border: 0" title="Attention Atlas"></iframe>'
        )


def show(lm: LanguageModel, prompt: str | Sequence[int], height: int = 1100) -> LessonView:
    """The lesson views for `prompt`, to display in a notebook cell (the cell's last value)."""
    return LessonView(lesson_html(lm, prompt), height)
