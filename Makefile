# trajectoriz: `make demo` runs the main job, `make test` runs the tests. Both set up .venv first.
# `make build` writes the single-file executable dist/trajectoriz (build/README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-runtime.txt | cksum | cut -d' ' -f1)

.PHONY: venv test demo bench clean conformance build release release-check man bench-startup

venv: $(STAMP)

$(STAMP): requirements.txt requirements-runtime.txt
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
	$(PY) bench/run.py $(BENCH_ARGS)

# dist/trajectoriz (+ dist/trajectoriz-cli, dist/trajectoriz.1), reproducibly (PYTHONHASHSEED fixes
# the order of PyInstaller's base_library.zip), with its own loader and C library (build/README.md);
# `make release` adds dist/trajectoriz-<version>-<os>-<arch> and its .sha256, and states the glibc
# floor (objdump over every ELF inside; fails if the carried C library lacks a version asked for).
# `make release-check` runs the release in root file systems made on the spot (tests/test_release.py:
# Debian 11 and 12 by debootstrap, kept in pyi-work/rootfs/, and busybox alone; needs root).
# `make release-check SHORT=1`, what CI runs: the busybox-only roots alone (no debootstrap, seconds),
# on the release files `make release` left in dist/: this machine's, and aarch64's when it was built.
build: venv
	PYTHONHASHSEED=0 $(PY) -m PyInstaller --noconfirm --log-level WARN --workpath pyi-work --distpath dist build/trajectoriz.spec
	$(PY) build/pack.py $(PACK_FLAGS)
	$(PY) build/manpage.py --output dist/trajectoriz.1

# Both machines' files unless ARCH= names one (x86_64 or aarch64): this machine's is built here, the
# other's under emulation (build/cross.py: qemu-user-static and an arm64 Debian root; needs root).
HOST_ARCH := $(shell uname -m)
RELEASE_ARCHES := $(or $(ARCH),x86_64 aarch64)

release: venv
ifneq ($(filter $(HOST_ARCH),$(RELEASE_ARCHES)),)
	$(MAKE) build PACK_FLAGS=--release
	$(PY) build/glibc_floor.py dist/trajectoriz
endif
ifneq ($(filter-out $(HOST_ARCH),$(RELEASE_ARCHES)),)
	$(PY) build/cross.py --release $(filter-out $(HOST_ARCH),$(RELEASE_ARCHES))
endif

ifeq ($(SHORT),1)
release-check: venv
	TRAJECTORIZ_RELEASE_CHECK=short $(PY) -m pytest -q -p no:cacheprovider -rs tests/test_release.py
else
release-check: release
	TRAJECTORIZ_RELEASE_CHECK=1 TRAJECTORIZ_RELEASE_ARCHES="$(RELEASE_ARCHES)" \
		$(PY) -m pytest -q -p no:cacheprovider tests/test_release.py
endif

man: venv
	$(PY) build/manpage.py

bench-startup: build
	$(PY) bench/startup.py

clean:
	rm -rf $(VENV) pyi-work dist trajectoriz.1
