#!/usr/bin/env bash
# Builds the Vapor example and smoke-tests it: the app's own routes beside the ImageService mounted at /img, on a
# real listener (a thumbnail of a source the app serves, 304, 400, signatures). EXAMPLES_SCRATCH (set by
# scripts/test.sh) shares one build folder with the other examples, so the SDK compiles once for all of them.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
scratch=()
[ -n "${EXAMPLES_SCRATCH:-}" ] && scratch=(--scratch-path "$EXAMPLES_SCRATCH")
start=$SECONDS
timeout 2400 $swift build "${scratch[@]}" --build-tests
echo "VaporThumbnails: built in $((SECONDS - start)) s"
timeout 600 $swift test "${scratch[@]}" --skip-build --no-parallel
