#!/usr/bin/env python3
"""Ensembles and backend libraries (issue 34; Documentation/serving.md,
"Ensembles and backends"): Triton's ensemble_scheduling over ONNX models
and C steps of tests/serve/test_backend.c (libnpu_serve_test.so), run over
HTTP and gRPC against answers computed here; a step's failure, a step
model unloaded, every bad ensemble and backend config; and OCR as one
model (examples/serve with libnpu_serve_ocr.so) against `npu-ocr` on
rendered images. Prints "ok - ..." lines and "N passed, N failed".

usage: test_ext_ensemble.py WORKDIR"""
import concurrent.futures
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_model  # noqa: E402
import test_serve as ts  # noqa: E402

ok = ts.ok
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.join(ROOT, "build")
TEST_BACKENDS = os.path.join(BUILD, "meson", "tests", "serve")
ASSETS = os.path.join(os.environ.get("NPU_CACHE", os.path.expanduser("~/.cache/npu-stack")),
                      "npm", "node_modules", "@gutenye", "ocr-models", "assets")


def write(path, text):
    ts.write(path, text)


def relu(vals):
    return [max(v, 0.0) for v in vals]


ENS_CONFIG = """
name: "ens"
platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] },
         { name: "MID" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling {
  step [
    { model_name: "relu4" model_version: -1
      input_map { key: "x0" value: "IN" } output_map { key: "y" value: "MID" } },
    { model_name: "scale3" model_version: -1
      input_map { key: "X" value: "MID" } output_map { key: "Y" value: "OUT" } }
  ]
}
"""

# A diamond: IN -> relu -> A, IN -> scale -> B, add(A, B) -> SUM.
DIAMOND_CONFIG = """
name: "diamond"
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling {
  step [
    { model_name: "add4"
      input_map { key: "x0" value: "A" } input_map { key: "x1" value: "B" }
      output_map { key: "y" value: "SUM" } },
    { model_name: "relu4" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "A" } },
    { model_name: "scale3" input_map { key: "X" value: "IN" } output_map { key: "Y" value: "B" } }
  ]
}
"""

CHECKED_CONFIG = """
name: "checked"
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling {
  step [ { model_name: "check" input_map { key: "X" value: "IN" }
           output_map { key: "Y" value: "OUT" } } ]
}
"""


NPU_ENS_CONFIG = """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]
ensemble_scheduling {
  step [
    { model_name: "onnpu" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "R" } },
    { model_name: "scale16" input_map { key: "X" value: "R" } output_map { key: "Y" value: "OUT" } }
  ]
}
"""


def twice_model(path):
    """A model of com.example.Twice (tests/serve/test_ops.c) between two Relus."""
    from onnx import TensorProto, helper, save
    g = helper.make_graph([
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Twice", ["r"], ["t"], domain="com.example"),
        helper.make_node("Neg", ["t"], ["y"])],
        "twice", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("com.example", 1)])
    m.ir_version = 8
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save(m, path)


def test_repo(repo):
    ts.onnx_model(f"{repo}/relu4/1/model.onnx", "Relu", 1, "N,4")
    write(f"{repo}/relu4/config.pbtxt", 'max_batch_size: 8\ndynamic_batching { }\n')
    ts.onnx_model(f"{repo}/add4/1/model.onnx", "Add", 2, "N,4")
    write(f"{repo}/add4/config.pbtxt", 'max_batch_size: 8\n')
    write(f"{repo}/scale3/1/.keep", "")
    write(f"{repo}/scale3/config.pbtxt", """
backend: "test"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
parameters { key: "step" value: { string_value: "scale" } }
parameters { key: "factor" value: { string_value: "3" } }
instance_group [ { count: 2 } ]
""")
    write(f"{repo}/lengths/1/.keep", "")
    write(f"{repo}/lengths/config.pbtxt", """
backend: "test"
parameters { key: "step" value: { string_value: "lengths" } }
input [ { name: "S" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "L" data_type: TYPE_INT32 dims: [ -1 ] } ]
""")
    write(f"{repo}/check/1/.keep", "")
    write(f"{repo}/check/config.pbtxt", """
backend: "test"
parameters { key: "step" value: { string_value: "check" } }
""")
    # A model with a custom op from a custom-op library.
    twice_model(f"{repo}/twice/1/model.onnx")
    write(f"{repo}/twice/config.pbtxt",
          'model_operations { op_library_filename: "libnpu_serve_test_ops.so" }\n')
    # A step on the NPU simulator, the next on the CPU.
    ts.onnx_model(f"{repo}/onnpu/1/model.onnx", "Relu", 1, "N,16")
    write(f"{repo}/onnpu/config.pbtxt", ts.NPU_CONFIG)
    write(f"{repo}/scale16/1/.keep", "")
    write(f"{repo}/scale16/config.pbtxt", """
backend: "test"
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]
parameters { key: "step" value: { string_value: "scale" } }
parameters { key: "factor" value: { string_value: "3" } }
""")
    for name, cfg in (("ens", ENS_CONFIG), ("diamond", DIAMOND_CONFIG),
                      ("checked", CHECKED_CONFIG), ("npu_then_cpu", NPU_ENS_CONFIG)):
        write(f"{repo}/{name}/1/.keep", "")
        write(f"{repo}/{name}/config.pbtxt", cfg)


