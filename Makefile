# flprivacy: two commands do everything on a fresh machine.
#   make book   install (if needed), execute every chapter, build the HTML book into _build/html
#   make test   install (if needed), run the unit tests and every notebook (nbval)
#   make pdf    the book as one PDF, _build/pdf/book.pdf (headless Chromium; make browser installs it)
#
# A virtual environment .venv is created unless one is already active ($VIRTUAL_ENV or a conda
# env in $CONDA_PREFIX). Variables: FLPRIVACY_SCALE=quick|paper, FLPRIVACY_DATA_DIR=<folder>.

SHELL := /bin/bash
.DEFAULT_GOAL := help

ifneq ($(strip $(VIRTUAL_ENV)),)
  ENV := $(VIRTUAL_ENV)
else ifneq ($(strip $(CONDA_PREFIX)),)
  ENV := $(CONDA_PREFIX)
else
  ENV := $(CURDIR)/.venv
endif
BIN := $(ENV)/bin
STAMP := $(ENV)/.flprivacy-installed

# Notebooks run from their own folder: make a relative data directory absolute.
ifneq ($(strip $(FLPRIVACY_DATA_DIR)),)
  export FLPRIVACY_DATA_DIR := $(abspath $(FLPRIVACY_DATA_DIR))
endif
export PYTHONHASHSEED := 0

.PHONY: reproduce help install compiled book book-cache book-fresh pdf browser test test-seeds mutants clean deploy-demo

help:
	@echo "make book   - install, execute the chapters whose code changed and build the HTML book into _build/html"
	@echo "make book-fresh - the same, re-executing every chapter"
	@echo "make pdf    - the book as one PDF, _build/pdf/book.pdf (executes what the cache lacks, as make book)"
	@echo "make test   - install, then run unit tests and every notebook (pytest + nbval)"
	@echo "make test-seeds - run every notebook again under two other base seeds (FLPRIVACY_SEED=1, 2)"
	@echo "make reproduce - every paper-scale result of Diana et al. and Xu & Neglia (hours; resumable; JOBS=2)"
	@echo "make mutants - inject each plausible bug of tests/mutants/*.py and count those the tests catch (long)"
	@echo "make deploy-demo - the book's federation on a loopback Flower deployment (SuperLink, 3 SuperNodes, flwr run; ~1 min)"
	@echo "make clean  - remove the built book"

$(BIN)/python:
	python3 -m venv $(ENV)

# One installer call for both files, so the resolver sees the Flower extra's pins beside the
# core's. uv (pinned) installs the same packages as pip, with their bytecode, in less than half
# the time (43 s against 103 s for this step, measured one after the other on 2 loaded cores);
# tools/uv_install.py hands it this machine's pip configuration (wheel folders, constraints,
# indexes). Where uv cannot be installed or fails, pip does the same install.
UV_VERSION := 0.13.9
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check
$(STAMP): requirements.txt requirements-flower.txt pyproject.toml | $(BIN)/python
	@if $(PIP) uv==$(UV_VERSION) && $(BIN)/python tools/uv_install.py --quiet -r requirements.txt -r requirements-flower.txt \
	    && $(BIN)/python tools/uv_install.py --quiet --no-deps -e .; then echo "installed with uv $(UV_VERSION)"; \
	else echo "uv failed or is unavailable: installing with pip"; \
	  $(PIP) -r requirements.txt -r requirements-flower.txt && $(PIP) --no-deps -e .; fi
	touch $(STAMP)

install: $(STAMP)

# Fast rebuilds: jupyter-cache (_build/.jupyter_cache) re-executes only the chapters whose code
# changed. It cannot see the library, the pinned versions, the scale, the seed or the data
# folder, so the cache is emptied whenever one of those changes (their fingerprint is kept in
# _build/.book-inputs).
BOOK_INPUTS = { cat requirements.txt requirements-flower.txt pyproject.toml $$(find src -name '*.py' | sort); \
                echo "$${FLPRIVACY_SCALE:-} $${FLPRIVACY_SEED:-} $${FLPRIVACY_DATA_DIR:-}"; } | sha256sum | cut -c1-16

