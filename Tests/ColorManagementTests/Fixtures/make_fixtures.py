#!/usr/bin/env python3
"""Makes the colour-management fixtures and their Pillow (ImageCms, lcms2) references.

Run from this folder with Debian's python3 and python3-pil: /usr/bin/python3 make_fixtures.py
Outputs (all committed, all made here, no third-party content):
  display-p3.icc, adobe-rgb.icc  ICC v4 matrix/TRC display profiles written byte by byte from the published
                                 primaries (Display P3: DCI-P3 primaries, D65, sRGB curve; Adobe RGB (1998):
                                 its primaries, D65, gamma 563/256), colorants Bradford-adapted to D50
  press-cmyk.icc                 an ICC v2 output profile (CMYK -> Lab lut16, 9^4 grid) of a simple ink model
  srgb.icc                       lcms2's own sRGB profile, as Pillow writes it (the identity case; its header
                                 carries the time it was made, the one byte-for-byte difference between runs)
  p3.png, adobergb.jpg           64x48 synthesized pixels tagged with those profiles
  cmyk-adobe.jpg                 CMYK JPEG as Pillow writes it (Adobe APP14, inverted samples), tagged
  cmyk-plain.jpg                 the same inks stored plain (0 = no ink) and without APP14, tagged. Pillow reads
                                 every CMYK JPEG as inverted; the SDK (like browsers) only one with APP14, so the
                                 file is written from inverted inks and Pillow's decode is inverted back
  *.srgb                         raw 8-bit sRGB RGB of each source, converted by Pillow's ImageCms
                                 (lcms2 2.14, perceptual intent, to ImageCms.createProfile("sRGB"))
"""
import io, math, struct
from PIL import Image, ImageChops, ImageCms

W, H = 64, 48

# ---------- ICC writing ----------

def s15(v):
    return struct.pack('>i', int(round(v * 65536)))

def xyz_tag(x, y, z):
    return b'XYZ ' + b'\0' * 4 + s15(x) + s15(y) + s15(z)

def mluc(text):
    data = text.encode('utf-16-be')
    return b'mluc' + b'\0' * 4 + struct.pack('>II', 1, 12) + b'enUS' + struct.pack('>II', len(data), 28) + data

def sf32(m):
    return b'sf32' + b'\0' * 4 + b''.join(s15(v) for row in m for v in row)

def para_srgb():
    return b'para' + b'\0' * 4 + struct.pack('>HH', 3, 0) + b''.join(
        s15(v) for v in (2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045))

def curv_gamma(g):
    return b'curv' + b'\0' * 4 + struct.pack('>IH', 1, int(round(g * 256))) + b'\0\0'

def pad4(b):
    return b + b'\0' * (-len(b) % 4)

def profile(cls, space, pcs, version, tags):
    count = len(tags)
    offset = 128 + 4 + 12 * count
    table, body = b'', b''
    for sig, data in tags:
        table += sig.encode() + struct.pack('>II', offset + len(body), len(data))
        body += pad4(data)
    size = offset + len(body)
    header = struct.pack('>I', size) + b'\0' * 4 + struct.pack('>I', version) + cls.encode() + space.encode() + pcs.encode()
    header += struct.pack('>6H', 2024, 1, 1, 0, 0, 0) + b'acsp' + b'\0' * 4 + b'\0' * 4 + b'\0' * 8 + b'\0' * 8
    header += struct.pack('>I', 0) + s15(0.9642) + s15(1.0) + s15(0.8249) + b'\0' * 4 + b'\0' * 16 + b'\0' * 28
    assert len(header) == 128
    return header + struct.pack('>I', count) + table + body

# ---------- colour math ----------

BRADFORD = [[0.8951, 0.2664, -0.1614], [-0.7502, 1.7135, 0.0367], [0.0389, -0.0685, 1.0296]]
D65 = (0.95047, 1.0, 1.08883)
D50 = (0.96422, 1.0, 0.82521)

def mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]

