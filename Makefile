# Every target sets up what it needs: a fresh machine only needs Python 3.11, make and kubectl.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The three distributions of this tree: jobset-py (pyproject.toml), kubesim and
# jobset-kubeutil (packaging/*/pyproject.toml); a change to any reinstalls.
PROJECTS := pyproject.toml packaging/kubesim/pyproject.toml packaging/kubeutil/pyproject.toml
HASH   := $(shell cat $(PROJECTS) | sha1sum | cut -c1-12)
STAMP  := $(VENV)/.installed-$(HASH)
# What `make demo` needs and no more: the package and the simulator's extra.
DEMO_STAMP := $(VENV)/.installed-sim-$(HASH)

.PHONY: venv test soak lint typecheck unit demo demo-train train-venv bench crd clean prometheus iptables runc image-tools

# Editable, all three: the extras' `kubesim` and the `jobset-kubeutil` dependency resolve to
# this tree's packaging/ projects, named in the same pip command.
LOCAL := -e packaging/kubeutil -e packaging/kubesim
$(STAMP): $(PROJECTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(LOCAL) -e '.[test,bench,sim]'
	rm -f $(VENV)/.installed-*
	touch $@

$(DEMO_STAMP): $(PROJECTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(LOCAL) -e '.[sim]'
	rm -f $(VENV)/.installed-sim-*
	touch $@

venv: $(STAMP)

# The training examples' containers (examples/jax-train) run as real processes from this
# venv: `jobset dev --run-image example.com/jax-train=.venv-train/bin`. JAX on CPU, ~600 MB.
TRAIN_VENV := .venv-train
TRAIN_REQ := examples/jax-train/requirements.txt
TRAIN_STAMP := $(TRAIN_VENV)/.installed-$(shell cat $(TRAIN_REQ) | sha1sum | cut -c1-12)

$(TRAIN_STAMP): $(TRAIN_REQ)
	test -x $(TRAIN_VENV)/bin/python || $(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/python -m pip install -q -r $(TRAIN_REQ)
	rm -f $(TRAIN_VENV)/.installed-*
	touch $@

train-venv: $(TRAIN_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools examples
	$(BIN)/ruff format --check src tests benchmarks tools examples
	$(BIN)/lint-imports  # the import contracts of .importlinter (layers, pure api, ...)
	$(BIN)/python tools/check_paths.py  # every file the docs and docstrings cite exists
	$(BIN)/python tools/check_names.py  # every Class.member, function() and module name the docs cite exists
	$(BIN)/python tools/check_settings.py  # docs cite the goals and tuning values the code owns, never restate them
	$(BIN)/python tools/check_function_length.py  # no function over 80 lines (src, benchmarks, tools)
	$(BIN)/python tools/check_param_ids.py  # multi-argument parametrize tables name their cases
	$(BIN)/python tools/check_private_imports.py  # no _private name of src/ used outside its module
	$(BIN)/python tools/check_import_cycles.py  # no import cycle in src/, lazy or TYPE_CHECKING ones included

# src/ and benchmarks/ strict; tests/ with pyproject's override for them.
typecheck: $(STAMP)
	$(BIN)/mypy src benchmarks tests
	$(BIN)/mypy --strict tools

# Two pytest-xdist workers: the suite mostly waits on the processes it starts (load ~0.5 on
# one worker). --dist loadfile keeps each file on one worker, in order, so module fixtures
# start once. (loadgroup would keep the in-cluster package together, but pytest-xdist 3.8
# cannot group under pytest 9, which made nodeids read-only.) TEST_WORKERS=0: one process.
# Line coverage of src/ in the test processes (xdist's workers combined): a report of the
# files not fully covered, an HTML one in .cache/coverage-html, and a failure below the
# floor of pyproject's [tool.coverage.report].
TEST_WORKERS ?= 2
COVERAGE := --cov --cov-report=term --cov-report=html
test: lint typecheck prometheus iptables runc image-tools train-venv
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile -m "not soak" $(COVERAGE)

# The long tiers, every test marked `soak` (50 JobSets under API faults, 60 SIGKILLs, a 30 s
# outage, the API server fuzzed with 10x the examples, the 16k-Job adversarial run,
# 50 JobSets under a seeded schedule of faults at the deployed controller, the upgrade from an
# older commit's wheel; the in-cluster ones need root):
# what each guarantees: docs/reliability.md. A soak run that selects no test fails (pytest exit code 5).
soak: $(STAMP) prometheus iptables runc
	$(BIN)/pytest -q -p no:cacheprovider -m soak -s tests

# $(call debian_tool,TARGET,PACKAGE,COMMANDS,WHY): install the Debian package PACKAGE with
# apt-get (system-wide, needs root) unless every one of COMMANDS is on PATH. Installing a
# system package is said on one line before it happens, never silently. (No commas in WHY.)
define debian_tool
	@if $(foreach cmd,$(3),command -v $(cmd) >/dev/null &&) true; then \
	  echo "make $(1): $(3) found on PATH, nothing to install"; \
	else \
	  echo "make $(1): INSTALLING the Debian package '$(2)' (system-wide, apt-get, needs root) for $(4)"; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(2); \
	fi
endef

# Prometheus and promtool for tests/integration/deploy.
prometheus:
	$(call debian_tool,prometheus,prometheus,prometheus promtool,the tests that run prometheus/promtool)

# iptables for the in-cluster chaos test, which cuts the leader's network namespace off the
# API server with a DROP rule.
iptables:
	$(call debian_tool,iptables,iptables,iptables,the in-cluster chaos test's network cut)

# runc, the OCI runtime that runs every `--run-image` container (namespaces, cgroups, seccomp).
runc:
	$(call debian_tool,runc,runc,runc,the containers of jobset dev --run-image)

# The image store of `--load-image` (skopeo reads docker archives, umoci unpacks layers) and
# the tiny image its tests build without network (busybox-static's /bin/busybox).
image-tools:
	$(call debian_tool,image-tools,umoci,umoci,unpacking the images --load-image loads)
	$(call debian_tool,image-tools,skopeo,skopeo,reading the docker archives --load-image loads)
	@test -x /bin/busybox && ! ldd /bin/busybox >/dev/null 2>&1 || { \
	  echo "make image-tools: INSTALLING the Debian package 'busybox-static' (system-wide, apt-get, needs root) for the tiny image the image tests build"; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends busybox-static; }

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

# The demo starts `jobset dev` and runs a multislice job, a restarting job and a dependsOn pipeline.
demo: $(DEMO_STAMP)
	JOBSET_DEMO_COMMAND="make demo" $(BIN)/python -m jobset.dev.demo

# A real JAX training run (examples/jax-train) under `jobset dev --run-image`: a worker
# fails once, the JobSet restarts, training resumes from its checkpoint. Needs root.
demo-train: $(DEMO_STAMP) $(TRAIN_STAMP) runc
	JOBSET_DEMO_COMMAND="make demo-train" JOBSET_TRAIN_BIN=$(CURDIR)/$(TRAIN_VENV)/bin \
		$(BIN)/python -m jobset.dev.demo jax-train

# Controller vs a minimal baseline client at 1k/4k/16k Jobs on `jobset sim` (< 10 min on 2 cores);
# bench-large adds 64k Jobs and the pod-scale climb to 200k pods, and has no time budget.
# Results: benchmarks/RESULTS.md, docs/benchmarks.md.
.PHONY: bench-large
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

bench-large: $(STAMP)
	$(BIN)/python -m benchmarks.run --large

# Regenerate the JobSet CRD from tools/gen_crd.py (a test checks the committed file matches)
# and the chart's copy of it.
crd: $(STAMP)
	$(BIN)/python tools/gen_crd.py
	cp config/crd/bases/jobset.x-k8s.io_jobsets.yaml charts/jobset/crds/

# charts/jobset/README.md from the `# --` comments of values.yaml (a test checks it is current).
.PHONY: chart-docs chart
chart-docs: $(STAMP)
	$(BIN)/python tools/gen_chart_docs.py

# The chart as dist/jobset-<version>.tgz (Helm's engine; README current and lint clean first),
# for `helm push` to an OCI registry: docs/operations.md, "Releasing". CHART_PUSH=oci://... pushes.
chart: $(STAMP)
	$(BIN)/python tools/package_chart.py --dest dist $(if $(CHART_PUSH),--push $(CHART_PUSH))

# The image's dependencies, pinned with hashes (Dockerfile: pip install --require-hashes):
# requirements/controller.lock is pyproject's runtime dependencies (no extras) and their own,
# requirements/build.lock the build backend. Run after changing [project] dependencies (a
# test checks the lock matches them); resolves for this Python, which must be the image's
# (3.11). pip-tools is pinned and lives in its own venv, outside the project's.
# jobset-kubeutil is built from this tree (packaging/kubeutil), as the image does: pip-compile
# finds its wheel in LOCK_WHEELS and, as an "unsafe" package, leaves it out of the lock
# (the controller's lock has no other unsafe package), keeping its dependencies.
LOCK_VENV := .cache/lock-venv
LOCK_WHEELS := .cache/lock-wheels
PIP_TOOLS := pip-tools==7.6.2
PIP_COMPILE_ARGS := -q --generate-hashes --no-emit-index-url --no-emit-find-links \
	--no-emit-trusted-host --strip-extras --upgrade
PIP_COMPILE := $(LOCK_VENV)/bin/pip-compile $(PIP_COMPILE_ARGS)
.PHONY: lock
lock:
	test -x $(LOCK_VENV)/bin/pip-compile || \
	  ($(PYTHON) -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/pip install -q '$(PIP_TOOLS)')
	rm -rf $(LOCK_WHEELS) && $(LOCK_VENV)/bin/pip wheel -q --no-deps -w $(LOCK_WHEELS) packaging/kubeutil
	$(PIP_COMPILE) --find-links $(LOCK_WHEELS) --unsafe-package jobset-kubeutil \
	  -o requirements/controller.lock pyproject.toml
	$(PIP_COMPILE) --allow-unsafe -o requirements/build.lock requirements/build.in

# The controller image from Dockerfile, built with buildah on a debootstrapped Debian base (no
# registry; root; installs debootstrap and buildah if missing). Not in `make test`: a fresh
# machine needs the Debian mirror and ~3 min. See docs/operations.md, "Building the image".
.PHONY: image image-test
image:
	tools/build_image.sh

image-test: image $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -m image tests/integration/deploy/test_image_build.py

clean:
	rm -rf $(VENV) $(TRAIN_VENV) .pytest_cache .mypy_cache .ruff_cache
