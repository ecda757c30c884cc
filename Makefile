# The two commands of the README: `make demo` and `make test`. Both install missing system packages first.
SWIFT ?= swift
CORPUS ?= $(abspath ../shared/corpus)

.PHONY: demo test deps test-deps lint format bench bench-proxy bench-vips fuzz soak docs replay

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

## Benchmarks (release build, separate package); see CONTRIBUTING.md.
bench: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

## The image-proxy benchmark of issue 22 (not in CI): the ThumbnailServer (release) against thumbor 7.8 from PyPI,
## nginx as origin, wrk as client; writes Benchmarks/proxy/RESULTS.md and results.png. See Benchmarks/proxy/README.md.
bench-proxy: deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" Benchmarks/proxy/bench.sh

## The ThumbnailServer against libvips in-process only (no thumbor, no herd): bench-proxy's quicker subset.
bench-vips: deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" CONFIGS="$${CONFIGS:-sdk vips}" HERD="$${HERD:-0}" \
		Benchmarks/proxy/bench.sh

## libFuzzer targets (Fuzz/ package), FUZZ_SECONDS each (default 60), FUZZ_TARGETS to pick; see CONTRIBUTING.md.
fuzz: deps
	IMAGE_CORPUS="$${IMAGE_CORPUS:-$(CORPUS)}" scripts/fuzz.sh $(FUZZ_TARGETS)

## The soak (Sources/ImageSoak): SOAK_SECONDS of mixed traffic (default 1800), CSV and plot under Benchmarks/.
soak: deps
	$(SWIFT) build --product image-soak
	$(SWIFT) run --skip-build image-soak --seconds $${SOAK_SECONDS:-1800} --csv Benchmarks/soak.csv
	/usr/bin/python3 Benchmarks/soak_plot.py Benchmarks/soak.csv Benchmarks/soak.png "image-soak, $${SOAK_SECONDS:-1800} s"

## API documentation (swift-docc-plugin): one DocC archive per product plus a combined one, in
## .build/plugins/Swift-DocC/outputs (combined: WebImage.doccarchive; per product: intermediates/). Combined mode
## lets a catalog link to another product's symbols with a leading slash (``/ImageCore/ImageError``).
DOC_TARGETS = ImageCore PNGCoder JPEGCoder WebPCoder GIFCoder AVIFCoder HEIFCoder JXLCoder ColorManagement MemoryCache DiskCache HTTPLoader RedisCache ImageTransformers WebImage ImageServiceQuery ImageService
## Fails when DocC warns about a catalog page (a broken link, an unknown topic).
docs: deps
	@mkdir -p .build
	bash -o pipefail -c '$(SWIFT) package generate-documentation --enable-experimental-combined-documentation \
		$(addprefix --target ,$(DOC_TARGETS)) 2>&1 | tee .build/docs.log'
	@! grep -B1 -E -- '^ *--> [^ ]*\.md:' .build/docs.log || { echo "make docs: DocC warns about a catalog page (above)"; exit 1; }
