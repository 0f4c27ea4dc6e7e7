# SPDX-License-Identifier: MIT
"""pytest for the npu Python package (userspace/python/npu): ONNX Runtime's
calls, outputs against onnxruntime-node on the same model and inputs, the
dtype matrix, the GIL released while running (threads overlap), compile from
numpy arrays, and the errors (wrong dtype, shape, names, a closed session).

Run by tests/python/run (the python suite of make check) with PYTHONPATH at
the build tree; models are made here with python3-onnx."""
import json
import os
import subprocess
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def conv_model(path, c_in=4, c_mid=8, hw=16, seed=0):
    """x[N,c_in,hw,hw] -> Conv 3x3 -> Relu -> Conv 1x1 -> Sigmoid -> y (batch dynamic)."""
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.standard_normal((c_mid, c_in, 3, 3)).astype(np.float32) * 0.3, "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(c_mid).astype(np.float32) * 0.1, "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((c_in, c_mid, 1, 1)).astype(np.float32) * 0.3, "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
        helper.make_node("Sigmoid", ["c2"], ["y"], name="sig"),
    ]
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c_in, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", c_in, hw, hw])],
                          [w1, b1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_only_the_outputs_asked_for_are_computed(tmp_path):
    """Two outputs of two branches: asking for one skips the other's nodes."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"]),
             helper.make_node("Sigmoid", ["b"], ["c"])]
    g = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4]),
                           helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "two.onnx"))
    s = npu.InferenceSession(str(tmp_path / "two.onnx"))
    x = np.array([-1, 0, 1, 2], np.float32)
    (a,) = s.run(["a"], {"x": x})
    assert np.array_equal(a, np.maximum(x, 0))
    r = s.last_run()
    assert r["nodes_run"] == 1 and r["nodes_skipped"] == 2, r
    c, a2 = s.run(["c", "a"], {"x": x})
    assert np.allclose(c, 1 / (1 + np.exp(x))) and np.array_equal(a2, a)


def typed_model(path, elem):
    """x -> Identity -> y and x -> Add(x, x) -> z of one element type."""
    nodes = [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Add", ["x", "x"], ["z"])]
    g = helper.make_graph(nodes, "typed", [helper.make_tensor_value_info("x", elem, [2, 3])],
                          [helper.make_tensor_value_info("y", elem, [2, 3]),
                           helper.make_tensor_value_info("z", elem, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return conv_model(str(tmp_path_factory.mktemp("m") / "conv.onnx"))


def x_of(batch=1, seed=1, hw=16):
    return np.random.default_rng(seed).uniform(-1, 1, (batch, 4, hw, hw)).astype(np.float32)


def test_ort_interface(model):
    s = npu.InferenceSession(model)
    (i,), (o,) = s.get_inputs(), s.get_outputs()
    assert (i.name, i.type, i.shape) == ("x", "tensor(float)", ["N", 4, 16, 16])
    assert (o.name, o.type) == ("y", "tensor(float)")
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert "NPUExecutionProvider" in npu.get_available_providers()
    (y,) = s.run(None, {"x": x_of()})
    assert y.shape == (1, 4, 16, 16) and y.dtype == np.float32
    (y2,) = s.run(["y"], {"x": x_of()})
    assert np.array_equal(y, y2)
    # The output array was written in place by the run (IO binding), not copied.
    r = s.last_run()
    assert r["outputs_in_place"] == 1 and r["output_copies"] == 0, r
    assert s.run([], {"x": x_of()}) == []
    assert isinstance(npu.__version__, str) and npu.__version__.count(".") == 2


def test_outputs_match_onnxruntime(model, tmp_path):
    """fp32 on the CPU against onnxruntime-node on the same model and input."""
    node_path = os.path.join(os.environ.get("NPU_CACHE", os.path.expanduser("~/.cache/npu-stack")),
                             "npm", "node_modules")
    env = dict(os.environ, NODE_PATH=node_path)
    if subprocess.run(["node", "-e", "require('onnxruntime-node')"], env=env,
                      capture_output=True).returncode:
        pytest.skip("onnxruntime-node is not installed (tools/fetch-models installs it)")
    for batch, seed in [(1, 3), (3, 4)]:
        x = x_of(batch, seed)
        np.save(tmp_path / "x.npy", x)
        out = tmp_path / ("ref%d" % batch)
        cases = tmp_path / "cases.json"
        cases.write_text(json.dumps([{"model": model, "in_name": "x", "input": str(tmp_path / "x.npy"),
                                      "outdir": str(out)}]))
        r = subprocess.run(["node", os.path.join(ROOT, "bench", "ort_compare.js"), "ref", str(cases)],
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        ref = np.load(out / "y.npy")
        (y,) = npu.InferenceSession(model).run(None, {"x": x})
        assert y.shape == ref.shape
        assert np.max(np.abs(y - ref)) <= 1e-5


def test_npu_provider_int8_close_to_fp32(tmp_path):
    # Large enough that the cost model keeps its segment on the NPU.
    model = conv_model(str(tmp_path / "npu.onnx"), c_in=4, c_mid=64, hw=64)
    cpu = npu.InferenceSession(model)
    sim = npu.InferenceSession(model, providers=[("NPUExecutionProvider", {"device": "sim", "calib": "random"}),
                                                 "CPUExecutionProvider"])
    assert sim.get_providers() == ["NPUExecutionProvider", "CPUExecutionProvider"]
    assert sim.device() == "sim"
    x = x_of(hw=64)
    (a,), (b,) = cpu.run(None, {"x": x}), sim.run(None, {"x": x})
    cos = float(a.ravel() @ b.ravel() / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert cos > 0.99
    r = sim.last_run()
    assert r["npu_cycles"] > 0 and r["segments"] >= 1 and r["npu_ms"] > 0
    providers = {p for _, _, p, _ in sim.placement()}
    assert "npu" in providers
    assert all(p == "cpu" for _, _, p, _ in cpu.placement({"x": [1, 4, 64, 64]}))


def test_compile_from_numpy_and_load_the_npub(model, tmp_path):
    calib = [x_of(1, seed) for seed in range(10, 14)]
    out = str(tmp_path / "conv.npub")
    npu.compile(model, out, calib)
    assert os.path.getsize(out) > 0
    s = npu.InferenceSession(out, providers=["NPUExecutionProvider"])
    (y,) = s.run(None, {"x": x_of()})
    (ref,) = npu.InferenceSession(model).run(None, {"x": x_of()})
    assert np.max(np.abs(y - ref)) < 0.1
    with pytest.raises(ValueError, match="calib is empty"):
        npu.compile(model, out, [])


@pytest.mark.parametrize("elem,dtype", [
    (TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64), (TensorProto.INT8, np.int8),
    (TensorProto.UINT8, np.uint8), (TensorProto.INT16, np.int16), (TensorProto.INT32, np.int32),
    (TensorProto.INT64, np.int64), (TensorProto.FLOAT16, np.float16), (TensorProto.UINT16, np.uint16),
    (TensorProto.UINT32, np.uint32), (TensorProto.UINT64, np.uint64),
])
def test_dtype_matrix(tmp_path, elem, dtype):
    s = npu.InferenceSession(typed_model(str(tmp_path / "t.onnx"), elem))
    x = (np.arange(6).reshape(2, 3) + 1).astype(dtype)
    y, z = s.run(None, {"x": x})
    assert y.dtype == dtype and z.dtype == dtype
    assert np.array_equal(y, x) and np.array_equal(z, x + x)
    other = np.float32 if dtype != np.float32 else np.float64
    with pytest.raises(TypeError, match="the model takes"):
        s.run(None, {"x": x.astype(other)})


def test_memory_order_and_views(model):
    s = npu.InferenceSession(model)
    x = x_of(2, 5)
    (ref,) = s.run(None, {"x": x})
    (f,) = s.run(None, {"x": np.asfortranarray(x)})          # copied to C order
    assert np.array_equal(f, ref)
    wide = np.zeros((2, 4, 16, 32), np.float32)
    wide[..., ::2] = x
    (v,) = s.run(None, {"x": wide[..., ::2]})                  # a strided view
    assert np.array_equal(v, ref)
    assert not np.shares_memory(v, x)


def test_errors(model):
    s = npu.InferenceSession(model)
    x = x_of()
    with pytest.raises(ValueError, match="input 'x' is missing"):
        s.run(None, {})
    with pytest.raises(ValueError, match="no input 'nope'"):
        s.run(None, {"x": x, "nope": x})
    with pytest.raises(ValueError, match="no output 'z'"):
        s.run(["z"], {"x": x})
    with pytest.raises(ValueError, match="dim 1 is 3"):
        s.run(None, {"x": x[:, :3]})
    with pytest.raises(TypeError, match="numpy array"):
        s.run(None, {"x": "not an array"})
    with pytest.raises(TypeError, match="input_feed"):
        s.run(None, [x])
    with pytest.raises(ValueError, match="no provider 'FooExecutionProvider'"):
        npu.InferenceSession(model, providers=["FooExecutionProvider"])
    with pytest.raises(ValueError, match="has no option 'bogus'"):
        npu.InferenceSession(model, providers=["NPUExecutionProvider"], provider_options=[{"bogus": 1}])
    with pytest.raises(FileNotFoundError):
        npu.InferenceSession("/nonexistent/model.onnx")
    with pytest.raises(ValueError, match="needs calibration samples"):
        npu.InferenceSession(model, providers=["NPUExecutionProvider"])
    s.close()
    s.close()                                                  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        s.run(None, {"x": x})
    with pytest.raises(RuntimeError, match="closed"):
        s.last_run()


def test_threads_run_at_once_without_the_gil(tmp_path):
    """Four threads on one session: every result right, and with the GIL
    released the threads' runs overlap in time (one run is ~ms, the spans
    are recorded in Python around each call)."""
    s = npu.InferenceSession(conv_model(str(tmp_path / "big.onnx"), c_in=4, c_mid=64, hw=96))
    xs = [x_of(1, seed, hw=96) for seed in range(4)]
    refs = [s.run(None, {"x": x})[0] for x in xs]
    spans, bad = [], []
    lock = threading.Lock()

    def work(k):
        for _ in range(5):
            t0 = time.monotonic()
            (y,) = s.run(None, {"x": xs[k]})
            t1 = time.monotonic()
            with lock:
                spans.append((t0, t1))
                if not np.array_equal(y, refs[k]):
                    bad.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not bad and len(spans) == 20
    spans.sort()
    overlaps = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1])
    assert overlaps > 0, "no two runs overlapped: is the GIL held while running?"
