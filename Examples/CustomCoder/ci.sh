#!/usr/bin/env bash
# Builds and runs CustomCoder, then checks what it printed: PPM over HTTP, then from the disk cache of a second
# manager with no second request, the pixel budget refusing a "bomb" header, and the coder registered last
# winning for PNG bytes.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
# EXAMPLES_SCRATCH (set by scripts/test.sh): one build folder for every example, so the SDK and its dependencies
# compile once for all of them.
scratch=()
[ -n "${EXAMPLES_SCRATCH:-}" ] && scratch=(--scratch-path "$EXAMPLES_SCRATCH")
fail() { echo "CustomCoder ci: FAIL: $*" >&2; exit 1; }

$swift build "${scratch[@]}"
output=$(timeout 60 "$($swift build "${scratch[@]}" --show-bin-path)/CustomCoder")
echo "$output"

expect() { grep -qF -- "$1" <<<"$output" || fail "missing output: $1"; }
expect 'coders, asked in this order: ["AuditingPNGCoder", "PPMCoder", "PNGCoder"]'
expect 'manager 1: ppm 48x32 from network'
expect 'manager 2: ppm 48x32 from disk cache'
expect 'server requests for sunset.ppm: 1'
expect 'bomb.ppm: refused with imageTooLarge at the decode stage'
expect 'key ends decode(coder(ppm.gamma=2.2)) .ppm'
expect 'server requests for sunset.ppm after the gamma load: 1'
grep -qE 'gamma 2.2: green at \(0,0\) ([0-9]+) vs ([0-9]+)' <<<"$output" || fail "no gamma line"
read -r brighter darker < <(sed -nE 's/.*gamma 2.2: green at \(0,0\) ([0-9]+) vs ([0-9]+).*/\1 \2/p' <<<"$output")
[ "$brighter" -gt "$darker" ] || fail "gamma 2.2 did not brighten: $brighter vs $darker"
expect 'png: 16x16, AuditingPNGCoder decodes: 1'
echo "CustomCoder ci: ok"
