#!/usr/bin/env python3
"""Images that a reader must survive, made from one rendered text line
(render-text's 8-bit RGB PNG, decoded here with zlib alone):

  make-bad.py SOURCE.png OUTDIR

OUTDIR/gray.png     the line as 8-bit grayscale
OUTDIR/alpha.png    the line as RGBA: ink opaque, the page fully transparent
                    *and black*, so only compositing on white shows the text
OUTDIR/rgb16.png    the line as 16-bit RGB
OUTDIR/tiny.png     1x1 white
OUTDIR/blank.png    a 320x64 white page (a crop with no text)
OUTDIR/noise.png    320x64 of random grey noise (fixed seed; no text)
OUTDIR/huge.png     10000x10000 grayscale, white (compressed: ~100 KB)
OUTDIR/empty.png    0 bytes
OUTDIR/notpng.png   a text file
OUTDIR/truncated.png  the first half of the RGB line's PNG
"""
import os
import random
import struct
import sys
import zlib


def chunk(kind, data):
    c = kind + data
    return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xffffffff)


def write_png(path, w, h, color_type, depth, rows):
    """rows: bytes per row, without filter bytes."""
    raw = b"".join(b"\0" + r for r in rows)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def read_rgb8(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype == 2 and not interlace, "expected 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, bpp, stride = zlib.decompress(idat), 3, w * 3
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = cur[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                cur[i] = (cur[i] + a) & 255
            elif f == 2:
                cur[i] = (cur[i] + b) & 255
            elif f == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(cur))
        prev = cur
    return w, h, rows


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    w, h, rows = read_rgb8(src)
    gray = [bytes((r[3 * x] * 299 + r[3 * x + 1] * 587 + r[3 * x + 2] * 114) // 1000
                  for x in range(w)) for r in rows]
    write_png(os.path.join(out, "gray.png"), w, h, 0, 8, gray)
    # ink = 255 - gray: black ink opaque, the page transparent black
    write_png(os.path.join(out, "alpha.png"), w, h, 6, 8,
              [b"".join(bytes((0, 0, 0, 255 - v)) for v in g) for g in gray])
    write_png(os.path.join(out, "rgb16.png"), w, h, 2, 16,
              [b"".join(struct.pack(">H", v * 257) for v in r) for r in rows])
    write_png(os.path.join(out, "tiny.png"), 1, 1, 2, 8, [b"\xff\xff\xff"])
    write_png(os.path.join(out, "blank.png"), 320, 64, 2, 8, [b"\xff" * 960] * 64)
    rng = random.Random(7)
    write_png(os.path.join(out, "noise.png"), 320, 64, 0, 8,
              [bytes(rng.randint(100, 200) for _ in range(320)) for _ in range(64)])
    write_png(os.path.join(out, "huge.png"), 10000, 10000, 0, 8, [b"\xff" * 10000] * 10000)
    open(os.path.join(out, "empty.png"), "wb").close()
    with open(os.path.join(out, "notpng.png"), "w") as f:
        f.write("this is a text file, not an image\n")
    data = open(src, "rb").read()
    with open(os.path.join(out, "truncated.png"), "wb") as f:
        f.write(data[:len(data) // 2])


main()