def grpc_infer(st, pb, model, name, shape, vals):
    rq = pb.ModelInferRequest(model_name=model, id="e")
    t = rq.inputs.add()
    t.name, t.datatype = name, "FP32"
    t.shape.extend(shape)
    rq.raw_input_contents.append(struct.pack("<%df" % len(vals), *vals))
    return rq


def test_ensembles(s):
    x = ts.rand_vals(12, 7)
    st, js, vals = ts.infer(s.port, "ens", [("IN", "FP32", [3, 4], x)])
    ok(st == 200 and vals and vals["OUT"] == ts.f32([3 * v for v in relu(x)]) and
       vals["MID"] == relu(x), "an ensemble (ONNX relu -> C scale) answers 3 * relu(x)",
       (st, js))
    st, js, vals = ts.infer(s.port, "ens", [("IN", "FP32", [3, 4], x)], binary_in=True,
                            outputs=[{"name": "OUT", "parameters": {"binary_data": True}}])
    ok(st == 200 and vals and list(vals) == ["OUT"] and
       vals["OUT"] == ts.f32([3 * v for v in relu(x)]),
       "binary input and output, only the output asked for", (st, js))
    st, js, vals = ts.infer(s.port, "diamond", [("IN", "FP32", [2, 4], x[:8])])
    want = ts.f32([max(v, 0) + ts.f32([3 * v])[0] for v in x[:8]])
    ok(st == 200 and vals and vals["SUM"] == want,
       "a diamond: two steps on the input at once, a third joins them", (st, js))
    st, _, b = ts.request(s.port, "GET", "/v2/models/ens/config")
    cfg = ts.jbody(b) or {}
    steps = (cfg.get("ensemble_scheduling") or {}).get("step", [])
    ok(st == 200 and cfg.get("platform") == "ensemble" and
       [p["model_name"] for p in steps] == ["relu4", "scale3"] and
       steps[1].get("input_map") == {"X": "MID"},
       "its config shows the steps with their maps", cfg)
    st, _, b = ts.request(s.port, "GET", "/v2/models/scale3/config")
    cfg = ts.jbody(b) or {}
    ok(st == 200 and cfg.get("backend") == "test", "a backend model's config names it", cfg)
    st, _, b = ts.request(s.port, "GET", "/v2/models/ens")
    md = ts.jbody(b) or {}
    ok(st == 200 and [i["name"] for i in md.get("inputs", [])] == ["IN"] and
       [o["name"] for o in md.get("outputs", [])] == ["OUT", "MID"],
       "its metadata lists the ensemble's own inputs and outputs", md)

    # BYTES into a C step, as JSON strings and as binary elements.
    words = ["a", "hello", "", "n\u00e4he"]
    st, _, b = ts.request(s.port, "POST", "/v2/models/lengths/infer", {
        "inputs": [{"name": "S", "datatype": "BYTES", "shape": [4], "data": words}]})
    out = (ts.jbody(b) or {}).get("outputs", [{}])[0]
    want = [len(w.encode()) for w in words]
    ok(st == 200 and out.get("data") == want and out.get("datatype") == "INT32",
       "BYTES as JSON strings into a C step: their UTF-8 lengths", (st, b[:200]))
    blob = b"".join(struct.pack("<I", len(w.encode())) + w.encode() for w in words)
    head = json.dumps({"inputs": [{"name": "S", "datatype": "BYTES", "shape": [4],
                                   "parameters": {"binary_data_size": len(blob)}}]}).encode()
    st, _, b = ts.request(s.port, "POST", "/v2/models/lengths/infer", head + blob,
                          {"Inference-Header-Content-Length": str(len(head))})
    out = (ts.jbody(b) or {}).get("outputs", [{}])[0]
    ok(st == 200 and out.get("data") == want, "and as binary length-prefixed elements",
       (st, b[:200]))

    # A custom op registered by the library the config names.
    st, js, vals = ts.infer(s.port, "twice", [("x", "FP32", [1, 4], [1.5, -2, 3, 0.25])])
    ok(st == 200 and vals["y"] == [-3, 0, -6, -0.5],
       "model_operations: the custom-op library's com.example.Twice runs (-2 relu(x))", (st, js))
    st, _, b = ts.request(s.port, "GET", "/v2/models/twice/config")
    ok(st == 200 and (ts.jbody(b) or {}).get("model_operations") ==
       {"op_library_filename": ["libnpu_serve_test_ops.so"]},
       "its config shows the library", b[:300])

    # Steps on different devices: int8 Relu on the simulator, then the C step.
    v = ts.rand_vals(32, 5)
    st1, _, direct = ts.infer(s.port, "onnpu", [("x0", "FP32", [2, 16], v)])
    st2, js, vals = ts.infer(s.port, "npu_then_cpu", [("IN", "FP32", [2, 16], v)])
    ok(st1 == 200 and st2 == 200 and vals["OUT"] == ts.f32([3 * a for a in direct["y"]]) and
       direct["y"] != relu(v),
       "a step on the NPU simulator (int8) then one on the CPU: 3 x the NPU model's own answer",
       (st1, st2, js))
    st, _, b = ts.request(s.port, "GET", "/metrics")
    sim = [ln for ln in b.decode().splitlines()
           if ln.startswith("npu_serve_device_cycles_total") and 'device="sim' in ln]
    ok(st == 200 and sim and float(sim[0].split()[-1]) > 0,
       "and the simulator's modeled cycles are in the metrics", sim)

    # Many at once: every answer its own.
    def one(k):
        v = ts.rand_vals(8, 100 + k)
        st, _, vals = ts.infer(s.port, "ens", [("IN", "FP32", [2, 4], v)], timeout=120)
        return st == 200 and vals["OUT"] == ts.f32([3 * a for a in relu(v)])
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        res = list(ex.map(one, range(32)))
    ok(all(res), "32 requests from 8 clients at once each get their own answer",
       res.count(False))

    # A step's failure: the request's fault stays a 400 and names the step.
    st, js, _ = ts.infer(s.port, "checked", [("IN", "FP32", [4], [1, 2, -3, 4])])
    msg = (js or {}).get("error", "")
    ok(st == 400 and "step 0 ('check')" in msg and "X[2] is negative" in msg,
       "a step that blames the input: 400 naming the step and the element", (st, msg))
    st, js, vals = ts.infer(s.port, "checked", [("IN", "FP32", [4], [1, 2, 3, 4])])
    ok(st == 200 and vals["OUT"] == [1, 2, 3, 4], "and the next request is served", (st, js))
    # Wrong input to the ensemble: the codec's check, against the ensemble's config.
    st, js, _ = ts.infer(s.port, "ens", [("IN", "FP32", [2, 3], x[:6])])
    ok(st == 400 and "IN" in (js or {}).get("error", ""),
       "a wrong shape for the ensemble is refused before any step runs", (st, js))

    # gRPC: the same answers.
    grpc, pb, pbg = ts.grpc_stubs()
    ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
    stub = pbg.GRPCInferenceServiceStub(ch)
    c, r = ts.grpc_call(grpc, stub.ModelInfer, grpc_infer(stub, pb, "ens", "IN", [3, 4], x))
    got = {}
    if c == "OK":
        for o, raw in zip(r.outputs, r.raw_output_contents):
            got[o.name] = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    ok(c == "OK" and got.get("OUT") == ts.f32([3 * v for v in relu(x)]),
       "gRPC ModelInfer on the ensemble", (c, got))
    c, r = ts.grpc_call(grpc, stub.ModelInfer,
                        grpc_infer(stub, pb, "checked", "IN", [4], [0, -1, 0, 0]))
    ok(c == "INVALID_ARGUMENT" and "X[1] is negative" in str(r),
       "gRPC: a step's bad-input failure is INVALID_ARGUMENT", (c, r))
    c, r = ts.grpc_call(grpc, stub.ModelConfig, pb.ModelConfigRequest(name="ens"))
    ok(c == "OK" and r.config.platform == "ensemble" and
       [p.model_name for p in r.config.ensemble_scheduling.step] == ["relu4", "scale3"] and
       dict(r.config.ensemble_scheduling.step[1].input_map) == {"X": "MID"} and
       dict(r.config.ensemble_scheduling.step[1].output_map) == {"Y": "OUT"},
       "gRPC ModelConfig of the ensemble, with its steps", (c, r))
    ch.close()

    # The ensemble's requests count in its statistics, and its steps' in theirs.
    st, _, b = ts.request(s.port, "GET", "/v2/models/ens/stats")
    stats = (ts.jbody(b) or {}).get("model_stats", [{}])[0]
    n_ok = (stats.get("inference_stats", {}).get("success", {}) or {}).get("count", 0)
    ok(st == 200 and n_ok >= 34, "the ensemble's statistics count its requests", stats)


