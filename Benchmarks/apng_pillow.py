"""Pillow on APNG: the external baseline of the APNG rows (APNGBenchmarks).

Usage: apng_pillow.py make INPUTS           writes INPUTS/apng/rgb_source.png and rgba_over.png
       apng_pillow.py measure INPUTS OUT.json RUNS
The files: 60 frames of 480x270 cut from INPUTS/rgba2mp.png (the benchmark's 2 MP photo) with a square moving
across. `rgb_source`: RGB, the photo still, blend op source; Pillow's APNG encoder stores each later frame as the
rectangle that changed (the square's path), so most frames are small. `rgba_over`: RGBA (alpha 220) with a
translucent square, the crop sliding 4 pixels a frame, blend op over: every frame is whole and blended.
`measure` loads every frame of each file (seek + load, which composites the frame into the one image Pillow keeps
for the file), and again keeping each frame as an RGBA copy (`convert("RGBA")`, the frames the SDK returns with
`.preloadAllFrames`); it writes the median wall and CPU nanoseconds as JSON, beside Pillow's version.
"""
import io, json, os, resource, statistics, sys, time
import PIL
from PIL import Image, ImageDraw

def make(inputs):
    out = os.path.join(inputs, "apng")
    os.makedirs(out, exist_ok=True)
    photo = Image.open(os.path.join(inputs, "rgba2mp.png")).convert("RGB")
    for label, mode, blend, fill in [("rgb_source", "RGB", 0, (255, 40, 40)), ("rgba_over", "RGBA", 1, (40, 40, 255, 128))]:
        frames = []
        for i in range(60):
            shift = i * 4 if mode == "RGBA" else 0
            frame = photo.crop((400 + shift, 300, 880 + shift, 570)).convert(mode)
            if mode == "RGBA":
                frame.putalpha(220)
            draw = ImageDraw.Draw(frame, mode)
            draw.rectangle((i * 7, 40 + i, i * 7 + 60, 100 + i), fill=fill)
            frames.append(frame)
        frames[0].save(os.path.join(out, f"{label}.png"), save_all=True, append_images=frames[1:], duration=40,
                       loop=0, blend=blend, default_image=False)

def cpu_now():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return (own.ru_utime + own.ru_stime) * 1e9

def measure(inputs, out_path, runs):
    results = {"pillow_version": PIL.__version__}
    for label in ["rgb_source", "rgba_over"]:
        data = open(os.path.join(inputs, "apng", f"{label}.png"), "rb").read()
        def decode_all(keep):
            kept = []
            with Image.open(io.BytesIO(data)) as im:
                assert im.n_frames == 60 and im.size == (480, 270), (im.n_frames, im.size)
                for index in range(im.n_frames):
                    im.seek(index)
                    im.load()
                    if keep:
                        kept.append(im.convert("RGBA"))
            return kept
        for suffix, keep in [("", False), ("_kept", True)]:
            decode_all(keep)
            walls, cpus = [], []
            for _ in range(runs * 3):
                c, t = cpu_now(), time.perf_counter()
                decode_all(keep)
                walls.append((time.perf_counter() - t) * 1e9)
                cpus.append(cpu_now() - c)
            results[f"pillow_apng_{label}{suffix}"] = statistics.median(walls)
            results[f"pillow_apng_{label}{suffix}_cpu"] = statistics.median(cpus)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)

if sys.argv[1] == "make":
    make(sys.argv[2])
else:
    measure(sys.argv[2], sys.argv[3], int(sys.argv[4]))
