#!/usr/bin/env python3
"""Flame graph of the thumbnail server, its samples split into the stages of a result miss.

    perf script -i perf.data | stages.py OUT.svg "title"   → prints the stage split as JSON

Reuses Benchmarks/flamegraph.py (folding, drawing) with the server's stages, tried in this order: area average
(the decoder's exact step after DCT scaling), encode, decode, resize, store, network (the HTTP server and the
origin client); the rest is bookkeeping (routing, keys, logging, metrics, the Swift runtime, malloc).
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "Benchmarks"))
import flamegraph  # noqa: E402

flamegraph.STAGES = [
    ("area average", re.compile(r"areaResampled|AreaResampler")),
    ("encode", re.compile(r"tjCompress|jpeg_(start|finish)_compress|compress_|encode_mcu|jsimd_(fdct|rgb_ycc|"
                          r"h2v\d_downsample|huff_encode|convsamp|quantize)|JPEGEncoder|WebPEncode|VP8|avifEncoder|"
                          r"aom_|av1_|png_write|deflate|GIFEncoder|encode\(_:as:options:\)")),
    ("decode", re.compile(r"tjDecompress|decompress_|decode_mcu|jsimd_(idct|ycc_rgb|h2v\d_(fancy_|merged_)?upsample)|"
                          r"jpeg_|JPEGDecoder|areaResampled|WebPDecode|png_|inflate|GIFCoder|avifDecoder|dav1d|"
                          r"decode\(_:options:\)|probe")),
    ("resize", re.compile(r"ResizeTransformer|SeparableResampler|ResampleWeights|CropTransformer|SmartCrop|FrameMapper")),
    ("store", re.compile(r"DiskCache|DiskEntryStore|DiskWrite|DiskFile|BytesMemoryCache|RedisCache|ext4_|do_renameat|"
                         r"__x64_sys_rename")),
    ("network", re.compile(r"Hummingbird|AsyncHTTPClient|HTTPLoader|NIOCore|NIOPosix|NIOHTTP1|llhttp|c_nio|epoll|"
                           r"tcp_|sock_|__sys_recv|__sys_send|sys_read|sys_write|ip_|inet_|net_rx|\$s\d+NIO|"
                           r"\$s\d+AsyncHTTPClient|\$s\d+Hummingbird")),
]
flamegraph.COLORS = {
    "area average": (240, 160, 100), "encode": (200, 90, 160), "decode": (230, 120, 60), "resize": (220, 190, 60), "store": (70, 130, 200),
    "network": (90, 170, 90), "bookkeeping": (170, 170, 170),
}

ORDER = ("network", "decode", "area average", "resize", "encode", "store", "bookkeeping")


def main():
    """flamegraph.main with this file's stages in the legend and the JSON."""
    import html
    import json
    from collections import defaultdict

    out_path, title = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "flame graph"
    root = flamegraph.Node()
    totals = defaultdict(int)
    for stack in flamegraph.parse(sys.stdin):
        stage = flamegraph.stage_of(stack)
        totals[stage] += 1
        node = root
        node.count += 1
        node.stages[stage] += 1
        for frame in stack:
            node = node.children.setdefault(frame, flamegraph.Node())
            node.count += 1
            node.stages[stage] += 1
    samples = root.count
    if samples == 0:
        sys.exit("stages.py: no samples")
    names = flamegraph.demangled(root)
    width, row, pad = 1400, 16, 10
    depth = [0]

    def measure(node, level):
        depth[0] = max(depth[0], level)
        for child in node.children.values():
            measure(child, level + 1)

    measure(root, 0)
    height = (depth[0] + 1) * row + 3 * pad + 40
    scale = (width - 2 * pad) / samples
    rects = []

    def draw(node, name, x, level):
        w = node.count * scale
        if w < 0.3:
            return
        y = 50 + level * row
        stage = max(node.stages, key=node.stages.get)
        r, g, b = flamegraph.COLORS[stage]
        shade = (hash(name) % 30) - 15
        fill = f"rgb({min(255, max(0, r + shade))},{min(255, max(0, g + shade))},{min(255, max(0, b + shade))})"
        share = 100.0 * node.count / samples
        label = html.escape(names.get(name, name))
        rects.append(
            f'<g><title>{label} — {node.count} samples ({share:.1f}%), mostly {stage}</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" fill="{fill}"/>'
            + (f'<text x="{x + 3:.1f}" y="{y + row - 4}">{label[: int(w / 7)]}</text>' if w > 30 else "")
            + "</g>")
        child_x = x
        for child_name in sorted(node.children):
            child = node.children[child_name]
            draw(child, child_name, child_x, level + 1)
            child_x += child.count * scale

    draw(root, "all", pad, 0)
    legend = "".join(
        f'<rect x="{pad + i * 190}" y="28" width="12" height="12" fill="rgb{flamegraph.COLORS[stage]}"/>'
        f'<text x="{pad + i * 190 + 16}" y="39">{stage} {100.0 * totals[stage] / samples:.1f}%</text>'
        for i, stage in enumerate(ORDER))
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
        f'font-size="11"><rect width="100%" height="100%" fill="white"/>'
        f'<text x="{pad}" y="18" font-size="14">{html.escape(title)} — {samples} samples</text>'
        + legend + "".join(rects) + "</svg>\n")
    open(out_path, "w").write(svg)
    print(json.dumps({"samples": samples, **{stage: totals[stage] for stage in ORDER}}))


if __name__ == "__main__":
    main()