def test_unloaded_step(s):
    """Explicit mode: loading an ensemble loads its steps; a step unloaded makes it 503."""
    st, _, b = ts.request(s.port, "POST", "/v2/repository/models/ens/load")
    ok(st == 200, "loading an ensemble loads its steps first", b)
    st, _, b = ts.request(s.port, "GET", "/v2/models/scale3/ready")
    ok(st == 200, "its C step model is ready with it")
    x = [1, -2, 3, -4]
    st, _, vals = ts.infer(s.port, "ens", [("IN", "FP32", [1, 4], x)])
    ok(st == 200 and vals["OUT"] == [3, 0, 9, 0], "and it answers", st)
    st, _, b = ts.request(s.port, "POST", "/v2/repository/models/scale3/unload")
    st, js, _ = ts.infer(s.port, "ens", [("IN", "FP32", [1, 4], x)])
    msg = (js or {}).get("error", "")
    ok(st == 503 and "scale3" in msg, "with a step model unloaded: 503 naming it", (st, msg))
    st, _, b = ts.request(s.port, "POST", "/v2/repository/models/scale3/load")
    st, _, vals = ts.infer(s.port, "ens", [("IN", "FP32", [1, 4], x)])
    ok(st == 200 and vals["OUT"] == [3, 0, 9, 0], "loaded again, the ensemble answers again", st)


