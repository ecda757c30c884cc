# The two commands of the README: `make demo` and `make test`. Both install missing system packages first.
SWIFT ?= swift
CORPUS ?= $(abspath ../shared/corpus)

.PHONY: demo test deps test-deps lint format bench fuzz

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

## Run the demo: serves generated images from a local server and loads them cold, warm and from disk.
demo: deps
	$(SWIFT) run webimage-demo

## Run every test: the package's suites, the coder suites under AddressSanitizer, and the examples.
test: test-deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" scripts/test.sh

lint:
	$(SWIFT) format lint --strict --recursive --configuration .swift-format Package.swift Sources Plugins Tests Examples Benchmarks/Benchmarks

format:
	$(SWIFT) format format --in-place --recursive --configuration .swift-format Package.swift Sources Plugins Tests Examples Benchmarks/Benchmarks

## Benchmarks (release build, separate package); see CONTRIBUTING.md.
bench: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

## libFuzzer targets (Fuzz/ package), FUZZ_SECONDS each (default 60), FUZZ_TARGETS to pick; see CONTRIBUTING.md.
fuzz: deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" scripts/fuzz.sh $(FUZZ_TARGETS)