def mulv(a, v):
    return [sum(a[i][k] * v[k] for k in range(3)) for i in range(3)]

def inv(m):
    a, b, c = m[0]; d, e, f = m[1]; g, h, i = m[2]
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    return [[(e * i - f * h) / det, (c * h - b * i) / det, (b * f - c * e) / det],
            [(f * g - d * i) / det, (a * i - c * g) / det, (c * d - a * f) / det],
            [(d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det]]

def rgb_to_xyz(primaries, white):
    cols = []
    for x, y in primaries:
        cols.append([x / y, 1.0, (1 - x - y) / y])
    m = [[cols[j][i] for j in range(3)] for i in range(3)]
    s = mulv(inv(m), list(white))
    return [[m[i][j] * s[j] for j in range(3)] for i in range(3)]

def adaptation(src, dst):
    ls, ld = mulv(BRADFORD, list(src)), mulv(BRADFORD, list(dst))
    return mul(inv(BRADFORD), mul([[ld[0] / ls[0], 0, 0], [0, ld[1] / ls[1], 0], [0, 0, ld[2] / ls[2]]], BRADFORD))

def display_profile(name, primaries, trc):
    chad = adaptation(D65, D50)
    m = mul(chad, rgb_to_xyz(primaries, D65))
    tags = [('desc', mluc(name)), ('cprt', mluc('No copyright, use freely')), ('wtpt', xyz_tag(*D50)),
            ('chad', sf32(chad)),
            ('rXYZ', xyz_tag(m[0][0], m[1][0], m[2][0])), ('gXYZ', xyz_tag(m[0][1], m[1][1], m[2][1])),
            ('bXYZ', xyz_tag(m[0][2], m[1][2], m[2][2])), ('rTRC', trc), ('gTRC', trc), ('bTRC', trc)]
    return profile('mntr', 'RGB ', 'XYZ ', 0x04300000, tags)

def srgb_to_lab_d50(r, g, b):
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    m = mul(adaptation(D65, D50), rgb_to_xyz([(0.64, 0.33), (0.30, 0.60), (0.15, 0.06)], D65))
    x, y, z = mulv(m, lin)
    f = lambda t: t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116
    fx, fy, fz = f(x / D50[0]), f(y / D50[1]), f(z / D50[2])
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)

def cmyk_profile():
    grid = 9
    clut = b''
    for c in range(grid):
        for m in range(grid):
            for y in range(grid):
                for k in range(grid):
                    C, M, Y, K = (v / (grid - 1) for v in (c, m, y, k))
                    # A simple press: inks that are not pure (cyan takes some green, magenta some blue), and a
                    # black that is not quite black; paper white is L* 100.
                    r = (1 - C) * (1 - 0.08 * M) * (1 - 0.9 * K)
                    g = (1 - 0.15 * C) * (1 - M) * (1 - 0.02 * Y) * (1 - 0.9 * K)
                    b = (1 - 0.05 * C) * (1 - 0.2 * M) * (1 - Y) * (1 - 0.9 * K)
                    L, a, bb = srgb_to_lab_d50(max(r, 0), max(g, 0), max(b, 0))
                    clut += struct.pack('>HHH', round(min(max(L, 0), 100) * 65280 / 100),
                                        round(min(max(a + 128, 0), 255.996) * 256), round(min(max(bb + 128, 0), 255.996) * 256))
    ident = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    lut = b'mft2' + b'\0' * 4 + bytes([4, 3, grid, 0]) + b''.join(s15(v) for row in ident for v in row)
    lut += struct.pack('>HH', 2, 2) + struct.pack('>HH', 0, 65535) * 4 + clut + struct.pack('>HH', 0, 65535) * 3
    tags = [('desc', b'desc' + b'\0' * 4 + struct.pack('>I', 11) + b'Press CMYK\0' + b'\0' * 12 + b'\0' * 67),
            ('cprt', b'text' + b'\0' * 4 + b'No copyright, use freely\0'), ('wtpt', xyz_tag(*D50)), ('A2B0', lut)]
    return profile('prtr', 'CMYK', 'Lab ', 0x02100000, tags)

