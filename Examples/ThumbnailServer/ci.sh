#!/usr/bin/env bash
# Builds ThumbnailServer and runs its tests: a live server on 127.0.0.1 that is also the origin of the images.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
timeout 1500 $swift build --build-tests
timeout 300 $swift test --skip-build
