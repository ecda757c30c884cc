#!/usr/bin/env bash
# Every test of the project: the package suites, the API check and the DocC reference, the coder suites under
# AddressSanitizer, the examples and the README's and DocC pages' snippets.
# Environment: IMAGE_CORPUS (the shared conformance corpus), SKIP_ASAN=1 / SKIP_EXAMPLES=1 / SKIP_DOCS=1 (the API
# check and the reference) to shorten local runs,
# SOAK_SECONDS (default 120) for the soak's length,
# RUN_FUZZ=1 to build the libFuzzer targets (FUZZ_TARGETS, default all) and run each for FUZZ_SECONDS (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."

swift=${SWIFT:-swift}
if [ -n "${IMAGE_CORPUS:-}" ] && [ ! -f "$IMAGE_CORPUS/MANIFEST.md" ]; then
    echo "test.sh: no corpus at $IMAGE_CORPUS; conformance tests will say so and skip"
fi

# Each step says how long the run has taken so far, so CI's time can be read per step.
step() { printf '\n==> %s (t=%d s)\n' "$*" "$SECONDS"; }

step "package tests (debug)"
$swift build --build-tests
# One test target at a time: several suites measure scheduling (a starved cooperative pool, timeouts against a
# stalling server), which the CPU-heavy coder and conformance suites would disturb on a 2-core machine.
targets=(ImageCoreTests HTTPLoaderTests MemoryCacheTests DiskCacheTests PNGCoderTests JPEGCoderTests
    WebPCoderTests GIFCoderTests AVIFCoderTests HEIFCoderTests JXLCoderTests ColorManagementTests CoderConformanceTests
    ImageTransformersTests WebImageTests RedisCacheTests ImageServiceTests)
# Every test target of Package.swift runs: a target missing from the list above fails the run (and one listed but
# not in the package, say on a branch that has not merged it yet, is skipped).
declared=$($swift package dump-package | /usr/bin/python3 -c \
    'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)["targets"] if t["type"] == "test"))')
for name in $declared; do
    [[ " ${targets[*]} " == *" $name "* ]] || { echo "test.sh: test target $name is not in the list"; exit 1; }
done
present=()
for target in "${targets[@]}"; do [[ " $declared " == *" $target "* ]] && present+=("$target"); done
targets=("${present[@]}")
# The coder suites run once, in the AddressSanitizer step below (optimized, every one of their tests), unless that
# step is skipped. GIFCoderTests runs here too: two of its tests are disabled under ASan (Sanitizers.address).
asan_targets=(PNGCoderTests JPEGCoderTests WebPCoderTests GIFCoderTests AVIFCoderTests HEIFCoderTests JXLCoderTests
    ColorManagementTests CoderConformanceTests)
if [ "${SKIP_ASAN:-0}" != "1" ]; then
    debug_targets=()
    for target in "${targets[@]}"; do
        if [[ " ${asan_targets[*]} " != *" $target "* || $target == GIFCoderTests ]]; then debug_targets+=("$target"); fi
    done
    targets=("${debug_targets[@]}")
fi
: > .build/test-output.txt
for target in "${targets[@]}"; do
    step "$target"
    set +e
    $swift test --skip-build --filter "^$target\\." 2>&1 | tee -a .build/test-output.txt | grep -vE ' started\.$'
    status=${PIPESTATUS[0]}
    set -e
    [ "$status" -eq 0 ] || { echo "test.sh: $target failed"; grep -E '✘' .build/test-output.txt | head -50; exit "$status"; }
done
step "soak: mixed good and hostile traffic for ${SOAK_SECONDS:-120} s, resources sampled each second"
# Every kind of load; SOAK_KINDS (comma-separated, see Sources/ImageSoak) narrows it.
soak_kinds=${SOAK_KINDS:-hit,miss,animatedThumbnail,slow,cancelSlow,cancelStall,truncated,garbage,bomb,serverError}
$swift run --skip-build image-soak --seconds "${SOAK_SECONDS:-120}" --kinds "$soak_kinds" --csv .build/soak.csv

