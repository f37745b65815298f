"""Shared fixtures: small seeded models and a tiny tokenizer (tests/tiny.py), and the browser fixtures."""

from __future__ import annotations

import os
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
