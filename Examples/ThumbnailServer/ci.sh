#!/usr/bin/env bash
# Builds ThumbnailServer (the server and its tests) and runs the tests: a live server on 127.0.0.1 that is also the
# origin of the images; two built `thumbnail-server` processes sharing a `redis-server` (REQUIRE_REDIS=1 makes a
# missing redis-server fail); the gallery in headless Chromium (REQUIRE_CHROMIUM=1 likewise), whose screenshot is
# kept at .build/test-artifacts/gallery.png.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
# EXAMPLES_SCRATCH (set by scripts/test.sh): one build folder for every example, so the SDK and its dependencies
# compile once for all of them.
scratch=()
[ -n "${EXAMPLES_SCRATCH:-}" ] && scratch=(--scratch-path "$EXAMPLES_SCRATCH")
timeout 1500 $swift build "${scratch[@]}" --build-tests
timeout 300 $swift test "${scratch[@]}" --skip-build
if [ -f .build/test-artifacts/gallery.png ]; then echo "gallery screenshot: $PWD/.build/test-artifacts/gallery.png"; fi
