#!/usr/bin/env bash
# Builds ThumbnailServer (the server and its tests) and runs the tests one at a time: live servers on 127.0.0.1 with
# scripted origins, real `thumbnail-server` processes (SIGTERM drain; two replicas sharing a `redis-server`, where
# REQUIRE_REDIS=1 makes a missing redis-server fail), and the gallery in headless Chromium (REQUIRE_CHROMIUM=1
# likewise), whose screenshot is kept at .build/test-artifacts/gallery.png. Serial, because several tests count
# work and time (the herd, the queue, deadlines) and a 2-core machine running them side by side would blur both.
# Then the hostile-client suite (Hostile/hostile.py) against the server's release build: it prints its figures and
# fails when one misses its bound. SKIP_HOSTILE=1 leaves it out.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
# EXAMPLES_SCRATCH (set by scripts/test.sh): one build folder for every example, so the SDK and its dependencies
# compile once for all of them.
scratch=()
[ -n "${EXAMPLES_SCRATCH:-}" ] && scratch=(--scratch-path "$EXAMPLES_SCRATCH")
timeout 2400 $swift build "${scratch[@]}" --build-tests
timeout 600 $swift test "${scratch[@]}" --skip-build --no-parallel
artifacts=${EXAMPLES_SCRATCH:-$PWD/.build}/test-artifacts/gallery.png
if [ -f "$artifacts" ]; then echo "gallery screenshot: $artifacts"; fi
if [ "${SKIP_HOSTILE:-0}" != "1" ]; then
    # Against the release build of the server, as it runs in production: its /health bounds fail the run (see
    # hostile.py on the latency bounds). A debug build's per-connection cost in NIO and Hummingbird alone (150
    # connections that only open delay /health by 25-70 ms) makes its latency figures a measure of the build, not
    # of the server: HOSTILE_BUILD=debug runs the suite on the debug build above and only reports them.
    if [ "${HOSTILE_BUILD:-release}" = "release" ]; then
        start=$SECONDS
        timeout 2400 $swift build -c release "${scratch[@]}" --product thumbnail-server
        echo "release build of thumbnail-server: $((SECONDS - start)) s"
        bin=$($swift build -c release "${scratch[@]}" --show-bin-path)
    else
        bin=$($swift build "${scratch[@]}" --show-bin-path)
        export HOSTILE_DEBUG_BUILD=1
    fi
    start=$SECONDS
    timeout 600 /usr/bin/python3 -B Hostile/hostile.py "$bin/thumbnail-server"
    echo "hostile suite: $((SECONDS - start)) s"
fi
