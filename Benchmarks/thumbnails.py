#!/usr/bin/env python3
"""The thumbnail rows (issue 23 items 5 and 8): the SDK against `vipsthumbnail`, per format and size, in
interleaved passes on the same files.

    thumbnails.py <ThumbnailRunner binary> <inputs dir> <passes> <out.json> [side]

For each input (JPEG, WebP, PNG, AVIF at 12 MP and 2 MP, written by ExportInputs under <inputs>/thumb) and each
pass, three runs of each side alternate: one SDK thumbnail (the long-lived ThumbnailRunner: read the file, decode
at thumbnail size, fit, JPEG q85, write), one `vipsthumbnail <file> -s 256x256 -o out.jpg[Q=85]`, and one
`vipsthumbnail` of a 16x16 file of the same format (its start-up: process, libvips, loader and saver, with no
pixels to speak of). A pass's figures are medians of its three runs; the vips figure is its run minus its start-up
run, CPU time of the child (user + system, all its threads). Also per pass, one `vipsthumbnail` of five
hard-linked copies of the file against one of a single copy gives vips's cost per image in a warm process (start-up
cancels exactly), printed beside the row. The SDK's CPU time is its process's over exactly the thumbnail's work.

Writes, per row, the per-pass CPU and wall figures and their ratios; run.sh prints the median pass and the worst.
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

runner_path, inputs, passes, out_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
side = int(sys.argv[5]) if len(sys.argv) > 5 else 256
RUNS = 3  # per side and pass, interleaved
COPIES = 5  # the warm-process run
thumb_dir = os.path.join(inputs, "thumb")
scratch = os.path.join(inputs, "thumb-out")
os.makedirs(scratch, exist_ok=True)

ROWS = [(fmt, size, os.path.join(thumb_dir, f"{size}.{ext}"), os.path.join(thumb_dir, f"tiny.{ext}"))
        for fmt, ext in [("JPEG", "jpg"), ("WebP", "webp"), ("PNG", "png"), ("AVIF", "avif")]
        for size in ["12mp", "2mp"]]


def child_cpu_ns():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1e9


def vips(files, label):
    """CPU and wall ns of one vipsthumbnail process over `files` (output: <scratch>/<label>-<name>.jpg)."""
    args = ["vipsthumbnail", *files, "-s", f"{side}x{side}", "-o", os.path.join(scratch, f"{label}-%s.jpg[Q=85]")]
    cpu, wall = child_cpu_ns(), time.perf_counter_ns()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return child_cpu_ns() - cpu, time.perf_counter_ns() - wall


runner = subprocess.Popen([runner_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def sdk(path):
    """(width, height, CPU ns, wall ns) of one SDK thumbnail of `path`."""
    runner.stdin.write(f"thumb {path} {side} {os.path.join(scratch, 'sdk.jpg')}\n")
    runner.stdin.flush()
    answer = runner.stdout.readline().split()
    if not answer or answer[0] != "ok":
        raise RuntimeError(f"ThumbnailRunner on {path}: {' '.join(answer)}")
    return int(answer[1]), int(answer[2]), int(answer[3]), int(answer[4])


def vips_size(path):
    out = subprocess.run(["vipsheader", "-f", "width", path], capture_output=True, text=True, check=True).stdout
    out2 = subprocess.run(["vipsheader", "-f", "height", path], capture_output=True, text=True, check=True).stdout
    return int(out), int(out2)


results = {"side": side, "runs_per_pass": RUNS, "passes": passes, "copies": COPIES, "rows": []}
missing = [path for _, _, path, tiny in ROWS for path in (path, tiny) if not os.path.exists(path)]
if missing:
    raise SystemExit(f"thumbnails.py: missing inputs {missing}")

# Copies for the warm-process run, hard-linked under distinct names (no cache hit by name).
copies = {}
for fmt, size, path, _ in ROWS:
    names = []
    for i in range(COPIES):
        link = os.path.join(scratch, f"copy{i}-{os.path.basename(path)}")
        if os.path.exists(link):
            os.remove(link)
        os.link(path, link)
        names.append(link)
    copies[path] = names

rows = {path: {"format": fmt, "size": size, "file": os.path.basename(path), "bytes": os.path.getsize(path),
               "passes": []} for fmt, size, path, _ in ROWS}
for fmt, size, path, tiny in ROWS:
    # Warm-up: one of each, and the sizes both sides produce (they must agree).
    w, h, _, _ = sdk(path)
    vips([path], "warm")
    vips([tiny], "warm")
    rows[path]["sdk_size"] = [w, h]
    rows[path]["vips_size"] = list(vips_size(os.path.join(scratch, f"warm-{os.path.splitext(os.path.basename(path))[0]}.jpg")))

for p in range(passes):
    for fmt, size, path, tiny in ROWS:
        sdk_cpu, sdk_wall, one_cpu, one_wall, start_cpu, start_wall = [], [], [], [], [], []
        for _ in range(RUNS):
            _, _, c, wl = sdk(path)
            sdk_cpu.append(c); sdk_wall.append(wl)
            c, wl = vips([path], "one")
            one_cpu.append(c); one_wall.append(wl)
            c, wl = vips([tiny], "start")
            start_cpu.append(c); start_wall.append(wl)
        many_cpu, many_wall = vips(copies[path], "many")
        single_cpu, single_wall = vips(copies[path][:1], "many")
        med = statistics.median
        entry = {
            "sdk_cpu": med(sdk_cpu), "sdk_wall": med(sdk_wall),
            "vips_run_cpu": med(one_cpu), "vips_start_cpu": med(start_cpu),
            "vips_cpu": med(one_cpu) - med(start_cpu), "vips_wall": med(one_wall) - med(start_wall),
            "vips_warm_cpu": (many_cpu - single_cpu) / (COPIES - 1),
            "vips_warm_wall": (many_wall - single_wall) / (COPIES - 1),
        }
        entry["cpu_ratio"] = entry["sdk_cpu"] / entry["vips_cpu"] if entry["vips_cpu"] > 0 else None
        entry["wall_ratio"] = entry["sdk_wall"] / entry["vips_wall"] if entry["vips_wall"] > 0 else None
        entry["warm_cpu_ratio"] = entry["sdk_cpu"] / entry["vips_warm_cpu"] if entry["vips_warm_cpu"] > 0 else None
        rows[path]["passes"].append(entry)
        print(f"pass {p + 1} {fmt} {size}: SDK {entry['sdk_cpu'] / 1e6:.2f} ms CPU, vips {entry['vips_cpu'] / 1e6:.2f} ms "
              f"(run {entry['vips_run_cpu'] / 1e6:.2f} − start-up {entry['vips_start_cpu'] / 1e6:.2f}), "
              f"warm vips {entry['vips_warm_cpu'] / 1e6:.2f} ms", file=sys.stderr)

runner.stdin.close()
runner.wait()
results["rows"] = [rows[path] for _, _, path, _ in ROWS]
with open(out_path, "w") as f:
    json.dump(results, f, indent=1)
