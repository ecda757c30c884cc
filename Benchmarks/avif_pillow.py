"""Pillow's AVIF plugin on the AVIF benchmark's inputs: the external baseline of the AVIF rows.

Usage: avif_pillow.py INPUTS OUT.json RUNS
Reads INPUTS/photo2mp.avif (the same bytes AVIFBenchmarks decodes) and INPUTS/rgba2mp.png (the same 1920x1080
photo crop it encodes), with the settings of AVIFCoder: one thread, quality 85 (libavif quantizer 9), 4:2:0,
speed 10 (`.fast`) and 6 (`.balanced`). Writes median wall and CPU nanoseconds as JSON. Needs a Pillow with AVIF
support (Pillow >= 11.3 from PyPI bundles libavif; Debian's python3-pil has none), so run.sh runs it from a venv.
"""
import io, json, resource, statistics, sys, time
import PIL
from PIL import AvifImagePlugin, Image, features

AvifImagePlugin.DEFAULT_MAX_THREADS = 1  # decoding too: one thread, like the SDK and the C baseline

inputs, out_path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
results = {"pillow_version": PIL.__version__, "pillow_libavif": features.version("avif")}

def cpu_now():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return (own.ru_utime + own.ru_stime) * 1e9

def measure(key, fn, runs, warmup=1):
    for _ in range(warmup):
        fn()
    walls, cpus = [], []
    for _ in range(runs):
        c, t = cpu_now(), time.perf_counter()
        fn()
        walls.append((time.perf_counter() - t) * 1e9)
        cpus.append(cpu_now() - c)
    results[key] = statistics.median(walls)
    results[key + "_cpu"] = statistics.median(cpus)

avif = open(f"{inputs}/photo2mp.avif", "rb").read()
def decode():
    with Image.open(io.BytesIO(avif)) as im:
        im.load()
        assert im.size == (1920, 1080), im.size
measure("pillow_avif_2MP_decode", decode, runs * 3)

rgb = Image.open(f"{inputs}/rgba2mp.png").convert("RGB")
rgb.load()
for label, speed in [("fast", 10), ("balanced", 6)]:
    def encode():
        out = io.BytesIO()
        rgb.save(out, "AVIF", quality=85, speed=speed, subsampling="4:2:0", max_threads=1)
    measure(f"pillow_avif_2MP_encode_{label}", encode, max(3, runs // 2))

with open(out_path, "w") as f:
    json.dump(results, f, indent=1)
