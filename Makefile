# The two commands of the README: `make demo` and `make test`. Both install missing system packages first.
SWIFT ?= swift
CORPUS ?= $(abspath ../shared/corpus)

.PHONY: demo test deps test-deps lint format bench docs

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

## API documentation (swift-docc-plugin): one DocC archive per product plus a combined one, in
## .build/plugins/Swift-DocC/outputs (combined: WebImage.doccarchive; per product: intermediates/). Combined mode
## lets a catalog link to another product's symbols with a leading slash (``/ImageCore/ImageError``).
DOC_TARGETS = ImageCore PNGCoder JPEGCoder WebPCoder GIFCoder MemoryCache DiskCache HTTPLoader ImageTransformers WebImage
## Fails when DocC warns about a catalog page (a broken link, an unknown topic).
docs: deps
	@mkdir -p .build
	bash -o pipefail -c '$(SWIFT) package generate-documentation --enable-experimental-combined-documentation \
		$(addprefix --target ,$(DOC_TARGETS)) 2>&1 | tee .build/docs.log'
	@! grep -B1 -E -- '^ *--> [^ ]*\.md:' .build/docs.log || { echo "make docs: DocC warns about a catalog page (above)"; exit 1; }
