#!/usr/bin/env python3
"""Render an OCR set with tools/render-text: images of a few text lines
with known text, fonts and sizes varied across the Debian font packages
of tools/setup-deps (Latin and digits).

  make-set.py RENDER OUTDIR SEED IMAGES

Writes OUTDIR/NNN.png and OUTDIR/truth.tsv ("image<TAB>line text" per
line). Different seeds give different strings: the evaluation and the
calibration sets never share text."""
import os
import random
import subprocess
import sys

FONTS = [
    "dejavu/DejaVuSans.ttf", "dejavu/DejaVuSans-Bold.ttf", "dejavu/DejaVuSerif.ttf",
    "dejavu/DejaVuSansMono.ttf", "dejavu/DejaVuSansCondensed.ttf",
    "liberation2/LiberationSans-Regular.ttf", "liberation2/LiberationSerif-Regular.ttf",
    "liberation2/LiberationMono-Regular.ttf", "liberation2/LiberationSans-Bold.ttf",
    "freefont/FreeSans.ttf", "freefont/FreeSerif.ttf", "freefont/FreeSansBold.ttf",
]
WORDS = """invoice total amount date order number customer account payment due
balance street city north south river park station hotel market garden bridge
office price unit item quantity delivery express return service phone email
monday friday april june october report summary page section chapter table
model device memory speed engine signal power light water green blue black
red white small large first second third open close start stop north east""".split()


def token(rng):
    r = rng.random()
    if r < 0.2:
        return str(rng.randint(0, 99999))
    if r < 0.3:
        return "%d.%02d" % (rng.randint(0, 999), rng.randint(0, 99))
    w = rng.choice(WORDS)
    return w.capitalize() if rng.random() < 0.4 else w


def line(rng):
    words = []
    while True:
        w = token(rng)
        if words and len(" ".join(words + [w])) > 20:
            break
        words.append(w)
        if len(words) >= 4:
            break
    return " ".join(words)


def main():
    render, out, seed, images = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    fonts = [f for f in FONTS if os.path.exists("/usr/share/fonts/truetype/" + f)]
    if len(fonts) < 6:
        sys.exit("make-set: fewer than 6 of the fonts are installed (tools/setup-deps)")
    with open(os.path.join(out, "truth.tsv"), "w") as truth:
        for i in range(images):
            font = fonts[(i + seed) % len(fonts)]
            px = rng.choice([22, 24, 26, 28, 30])
            lines = [line(rng) for _ in range(3)]
            png = os.path.join(out, "%03d.png" % i)
            subprocess.run([render, "-o", png, "--size", "416x224", "--px", str(px),
                            "--font", "/usr/share/fonts/truetype/" + font] + lines,
                           check=True, stdout=subprocess.DEVNULL)
            for t in lines:
                truth.write("%s\t%s\n" % (png, t))


main()
