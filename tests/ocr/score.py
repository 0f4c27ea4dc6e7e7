#!/usr/bin/env python3
"""Score OCR results against a rendered set's truth (tests/ocr/make-set.py).

  score.py TRUTH.tsv NAME=RESULTS.json...

RESULTS.json: one JSON object per line, npu-ocr --json's format
({"image": PATH, "lines": [{"box": [x0, y0, x1, y1], "text": ...}]});
bench/ocr_compare.mjs writes Guten OCR's in the same format.

A reader may return a text line as one box or as several (PaddleOCR's
detector splits a line at wide gaps): the boxes of an image are grouped
into rows first, a box joining the row whose vertical centre is within
half the boxes' mean height of its own, rows top to bottom, boxes in a
row left to right and joined with one space. Row k is then scored
against truth line k (a missing row: all its characters deleted; an
extra row: all its characters inserted).

Character accuracy = 1 - CER = 1 - edit distance / truth characters over
the whole set; line accuracy = the share of truth lines read exactly.
Prints one line per NAME, and with --json one JSON object of them all."""
import json
import sys
from collections import defaultdict


def dist(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def rows(lines):
    boxes = [l for l in lines if l.get("text", "").strip()]
    if not boxes:
        return []
    mean_h = sum(l["box"][3] - l["box"][1] for l in boxes) / len(boxes)
    groups = []
    for l in sorted(boxes, key=lambda l: (l["box"][1] + l["box"][3]) / 2):
        mid = (l["box"][1] + l["box"][3]) / 2
        for g in groups:
            if abs(g["mid"] - mid) < mean_h / 2:
                g["boxes"].append(l)
                break
        else:
            groups.append({"mid": mid, "boxes": [l]})
    groups.sort(key=lambda g: g["mid"])
    return [" ".join(l["text"].strip() for l in sorted(g["boxes"], key=lambda l: l["box"][0]))
            for g in groups]


def score(truth, path):
    got = {}
    with open(path) as f:
        for ln in f:
            if ln.strip():
                o = json.loads(ln)
                got[o["image"]] = rows(o["lines"])
    errs = chars = exact = lines = 0
    for img, want in truth.items():
        have = got.get(img, [])
        for k, t in enumerate(want):
            h = have[k] if k < len(have) else ""
            errs += dist(t, h)
            chars += len(t)
            exact += t == h
            lines += 1
        for extra in have[len(want):]:
            errs += len(extra)
    return {"char_accuracy": 1.0 - errs / chars, "line_accuracy": exact / lines,
            "errors": errs, "characters": chars, "lines": lines, "images": len(truth),
            "missing_images": sum(1 for img in truth if img not in got)}


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if len(args) < 2:
        sys.exit("usage: score.py [--json] TRUTH.tsv NAME=RESULTS.json...")
    truth = defaultdict(list)
    with open(args[0]) as f:
        for ln in f:
            img, text = ln.rstrip("\n").split("\t")
            truth[img].append(text)
    out = {}
    for a in args[1:]:
        name, _, path = a.partition("=")
        out[name] = s = score(truth, path)
        if "--json" not in sys.argv:
            print("%-10s character accuracy %.4f, line accuracy %.4f (%d errors / %d characters, %d lines%s)"
                  % (name, s["char_accuracy"], s["line_accuracy"], s["errors"], s["characters"],
                     s["lines"], ", %d images without a result" % s["missing_images"]
                     if s["missing_images"] else ""))
    if "--json" in sys.argv:
        print(json.dumps(out))


main()
