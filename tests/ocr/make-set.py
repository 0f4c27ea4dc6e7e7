#!/usr/bin/env python3
"""Render an OCR set with tools/render-text: images of one to three text
lines with known text, varied the way real documents and photos vary:
16 fonts of the Debian font packages in tools/setup-deps (sans, serif,
mono, condensed, bold, light, italic), 14..40 px, lines from one word to
about 60 characters with punctuation, dates, prices and codes, rotation
within +-3 degrees, Gaussian noise, blur, and light text on dark
backgrounds as well as dark on light.

  make-set.py RENDER OUTDIR SEED IMAGES

Writes OUTDIR/NNN.png and OUTDIR/truth.tsv ("image<TAB>line text" per
line, top to bottom). Everything comes from SEED: the same seed gives the
same images, different seeds give different strings, so the evaluation
and the calibration sets (tests/ocr/run: seeds 1 and 2) never share text."""
import os
import random
import subprocess
import sys

FONTS = [
    "dejavu/DejaVuSans.ttf", "dejavu/DejaVuSerif.ttf", "dejavu/DejaVuSansMono.ttf",
    "dejavu/DejaVuSansCondensed.ttf", "liberation2/LiberationSans-Regular.ttf",
    "liberation2/LiberationSerif-Regular.ttf", "liberation2/LiberationMono-Regular.ttf",
    "freefont/FreeSans.ttf", "freefont/FreeSerif.ttf", "freefont/FreeSansBold.ttf",
    "crosextra/Carlito-Regular.ttf", "crosextra/Caladea-Regular.ttf",
    "crosextra/Carlito-Italic.ttf", "open-sans/OpenSans-Regular.ttf",
    "open-sans/OpenSans-Light.ttf", "lato/Lato-Medium.ttf", "lato/Lato-Bold.ttf",
]
WORDS = """invoice total amount date order number customer account payment due
balance street city north south river park station hotel market garden bridge
office price unit item quantity delivery express return service phone email
monday friday april june october report summary page section chapter table
model device memory speed engine signal power light water green blue black
red white small large first second third open close start stop north east
firmware kernel queue fence driver buffer seat ticket window platform coach
receipt address postcode reference subject meeting agenda minutes weekly""".split()
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def token(rng):
    r = rng.random()
    if r < 0.12:
        return str(rng.randint(0, 99999))
    if r < 0.2:
        return "%d.%02d" % (rng.randint(0, 999), rng.randint(0, 99))
    if r < 0.24:
        return "$%d.%02d" % (rng.randint(1, 9999), rng.randint(0, 99))
    if r < 0.28:
        return "%02d.%02d.%d" % (rng.randint(1, 28), rng.randint(1, 12), rng.randint(1990, 2030))
    if r < 0.31:
        return "%d %s %d" % (rng.randint(1, 28), rng.choice(MONTHS), rng.randint(1990, 2030))
    if r < 0.34:
        return "%s-%d" % (rng.choice(WORDS)[:3].upper(), rng.randint(100, 9999))
    if r < 0.36:
        return "%d%%" % rng.randint(1, 100)
    if r < 0.38:
        return "#%d" % rng.randint(1, 999)
    w = rng.choice(WORDS)
    w = w.capitalize() if rng.random() < 0.35 else w.upper() if rng.random() < 0.05 else w
    p = rng.random()
    if p < 0.08:
        w += ","
    elif p < 0.12:
        w += ":"
    elif p < 0.15:
        w += "."
    elif p < 0.17:
        w = "(%s)" % w
    elif p < 0.19:
        w += "/" + rng.choice(WORDS)
    return w


def line(rng, max_len):
    words = [token(rng)]
    while True:
        w = token(rng)
        if len(" ".join(words + [w])) > max_len:
            return " ".join(words)
        words.append(w)


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: make-set.py RENDER OUTDIR SEED IMAGES")
    render, out, seed, images = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    fonts = [f for f in FONTS if os.path.exists("/usr/share/fonts/truetype/" + f)]
    if len(fonts) < len(FONTS):
        missing = sorted(set(FONTS) - set(fonts))
        sys.exit("make-set: fonts missing (tools/setup-deps installs them): " + ", ".join(missing))
    with open(os.path.join(out, "truth.tsv"), "w") as truth:
        for i in range(images):
            font = fonts[(i * 7 + seed) % len(fonts)]
            px = rng.choice([14, 16, 18, 20, 24, 28, 32, 40])
            n = rng.choice([1, 1, 1, 2, 2, 3])
            # Line lengths from a single word to about 60 characters.
            lines = [line(rng, rng.choice([8, 16, 24, 36, 48, 60])) for _ in range(n)]
            args = [render, "-o", os.path.join(out, "%03d.png" % i), "--size", "auto",
                    "--px", str(px), "--font", "/usr/share/fonts/truetype/" + font]
            if rng.random() < 0.3:      # light on dark
                fg = rng.randint(200, 255)
                bg = rng.randint(0, 70)
                args += ["--fg", "%02x%02x%02x" % (fg, fg, rng.randint(160, 255)),
                         "--bg", "%02x%02x%02x" % (bg, bg // 2, bg)]
            elif rng.random() < 0.3:    # dark on a tinted page
                bg = rng.randint(190, 240)
                args += ["--fg", "%02x%02x%02x" % (rng.randint(0, 60), 0, rng.randint(0, 90)),
                         "--bg", "%02x%02x%02x" % (bg, bg, rng.randint(170, 255))]
            if rng.random() < 0.6:
                args += ["--rotate", "%.1f" % rng.uniform(-3, 3)]
            if rng.random() < 0.35:
                args += ["--blur", "%.2f" % rng.uniform(0.4, 1.0)]
            if rng.random() < 0.5:
                args += ["--noise", "%.1f" % rng.uniform(3, 14), "--seed", str(seed * 1000 + i)]
            subprocess.run(args + lines, check=True, stdout=subprocess.DEVNULL)
            for t in lines:
                truth.write("%s\t%s\n" % (args[2], t))


main()
