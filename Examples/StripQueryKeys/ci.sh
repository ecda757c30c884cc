#!/usr/bin/env bash
# Builds and runs StripQueryKeys: two URLs that differ only in ?token= must share one cache entry, so the
# second load comes from memory and the local server sees one request.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
# EXAMPLES_SCRATCH (set by scripts/test.sh): one build folder for every example, so the SDK and its dependencies
# compile once for all of them.
scratch=()
[ -n "${EXAMPLES_SCRATCH:-}" ] && scratch=(--scratch-path "$EXAMPLES_SCRATCH")
fail() { echo "StripQueryKeys ci: FAIL: $*" >&2; exit 1; }

$swift build "${scratch[@]}"
output=$(timeout 60 "$($swift build "${scratch[@]}" --show-bin-path)/StripQueryKeys")
echo "$output"

keys=$(grep '^key:' <<<"$output" | sort -u)
[ "$(grep -c '^key:' <<<"$output")" -eq 2 ] || fail "expected two loads"
[ "$(wc -l <<<"$keys")" -eq 1 ] || fail "the two URLs got different keys"
grep -q '?' <<<"$keys" && fail "the key still has a query string"
grep -q '^image: png 32x32 from network$' <<<"$output" || fail "the first load did not come from the network"
grep -q '^image: png 32x32 from memory$' <<<"$output" || fail "the second load did not come from memory"
grep -q '^server requests: 1 ' <<<"$output" || fail "the server did not see exactly one request"
echo "StripQueryKeys ci: ok"
