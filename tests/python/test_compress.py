# SPDX-License-Identifier: MIT
"""`npu compress` (issue 35) against the ONNX tools: a residual CNN with a
depthwise conv, an SE block and a Concat, channel-pruned; the result passes
onnx.checker with full shape inference, is smaller, and onnxruntime-node
computes the same outputs as our CPU path on it."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPU = os.path.join(ROOT, os.environ.get("NPU_BUILD", "build/meson"), "userspace", "cli", "npu")
C, HW = 16, 12


def residual_cnn(path, seed=0):
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))

    def conv(name, x, y, ci, co, k, group=1):
        const(name + "_w", rng.standard_normal((co, ci // group, k, k)) / np.sqrt(ci // group * k * k))
        const(name + "_b", rng.standard_normal(co) * 0.1)
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [y], name=name,
                                      kernel_shape=[k, k], pads=[k // 2] * 4, group=group))

    conv("conv1", "x", "c1", 8, C, 3)
    const("bn_s", 1 + 0.3 * rng.standard_normal(C))
    const("bn_b", 0.2 * rng.standard_normal(C))
    const("bn_m", 0.1 * rng.standard_normal(C))
    const("bn_v", 1 + 0.2 * rng.random(C))
    nodes.append(helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn1"], name="bn"))
    nodes.append(helper.make_node("Relu", ["bn1"], ["a"], name="relu1"))
    conv("conv2", "a", "c2", C, C, 3)
    nodes.append(helper.make_node("Relu", ["c2"], ["r2"], name="relu2"))
    nodes.append(helper.make_node("Add", ["a", "r2"], ["s"], name="residual"))
    conv("dw", "s", "dwo", C, C, 3, group=C)
    nodes.append(helper.make_node("HardSwish", ["dwo"], ["d"], name="act"))
    nodes.append(helper.make_node("GlobalAveragePool", ["d"], ["g"], name="gap"))
    conv("se1", "g", "se1o", C, 4, 1)
    nodes.append(helper.make_node("Relu", ["se1o"], ["se1r"], name="relu4"))
    conv("se2", "se1r", "se2o", 4, C, 1)
    nodes.append(helper.make_node("HardSigmoid", ["se2o"], ["sg"], name="hsig"))
    nodes.append(helper.make_node("Mul", ["d", "sg"], ["e"], name="se_scale"))
    conv("conv3", "a", "t", C, 8, 3)
    nodes.append(helper.make_node("Concat", ["e", "t"], ["cat"], name="cat", axis=1))
    conv("head", "cat", "y", C + 8, 8, 1)
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, HW, HW])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, HW, HW])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)	# value_info the compressor must drop
    onnx.save(m, path)
    return path


def macs(model):
    """Conv MACs of a model at its shapes (ONNX shape inference)."""
    m = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(m.graph.value_info) + list(m.graph.output)}
    inits = {t.name: t for t in m.graph.initializer}
    total = 0
    for n in m.graph.node:
        if n.op_type == "Conv":
            w = inits[n.input[1]].dims
            y = shapes[n.output[0]]
            total += y[1] * y[2] * y[3] * w[1] * w[2] * w[3]
    return total


def test_channel_pruned_model_is_valid_smaller_and_matches_onnxruntime(tmp_path):
    model = residual_cnn(str(tmp_path / "cnn.onnx"))
    calib = tmp_path / "calib"
    calib.mkdir()
    rng = np.random.default_rng(1)
    for k in range(24):
        np.save(calib / ("s%02d.npy" % k), rng.standard_normal((1, 8, HW, HW)).astype(np.float32))
    out = str(tmp_path / "pruned.onnx")
    report = tmp_path / "report.json"
    r = subprocess.run([NPU, "compress", model, "--prune", "channels", "--sparsity", "0.25",
                        "--calib-dir", str(calib), "--report", str(report), "-o", out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pruned = onnx.load(out)
    onnx.checker.check_model(pruned, full_check=True)
    assert macs(pruned) < macs(onnx.load(model))
    rep = json.loads(report.read_text())
    assert rep["macs_after"] < rep["macs_before"] and rep["method"] == "channels"
    assert any("model output" in why for why in rep["refused"])

    x = rng.standard_normal((1, 8, HW, HW)).astype(np.float32)
    (ours,) = npu.InferenceSession(out).run(None, {"x": x})
    (orig,) = npu.InferenceSession(model).run(None, {"x": x})
    cos = float(ours.ravel() @ orig.ravel() / (np.linalg.norm(ours) * np.linalg.norm(orig)))
    assert cos > 0.8	# 25% of the channels of random weights gone

    node_path = os.path.join(os.environ.get("NPU_CACHE", os.path.expanduser("~/.cache/npu-stack")),
                             "npm", "node_modules")
    env = dict(os.environ, NODE_PATH=node_path)
    if subprocess.run(["node", "-e", "require('onnxruntime-node')"], env=env,
                      capture_output=True).returncode:
        pytest.skip("onnxruntime-node is not installed (tools/fetch-models installs it)")
    np.save(tmp_path / "x.npy", x)
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"model": out, "in_name": "x", "input": str(tmp_path / "x.npy"),
                                  "outdir": str(tmp_path / "ref")}]))
    r = subprocess.run(["node", os.path.join(ROOT, "bench", "ort_compare.js"), "ref", str(cases)],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ref = np.load(tmp_path / "ref" / "y.npy")
    assert ref.shape == ours.shape
    assert np.max(np.abs(ours - ref)) <= 1e-4


def calib_dir(path, count, seed):
    path.mkdir()
    rng = np.random.default_rng(seed)
    for k in range(count):
        np.save(path / ("s%02d.npy" % k), rng.standard_normal((1, 8, HW, HW)).astype(np.float32))
    return str(path)


def test_prune_and_quantize_in_one_step_matches_compiling_the_pruned_model(tmp_path):
    """npu compress --quantize int8 -o X.npub: the .npub runs on sim with the
    same outputs, bit for bit, as `npu compile` of the pruned .onnx with the
    same calibration samples; the report gives the int8 cosine."""
    model = residual_cnn(str(tmp_path / "cnn.onnx"))
    calib = calib_dir(tmp_path / "calib", 24, 1)
    held = calib_dir(tmp_path / "held", 6, 2)
    npub, pruned, report = (str(tmp_path / n) for n in ("one.npub", "pruned.onnx", "r.json"))
    r = subprocess.run([NPU, "compress", model, "--prune", "channels", "--sparsity", "0.25",
                        "--calib-dir", calib, "--eval-dir", held, "--quantize", "int8",
                        "--device", "sim", "--pruned-onnx", pruned, "--report", report, "-o", npub],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "quantized (int8 on sim) cosine vs the original fp32" in r.stdout
    rep = json.loads(open(report).read())
    assert rep["quantize"] == "int8" and 0.8 < rep["quantized_cosine"] <= 1.0
    onnx.checker.check_model(onnx.load(pruned), full_check=True)
    sep = str(tmp_path / "sep.npub")
    r = subprocess.run([NPU, "compile", pruned, "--device", "sim", "--calib-dir", calib, "-o", sep],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    x = np.random.default_rng(3).standard_normal((1, 8, HW, HW)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outs = []
    for f in (npub, sep):
        o = str(tmp_path / ("out-" + os.path.basename(f)))
        r = subprocess.run([NPU, "run", f, "--device", "sim", "--input", "x=" + str(tmp_path / "x.npy"),
                            "--output-dir", o], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append(np.load(os.path.join(o, "y.npy")))
    assert outs[0].tobytes() == outs[1].tobytes()


@pytest.mark.parametrize("args,want", [
    (["--quantize", "int8", "-o", "OUT.onnx"], "should be a .npub"),
    (["--quantize", "int4", "-o", "OUT.npub"], "--quantize 'int4': expected int8, int16 or mixed"),
    (["--quantize", "int8", "-o", "OUT.npub", "NOCALIB"], "--quantize int8 calibrates the pruned model on --calib-dir"),
    (["--quantize", "mixed", "-o", "OUT.npub"], "--quantize mixed needs --accuracy-target"),
    (["-o", "OUT.npub"], "needs --quantize"),
    (["--device", "sim", "-o", "OUT.onnx"], "--device goes with --quantize"),
])
def test_bad_quantize_flags_are_named(tmp_path, args, want):
    model = residual_cnn(str(tmp_path / "cnn.onnx"))
    calib = calib_dir(tmp_path / "calib", 2, 1)
    cmd = [NPU, "compress", model, "--prune", "magnitude"]
    if "NOCALIB" not in args:
        cmd += ["--calib-dir", calib]
    cmd += [str(tmp_path / a) if a.startswith("OUT.") else a for a in args if a != "NOCALIB"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert want in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "OUT.npub") and not os.path.exists(tmp_path / "OUT.onnx")