BAD_ENSEMBLES = [
    ("cycle", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "B" } output_map { key: "y" value: "A" } },
  { model_name: "scale3" input_map { key: "X" value: "A" } output_map { key: "Y" value: "B" } },
  { model_name: "scale3" input_map { key: "X" value: "IN" } output_map { key: "Y" value: "OUT" } } ] }
""", "wait on each other"),
    ("unknown step", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "nosuch" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "OUT" } } ] }
""", "nosuch"),
    ("datatype mismatch", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_INT64 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "OUT" } } ] }
""", "reads 'IN' as FP32, but it is INT64"),
    ("shape mismatch", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 5 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "OUT" } } ] }
""", "with shape [-1,4], but it has shape [-1,5]"),
    ("not an output", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "IN" } output_map { key: "z" value: "OUT" } } ] }
""", "'z', which is not an output of model 'relu4'"),
    ("input not mapped", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "add4" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "OUT" } } ] }
""", "input 'x1' of model 'add4' is not in its input_map"),
    ("made twice", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "OUT" } },
  { model_name: "scale3" input_map { key: "X" value: "IN" } output_map { key: "Y" value: "OUT" } } ] }
""", "another step makes"),
    ("output never made", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] },
         { name: "LOST" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "OUT" } } ] }
""", "no step makes output 'LOST'"),
    ("read but never made", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "GHOST" } output_map { key: "y" value: "OUT" } } ] }
""", "reads 'GHOST', which no step makes"),
    ("itself", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "SELF" input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "OUT" } } ] }
""", "is the ensemble itself"),
    ("no scheduling", """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
""", "needs 'ensemble_scheduling'"),
    ("no io", """
platform: "ensemble"
ensemble_scheduling { step [
  { model_name: "relu4" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "OUT" } } ] }
""", "must list its inputs and outputs"),
]

BAD_BACKENDS = [
    ("no library", 'backend: "nosuch"\n', "no libnpu_serve_nosuch.so"),
    ("bad name", 'backend: "../evil"\n', "a backend name is"),
    ("unknown step", 'backend: "test"\nparameters { key: "step" value: { string_value: "zap" } }\n',
     "has no step 'zap' (it has: scale, check, lengths, needs)"),
    ("several steps", 'backend: "test"\n', "parameter 'step' picks one"),
    ("dtype against the step", 'backend: "test"\n'
     'parameters { key: "step" value: { string_value: "check" } }\n'
     'input [ { name: "X" data_type: TYPE_INT32 dims: [ 4 ] } ]\n'
     'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n',
     "is TYPE_INT32 in the config but TYPE_FP32 in step 'check'"),
    ("create fails", 'backend: "test"\nparameters { key: "step" value: { string_value: "needs" } }\n',
     "parameter 'must' is missing"),
    ("a state the step lacks", 'backend: "test"\n'
     'parameters { key: "step" value: { string_value: "check" } }\n'
     'sequence_batching { oldest { } state [ { input_name: "S" output_name: "S_OUT" '
     'data_type: TYPE_FP32 dims: [ 4 ] initial_state { zero_data: true data_type: TYPE_FP32 '
     'dims: [ 4 ] } } ] }\n',
     "state input 'S': step 'check' has no TYPE_FP32 input of that name"),
    ("no op library", 'model_operations { op_library_filename: "libnope.so" }\n',
     "no op library 'libnope.so'"),
    ("an op library without the entry",
     'model_operations { op_library_filename: "libnpu_serve_test.so" }\n',
     "exports no npu_custom_ops_register"),
    ("an op library path", 'model_operations { op_library_filename: "../x.so" }\n',
     "must be a plain file name"),
    ("model_file outside", 'parameters { key: "model_file" value: { string_value: "../relu4/1/model.onnx" } }\n',
     "'..' is not allowed"),
    ("model_file absolute", 'parameters { key: "model_file" value: { string_value: "/etc/passwd" } }\n',
     "must be relative"),
    ("model_file not cached", 'parameters { key: "model_file" value: { string_value: "cache:no/such.onnx" } }\n',
     "tools/fetch-models"),
]


