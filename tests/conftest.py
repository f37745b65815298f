"""Shared fixtures: small seeded models and a tiny tokenizer (tests/tiny.py), and the browser fixtures."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from model import LanguageModel, Tokenizer
from tests.tiny import make_tokenizer, tiny_model

# Tests write nothing into the source tree: Hypothesis (under schemathesis) would keep its example
# database and caches in ./.hypothesis; it reads this variable the first time it stores anything.
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY", str(Path(tempfile.gettempdir()) / "attention-atlas-hypothesis")
)

# Browser-test fixtures (live server, Chromium, page) for every page's tests.
pytest_plugins = ["tests.browser_conftest"]


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return make_tokenizer()


@pytest.fixture
def tiny_lm(tokenizer) -> LanguageModel:
    return LanguageModel(tiny_model(), tokenizer, name="tiny")


# --- Nothing written into the source tree -------------------------------------------------------------
# A test that caches a model or writes a result beside the code leaves the checkout dirty for the next
# run (and for a commit). The session lists what git sees as new (untracked or ignored) before and after,
# and fails if a test added anything; interpreter and tool caches are not the tests' doing.
REPO = Path(__file__).resolve().parent.parent
TOOL_CACHES = ("__pycache__", ".pytest_cache", ".ruff_cache", ".venv", ".egg-info")
CHECKOUT_BEFORE = pytest.StashKey["set[str] | None"]()


def new_paths_in_checkout() -> set[str] | None:
    """Untracked and ignored paths (as `git status` lists them), or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    paths = {line[3:] for line in out.splitlines() if line[:2] in ("??", "!!")}
    return {p for p in paths if not any(c in p for c in TOOL_CACHES)}


def pytest_sessionstart(session):
    session.stash[CHECKOUT_BEFORE] = new_paths_in_checkout()


def pytest_sessionfinish(session, exitstatus):
    before = session.stash.get(CHECKOUT_BEFORE, None)
    after = new_paths_in_checkout()
    if before is None or after is None:
        return
    added = sorted(after - before)
    if added:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")
            reporter.write_sep("=", "tests wrote into the source tree", red=True)
            for path in added[:20]:
                reporter.write_line(f"  {path}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
