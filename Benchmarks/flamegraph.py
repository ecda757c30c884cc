#!/usr/bin/env python3
"""Folds `perf script` output into a flame graph (SVG, drawn as an icicle: callers above their callees) and
splits the samples into the path's stages.

    perf script -i perf.data | Benchmarks/flamegraph.py OUT.svg "title"   → prints the stage split as JSON

A sample belongs to the first stage whose pattern matches any frame of its stack, in the order below (a decode
runs on a work-pool thread and a store under the manager, so the specific stages are tried first); the rest is
bookkeeping: the manager, caches' in-memory side, the Swift runtime, malloc. Kernel frames count with the stage of
the user frames they run under (page faults for fresh pixel buffers are decode, ext4 inode work is store).
"""
import html
import json
import re
import subprocess
import sys
from collections import defaultdict

STAGES = [
    ("decode", re.compile(r"tjDecompress|tjDecompressHeader|jpeg_|jinit_|decompress_|decode_mcu|jsimd|ycc_|"
                          r"libturbojpeg|libjpeg|JPEGCoder|CodersManager.*decode|PixelBuffer")),
    ("store", re.compile(r"DiskCache|DiskEntryStore|DiskWrite|DiskFile|ext4_|do_renameat|__x64_sys_rename")),
    ("fetch", re.compile(r"AsyncHTTPClient|HTTPLoader|NIOCore|NIOPosix|NIOHTTP1|NIOSSL|BoringSSL|llhttp|"
                         r"c_nio|epoll|tcp_|sock_|__sys_recv|__sys_send|sys_read|sys_write|ip_|inet_|net_rx|"
                         r"\$s\d+NIO|\$s\d+AsyncHTTPClient")),
]
COLORS = {"decode": (230, 120, 60), "store": (70, 130, 200), "fetch": (90, 170, 90), "bookkeeping": (170, 170, 170)}


def parse(lines):
    """Yields each sample's stack, root first, as frame names."""
    stack = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if stack:
                yield list(reversed(stack))
                stack = []
            continue
        if not line.startswith((" ", "\t")):
            continue  # the sample's header line: comm pid time event
        parts = line.strip().split(" ", 1)
        if len(parts) < 2:
            continue
        name = parts[1]
        name = re.sub(r"\+0x[0-9a-f]+", "", name)
        name = re.sub(r" \(([^)]*/)?([^/)]*)\)$", r" (\2)", name)
        stack.append(name)
    if stack:
        yield list(reversed(stack))


def stage_of(stack):
    for stage, pattern in STAGES:
        if any(pattern.search(frame) for frame in stack):
            return stage
    return "bookkeeping"


class Node:
    __slots__ = ("children", "count", "stages")

    def __init__(self):
        self.children = {}
        self.count = 0
        self.stages = defaultdict(int)


def demangled(root):
    """Readable names for the graph (`swift demangle --simplified`, one batch); stages are matched on the mangled
    names, which keep the module."""
    mangled = set()
    pending = [root]
    while pending:
        node = pending.pop()
        for name, child in node.children.items():
            if name.startswith("$s"):
                mangled.add(name)
            pending.append(child)
    ordered = sorted(mangled)
    symbols = [name.split(" (", 1)[0] for name in ordered]
    try:
        result = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(symbols) + "\n",
                                capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return {}
    lines = result.stdout.split("\n")
    if len(lines) < len(ordered):
        return {}
    return {name: lines[i] + (" (" + name.split(" (", 1)[1] if " (" in name else "")
            for i, name in enumerate(ordered)}


def main():
    out_path, title = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "flame graph"
    root = Node()
    totals = defaultdict(int)
    for stack in parse(sys.stdin):
        stage = stage_of(stack)
        totals[stage] += 1
        node = root
        node.count += 1
        node.stages[stage] += 1
        for frame in stack:
            node = node.children.setdefault(frame, Node())
            node.count += 1
            node.stages[stage] += 1
    samples = root.count
    if samples == 0:
        sys.exit("flamegraph.py: no samples")

    names = demangled(root)
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
        y = 50 + level * row  # icicle: the root on top, so the wide frames are what one sees first
        stage = max(node.stages, key=node.stages.get)
        r, g, b = COLORS[stage]
        shade = (hash(name) % 30) - 15
        fill = f"rgb({min(255, max(0, r + shade))},{min(255, max(0, g + shade))},{min(255, max(0, b + shade))})"
        share = 100.0 * node.count / samples
        name = names.get(name, name)
        label = html.escape(name)
        rects.append(
            f'<g><title>{label} — {node.count} samples ({share:.1f}%), mostly {stage}</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" fill="{fill}"/>'
            + (f'<text x="{x + 3:.1f}" y="{y + row - 4}">{html.escape(name[: int(w / 7)])}</text>' if w > 30 else "")
            + "</g>")
        child_x = x
        for child_name in sorted(node.children):
            child = node.children[child_name]
            draw(child, child_name, child_x, level + 1)
            child_x += child.count * scale

    draw(root, "all", pad, 0)
    legend = "  ".join(f"{stage} {100.0 * totals[stage] / samples:.1f}%" for stage in
                       ("fetch", "decode", "store", "bookkeeping"))
    legend_boxes = "".join(
        f'<rect x="{pad + i * 150}" y="28" width="12" height="12" fill="rgb{COLORS[stage]}"/>'
        f'<text x="{pad + i * 150 + 16}" y="39">{stage} {100.0 * totals[stage] / samples:.1f}%</text>'
        for i, stage in enumerate(("fetch", "decode", "store", "bookkeeping")))
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
        f'font-size="11">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<text x="{pad}" y="18" font-size="14">{html.escape(title)} — {samples} samples; {html.escape(legend)}</text>'
        + legend_boxes + "".join(rects) + "</svg>\n")
    open(out_path, "w").write(svg)
    print(json.dumps({"samples": samples, **{stage: totals[stage] for stage in
                                             ("fetch", "decode", "store", "bookkeeping")}}))


if __name__ == "__main__":
    main()