def test_json_override(s, repo):
    """An ensemble given as a load request's JSON config: the maps as JSON objects."""
    write(f"{repo}/jens/1/.keep", "")
    cfg = {"platform": "ensemble",
           "input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [-1, 4]}],
           "output": [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [-1, 4]}],
           "ensemble_scheduling": {"step": [
               {"model_name": "relu4", "input_map": {"x0": "IN"}, "output_map": {"y": "R"}},
               {"model_name": "scale3", "input_map": {"X": "R"}, "output_map": {"Y": "OUT"}}]}}
    st, _, b = ts.request(s.port, "POST", "/v2/repository/models/jens/load",
                          {"parameters": {"config": json.dumps(cfg)}})
    ok(st == 200, "an ensemble from a JSON config override loads", b[:300])
    st, js, vals = ts.infer(s.port, "jens", [("IN", "FP32", [1, 4], [1, -2, 3, -4])])
    ok(st == 200 and vals["OUT"] == [3, 0, 9, 0], "and answers", (st, js))
    cfg["ensemble_scheduling"]["step"][1]["input_map"] = {"X": ""}
    st, _, b = ts.request(s.port, "POST", "/v2/repository/models/jens/load",
                          {"parameters": {"config": json.dumps(cfg)}})
    ok(st == 400 and "needs a 'key' and a 'value'" in (ts.jbody(b) or {}).get("error", ""),
       "a JSON map entry without a value is refused", b[:300])


def test_bad_configs(s, repo):
    for i, (what, cfg, want) in enumerate(BAD_ENSEMBLES + BAD_BACKENDS):
        name = "bad%d" % i
        write(f"{repo}/{name}/1/.keep", "")
        write(f"{repo}/{name}/config.pbtxt", cfg.replace("SELF", name))
        if "model_operations" in cfg:
            twice_model(f"{repo}/{name}/1/model.onnx")
        st, _, b = ts.request(s.port, "POST", "/v2/repository/models/%s/load" % name)
        msg = (ts.jbody(b) or {}).get("error", "")
        ok(st == 400 or st == 404, "refused: %s (%d)" % (what, st), msg)
        ok(want in msg, "and the error says so: %s" % what, msg)
    x = [1, -2, 3, -4]
    st, _, vals = ts.infer(s.port, "ens", [("IN", "FP32", [1, 4], x)])
    ok(st == 200 and vals["OUT"] == [3, 0, 9, 0], "the server serves on after every refusal", st)


# ---- OCR as one model -----------------------------------------------------------

OCR_LINES = [
    ["Invoice 2291 total 418.50"],
    ["queue depth 7", "batch 32 at 4.5 ms"],
    ["The quick brown fox", "jumps over 13 lazy dogs"],
]


def ocr_repo(repo, widths):
    """examples/serve as it is, but rec read at one width, as npu-ocr --rec-widths."""
    shutil.copytree(os.path.join(ROOT, "examples", "serve"), repo)
    p = os.path.join(repo, "ocr_boxes", "config.pbtxt")
    with open(p, "a") as f:
        f.write('parameters { key: "rec_widths" value: { string_value: "%s" } }\n' % widths)


def png_to_ppm(png):
    """An 8-bit RGB or RGBA, non-interlaced PNG (render-text's) as a binary PPM."""
    import zlib
    pos, idat, w = 8, b"", 0
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6) and body[12] == 0
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    prev, rows = bytearray(stride), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else
                    b"".join(bytes(line[i:i + 3]) for i in range(0, stride, 4)))
        prev = line
    return b"P6\n%d %d\n255\n" % (w, h) + b"".join(rows)


