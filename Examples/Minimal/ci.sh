#!/usr/bin/env bash
# Builds and runs Minimal, then proves it picked only what it needs: no HTTP client (AsyncHTTPClient, SwiftNIO)
# or other plugin was compiled, and the binary links libpng but none of libjpeg/libturbojpeg, libwebp, libjxl.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
# Its own build folder, never the examples' shared EXAMPLES_SCRATCH: what this build compiled is the evidence below,
# and a shared folder holds what the other examples compiled (this one builds no HTTP client: it is quick alone).
scratch=()
fail() { echo "Minimal ci: FAIL: $*" >&2; exit 1; }

$swift build "${scratch[@]}"
bin=$($swift build "${scratch[@]}" --show-bin-path)

output=$(timeout 60 "$bin/Minimal")
echo "$output"
for line in "file: png 64x48 from loader" "file: png 64x48 from memory cache" \
    "data: png 64x48 from loader" "data: png 64x48 from memory cache"; do
    grep -qxF "$line" <<<"$output" || fail "missing output line: $line"
done

# What was compiled: SwiftPM plans (and makes empty folders for) every target of the graph, but writes object
# files and modules only for the targets it builds, so those are the evidence.
compiled=$(
    for dir in "$bin"/*.build; do
        [ -n "$(find "$dir" -name '*.o' -print -quit)" ] && basename "$dir" .build
    done
    find "$bin/Modules" -maxdepth 1 -name '*.swiftmodule' -printf '%f\n' | sed 's/\.swiftmodule$//'
)
compiled=$(sort -u <<<"$compiled")
echo "compiled targets: $(tr '\n' ' ' <<<"$compiled")"
grep -qx ImageCore <<<"$compiled" || fail "found no compiled ImageCore: the check looks in the wrong place"
if forbidden=$(grep -E 'AsyncHTTPClient|NIO|HTTPLoader|Crypto|JPEG|WebP|GIF|DiskCache|HEIF|LCMS|ColorManagement|JXL' <<<"$compiled"); then
    fail "compiled targets it does not need: $(tr '\n' ' ' <<<"$forbidden")"
fi

libraries=$(ldd "$bin/Minimal")
grep -q 'libpng' <<<"$libraries" || fail "the binary does not link libpng"
if grep -Ei 'libjpeg|libturbojpeg|libwebp|libheif|liblcms2|libjxl' <<<"$libraries"; then
    fail "the binary links libjpeg, libwebp, libheif, lcms2 or libjxl"
fi
echo "image libraries linked: $(awk '/lib(png|jpeg|turbojpeg|webp|gif|heif|lcms2)/ {print $1}' <<<"$libraries" | tr '\n' ' ')"
echo "Minimal ci: ok"
