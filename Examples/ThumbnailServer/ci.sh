#!/usr/bin/env bash
# Builds ThumbnailServer (the server and its tests) and runs the tests: a live server on 127.0.0.1 that is also the
# origin of the images; two built `thumbnail-server` processes sharing a `redis-server` (REQUIRE_REDIS=1 makes a
# missing redis-server fail); the gallery in headless Chromium (REQUIRE_CHROMIUM=1 likewise), whose screenshot is
# kept at .build/test-artifacts/gallery.png.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
timeout 1500 $swift build --build-tests
timeout 300 $swift test --skip-build
if [ -f .build/test-artifacts/gallery.png ]; then echo "gallery screenshot: $PWD/.build/test-artifacts/gallery.png"; fi