def ppm_to_png(ppm):
    """A binary PPM (djpeg's) as an 8-bit RGB PNG, unfiltered."""
    import zlib
    head = ppm.split(b"\n", 3)
    w, h = map(int, head[1].split())
    pix = head[3]
    raw = b"".join(b"\0" + pix[y * w * 3:(y + 1) * w * 3] for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + \
            struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def bytes_elem(data):
    return struct.pack("<I", len(data)) + data


def ocr_http(port, png, binary):
    if binary:
        blob = bytes_elem(png)
        req = {"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                           "parameters": {"binary_data_size": len(blob)}}],
               "outputs": [{"name": n} for n in ("TEXT", "BOXES", "SCORES")]}
        body = json.dumps(req).encode()
        headers = {"Inference-Header-Content-Length": str(len(body))}
        body += blob
    else:
        return None
    st, h, data = ts.request(port, "POST", "/v2/models/ocr/infer", body, headers, timeout=300)
    if st != 200:
        return st, (ts.jbody(data) or {}).get("error", data[:200])
    js = json.loads(data[:int(h.get("inference-header-content-length", len(data)))])
    out = {o["name"]: o for o in js["outputs"]}
    return st, (out["TEXT"]["data"], out["BOXES"]["data"], out["SCORES"]["data"])


# ---- Wake-word as one model: an ensemble with sequence-batched steps --------------

def ww_post(port, model, inputs, params=None):
    import numpy as np
    body = {"inputs": [{"name": n, "datatype": "FP32", "shape": list(a.shape),
                        "data": a.ravel().tolist()} for n, a in inputs]}
    if params:
        body["parameters"] = params
    st, _, b = ts.request(port, "POST", "/v2/models/%s/infer" % model, body, timeout=120)
    js = ts.jbody(b) or {}
    if st != 200:
        return st, js.get("error", b[:200])
    return st, {o["name"]: np.array(o["data"], dtype=np.float32).reshape(o["shape"])
                for o in js["outputs"]}


def ww_by_hand(port, chunks):
    """openWakeWord's streaming pipeline with the three models called one by one."""
    import numpy as np
    tail = np.zeros(480, np.float32)
    win = np.ones((76, 32), np.float32)
    feat = np.zeros((16, 96), np.float32)
    scores = []
    for ch in chunks:
        _, o = ww_post(port, "ww_mel", [("input", np.concatenate([tail, ch]).reshape(1, 1760))])
        tail = np.concatenate([tail, ch])[1280:]
        win = np.concatenate([win[8:], o["output"].reshape(8, 32) / np.float32(10) +
                              np.float32(2)])
        _, o = ww_post(port, "ww_embed", [("input_1", win.reshape(1, 76, 32, 1))])
        feat = np.concatenate([feat[1:], o["conv2d_19"].reshape(1, 96)])
        _, o = ww_post(port, "ww_classify", [("x.1", feat.reshape(1, 16, 96))])
        scores.append(float(o["53"].ravel()[0]))
    return scores


def ww_stream(seed, n):
    import numpy as np
    rng = np.random.default_rng(seed)
    t = np.arange(1280 * n) / 16000.0
    f = 200 + 150 * seed
    x = 0.2 * np.sin(2 * np.pi * f * t * (1 + 0.3 * t)) + 0.02 * rng.standard_normal(t.size)
    return [x[k * 1280:(k + 1) * 1280].astype(np.float32) for k in range(n)]


def test_wakeword(s):
    try:
        import numpy  # noqa: F401  (python3-numpy)
    except ImportError:
        ok(True, "wake-word as one model # SKIP python3-numpy is missing")
        return
    st, _, _ = ts.request(s.port, "GET", "/v2/models/wakeword/ready")
    if st != 200:
        ok(True, "wake-word as one model # SKIP openWakeWord's models are not in the cache "
           "(tools/fetch-models)")
        return
    streams = {sid: ww_stream(sid, 12) for sid in (11, 12, 13)}
    got = {}

    def run(sid):
        out = []
        for k, ch in enumerate(streams[sid]):
            st, o = ww_post(s.port, "wakeword", [("AUDIO", ch)],
                            {"sequence_id": sid, "sequence_start": k == 0,
                             "sequence_end": k == len(streams[sid]) - 1})
            out.append(float(o["SCORE"].ravel()[0]) if st == 200 else (st, o))
        got[sid] = out
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        list(ex.map(run, streams))
    for sid, chunks in streams.items():
        want = ww_by_hand(s.port, chunks)
        ok(got[sid] == want, "wake-word stream %d (12 chunks, 3 streams interleaved): the same "
           "scores as the three models run by hand" % sid, (got[sid][:3], want[:3]))
    # gRPC ModelStreamInfer: one stream's chunks on one call, in order.
    grpc, pb, pbg = ts.grpc_stubs()
    ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
    stub = pbg.GRPCInferenceServiceStub(ch)
    chunks = ww_stream(14, 8)

    def reqs():
        for k, c in enumerate(chunks):
            rq = pb.ModelInferRequest(model_name="wakeword", id=str(k))
            t = rq.inputs.add()
            t.name, t.datatype = "AUDIO", "FP32"
            t.shape.extend([1280])
            rq.raw_input_contents.append(c.tobytes())
            rq.parameters["sequence_id"].int64_param = 14
            rq.parameters["sequence_start"].bool_param = k == 0
            rq.parameters["sequence_end"].bool_param = k == len(chunks) - 1
            yield rq
    scores = []
    try:
        for r in stub.ModelStreamInfer(reqs(), timeout=300):
            raw = r.infer_response.raw_output_contents[0] if r.infer_response.raw_output_contents \
                else b""
            scores.append((r.infer_response.id, struct.unpack("<f", raw)[0] if raw
                           else r.error_message))
    except grpc.RpcError as e:
        scores.append(("rpc", e.code().name))
    want = ww_by_hand(s.port, chunks)
    ok([x[1] for x in scores] == [struct.unpack("<f", struct.pack("<f", w))[0] for w in want] and
       [x[0] for x in scores] == [str(k) for k in range(len(chunks))],
       "gRPC ModelStreamInfer: a stream of 8 chunks in order, the same scores", (scores[:3], want[:3]))
    ch.close()
    # Without a sequence id: the stateful step says what is missing.
    st, msg = ww_post(s.port, "wakeword", [("AUDIO", streams[11][0])])
    ok(st == 400 and "ww_frames" in str(msg) and "sequence_id" in str(msg),
       "a chunk without sequence_id: 400 naming the step and the parameter", (st, msg))


def test_ocr(work):
    det = os.path.join(ASSETS, "ch_PP-OCRv4_det_infer.onnx")
    ocr_bin = os.path.join(BUILD, "bin", "npu-ocr")
    render = os.path.join(BUILD, "bin", "render-text")
    if not os.path.exists(det):
        ok(True, "OCR as one model # SKIP the PP-OCRv4 models are not in the cache "
           "(tools/fetch-models)")
        return
    repo = os.path.join(work, "ocr-repo")
    ocr_repo(repo, "960")
    s = ts.Server("ocr", repo)
    if not ok(s.up(), "npu serve --model-repository examples/serve starts (OCR ensemble)",
              s.log_text()[-800:] if not s.up() else ""):
        s.stop()
        return
    images = []
    for i, lines in enumerate(OCR_LINES):
        p = os.path.join(work, "ocr%d.png" % i)
        r = subprocess.run([render, "-o", p, "--size", "auto", "--px", "28"] + lines,
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            images.append(p)
    r = subprocess.run([ocr_bin, "--json", "--rec-widths", "960", "--det", det,
                        "--rec", os.path.join(ASSETS, "ch_PP-OCRv4_rec_infer.onnx"),
                        "--dict", os.path.join(ASSETS, "ppocr_keys_v1.txt")] + images,
                       capture_output=True, text=True, timeout=600)
    ref = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    ok(len(ref) == len(images) == len(OCR_LINES), "npu-ocr reads the rendered images",
       r.stderr[-300:])
    for img, want in zip(images, ref):
        png = open(img, "rb").read()
        st, got = ocr_http(s.port, png, True)
        if not ok(st == 200, "OCR as one request (HTTP, binary BYTES): %s" % os.path.basename(img),
                  got):
            continue
        text, boxes, scores = got
        wtext = [ln["text"] for ln in want["lines"]]
        wpts = [c for ln in want["lines"] for p in ln["points"] for c in p]
        ok(text == wtext, "the same lines as npu-ocr: %s" % wtext, text)
        ok(len(boxes) == len(wpts) and all(abs(a - b) <= 0.5 for a, b in zip(boxes, wpts)),
           "the same boxes as npu-ocr (to the pixel)", (boxes[:8], wpts[:8]))
        ok(len(scores) == len(wtext) and
           all(abs(a - b["score"]) < 1e-3 for a, b in zip(scores, want["lines"])),
           "the same scores", (scores, [ln["score"] for ln in want["lines"]]))
    # JSON in and out: the image as a JSON string cannot be (it is not
    # UTF-8), so binary in, the lines as JSON strings out.
    blob = bytes_elem(open(images[0], "rb").read())
    head = json.dumps({"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                                   "parameters": {"binary_data_size": len(blob)}}],
                       "outputs": [{"name": "TEXT"}]}).encode()
    st, _, b = ts.request(s.port, "POST", "/v2/models/ocr/infer", head + blob,
                          {"Inference-Header-Content-Length": str(len(head))}, timeout=300)
    out = (ts.jbody(b) or {}).get("outputs", [{}])
    ok(st == 200 and len(out) == 1 and out[0].get("datatype") == "BYTES" and
       out[0].get("data") == [ln["text"] for ln in ref[0]["lines"]],
       "TEXT asked for alone comes back as JSON strings", (st, b[:300]))
    # gRPC: raw BYTES in, the same answer.
    grpc, pb, pbg = ts.grpc_stubs()
    ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
    stub = pbg.GRPCInferenceServiceStub(ch)
    png = open(images[-1], "rb").read()
    rq = pb.ModelInferRequest(model_name="ocr", id="ocr")
    t = rq.inputs.add()
    t.name, t.datatype = "IMAGE", "BYTES"
    t.shape.extend([1])
    t.contents.bytes_contents.append(png)
    c, r = ts.grpc_call(grpc, stub.ModelInfer, rq)
    lines = []
    if c == "OK":
        for o, raw in zip(r.outputs, r.raw_output_contents):
            if o.name == "TEXT":
                k = 0
                while k + 4 <= len(raw):
                    n = struct.unpack("<I", raw[k:k + 4])[0]
                    lines.append(raw[k + 4:k + 4 + n].decode())
                    k += 4 + n
    ok(c == "OK" and lines == [ln["text"] for ln in ref[-1]["lines"]],
       "gRPC: the image as bytes_contents, the same text", (c, lines))
    ch.close()
    # The same image as a JPEG (cjpeg): the lines, boxes and scores npu-ocr
    # reads in the JPEG's pixels (djpeg's, written back as a PNG).
    ppm = os.path.join(work, "ocr-jpeg.ppm")
    with open(ppm, "wb") as f:
        f.write(png_to_ppm(open(images[1], "rb").read()))
    jpg = subprocess.run(["cjpeg", "-quality", "90", ppm], capture_output=True, timeout=60)
    dec = subprocess.run(["djpeg", "-pnm"], input=jpg.stdout, capture_output=True, timeout=60)
    if jpg.returncode == 0 and jpg.stdout[:3] == b"\xff\xd8\xff" and dec.returncode == 0:
        back = os.path.join(work, "ocr-jpeg.png")
        with open(back, "wb") as f:
            f.write(ppm_to_png(dec.stdout))
        r = subprocess.run([ocr_bin, "--json", "--rec-widths", "960", "--det", det,
                            "--rec", os.path.join(ASSETS, "ch_PP-OCRv4_rec_infer.onnx"),
                            "--dict", os.path.join(ASSETS, "ppocr_keys_v1.txt"), back],
                           capture_output=True, text=True, timeout=600)
        want = json.loads(r.stdout.splitlines()[0]) if r.returncode == 0 else {"lines": None}
        st, got = ocr_http(s.port, jpg.stdout, True)
        wpts = [c for ln in want["lines"] or [] for p in ln["points"] for c in p]
        ok(st == 200 and want["lines"] is not None and
           got[0] == [ln["text"] for ln in want["lines"]] and len(got[1]) == len(wpts) and
           all(abs(a - b) <= 0.5 for a, b in zip(got[1], wpts)),
           "a JPEG: the lines and boxes npu-ocr reads in its decoded pixels", (st, got, want))
    else:
        ok(False, "cjpeg and djpeg (libjpeg-turbo-progs) make and decode a JPEG",
           (jpg.stderr[-200:], dec.stderr[-200:]))
    # Bad images: the request's fault, named.
    st, msg = ocr_http(s.port, b"GIF89a not an image", True)
    ok(st == 400 and "neither a PNG nor a JPEG" in str(msg), "a GIF: 400 naming the formats",
       (st, msg))
    st, msg = ocr_http(s.port, png[:len(png) // 2], True)
    ok(st == 400 and "PNG" in str(msg), "a truncated PNG: 400 naming it", (st, msg))
    st, got = ocr_http(s.port, png, True)
    ok(st == 200, "and the next image is read", st)
    test_wakeword(s)
    ok(s.stop() == 0, "the example repository's server drains and exits 0")


def main():
    work = ts.WORK
    repo = os.path.join(work, "ens-repo")
    test_repo(repo)
    s = ts.Server("ens", repo, "--backend-directory", TEST_BACKENDS)
    if ok(s.up(), "npu serve starts with ensembles and a backend library",
          s.log_text()[-500:]):
        test_ensembles(s)
    s.stop()
    s = ts.Server("ens-explicit", repo, "--backend-directory", TEST_BACKENDS,
                  "--model-control-mode", "explicit")
    if ok(s.up(), "npu serve starts in explicit mode", s.log_text()[-500:]):
        test_unloaded_step(s)
        test_json_override(s, repo)
        test_bad_configs(s, repo)
    ok(s.stop() == 0, "it drains and exits 0")
    test_ocr(work)
    print("%d passed, %d failed" % (ts.passed, ts.failed))
    return 1 if ts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
