# Common tasks. `make check` is what CI runs, in the same order (.ci/run); `make long-checks`
# the full-length runs before a release (Scripts/long-checks).
SWIFT ?= swift
FORMAT_PATHS = Package.swift Sources Tests Benchmarks Fuzz

.PHONY: build test lint format docs availability check long-checks

build:
	CEPIS_WARNINGS_AS_ERRORS=1 $(SWIFT) build

test:
	$(SWIFT) test

lint:
	$(SWIFT) format lint --strict -r $(FORMAT_PATHS)

format:
	$(SWIFT) format format -i -r $(FORMAT_PATHS)

docs:
	Scripts/build-docs

availability:
	Scripts/check-availability

check:
	bash .ci/run

long-checks:
	Scripts/long-checks
