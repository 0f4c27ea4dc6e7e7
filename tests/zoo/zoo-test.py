#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The zoo suite (tests/zoo/run): every model of tests/zoo/make-zoo.py
against onnxruntime, fp32 on the CPU, and int8 on the NPU simulator
against our fp32.

    tests/zoo/zoo-test.py NPU ZOO_DIR WORK_DIR ORT_HELPER

For each model, at batch 1 (1 thread) and batch 8 (2 threads), once for a
model of fixed shapes:
  fp32  `npu run --device cpu` on an input drawn with seed 1 against
        onnxruntime-node's outputs on the same file (bench/ort_compare.js
        ref): cosine >= FP32_COS and max abs error <= FP32_REL x max |ref|
        (at least FP32_REL: outputs near 0 get an absolute bound).
  int8  `npu run --device sim`, calibrated on inputs of the same batch
        drawn with other seeds (never the evaluated one; CALIB_SAMPLES at
        batch 1, 2 at batch 8), against our fp32 outputs: cosine >=
        INT8_COS. The line names the share of MACs the NPU ran (models
        the NPU does not take, such as the RNNs, stay on the CPU: exact).
Inputs by kind: image uniform [0, 1), audio uniform [-1, 1), seq standard
normal. Prints TAP-like lines and "N passed, N failed".
"""
import json
import os
import subprocess
import sys

import numpy as np

FP32_COS = 0.9999
FP32_REL = 1e-4
# int8 against fp32 over random-weight networks up to 50 layers deep:
# measured 0.985 for MobileNetV2, 0.991 for EfficientNet-lite0 (deep
# depthwise stacks with ReLU6), >= 0.999 for the others; the bound catches
# a broken kernel or calibration (cosine ~0), not drift.
INT8_COS = 0.95
CALIB_SAMPLES = 8
CASES = [(1, 1), (8, 2)]	# (batch, threads)


def draw(kind, shape, seed):
    rng = np.random.default_rng(seed)
    if kind == "image":
        x = rng.uniform(0, 1, shape)
    elif kind == "audio":
        x = rng.uniform(-1, 1, shape)
    else:
        x = rng.standard_normal(shape)
    return x.astype(np.float32)


def compare(ours, ref):
    a, b = ours.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    cos = float(a @ b / (na * nb)) if na and nb else (1.0 if na == nb else 0.0)
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    return cos, err, float(np.max(np.abs(b))) if b.size else 0.0


def main(argv):
    npu, zoo, work, helper = argv[1:5]
    passed = failed = 0

    def report(ok, msg):
        nonlocal passed, failed
        print(("ok - " if ok else "not ok - ") + msg, flush=True)
        if ok:
            passed += 1
        else:
            failed += 1

    models = [l.split("\t") for l in open(os.path.join(zoo, "manifest.tsv")).read().splitlines()]
    refs = []
    def cases(dims):
        # A model without the batch "N" (fixed shapes) runs once.
        return CASES if "N" in dims.split("x") else CASES[:1]

    for name, in_name, dims, kind in models:
        os.makedirs(os.path.join(work, name), exist_ok=True)
        for batch, _ in cases(dims):
            shape = [batch if d == "N" else int(d) for d in dims.split("x")]
            inp = os.path.join(work, name, "in-b%d.npy" % batch)
            np.save(inp, draw(kind, shape, 1))
            refs.append({"model": os.path.join(zoo, name + ".onnx"), "in_name": in_name,
                         "input": inp, "outdir": os.path.join(work, name, "ort-b%d" % batch)})
            calib = os.path.join(work, name, "calib-b%d" % batch)
            os.makedirs(calib, exist_ok=True)
            for s in range(max(1, CALIB_SAMPLES // batch)):
                np.save(os.path.join(calib, "%03d.npy" % s), draw(kind, shape, 1000 + s))
    ref_file = os.path.join(work, "ref-cases.json")
    json.dump(refs, open(ref_file, "w"))
    r = subprocess.run(["node", helper, "ref", ref_file], capture_output=True, text=True)
    report(r.returncode == 0, "onnxruntime-node reference outputs of %d cases" % len(refs) +
           ("" if r.returncode == 0 else ": " + r.stderr.strip()[-400:]))
    if r.returncode:
        return passed, failed

    def run(name, batch, device, threads, out, extra):
        d = os.path.join(work, name)
        cmd = [npu, "run", os.path.join(zoo, name + ".onnx"), "--device", device, "--threads",
               str(threads), "--input", "%s=%s" % (in_name, os.path.join(d, "in-b%d.npy" % batch)),
               "--output-dir", out] + extra
        return subprocess.run(cmd, capture_output=True, text=True)

    for name, in_name, dims, kind in models:
        d = os.path.join(work, name)
        for batch, threads in cases(dims):
            ref_dir = os.path.join(d, "ort-b%d" % batch)
            for device, ref_of, extra in [
                    ("cpu", ref_dir, []),
                    ("sim", os.path.join(d, "cpu-b%d" % batch),
                     ["--calib-dir", os.path.join(d, "calib-b%d" % batch)])]:
                out = os.path.join(d, "%s-b%d" % (device, batch))
                what = "%s %s %s %s" % (name, "batch %d" % batch if "N" in dims.split("x")
                                          else "shape " + dims,
                                              "fp32 cpu vs onnxruntime" if device == "cpu"
                                              else "int8 sim vs our fp32", "(%d threads)" % threads)
                r = run(name, batch, device, threads, out, extra)
                if r.returncode:
                    report(False, "%s: npu run failed: %s" % (what, (r.stderr or r.stdout).strip()[-400:]))
                    continue
                worst, msgs, ok = None, [], True
                for f in sorted(os.listdir(ref_of)):
                    if not os.path.exists(os.path.join(out, f)):
                        ok = False
                        msgs.append("%s missing" % f)
                        continue
                    a, b = np.load(os.path.join(out, f)), np.load(os.path.join(ref_of, f))
                    if a.shape != b.shape:
                        ok = False
                        msgs.append("%s shape %s vs %s" % (f, a.shape, b.shape))
                        continue
                    cos, err, mx = compare(a, b)
                    if device == "cpu":
                        good = cos >= FP32_COS and err <= FP32_REL * max(1.0, mx)
                        msgs.append("%s cosine %.8f, max abs err %.2e (max |ref| %.3g)" %
                                    (f[:-4], cos, err, mx))
                    else:
                        good = cos >= INT8_COS
                        msgs.append("%s cosine %.5f, max abs err %.3g (max |fp32| %.3g)" %
                                    (f[:-4], cos, err, mx))
                    ok = ok and good
                    worst = cos if worst is None else min(worst, cos)
                if device == "sim":
                    npu_line = [l for l in r.stdout.splitlines() if l.startswith("npu: ")]
                    msgs.append(npu_line[0][5:] if npu_line else "nothing for the NPU (all on the CPU)")
                report(ok and worst is not None, "%s: %s" % (what, "; ".join(msgs) or "no outputs"))
    return passed, failed


if __name__ == "__main__":
    p, f = main(sys.argv)
    print("%d passed, %d failed" % (p, f))
    sys.exit(1 if f else 0)
