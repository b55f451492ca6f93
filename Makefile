# trajectoriz: `make demo` runs the main job, `make test` runs the tests. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum < requirements.txt | cut -d' ' -f1)

.PHONY: venv test demo bench clean conformance

venv: $(STAMP)

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --ignore-requires-python \
		$$(sed -n 's/^# no-deps: //p' requirements.txt)
	rm -f $(VENV)/.installed-*
	touch $@

test: venv
	$(PY) -m pytest -q -p no:cacheprovider tests

demo: venv
	$(PY) examples/demo.py

# Real agent CLIs (downloaded into conformance/cache/) against a scripted model server; not part
# of `make test`. AGENTS=claude,codex picks agents, VERSIONS=latest asks the registries.
AGENTS ?=
VERSIONS ?= pinned
conformance: venv
	$(PY) -m conformance.run --versions $(VERSIONS) $(if $(AGENTS),--agents $(AGENTS))

bench: venv
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) pyi-work dist trajectoriz.1
