# trajectoriz: `make demo` runs the main job, `make test` runs the tests. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum < requirements.txt | cut -d' ' -f1)

.PHONY: venv test demo bench clean

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

bench: venv
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) pyi-work dist trajectoriz.1
