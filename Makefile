# Common tasks. `make check` is what CI runs besides the longer scripts in .ci/run.
SWIFT ?= swift
FORMAT_PATHS = Package.swift Sources Tests Benchmarks Fuzz

.PHONY: build test lint format docs check

build:
	$(SWIFT) build -Xswiftc -warnings-as-errors

test:
	$(SWIFT) test

lint:
	$(SWIFT) format lint --strict -r $(FORMAT_PATHS)

format:
	$(SWIFT) format format -i -r $(FORMAT_PATHS)

docs:
	Scripts/build-docs

check: build test lint docs