# ---------- pixels ----------

def rgb_pixels():
    """Saturated ramps of every hue and a gray ramp: what leaves sRGB's gamut when tagged P3 or Adobe RGB."""
    out = []
    for y in range(H):
        for x in range(W):
            hue = x / W * 6
            sector, frac = int(hue), hue - int(hue)
            level = [(1, frac, 0), (1 - frac, 1, 0), (0, 1, frac), (0, 1 - frac, 1), (frac, 0, 1), (1, 0, 1 - frac)][sector]
            if y >= H - 8:
                v = x / (W - 1)
                level = (v, v, v)
            shade = 1 - (y % (H - 8)) / (H - 8) * 0.8 if y < H - 8 else 1
            out.append(tuple(int(round(c * shade * 255)) for c in level))
    return out

def cmyk_pixels():
    out = []
    for y in range(H):
        for x in range(W):
            out.append((x * 4 % 256, y * 5 % 256, (x + y) * 2 % 256, (x * y) % 256 if y > 24 else 0))
    return out

def strip_app14(data):
    out, i = bytearray(data[:2]), 2
    while i < len(data):
        marker, length = data[i + 1], struct.unpack('>H', data[i + 2:i + 4])[0]
        if marker == 0xDA:
            out += data[i:]
            break
        if marker != 0xEE:
            out += data[i:i + 2 + length]
        i += 2 + length
    return bytes(out)

def convert(image, icc, mode='RGB'):
    source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
    srgb = ImageCms.createProfile('sRGB')
    return ImageCms.profileToProfile(image, source, srgb, renderingIntent=0, outputMode=mode)

def main():
    p3 = display_profile('Display P3 (made for WebImage tests)', [(0.680, 0.320), (0.265, 0.690), (0.150, 0.060)], para_srgb())
    adobe = display_profile('Adobe RGB (1998) compatible (made for WebImage tests)',
                            [(0.64, 0.33), (0.21, 0.71), (0.15, 0.06)], curv_gamma(563 / 256))
    cmyk = cmyk_profile()
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile('sRGB')).tobytes()
    for name, data in (('display-p3.icc', p3), ('adobe-rgb.icc', adobe), ('press-cmyk.icc', cmyk), ('srgb.icc', srgb)):
        open(name, 'wb').write(data)

    rgb = Image.new('RGB', (W, H))
    rgb.putdata(rgb_pixels())
    rgb.save('p3.png', icc_profile=p3)
    rgb.save('adobergb.jpg', icc_profile=adobe, quality=95, subsampling=0)
    open('p3.srgb', 'wb').write(convert(Image.open('p3.png'), p3).tobytes())
    open('adobergb.srgb', 'wb').write(convert(Image.open('adobergb.jpg'), adobe).tobytes())

    ink = Image.new('CMYK', (W, H))
    ink.putdata(cmyk_pixels())
    ink.save('cmyk-adobe.jpg', icc_profile=cmyk, quality=95)
    plain = io.BytesIO()
    ImageChops.invert(ink).save(plain, format='JPEG', icc_profile=cmyk, quality=95)
    open('cmyk-plain.jpg', 'wb').write(strip_app14(plain.getvalue()))
    adobe_inks = Image.open('cmyk-adobe.jpg')
    plain_inks = ImageChops.invert(Image.open('cmyk-plain.jpg'))
    assert adobe_inks.mode == plain_inks.mode == 'CMYK'
    assert abs(plain_inks.getpixel((10, 30))[0] - ink.getpixel((10, 30))[0]) < 8
    open('cmyk-adobe.srgb', 'wb').write(convert(adobe_inks, cmyk).tobytes())
    open('cmyk-plain.srgb', 'wb').write(convert(plain_inks, cmyk).tobytes())

if __name__ == '__main__':
    main()
