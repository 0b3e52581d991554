# Two commands do all set-up: `make demo` and `make test`. Both install the `spark`
# extra (PySpark: the Spark pipeline, and the jars ZooKeeper mode runs from).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Debian packages the lab uses; installed with apt-get when missing (CI runs as root).
SYSTEM_PACKAGES := kcat iptables chromium

.PHONY: demo test busy-test lint typecheck bench bench-quick bench-pipeline venv sysdeps kafka clean

$(STAMP): pyproject.toml setup.py src/brownout/protocol/_scan.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

venv: $(STAMP)

sysdeps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "note: missing system packages:$$missing (install them with apt-get as root)"; fi; \
	fi

# Apache Kafka's default versions (`brownout kafka install`: from Maven Central with
# Maven, into ~/.cache/brownout/kafka or $BROWNOUT_KAFKA_CACHE; a few minutes the first
# time, nothing once cached), for `--engine kafka` and its tests. Needs Java 17 and mvn.
kafka: $(STAMP)
	$(BIN)/brownout kafka install

# The main job (`brownout demo`): minority-outage and majority-outage on Brownout's node
# (about a minute each), then minority-outage on Apache Kafka (a few minutes: four JVMs),
# with the two engines' verdicts side by side. Each run directory under $(DEMO_OUT) holds
# verdict.json, check.json and report.html; docs/fidelity.md says what each reproduces.
# A run the lab could not judge because the machine was overloaded is "unknown" (exit
# status 3, its reason printed): the demo ran, so make succeeds; a failed run fails it.
DEMO_OUT := runs/demo

demo: $(STAMP) sysdeps kafka
	$(BIN)/brownout demo --kafka --out $(DEMO_OUT) || { status=$$?; [ $$status -eq 3 ] \
	  && echo "demo: some verdicts are unknown (this machine was too busy to judge them)"; }

# Spark's Kafka source (spark-sql-kafka-0-10 at PySpark's version), which the pipeline
# reads with: fetched once from Maven Central into the Ivy cache (sessions then resolve
# it offline), so no test or demo run waits on a download.
SPARK_KAFKA := $(VENV)/.spark-kafka

$(SPARK_KAFKA): $(STAMP)
	$(BIN)/brownout spark install
	touch $(SPARK_KAFKA)

.PHONY: spark-kafka
spark-kafka: $(SPARK_KAFKA)

# Brownout's own modules compiled to bytecode (what changed since the last time; about a
# second): where PYTHONDONTWRITEBYTECODE is set, as in many CI and container images,
# Python writes none at import, so each node, client and command the lab starts compiled
# every module again, about 0.5 s of CPU a process and over a tenth of the suite's CPU.
.PHONY: bytecode
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q src

test demo busy-test bench-pipeline: $(SPARK_KAFKA)
test demo busy-test bench bench-quick bench-pipeline: bytecode

# Two pytest workers: most of the integration tests' time is spent waiting on
# timeouts, so two at a time halve the suite's wall time. One worker takes a whole file
# (its module-scoped nodes are started once). Each lab has its own ports, directories and
# namespaces, so the workers never share a node. Files run in collection order, the long
# ones first (marked `long`, tests/integration/conftest.py): xdist's default order, by
# number of tests, put the files of one multi-minute test last.
test: $(STAMP) sysdeps kafka
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=15

# The suite (or TESTS=...) while another process keeps one core busy (tests/busy.py): the
# condition a shared CI machine or a developer's laptop with a build running imposes.
TESTS ?= tests
busy-test: $(STAMP) sysdeps kafka
	$(BIN)/python tests/busy.py --hogs 1 -- \
	  $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=15 $(TESTS)

# The benchmark suite (bench/suite.py): one table, each figure of Brownout's node beside
# Apache Kafka's (the default 4.x) and librdkafka's mock cluster, measured in the same
# run, with the node/Kafka ratios and targets. About 25 minutes (10 of them the mixed
# load); `make bench-quick` about 6. Raw results in $(BENCH_JSON).
BENCH_JSON := runs/bench.json

bench: $(STAMP) kafka
	@mkdir -p $(dir $(BENCH_JSON))
	$(BIN)/python bench/suite.py --json $(BENCH_JSON)

bench-quick: $(STAMP) kafka
	@mkdir -p $(dir $(BENCH_JSON))
	$(BIN)/python bench/suite.py --quick --json $(BENCH_JSON)

# The Spark pipeline (bench/pipeline.py) on Brownout's node, then on Apache Kafka (the
# default 4.x): Spark's Kafka source against Parquet of the same 100 000 and 1 000 000
# rows, then the payments and clicks pipelines at 10k and 50k records/s (sustained rate,
# lag, end-to-end latency). About 20 minutes; prints JSON.
bench-pipeline: $(STAMP) kafka
	$(BIN)/python bench/pipeline.py --engines brownout,kafka

# The code is laid out by hand (ruff check holds its line length), not by a formatter.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The type check alone (mypy over the packages pyproject.toml's [tool.mypy] names).
typecheck: $(STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