# Byte-compile the library once: every notebook kernel, test worker and Flower process imports
# it, and where PYTHONDONTWRITEBYTECODE is set (as in the sandbox this book is developed in) each would
# otherwise compile its sources again (measured: importing the library's modules took 3.0 s from
# source and 2.35 s from bytecode, on a loaded 2-core machine).
compiled: install
	@$(BIN)/python -m compileall -q -j 0 src >/dev/null

# The cache may only hold executions of the current inputs: empty it when they change.
book-cache:
	@mkdir -p _build; now=$$($(BOOK_INPUTS)); \
	if [ "$$now" != "$$(cat _build/.book-inputs 2>/dev/null)" ]; then \
	  echo "library, versions, scale, seed or data folder changed: executing every chapter"; \
	  rm -rf _build/.jupyter_cache; fi; echo "$$now" > _build/.book-inputs

# The chapters not current in the cache execute as `make test` runs them, two at a time (pytest +
# nbval, one math thread each, storing each passing execution in the cache: conftest.py); a
# failing chapter stops the build before the render, naming the chapter, cell and error. The
# render then only reads the cache, in two Sphinx processes (tools/execute_book.py).
book: install book-cache compiled
	$(BIN)/python tools/execute_book.py --workers 2 build --all -W -n --keep-going .
	@echo "Book built: $(CURDIR)/_build/html/index.html"

book-fresh:
	rm -rf _build/.jupyter_cache _build/.book-inputs
	$(MAKE) book

# The book as one PDF: the chapters the cache lacks executed as for `make book`, the book rendered
# on one HTML page (Sphinx's singlehtml builder, _build/singlehtml), printed by headless Chromium
# (tools/make_pdf.py) into _build/pdf/book.pdf.
pdf: install browser book-cache compiled
	$(BIN)/python tools/execute_book.py --workers 2 build --builder singlehtml -W -n --keep-going .
	$(BIN)/python tools/make_pdf.py --html _build/singlehtml/index.html --out _build/pdf/book.pdf

# The browser test (tests/test_site.py), `make pdf` and its test (tests/test_pdf.py) need Debian's
# chromium; the set-up installs it where it can (root with apt-get), and the tests are skipped
# with their reason elsewhere (the browser test fails in CI).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser test and make pdf"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium not installed and not root: the browser test will be skipped, make pdf cannot run"; fi; }

# Each chapter executes once: pytest (two workers, pyproject.toml; one math thread each) runs the
# unit tests and every notebook under nbval, storing each passing notebook's execution in the
# book's cache (conftest.py); the book build then only renders, in two Sphinx processes
# (tools/build_book.py), and the browser test checks the pages on two workers. The build's and
# the browser test's failures both count.
test: install browser book-cache compiled
	export OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1}; rc=0; \
	FLPRIVACY_CACHE_EXECUTIONS=_build/.jupyter_cache $(BIN)/python -m pytest --ignore=tests/test_site.py || rc=1; \
	$(BIN)/python tools/build_book.py --jobs 2 build --all -W -n --keep-going . >_build/book-build.log 2>&1 \
	  || { rc=1; echo "the book build fails (-W -n): see _build/book-build.log"; grep -E "WARNING|ERROR" _build/book-build.log | head -40; }; \
	FLPRIVACY_SITE=_build/html $(BIN)/python -m pytest --dist loadgroup tests/test_site.py || rc=1; \
	exit $$rc

# The chapters' checks must hold for any seed: run every notebook under two other base seeds.
test-seeds: install
	set -e; for s in 1 2; do \
	  echo "== FLPRIVACY_SEED=$$s"; \
	  FLPRIVACY_SEED=$$s OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest book; \
	done

# Every paper-scale result of Diana et al. and Xu & Neglia, resumable (a current result file is
# skipped; see flbook/experiments/reproduce.py). JOBS commands at a time, one core each.
reproduce: install
	$(BIN)/python -m flbook.experiments.reproduce --jobs $${JOBS:-2}

deploy-demo: $(STAMP)
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m flprivacy.flower_deploy

mutants: $(STAMP)
	$(BIN)/python tools/mutation.py tests/mutants/*.py

clean:
	rm -rf _build
