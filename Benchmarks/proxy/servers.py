"""The two servers under test: how each is started, how a thumbnail is asked for, where its metrics are.

This is the ONE place to change when the ThumbnailServer's command line, query format or metrics move (for
example once it takes `format=`, refuses unsigned URLs unless a flag allows them, and serves Prometheus metrics on
a port of its own). The environment overrides the ThumbnailServer's entries without editing this file:

  SERVER_BIN            the built `thumbnail-server` (bench.sh builds it and sets this)
  SERVER_ARGS           extra command-line arguments, split on spaces (e.g. "--allow-unsigned")
  SERVER_ENV            extra environment, "NAME=value NAME2=value2"
  SERVER_PATH           the request path template (placeholders below)
  SERVER_METRICS_URL    the metrics URL template
  SERVER_READY_PATH     a path polled until the server answers it (any status below 500)

Placeholders: {port} {metrics_port} {workdir} {binary} in commands and environment; in request paths {source}
(the source URL, absolute), {source_q} (the same, percent-encoded for a query parameter), {source_thumbor} (the
source without its scheme, as thumbor takes it), {format} (jpeg, png, webp, avif), {mime} (image/jpeg, ...).
"""

import os

FORMATS = ["jpeg", "png", "webp", "avif"]
MIME = {"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "avif": "image/avif"}
BOX = 512  # every request: fit inside BOX x BOX, in the source's format

# --- The ThumbnailServer (Examples/ThumbnailServer, release build) -------------------------------------------
# GET /thumbnail?url=&w=&h=&fit=contain&format=source (the source's format); unsigned URLs only with
# ALLOW_UNSIGNED=1, and the nginx origin on 127.0.0.1 only with ALLOWED_ADDRESSES naming it (the source policy
# refuses loopback by the resolved address otherwise). Metrics on their own port (METRICS_PORT), readiness at
# /health. Its caches: sources and results, memory + disk, on by default (the default configuration). Every request names a
# source URL never asked before (a nonce in the path that nginx strips), so each request misses every cache
# level and fetches its source from nginx, as a proxy's cold miss does; the caches still store what they would.
SDK = {
    "name": "ThumbnailServer",
    "command": ["{binary}"] + os.environ.get("SERVER_ARGS", "").split(),
    "env": {
        "HOST": "127.0.0.1",
        "PORT": "{port}",
        "CACHE_DIR": "{workdir}/cache",
        "ALLOWED_ORIGINS": "127.0.0.1",
        "ALLOW_UNSIGNED": "1",
        "ALLOWED_ADDRESSES": "127.0.0.1/32",
        "METRICS_PORT": "{metrics_port}",
        **dict(kv.split("=", 1) for kv in os.environ.get("SERVER_ENV", "").split() if "=" in kv),
    },
    "path": os.environ.get("SERVER_PATH", "/thumbnail?url={source_q}&w=512&h=512&fit=contain&format=source"),
    # Sent with every request; the format goes by Accept today. Keep it when `format=` lands: it is harmless.
    "headers": {"Accept": "{mime}"},
    "ready_path": os.environ.get("SERVER_READY_PATH", "/health"),
    "metrics_url": os.environ.get("SERVER_METRICS_URL", "http://127.0.0.1:{metrics_port}/metrics"),
    # Logical name -> the metric names that count it (Prometheus text; all series of a name are summed, labels
    # ignored). The first name the server exposes wins; a quantity no name covers is reported as "not exposed".
    "metrics": {
        "requests": ["thumbnail_requests_total", "thumbnail_http_requests_total"],
        "cache_hits": ["thumbnail_cache_hits_total"],
        "cache_misses": ["thumbnail_cache_misses_total"],
        "origin_requests": ["thumbnail_origin_requests_total", "thumbnail_origin_fetches_total"],
        "decodes": ["thumbnail_decodes_total", "thumbnail_decode_seconds_count"],
        "resizes": ["thumbnail_resizes_total", "thumbnail_resize_seconds_count"],
        "encodes": ["thumbnail_encodes_total", "thumbnail_encode_seconds_count"],
    },
}

# --- thumbor 7.8 (PyPI, in the build folder's virtualenv) ----------------------------------------------------
# `fit-in/512x512` keeps the source's format. Its configuration (thumbor.conf, written by bench_proxy.py):
# no source storage, no result storage (thumbor's default), JPEG/WebP/AVIF quality 80 as the ThumbnailServer's 0.8,
# pycurl's client for fetching, as thumbor advises.
THUMBOR = {
    "name": "thumbor",
    "command": ["{venv}/bin/thumbor", "--ip", "127.0.0.1", "--port", "{port}", "--conf", "{workdir}/thumbor.conf",
                "--processes", "{processes}", "--log-level", "error"],
    "env": {},
    "path": "/unsafe/fit-in/512x512/{source_thumbor}",
    "headers": {},
    "ready_path": "/healthcheck",
}

THUMBOR_CONF = """\
# Written by Benchmarks/proxy/bench_proxy.py.
STORAGE = 'thumbor.storages.no_storage'      # no cache of the sources: every request fetches its source
RESULT_STORAGE = None                         # no result cache (thumbor's default)
QUALITY = 80                                  # JPEG; WebP and AVIF take the same (WEBP_QUALITY/AVIF_QUALITY None)
HTTP_LOADER_CURL_ASYNC_HTTP_CLIENT = True     # pycurl, as thumbor's log advises
HTTP_LOADER_MAX_CLIENTS = 64
ALLOW_UNSAFE_URL = True
MAX_AGE = 0
"""

# --- libvips 8.18 in-process (pyvips with its binary wheel, in the build folder's virtualenv; issue 34) ---------
# The engine under imgproxy and imagor, without a server around it: vips_worker.py holds the sources in memory and
# runs `thumbnail_buffer(source, 512, height=512)` then `write_to_buffer` in the source's format, on one libvips
# thread per process (VIPS_CONCURRENCY=1), operation cache off, PROCESSES worker processes side by side on the
# benchmark's cores (the 2-core rate). Save settings: libvips's own defaults (PNG: compression 6, no row filter;
# WebP effort 4; AVIF effort 4, AV1 through libheif), with the quality the ThumbnailServer uses for that format by
# default (JPEG 80, WebP 80, AVIF 60), so both sides encode at the same nominal quality. Effort stays libvips's:
# its AVIF effort 4 is libaom speed 5, where the ThumbnailServer encodes AVIF at libavif speed 6 (EFFORT's default).
LIBVIPS = {
    "id": "vips",
    "label": "libvips in-process (pyvips), 2 processes",
    "processes": int(os.environ.get("VIPS_PROCESSES", "2")),
    "save": {"jpeg": {"Q": 80}, "png": {}, "webp": {"Q": 80}, "avif": {"Q": 60}},
}

# The configurations measured, alternated in this order in every round. `keepalive: False` sends
# `Connection: close`, so every request opens a new connection and the kernel spreads them over thumbor's workers.
CONFIGS = [
    {"id": "sdk", "label": "ThumbnailServer", "server": "sdk", "keepalive": True},
    {"id": "thumbor1", "label": "thumbor, 1 process", "server": "thumbor", "processes": 1, "keepalive": True},
    {"id": "thumbor2", "label": "thumbor, 2 processes", "server": "thumbor", "processes": 2, "keepalive": True},
    {"id": "thumbor2c", "label": "thumbor, 2 processes, new connection per request", "server": "thumbor",
     "processes": 2, "keepalive": False},
]
