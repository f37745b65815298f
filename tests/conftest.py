"""Shared fixtures: small seeded models and a tiny tokenizer (tests/tiny.py), and the browser fixtures."""

from __future__ import annotations

import pytest

from model import LanguageModel, Tokenizer
from tests.tiny import make_tokenizer, tiny_model

# Browser-test fixtures (live server, Chromium, page) for every page's tests.
pytest_plugins = ["tests.browser_conftest"]


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return make_tokenizer()


@pytest.fixture
def tiny_lm(tokenizer) -> LanguageModel:
    return LanguageModel(tiny_model(), tokenizer, name="tiny")
