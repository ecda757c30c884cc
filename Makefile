# The two commands of the README: `make demo` and `make test`. Both install missing system packages first.
SWIFT ?= swift
CORPUS ?= $(abspath ../shared/corpus)

.PHONY: demo test deps test-deps lint format bench bench-proxy bench-vips fuzz soak docs docs-serve api-check api-baseline replay

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

## Replays one program of the main-line model test (Tests/WebImageTests/Model/MainLineModelTests.swift) or one case
## of the non-interference property (NonInterferenceTests.swift) from the seed a failure printed:
## make replay SEED=<seed> [SUITE=MainLineModel|NonInterference]
SUITE ?= MainLineModel
replay: test-deps
	@test -n "$(SEED)" || { echo "make replay SEED=<seed> [SUITE=MainLineModel|NonInterference]: the seed a failure printed"; exit 2; }
	@case "$(SUITE)" in MainLineModel|NonInterference) ;; *) echo "SUITE is MainLineModel or NonInterference"; exit 2;; esac
	WEBIMAGE_TARGETS=WebImageTests $(SWIFT) build --build-tests --scratch-path .build-replay
	MODEL_SEED=$(SEED) NI_SEED=$(SEED) WEBIMAGE_TARGETS=WebImageTests $(SWIFT) test --skip-build \
		--scratch-path .build-replay --filter '$(SUITE)Tests/'

lint:
	$(SWIFT) format lint --strict --recursive --configuration .swift-format Package.swift Sources Plugins Tests Examples Benchmarks/Benchmarks

format:
	$(SWIFT) format format --in-place --recursive --configuration .swift-format Package.swift Sources Plugins Tests Examples Benchmarks/Benchmarks

## Benchmarks (release build, separate package): the benchmark package and its out-of-process baselines (libvips,
## Pillow, wrk) in one run, written to Benchmarks/RESULTS.md; see Benchmarks/README.md. `bench-package` runs only the
## benchmark package (no table).
bench: deps
	Benchmarks/run.sh

bench-package: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

## The image-proxy benchmark of issue 22 (not in CI): the ThumbnailServer (release) against thumbor 7.8 from PyPI,
## nginx as origin, wrk as client; writes Benchmarks/proxy/RESULTS.md and results.png. See Benchmarks/proxy/README.md.
bench-proxy: deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" Benchmarks/proxy/bench.sh

## The ThumbnailServer against libvips in-process only (no thumbor, no herd): bench-proxy's quicker subset, written
## to Benchmarks/proxy/vips/ so thumbor's table stays.
bench-vips: deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" CONFIGS="$${CONFIGS:-sdk vips}" HERD="$${HERD:-0}" \
		OUT="$${OUT:-$(CURDIR)/Benchmarks/proxy/vips}" Benchmarks/proxy/bench.sh

## libFuzzer targets (Fuzz/ package), FUZZ_SECONDS each (default 60), FUZZ_TARGETS to pick; see CONTRIBUTING.md.
fuzz: deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" scripts/fuzz.sh $(FUZZ_TARGETS)

## The soak (Sources/ImageSoak): SOAK_SECONDS of mixed traffic (default 1800), CSV and plot under Benchmarks/.
soak: deps
	$(SWIFT) build --product image-soak
	$(SWIFT) run --skip-build image-soak --seconds $${SOAK_SECONDS:-1800} --csv Benchmarks/soak.csv
	/usr/bin/python3 Benchmarks/soak_plot.py Benchmarks/soak.csv Benchmarks/soak.png "image-soak, $${SOAK_SECONDS:-1800} s"

## API documentation (swift-docc-plugin, scripts/docs.sh): one DocC archive per product plus a combined one, in
## .build/plugins/Swift-DocC/outputs (combined: WebImage.doccarchive; per product: intermediates/), and a copy for
## static hosting in .build/docs-site (make docs-serve). Combined mode lets a catalog link to another product's
## symbols with a leading slash (``/ImageCore/ImageError``). Documents every library product (each needs a catalog
## with a landing page); fails on any DocC warning, in catalog pages and in /// comments alike, and when a landing
## page does not open with a snippet or states another version than CHANGELOG.md. DOC_TARGETS="A B" narrows it.
docs: deps
	scripts/docs.sh $(DOC_TARGETS)

## Serves the static copy of `make docs` on 127.0.0.1 (DocC's pages need HTTP, not file://); PORT=8000 by default.
docs-serve:
	@test -f .build/docs-site/index.html || { echo "make docs-serve: run make docs first"; exit 2; }
	@echo "http://127.0.0.1:$${PORT:-8000}/documentation/"
	/usr/bin/python3 -m http.server $${PORT:-8000} --bind 127.0.0.1 --directory .build/docs-site

## The public API of every library product against the baseline revision in .api-baseline (swift-api-digester);
## fails on a break that CHANGELOG.md does not list under Unreleased → Breaking. See CONTRIBUTING.md.
api-check: deps
	scripts/api-check.sh

## Rewrites api-baseline/<commit>/ for the revision in .api-baseline (builds that revision: a cold build).
api-baseline: deps
	scripts/api-check.sh --baseline
