# flprivacy: two commands do everything on a fresh machine.
#   make book   install (if needed), execute every chapter, build the HTML book into _build/html
#   make test   install (if needed), run the unit tests and every notebook (nbval)
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

.PHONY: help install book test test-seeds clean

help:
	@echo "make book   - install, execute the chapters and build the HTML book into _build/html"
	@echo "make test   - install, then run unit tests and every notebook (pytest + nbval)"
	@echo "make test-seeds - run every notebook again under two other base seeds (FLPRIVACY_SEED=1, 2)"
	@echo "make clean  - remove the built book"

$(BIN)/python:
	python3 -m venv $(ENV)

$(STAMP): requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

book: install
	rm -rf _build/.jupyter_cache
	$(BIN)/jupyter-book build --all -W -n --keep-going .
	@echo "Book built: $(CURDIR)/_build/html/index.html"

# pytest runs two workers (pyproject.toml); one math thread each keeps them from fighting over
# the cores (set OMP_NUM_THREADS yourself to override).
test: install
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest

# The chapters' checks must hold for any seed: run every notebook under two other base seeds.
test-seeds: install
	set -e; for s in 1 2; do \
	  echo "== FLPRIVACY_SEED=$$s"; \
	  FLPRIVACY_SEED=$$s OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest book; \
	done

clean:
	rm -rf _build
