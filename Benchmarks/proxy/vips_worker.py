"""One libvips worker of the proxy benchmark: thumbnails from sources held in memory, in-process, no HTTP.

Usage: vips_worker.py --sources DIR --folder F --format F --seconds N --warmup N --start K --save JSON
(bench_proxy.py starts two of these side by side, pinned to the benchmark's cores, and prints their sum.)

libvips is what imgproxy and imagor run on; this is its own cost, without a server around it. Each thumbnail is
`thumbnail_buffer(source, 512, height=512)` (fit inside 512x512, shrink-on-load where the format has it) then
`write_to_buffer` in the source's format with the save options given as JSON (servers.LIBVIPS), on one libvips
thread (VIPS_CONCURRENCY=1, set by the caller) with libvips's operation cache off. With --survey, first a pass over every
source records each answer's size and checks it fully (decoded again: format and size); then the timed loop rotates
through the sources from `--start` for `--seconds` and checks every answer's magic bytes and size from its header
(outside the CPU it times). Prints one JSON line: thumbnails, CPU seconds inside the libvips calls, wall seconds,
bytes, the sizes of the first pass, and the wrong answers (counted, the first ten named).
"""

import argparse
import json
import os
import struct
import sys
import time

import pyvips

MAGIC = {"jpeg": (b"\xff\xd8\xff",), "png": (b"\x89PNG\r\n\x1a\n",), "webp": (b"RIFF",), "avif": (b"ftypavif",)}
SUFFIX = {"jpeg": ".jpg", "png": ".png", "webp": ".webp", "avif": ".avif"}


def header_size(fmt, data):
    """(width, height) read from the answer's header, or None."""
    try:
        if fmt == "png":
            return struct.unpack(">II", data[16:24])
        if fmt == "jpeg":
            i = 2
            while i + 9 < len(data):
                if data[i] != 0xFF:
                    return None
                marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    height, width = struct.unpack(">HH", data[i + 5:i + 9])
                    return width, height
                i += 2 + length
            return None
        if fmt == "webp":
            chunk = data[12:16]
            if chunk == b"VP8 ":
                width, height = struct.unpack("<HH", data[26:30])
                return width & 0x3FFF, height & 0x3FFF
            if chunk == b"VP8L":
                bits = struct.unpack("<I", data[21:25])[0]
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8X":
                return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
            return None
        if fmt == "avif":
            at = data.find(b"ispe")
            return struct.unpack(">II", data[at + 8:at + 16]) if at > 0 else None
    except struct.error:
        return None
    return None


def magic_ok(fmt, data):
    if fmt == "avif":
        return data[4:12] == b"ftypavif"
    if fmt == "webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return any(data.startswith(m) for m in MAGIC[fmt])


def expected_sizes(width, height, box=512):
    scale = box / max(width, height)
    if width >= height:
        return {(box, int(height * scale)), (box, int(height * scale) + 1)}
    return {(int(width * scale), box), (int(width * scale) + 1, box)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sources", required=True)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--format", required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--warmup", type=float, default=0)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--save", default="{}")
    parser.add_argument("--survey", action="store_true", help="first a pass over every source: sizes, full checks")
    args = parser.parse_args()
    fmt, save = args.format, json.loads(args.save)
    pyvips.cache_set_max(0)  # no operation cache: every thumbnail is computed

    with open(os.path.join(args.sources, "manifest.json")) as f:
        images = json.load(f)["images"]
    ext = {"jpeg": "jpg", "png": "png", "png-rgba": "png", "webp": "webp", "avif": "avif"}[args.folder]
    sources = []
    for image in images:
        with open(os.path.join(args.sources, args.folder, f"{image['name']}.{ext}"), "rb") as f:
            sources.append((image, f.read()))

    def thumbnail(data):
        return pyvips.Image.thumbnail_buffer(data, 512, height=512).write_to_buffer(SUFFIX[fmt], **save)

    wrong = []
    first_pass = []
    first_bad = 0
    for image, data in sources if args.survey else []:  # every source once: sizes, a full check of each answer
        out = thumbnail(data)
        decoded = pyvips.Image.new_from_buffer(out, "")
        loader = decoded.get("vips-loader")
        size = (decoded.width, decoded.height)
        if not loader.startswith({"jpeg": "jpeg", "png": "png", "webp": "webp", "avif": "heif"}[fmt]) or \
                size not in expected_sizes(image["width"], image["height"]):
            wrong.append(f"{image['name']}: {loader} {size[0]}x{size[1]}")
            first_bad += 1
        first_pass.append(len(out))

    deadline = time.monotonic() + args.warmup
    k = args.start
    while time.monotonic() < deadline:
        thumbnail(sources[k % len(sources)][1])
        k += 1

    count, cpu, total_bytes, checked, bad = 0, 0.0, 0, 0, 0
    k = args.start
    wall0 = time.monotonic()
    deadline = wall0 + args.seconds
    while time.monotonic() < deadline:
        image, data = sources[k % len(sources)]
        k += 1
        t0 = time.process_time()
        out = thumbnail(data)
        cpu += time.process_time() - t0
        count += 1
        total_bytes += len(out)
        size = header_size(fmt, out)
        if not magic_ok(fmt, out) or size is None or tuple(size) not in expected_sizes(image["width"], image["height"]):
            bad += 1
            if len(wrong) < 10:
                wrong.append(f"{image['name']}: magic {out[:12]!r} size {size}")
        else:
            checked += 1
    wall = time.monotonic() - wall0
    print(json.dumps({"thumbnails": count, "checked_ok": checked, "cpu_s": cpu, "wall_s": wall,
                      "bytes": total_bytes, "first_pass_sizes": first_pass, "first_pass_wrong": first_bad,
                      "wrong_answers": bad, "wrong": wrong,
                      "libvips": f"{pyvips.version(0)}.{pyvips.version(1)}.{pyvips.version(2)}",
                      "pyvips": pyvips.__version__}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
