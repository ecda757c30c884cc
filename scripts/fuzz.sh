#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (AddressSanitizer + libFuzzer) and runs each for FUZZ_SECONDS.
#
#   scripts/fuzz.sh [target ...]      default: every target in the table below
#   FUZZ_SECONDS=1800 scripts/fuzz.sh gif-decode
#   FUZZ_JOBS=2 runs that many targets at a time (default 1); FUZZ_SKIP_BUILD=1 reuses the last build.
#
# Seeds are copied at run time from $IMAGE_CORPUS (../shared/corpus) into .build-fuzz/corpus/<target>/, a scratch
# folder outside git; libFuzzer adds what it finds there. Crashes land in .build-fuzz/artifacts/<target>/ and make
# the script fail: turn each into a regression file under Tests/<Coder>Tests/Resources/fuzz/ (see CONTRIBUTING.md).
set -euo pipefail
cd "$(dirname "$0")/.."

swift=${SWIFT:-swift}
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
corpus=${IMAGE_CORPUS:-$(cd .. && pwd)/shared/corpus}
corpus_avif=${IMAGE_CORPUS_AVIF:-$(dirname "$corpus")/corpus-avif}
corpus_heic=${IMAGE_CORPUS_HEIC:-$(dirname "$corpus")/corpus-heic}
corpus_apng=${IMAGE_CORPUS_APNG:-$(dirname "$corpus")/corpus-apng}
corpus_jxl=${IMAGE_CORPUS_JXL:-$(dirname "$corpus")/corpus-jxl}
work=${FUZZ_WORK:-$PWD/.build-fuzz}
configuration=${FUZZ_CONFIGURATION:-release}

# target → seed file extensions ("" = no seeds). Add a line per new target (and one in Fuzz/Package.swift).
declare -A seeds=(
    [png-decode]="png"
    [jpeg-decode]="jpg jpeg"
    [webp-decode]="webp"
    [gif-decode]="gif"
    [progressive]="png jpg jpeg webp gif jxl"
    [roundtrip]=""
    [avif-decode]="avif"
    [heif-decode]="heic heif"
    [apng-decode]="png apng"
    [jxl-decode]="jxl"
    [cache-control]=""
    [http-headers]=""
    [disk-entry]=""
    [resp-decode]=""
    [thumbnail-query]=""
)
# Seed folders per target when not every corpus: apng-decode takes only corpus-apng's files (APNGs), so its runs
# are not spent on the still PNGs png-decode covers.
declare -A roots=(
    [apng-decode]="$corpus_apng"
)
order=(png-decode jpeg-decode webp-decode gif-decode avif-decode heif-decode apng-decode jxl-decode progressive roundtrip cache-control
    thumbnail-query http-headers disk-entry resp-decode)
# The last three pull NIO, BoringSSL and AsyncHTTPClient into an instrumented build (the longest part of it).

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${order[@]}")
for target in "${targets[@]}"; do
    [ -n "${seeds[$target]+x}" ] || { echo "fuzz.sh: unknown target '$target' (known: ${order[*]})" >&2; exit 2; }
done

mkdir -p "$work"
# SwiftPM's --sanitize=fuzzer instruments only the executables: -Xswiftc/-Xcc put coverage into every Swift
# module of the SDK and the C shim too. (The system C libraries themselves are not instrumented.)
echo "fuzz.sh: ${#targets[@]} target(s) ($configuration, -sanitize=fuzzer,address)"
flags=(--package-path Fuzz --scratch-path "$work/build" -c "$configuration" --sanitize=fuzzer --sanitize=address
    -Xswiftc -sanitize=fuzzer -Xcc -fsanitize=fuzzer-no-link)
if [ "${FUZZ_SKIP_BUILD:-0}" = "1" ]; then
    echo "fuzz.sh: FUZZ_SKIP_BUILD=1, using the binaries already built"
else
    # One product at a time: a run of some targets builds only what they need.
    : >"$work/build.log"
    for target in "${targets[@]}"; do
        if ! $swift build "${flags[@]}" --product "fuzz-$target" >>"$work/build.log" 2>&1; then
            grep -vE "ld.gold: warning: Cannot export local symbol" "$work/build.log" | tail -30
            echo "fuzz.sh: build of fuzz-$target failed" >&2
            exit 1
        fi
    done
fi
bin=$($swift build "${flags[@]}" --show-bin-path)

run_one() {
    local target=$1
    local seeddir="$work/corpus/$target" artifacts="$work/artifacts/$target/"
    mkdir -p "$seeddir" "$artifacts"
    if [ ! -x "$bin/fuzz-$target" ]; then
        echo "fuzz $target: not built ($bin/fuzz-$target missing; run without FUZZ_SKIP_BUILD=1)"
        return 3
    fi
    # Hand-written seeds for the text parsers live in Fuzz/Seeds/<target>/.
    if [ -d "Fuzz/Seeds/$target" ]; then cp -n Fuzz/Seeds/"$target"/* "$seeddir/"; fi
    local target_roots=("$corpus" "$corpus_avif" "$corpus_heic" "$corpus_apng" "$corpus_jxl")
    if [ -n "${roots[$target]+x}" ]; then target_roots=("${roots[$target]}"); fi
    if [ -d "$corpus" ]; then
        for ext in ${seeds[$target]}; do
            for root in "${target_roots[@]}"; do
                [ -d "$root" ] || continue
                # One cp per batch of files, not per file: the corpora hold over a thousand.
                find "$root" -type f -iname "*.$ext" -size -2M -exec cp -n -t "$seeddir/" {} +
            done
        done
    fi
    # -rss_limit_mb: the harness's budgets keep a decode far below this, so crossing it is unbounded growth.
    local status=0
    # The Swift runtime's own backtracer would run under ASan after a trap; libFuzzer prints the stack instead.
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$bin/fuzz-$target" "$seeddir" \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
        -artifact_prefix="$artifacts" >"$work/$target.log" 2>&1 || status=$?
    local runs
    runs=$(grep -E "stat::number_of_executed_units" "$work/$target.log" | awk '{print $2}')
    echo "fuzz $target: ${seconds}s, ${runs:-?} executions, exit $status, crashes: $(ls "$artifacts" | wc -l)"
    return $status
}

failed=0
pids=()
for target in "${targets[@]}"; do
    run_one "$target" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || { echo "fuzz.sh: a target failed (a crash, or not built); see the lines above, $work/<target>.log and $work/artifacts/" >&2; exit 1; }
echo "fuzz.sh: no crash"
