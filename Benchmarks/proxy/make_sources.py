"""Makes the benchmark's sources: distinct ~2.5 MP photos (DIV2K-like) from the corpus's camera JPEGs.

Usage: make_sources.py PHOTOS_DIR OUT_DIR [COUNT]

The camera JPEGs of 8 MP or more in PHOTOS_DIR (three in the shared corpus: Canon EOS 20D, 8.2 MP; Canon EOS 450D
and Nikon D90, 12.2 MP) share the COUNT pictures (default 55). Each picture is a crop of random size and place of
its photo (55-100% of the largest crop of that shape, never smaller than the output, so nothing is upscaled),
scaled to 1920x1280 (every fifth a portrait crop scaled to 1280x1920), every other one mirrored; EXIF orientation
applied, metadata dropped. Each is written as JPEG (quality 90, 4:2:0), PNG (RGB, zlib level 6), PNG with an
opaque alpha channel (png-rgba/, for servers that pick PNG only for images with alpha), WebP (lossy, quality 90)
and AVIF (quality 80, speed 8, Pillow's bundled libavif), so each output format is measured from sources of its
own format. Deterministic (seeded); the photos stay outside the repository.
Writes OUT_DIR/manifest.json: [{"name", "width", "height"}].
"""

import json
import os
import random
import sys

from PIL import Image, ImageOps, features

VERSION = 1  # bump when the output changes, so bench.sh remakes the sources
EXT = {"jpeg": "jpg", "png": "png", "png-rgba": "png", "webp": "webp", "avif": "avif"}


def main():
    photos_dir, out_dir = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 55
    if not features.check("avif"):
        sys.exit("make_sources: this Pillow cannot write AVIF (Pillow >= 11.3 from PyPI bundles libavif)")
    photos = sorted(
        os.path.join(photos_dir, f)
        for f in os.listdir(photos_dir)
        if f.lower().endswith((".jpg", ".jpeg")) and _is_large(os.path.join(photos_dir, f))
    )
    if len(photos) < 2:
        sys.exit(f"make_sources: need camera photos of 8+ MP in {photos_dir}, found {len(photos)}")
    rng = random.Random(22)
    per_photo = -(-count // len(photos))
    manifest = []
    for folder in EXT:
        os.makedirs(os.path.join(out_dir, folder), exist_ok=True)
    for photo_index, path in enumerate(photos):
        with Image.open(path) as opened:
            photo = ImageOps.exif_transpose(opened).convert("RGB")
        for k in range(per_photo):
            if len(manifest) == count:
                break
            portrait = k % 5 == 4
            out_w, out_h = (1280, 1920) if portrait else (1920, 1280)
            # The largest crop of the output's aspect that fits, scaled by 55-100%, at a random place.
            full_w = min(photo.width, photo.height * out_w // out_h)
            # Never upscaled: at least the output's width.
            scale = rng.uniform(max(0.55, out_w / full_w), 1.0)
            crop_w = max(out_w, int(full_w * scale))
            crop_h = crop_w * out_h // out_w
            x = rng.randint(0, photo.width - crop_w)
            y = rng.randint(0, photo.height - crop_h)
            picture = photo.crop((x, y, x + crop_w, y + crop_h)).resize((out_w, out_h), Image.Resampling.LANCZOS)
            if k % 2 == 1:
                picture = ImageOps.mirror(picture)
            name = f"{len(manifest):03d}"
            _write_all(picture, out_dir, name)
            manifest.append({"name": name, "width": out_w, "height": out_h, "from": os.path.basename(path)})
            print(f"make_sources: {name} from {os.path.basename(path)} {out_w}x{out_h}", flush=True)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"version": VERSION, "images": manifest}, f, indent=1)


def _is_large(path):
    with Image.open(path) as image:
        return image.width * image.height >= 8_000_000


def _write_all(picture, out_dir, name):
    def target(folder):
        return os.path.join(out_dir, folder, f"{name}.{EXT[folder]}")

    picture.save(target("jpeg"), "JPEG", quality=90, subsampling="4:2:0")
    picture.save(target("png"), "PNG", compress_level=6)
    rgba = picture.copy()
    rgba.putalpha(255)
    rgba.save(target("png-rgba"), "PNG", compress_level=6)
    picture.save(target("webp"), "WEBP", quality=90, method=4)
    picture.save(target("avif"), "AVIF", quality=80, speed=8, subsampling="4:2:0")


if __name__ == "__main__":
    main()
