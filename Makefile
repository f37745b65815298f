# Two commands matter: `make run` (start the app on the bundled model) and `make test` (everything).
# Both create .venv and install what they need, so they work on a fresh machine.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | md5sum | cut -c1-8)

.PHONY: run test venv chromium lint bench train

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Debian's chromium for the browser tests; never `playwright install` (it downloads a browser).
chromium:
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

run: venv
	$(BIN)/python -m app $(ARGS)

test: venv chromium
	$(BIN)/ruff check model labs training app tests bench
	$(BIN)/python -m pytest -q $(ARGS)

lint: venv
	$(BIN)/ruff check model labs training app tests bench
	$(BIN)/ruff format --check model labs training app tests bench

bench: venv
	$(BIN)/python -m bench $(ARGS)

train: venv
	$(BIN)/python -m training.train $(ARGS)
