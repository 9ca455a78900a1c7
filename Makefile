# Everything a fresh machine needs is installed from here: `make demo`, `make test`.
VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed

.PHONY: demo demo-check test lint soak bench clean-venv

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	# torch==2.14.1 / torchvision==0.29.1 come from local disk; constraints.txt pins the rest.
	$(VENV)/bin/pip install -q -c constraints.txt -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/crsbench demo --out demo-out

# A fresh demo against the repository: its stage digests (tests/data/golden_digests.json) and the
# digits README, USER_GUIDE and ANALYST_GUIDE print (docs/METHODS.md §4.3), and status, leaderboard
# and report right after it clean (tests/cli/test_demo_clean.py), and retrieval on it against a brute force
# (tests/analyses/test_retrieval_demo.py). CI runs it after the tests.
demo-check: $(STAMP)
	rm -rf demo-check demo-check.log
	COLUMNS=140 $(VENV)/bin/crsbench demo --out demo-check > demo-check.log
	$(VENV)/bin/python scripts/demo_digests.py demo-check --check
	$(VENV)/bin/python scripts/docs_transcripts.py demo-check.log demo-check --check
	$(VENV)/bin/python scripts/analyst_guide.py --db demo-check/crsbench.duckdb --check
	CRSBENCH_DEMO_OUT=demo-check $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/cli/test_demo_clean.py tests/exchange/test_demo_sites.py \
		tests/analyses/test_retrieval_demo.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	bash scripts/mypy-tree.sh
	$(VENV)/bin/mypy

test: lint
	bash scripts/test-deps.sh
	bash scripts/ensure-postgres.sh
	CRSBENCH_REQUIRE_POSTGRES=1 $(VENV)/bin/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=25

# The fault suite at length: many fuzz examples, several kill points per stage, a fresh seed.
soak: $(STAMP)
	seed=$${CRSBENCH_FAULT_SEED:-$$(date +%s)}; echo "fault seed $$seed"; \
	CRSBENCH_SOAK=1 CRSBENCH_FAULT_SEED=$$seed $(VENV)/bin/python -m pytest -q tests/fault/test_fuzz.py \
	  tests/fault/test_kill.py tests/fault/test_concurrency.py tests/cli/test_probes.py \
	  tests/features/test_extract.py tests/scale/test_cluster.py

bench: $(STAMP)
	for b in extract probe crs_query analyses scale; do $(VENV)/bin/python benchmarks/$$b.py || exit 1; done
