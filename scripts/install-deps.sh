#!/usr/bin/env bash
# Installs the system packages the SDK builds against, only those missing, on Debian or Ubuntu.
# Usage: scripts/install-deps.sh [--test]   (--test adds what the test suite needs: nginx, redis, chromium)
set -euo pipefail

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: no apt-get here; install libpng, libdeflate, libjpeg-turbo (+turbojpeg), libwebp, giflib, libavif, libheif, libjxl, lcms2 dev packages by hand" >&2
    exit 0
fi

sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
available() { apt-cache show "$1" >/dev/null 2>&1; }

updated=0
ensure_index() {
    if [ "$updated" -eq 0 ]; then
        $sudo_cmd apt-get update -qq
        updated=1
    fi
}

# Debian names libjpeg-turbo's dev package libjpeg62-turbo-dev; Ubuntu names it libjpeg-turbo8-dev.
# publicsuffix: the public-suffix list HTTPLoader's cookie jar refuses cookie domains by (a small bundled list otherwise).
packages=(pkg-config zlib1g-dev libpng-dev libdeflate-dev libwebp-dev libgif-dev libturbojpeg0-dev libavif-dev libheif-dev liblcms2-dev publicsuffix)
packages+=(libjxl-dev)   # JXLCoder (libjxl 0.7 on Debian 12)
if installed libjpeg62-turbo-dev || installed libjpeg-turbo8-dev; then
    :
else
    ensure_index
    if available libjpeg62-turbo-dev; then packages+=(libjpeg62-turbo-dev); else packages+=(libjpeg-turbo8-dev); fi
fi
if [ "$want_test" -eq 1 ]; then
    command -v openssl >/dev/null 2>&1 || packages+=(openssl)
    packages+=(python3-pil)   # Examples/ImageFetch/ci.sh makes its test images with Pillow (and Tests/ColorManagementTests/Fixtures/make_fixtures.py its references)
    if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
        ensure_index
        if available nginx-light; then packages+=(nginx-light); else packages+=(nginx-core); fi
    fi
    packages+=(redis-server redis-tools)   # RedisCache tests: single nodes and a 3-primary cluster
    if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
        ensure_index   # ThumbnailServer: the gallery in headless Chromium (Ubuntu: chromium-browser)
        if available chromium; then packages+=(chromium); else packages+=(chromium-browser); fi
    fi
fi

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
    ensure_index
    echo "install-deps: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
