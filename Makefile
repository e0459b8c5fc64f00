# Every target sets itself up on a fresh clone: a .venv with the pinned package, and (as root) the
# Debian GL packages dm_control needs for headless rendering.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl
export RAY_AUTH_MODE ?= disabled
export WANDB_MODE ?= offline
export RAY_DEDUP_LOGS ?= 0
export PYTHONUNBUFFERED := 1
# Imported modules keep their .pyc (the install compiles only what runs: scripts/compile_imports.py).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup sysdeps lint test test-fast train clean

setup: sysdeps $(STAMP)

sysdeps:
	@bash scripts/ensure_gl.sh

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --no-compile --disable-pip-version-check -e '.[test]'
	$(BIN)/python scripts/compile_imports.py
	@touch $@

lint: setup
	$(BIN)/ruff check smac_rllib tests benchmarks
	$(BIN)/ruff format --check smac_rllib tests benchmarks

test: setup lint
	$(BIN)/python -m pytest -n 2 --dist loadfile tests

train: setup
	$(BIN)/rllib train file tuned_examples/smac_state_quick.yaml --storage-path results

# the math, the components and the CLI's checks; not the files that train through Ray (tests/conftest.py: SLOW_FILES)
test-fast: setup
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not slow" tests

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
