# Two commands for a fresh machine with only Python: `make app` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: app lint test test-fast bench setup setup-ray setup-mlflow browser screenshots gpu-wheels gpu-check

setup: $(STAMP)

$(STAMP): requirements.txt requirements-nodeps.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade --quiet pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $(STAMP)

# Optional: the Ray backend (`--backend ray`, the Train page's "Run on" setting).
setup-ray: $(STAMP)
	$(BIN)/pip install --quiet -r requirements-ray.txt

# Optional: MLflow tracking (`python -m core export --mlflow URI`, STUDIO_MLFLOW_URI, `mlflow ui`).
setup-mlflow: $(STAMP)
	$(BIN)/pip install --quiet -r requirements.txt -r requirements-mlflow.txt

app: $(STAMP)
	$(BIN)/streamlit run app.py

# pyflakes, pycodestyle and the import order (pyproject.toml's [tool.ruff]), and the layers' import contracts
# ([tool.importlinter]); both test targets run it first.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest

# The edit-run loop: the unit tests, without the browser, Ray, the real backbones, the shared corpora or the slowest
# process-level tests (docs/testing.md).
FAST := not browser and not ray and not integration and not corpus and not gpu and not slow
test-fast: lint
	$(BIN)/python -m pytest -q -m "$(FAST)"

bench: $(STAMP)
	$(BIN)/python -m bench.speed.explore
	$(BIN)/python -m bench.speed.train
	$(BIN)/python -m bench.speed.frozen_grid
	$(BIN)/python -m bench.speed.explain

# Debian's Chromium for the browser test (needs root, as on CI); without it that one test skips.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

# The README's pictures (docs/img/*.png), drawn by the app in headless Chromium on a small built-in corpus.
screenshots: $(STAMP)
	$(BIN)/python docs/screenshots.py

# The GPU check (docs/testing.md). Here: `make gpu-wheels` packs what a CUDA machine without network needs
# (gpu-kit/: a few wheels, MiniLM's weights, L2R) and prints its size beside the tracked tree's. There, from the
# machine's own Python with its CUDA torch: `make gpu-check`. `make gpu-check CPU=1` is the same check end to end
# on this CPU with a tiny budget (CI runs it).
GPU_PYTHON ?= python3

gpu-wheels: $(STAMP)
	$(BIN)/python -m bench.gpu.kit

gpu-check:
ifeq ($(CPU),1)
	$(BIN)/python -m bench.gpu.check --cpu
else
	$(GPU_PYTHON) -m bench.gpu.check
endif
