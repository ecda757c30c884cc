#!/usr/bin/env bash
# Instructions per operation of the hot paths, SDK beside its baseline, counted by callgrind (issue 10): a figure
# that stays put on a shared machine, so a regression shows where the timed rows would drown it in noise.
#
#   Benchmarks/instructions.sh [markdown-file]     prints a Markdown table (and appends it to the file if given)
#
# Each case of Sources/HotPathCounts runs twice under callgrind, with SMALL and LARGE operations; the difference
# in instructions divided by the difference in operations is the cost of one operation (set-up, warm-up and
# process start cancel out). Callgrind counts user-space instructions only: a disk hit's system calls are not in
# its figure (the timed disk-hit row has them), which is why the disk rows compare what the SDK adds in user space.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
SWIFT="${SWIFT:-swift}"
SMALL=${INSTRUCTIONS_SMALL:-200}
LARGE=${INSTRUCTIONS_LARGE:-1200}

command -v valgrind >/dev/null || {
    SUDO=""; [[ $(id -u) == 0 ]] || SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >&2
}
"$SWIFT" build -c release --product HotPathCounts >&2
WORK="$(mktemp -d /tmp/webimage-instructions.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# Valgrind 3.19 gives up on the DWARF 5 the toolchain writes ("possibly corrupted debuginfo"): count a copy without
# debug sections (symbols stay, so a profile of the same copy still names functions).
objcopy --strip-debug "$("$SWIFT" build -c release --show-bin-path)/HotPathCounts" "$WORK/HotPathCounts"

count() { # case operations → instructions
    valgrind --tool=callgrind --callgrind-out-file="$WORK/out" "$WORK/HotPathCounts" "$1" "$2" >/dev/null 2>"$WORK/err" \
        || { cat "$WORK/err" >&2; echo "instructions.sh: case $1 failed" >&2; exit 1; }
    awk '/^summary:/ { print $2 }' "$WORK/out"
}
per_op() { echo $((($(count "$1" "$LARGE") - $(count "$1" "$SMALL")) / (LARGE - SMALL))); }

table="$WORK/table.md"
{
    echo ""
    echo "## Instructions per operation (callgrind, user space; $(date '+%Y-%m-%d %H:%M'))"
    echo ""
    echo "| hot path | SDK | baseline | ratio | goal |"
    echo "|---|---|---|---|---|"
} >"$table"
row() { # label sdk-case baseline-case baseline-label goal
    local sdk base
    sdk=$(per_op "$2")
    base=$(per_op "$3")
    awk -v l="$1" -v s="$sdk" -v b="$base" -v bl="$4" -v g="$5" \
        'BEGIN { printf "| %s | %d | %d (%s) | %.2f× | %s |\n", l, s, b, bl, s / b, g }' >>"$table"
}
row "memory hit: \`loadImage\` (callback)" memoryHit memoryHitBare "bare \`MemoryCache\` lookup" "≤ 5× (time)"
row "memory hit with a \`ResizeTransformer\` in the context" memoryHitTransform memoryHitTransformBare \
    "bare lookup of the transformed key" "≤ 5× (time)"
row "disk hit, 50 KB: \`DiskCache.entry\` (user space only)" diskHit diskHitRaw "open+read" "≤ 1.2× (time, with syscalls)"
row "256×256 JPEG decode through \`CodersManager\` (probe + decode)" decodeSmallJPEG decodeSmallJPEGRaw \
    'raw TurboJPEG: header + `tjDecompress2`, fresh handle' "≤ 1.05×"
cat "$table"
if [[ -n "${1:-}" ]]; then cat "$table" >>"$1"; fi
