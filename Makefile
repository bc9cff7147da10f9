# Everything runs from a local virtual environment that these targets create on first use.
#   make run    the main job: PPO taggers learn to catch runners (GPU if usable, else CPU; ~5 min on 2 cores);
#               writes runs/tag_gridworld_v0/ (checkpoint, progress.csv, tb/, curve.png, policy.gif)
#   make test   ruff over the whole tree (a finding stops here), then the test suite, the import-graph
#               check included (CUDA kernels run under Numba's CUDA simulator when there is no GPU)
#   make lint   ruff alone
#   make docs   the documentation site, built into site/ (strict: a broken link fails)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch is a plain dependency (any recent release works); this default is a small CPU build
# where one is available locally. Use `make TORCH=torch` (or any spec) to choose another.
TORCH ?= torch==2.13.0
# Test processes: most of a cold run is compiling kernels, one core each (`make test TEST_WORKERS=1` for one).
# worksteal: the tests are dealt one by one as workers free up (a module fixture may then be built on
# each worker that runs one of its tests); pytest-xdist's loadgroup cannot group on pytest 9.
TEST_WORKERS ?= auto

.PHONY: run test docs lint clean

$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[dev,docs]"
	# The AI Economist, the reference for gpu_zoo.economy's tests: it pins NumPy 1.21 and friends,
	# which would downgrade the venv, so it comes without its dependencies (it runs on today's).
	$(BIN)/python -m pip install -q --no-deps "ai-economist==1.7.1"
	# WarpDrive, the reference for Tag continuous's tests: its Python env runs on the CPU, while its
	# declared pycuda dependency would need a CUDA toolkit; gym is what that env imports.
	$(BIN)/python -m pip install -q --no-deps "rl-warp-drive==2.7.1" "gym==0.26.2"
	# BenchMARL, for gpu_zoo.benchmarl's tests: its torchvision and av serve video logging only, and
	# torchvision pins a torch release (it would replace the one above).
	$(BIN)/python -m pip install -q --no-deps "benchmarl==1.5.2"
	touch $@

run: $(VENV)/.ready
	$(BIN)/gpu-zoo train tag_gridworld_v0 $(ARGS)

# lint first, a prerequisite: a finding fails in seconds, before minutes of compiling kernels
test: lint
	@# every reference package is installed above: a missing one fails its comparison instead of skipping it
	@# and Python's bytecode cache on (some machines turn it off): each test's subprocess then imports gpu_zoo compiled
	PYTHONDONTWRITEBYTECODE= GPU_ZOO_REQUIRE_REFERENCES=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=25 $(ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; rc=0; fi; exit $$rc

docs: $(VENV)/.ready
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

lint: $(VENV)/.ready
	$(BIN)/python -m ruff check .

clean:
	rm -rf $(VENV) .pytest_cache