if [ "${SKIP_DOCS:-0}" != "1" ]; then
    # Both reuse the debug build above: the API check compares it with the committed digests of the baseline
    # (api-baseline/), the reference extracts its symbol graphs from it.
    step "API check: the public API against .api-baseline, breaks listed in CHANGELOG.md"
    scripts/api-check.sh
    step "DocC reference: every product, no warning, static-hosting copy"
    scripts/docs.sh >.build/docs-output.txt 2>&1 || { tail -60 .build/docs-output.txt; exit 1; }
    tail -2 .build/docs-output.txt
fi

passed=$(grep -cE '^✔ Test .* passed' .build/test-output.txt || true)
failed=$(grep -cE '^✘ Test .* failed' .build/test-output.txt || true)

if [ "${SKIP_ASAN:-0}" != "1" ]; then
    step "coder tests under AddressSanitizer"
    set +e
    # WEBIMAGE_CODERS_ONLY=1 (Package.swift): the package as these suites need it, without NIO, BoringSSL or
    # AsyncHTTPClient, whose instrumented build took most of this step's time. Optimized (-c release, with
    # -enable-testing for the suites' @testable imports): in CI it built in 285 s instead of 210 s and ran in 50 s
    # instead of 260 s, as the corpus sweeps' pixel loops are no longer -Onone; ASan checks optimized code as it
    # ships (OSS-Fuzz builds its ASan targets optimized too).
    WEBIMAGE_CODERS_ONLY=1 ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/scripts/lsan-suppressions.txt \
        $swift test -c release -Xswiftc -enable-testing --sanitize=address --scratch-path .build-asan-coders \
        --filter "$(IFS='|'; echo "${asan_targets[*]}")" 2>&1 \
        | tee .build/asan-output.txt | grep -vE ' started\.$' | tail -60
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ]; then
        echo "test.sh: AddressSanitizer run failed"
        grep -E '✘|ERROR: AddressSanitizer|ERROR: LeakSanitizer' .build/asan-output.txt | head -50
        exit "$status"
    fi
    passed=$((passed + $(grep -cE '^✔ Test .* passed' .build/asan-output.txt || true)))
fi

if [ "${RUN_FUZZ:-0}" = "1" ]; then
    step "fuzz targets, ${FUZZ_SECONDS:-20} s each"
    # shellcheck disable=SC2086  # FUZZ_TARGETS is a space-separated list (empty: every target)
    FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh ${FUZZ_TARGETS:-}
fi

if [ "${SKIP_EXAMPLES:-0}" != "1" ]; then
    # The package's own build folder for every example and the README snippets: the SDK and its dependencies,
    # built above, are reused as they are (an example's build compiles only its own modules and the frameworks it
    # adds), instead of a second debug build of the SDK, NIO and AsyncHTTPClient in a folder of their own.
    export EXAMPLES_SCRATCH=${EXAMPLES_SCRATCH:-$PWD/.build}
    for example in Examples/*/; do
        [ -f "$example/Package.swift" ] || continue
        step "example $(basename "$example")"
        if [ -x "$example/ci.sh" ]; then
            (cd "$example" && ./ci.sh)
        else
            (cd "$example" && $swift build)
        fi
    done
    step "README and DocC snippets"
    # The README's blocks, every product's landing page (<Name>.docc/<Name>.md) and the cache-key article.
    pages=()
    # (Catalogs sit in their target's folder, which may be nested: Plugins/ImageService/Query/….)
    while IFS= read -r page; do
        if [ "$(basename "$page" .md)" = "$(basename "$(dirname "$page")" .docc)" ]; then pages+=("$page"); fi
    done < <(find Sources Plugins -path '*.docc/*.md' | sort)
    scripts/readme-snippets.sh README.md "${pages[@]}" Sources/ImageCore/ImageCore.docc/CacheKeys.md
fi

step "all tests passed"
echo "${passed} passed, ${failed} failed"
