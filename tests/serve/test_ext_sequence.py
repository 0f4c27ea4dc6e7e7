#!/usr/bin/env python3
"""Triton's sequence batcher in npu serve: stateful ONNX models (an
accumulator with START/END/READY/CORRID controls and implicit state, a
sliding window with implicit state only) served with the direct and the
oldest strategy. Several interleaved correlation ids from several clients
must give exactly the per-sequence running results computed here, over
HTTP and over gRPC ModelInfer / ModelStreamInfer; then the idle timeout,
the bounds (--max-sequences, --max-sequence-state-bytes), every bad input
of issue 34 and the configs a load must refuse. Only 127.0.0.1 and
ephemeral ports; every wait is bounded.

usage: test_ext_sequence.py WORKDIR   (NPU, PROMTOOL from the environment)"""
import json
import os
import queue
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_serve as ts  # noqa: E402

import onnx  # noqa: E402  (python3-onnx)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
import numpy as np  # noqa: E402

WORK = sys.argv[1]
ok = ts.ok


# ---- Models ----------------------------------------------------------------------

def acc_model():
    """y = x + state_in; state_out = y; ctl = START + 2 END + 4 READY; corr = CORRID."""
    B = "B"
    vi = helper.make_tensor_value_info
    inputs = [vi("x", TensorProto.FLOAT, [B, 4]), vi("START", TensorProto.FLOAT, [B, 1]),
              vi("END", TensorProto.FLOAT, [B, 1]), vi("READY", TensorProto.FLOAT, [B, 1]),
              vi("CORRID", TensorProto.INT64, [B, 1]), vi("state_in", TensorProto.FLOAT, [B, 4])]
    outputs = [vi("y", TensorProto.FLOAT, [B, 4]), vi("state_out", TensorProto.FLOAT, [B, 4]),
               vi("ctl", TensorProto.FLOAT, [B, 1]), vi("corr", TensorProto.INT64, [B, 1])]
    inits = [numpy_helper.from_array(np.array([2.0], np.float32), "two"),
             numpy_helper.from_array(np.array([4.0], np.float32), "four")]
    nodes = [helper.make_node("Add", ["x", "state_in"], ["y"]),
             helper.make_node("Identity", ["y"], ["state_out"]),
             helper.make_node("Mul", ["END", "two"], ["end2"]),
             helper.make_node("Mul", ["READY", "four"], ["ready4"]),
             helper.make_node("Add", ["START", "end2"], ["se"]),
             helper.make_node("Add", ["se", "ready4"], ["ctl"]),
             helper.make_node("Identity", ["CORRID"], ["corr"])]
    g = helper.make_graph(nodes, "acc", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m.SerializeToString()


def win_model():
    """A sliding window of the last 3 inputs as implicit state [3, 2]: y = its sum."""
    B = "B"
    vi = helper.make_tensor_value_info
    inputs = [vi("x", TensorProto.FLOAT, [B, 2]), vi("win_in", TensorProto.FLOAT, [B, 3, 2])]
    outputs = [vi("y", TensorProto.FLOAT, [B, 2]), vi("win_out", TensorProto.FLOAT, [B, 3, 2])]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([3], np.int64), "three")]
    nodes = [helper.make_node("Slice", ["win_in", "one", "three", "one"], ["tail"]),
             helper.make_node("Unsqueeze", ["x", "one"], ["xu"]),
             helper.make_node("Concat", ["tail", "xu"], ["win_out"], axis=1),
             helper.make_node("ReduceSum", ["win_out", "one"], ["y"], keepdims=0)]
    g = helper.make_graph(nodes, "win", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m.SerializeToString()


CONTROLS = """
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END fp32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 } ] }
  ]
  state [ { input_name: "state_in" output_name: "state_out" data_type: TYPE_FP32 dims: [ 4 ]
            initial_state { zero_data: true data_type: TYPE_FP32 dims: [ 4 ] name: "zeros" } } ]
"""


def acc_config(name, idle_us=5000000):
    return """name: "%s"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] },
         { name: "ctl" data_type: TYPE_FP32 dims: [ 1 ] },
         { name: "corr" data_type: TYPE_INT64 dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
sequence_batching {
  max_sequence_idle_microseconds: %d
  direct { }
%s}
""" % (name, idle_us, CONTROLS)


WIN_CONFIG = """name: "win"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 2 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  oldest { max_candidate_sequences: 8 preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 3000 }
  state [ { input_name: "win_in" output_name: "win_out" data_type: TYPE_FP32 dims: [ 3, 2 ] } ]
}
"""


def make_repo(root, idle_us=5000000):
    ts.write(os.path.join(root, "acc", "1", "model.onnx"), acc_model())
    ts.write(os.path.join(root, "acc", "config.pbtxt"), acc_config("acc", idle_us))
    ts.write(os.path.join(root, "win", "1", "model.onnx"), win_model())
    ts.write(os.path.join(root, "win", "config.pbtxt"), WIN_CONFIG)
    # Loaded only with a config override (bad ones must be refused).
    ts.write(os.path.join(root, "accx", "1", "model.onnx"), acc_model())
    ts.write(os.path.join(root, "accx", "config.pbtxt"), acc_config("accx"))


# ---- Clients ---------------------------------------------------------------------

def seq_params(sid, start=False, end=False):
    p = {"sequence_id": sid}
    if start:
        p["sequence_start"] = True
    if end:
        p["sequence_end"] = True
    return p


def acc_step(port, sid, x, start=False, end=False):
    return ts.infer(port, "acc", [("x", "FP32", [1, 4], x)],
                    params=seq_params(sid, start, end))


def win_step(port, sid, x, start=False, end=False):
    return ts.infer(port, "win", [("x", "FP32", [1, 2], x)],
                    params=seq_params(sid, start, end))


def acc_xs(sid, steps):
    return [[float((sid * 7 + k * 3 + j) % 11) - 5.0 for j in range(4)] for k in range(steps)]


def acc_expect(xs):
    out, run = [], [0.0] * 4
    for x in xs:
        run = [a + b for a, b in zip(run, x)]
        out.append(list(run))
    return out


def win_xs(seed, steps):
    return [[float((seed * 5 + k * 2 + j) % 9) - 4.0 for j in range(2)] for k in range(steps)]


def win_expect(xs):
    out, window = [], [[0.0, 0.0]] * 3
    for x in xs:
        window = window[1:] + [x]
        out.append([sum(w[j] for w in window) for j in range(2)])
    return out


def run_threads(fns, secs=120):
    errs = []

    def wrap(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 (reported as a failure)
            errs.append(repr(e))

    th = [threading.Thread(target=wrap, args=(f,)) for f in fns]
    for t in th:
        t.start()
    deadline = time.time() + secs
    for t in th:
        t.join(max(0.1, deadline - time.time()))
    return errs + ["thread still running"] * sum(t.is_alive() for t in th)


def stats_of(port, model):
    st, _, b = ts.request(port, "GET", "/v2/models/%s/stats" % model)
    js = ts.jbody(b) if st == 200 else None
    return js["model_stats"][0] if js and js.get("model_stats") else {}


def metric(port, name, model):
    st, _, b = ts.request(port, "GET", "/metrics")
    for line in b.decode().splitlines() if st == 200 else []:
        if line.startswith('%s{model="%s",' % (name, model)):
            return int(float(line.split()[-1]))
    return None


# ---- Tests -----------------------------------------------------------------------

def test_config(s, grpc, pb, st):
    code, _, b = ts.request(s.port, "GET", "/v2/models/acc/config")
    cfg = ts.jbody(b) or {}
    sb = cfg.get("sequence_batching", {})
    kinds = [c["control"][0]["kind"] for c in sb.get("control_input", [])]
    ok(code == 200 and kinds == ["CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END",
                                 "CONTROL_SEQUENCE_READY", "CONTROL_SEQUENCE_CORRID"] and
       "direct" in sb and sb.get("max_sequence_idle_microseconds") == 5000000 and
       sb["state"][0]["input_name"] == "state_in" and sb["state"][0]["dims"] == [4] and
       [i["name"] for i in cfg.get("input", [])] == ["x"],
       "GET .../config writes sequence_batching back (controls, direct, state); the controls "
       "and state stay out of 'input'", cfg)
    code, _, b = ts.request(s.port, "GET", "/v2/models/win/config")
    sb = (ts.jbody(b) or {}).get("sequence_batching", {})
    ok(code == 200 and sb.get("oldest", {}).get("max_candidate_sequences") == 8 and
       sb["oldest"].get("preferred_batch_size") == [4] and
       sb["state"][0]["dims"] == [3, 2], "GET .../config of an oldest model", sb)
    code, r = ts.grpc_call(grpc, st.ModelConfig, pb.ModelConfigRequest(name="acc"))
    seqb = r.config.sequence_batching if code == "OK" else None
    ok(code == "OK" and r.config.WhichOneof("scheduling_choice") == "sequence_batching" and
       [c.name for c in seqb.control_input] == ["START", "END", "READY", "CORRID"] and
       seqb.control_input[0].control[0].fp32_false_true == [0.0, 1.0] and
       seqb.control_input[3].control[0].data_type == 9 and
       seqb.state[0].output_name == "state_out" and list(seqb.state[0].dims) == [4] and
       seqb.WhichOneof("strategy_choice") == "direct",
       "gRPC ModelConfig carries ModelSequenceBatching", r)


def test_direct_http(s):
    """8 sequences from 4 threads (2 each, interleaved), 6 steps each."""
    results = {}

    def client(t):
        ids = [100 + 2 * t, 101 + 2 * t]
        xs = {i: acc_xs(i, 6) for i in ids}
        got = {i: [] for i in ids}
        for k in range(6):
            for i in ids:
                code, js, v = acc_step(s.port, i, xs[i][k], start=k == 0, end=k == 5)
                got[i].append((code, v, js))
        for i in ids:
            results[i] = (xs[i], got[i])

    errs = run_threads([lambda t=t: client(t) for t in range(4)])
    good = 0
    bad = []
    for i, (xs, got) in sorted(results.items()):
        want = acc_expect(xs)
        fine = True
        for k, (code, v, js) in enumerate(got):
            ctl = (1 if k == 0 else 0) + (2 if k == 5 else 0) + 4
            if code != 200 or v["y"] != want[k] or v["ctl"] != [ctl] or v["corr"] != [i]:
                fine = False
                bad.append((i, k, code, v, js))
        good += fine
    ok(not errs and good == 8,
       "direct, HTTP: 8 interleaved sequences from 4 clients give their own running sums, "
       "START/END/READY and CORRID as sent (%d of 8)" % good, (errs, bad[:3]))
    live = stats_of(s.port, "acc").get("sequence_stats", {})
    ok(live.get("live") == [] and live.get("started", 0) >= 8 and live.get("ended", 0) >= 8,
       "ended sequences are freed (stats: none live, started/ended counted)", live)


def test_oldest_http(s):
    """6 sequences with string ids, one thread each: batched among the oldest."""
    results = {}

    def client(t):
        sid = "cam-%d" % t
        xs = win_xs(t, 7)
        got = []
        for k in range(7):
            got.append(win_step(s.port, sid, xs[k], start=k == 0, end=k == 6))
        results[sid] = (xs, got)

    before = stats_of(s.port, "win")
    errs = run_threads([lambda t=t: client(t) for t in range(6)])
    good = 0
    bad = []
    for sid, (xs, got) in sorted(results.items()):
        want = win_expect(xs)
        fine = all(c == 200 and v["y"] == want[k] for k, (c, _, v) in enumerate(got))
        good += fine
        if not fine:
            bad.append((sid, [(c, v, js) for c, js, v in got][:3]))
    after = stats_of(s.port, "win")
    runs = after.get("execution_count", 0) - before.get("execution_count", 0)
    infs = after.get("inference_count", 0) - before.get("inference_count", 0)
    ok(not errs and good == 6,
       "oldest, HTTP: 6 concurrent sequences (string ids) keep their own sliding window "
       "[3, 2] as implicit state (%d of 6)" % good, (errs, bad[:2]))
    ok(infs == 42 and 0 < runs <= 42,
       "oldest: 42 requests in %d batches (at most one request of a sequence per batch)" % runs,
       (runs, infs))


def grpc_seq_req(pb, model, rid, sid, x, start=False, end=False):
    rq = pb.ModelInferRequest(model_name=model, id=rid)
    t = rq.inputs.add()
    t.name, t.datatype = "x", "FP32"
    t.shape.extend([1, len(x)])
    rq.raw_input_contents.append(struct.pack("<%df" % len(x), *x))
    if isinstance(sid, str):
        rq.parameters["sequence_id"].string_param = sid
    else:
        rq.parameters["sequence_id"].int64_param = sid
    if start:
        rq.parameters["sequence_start"].bool_param = True
    if end:
        rq.parameters["sequence_end"].bool_param = True
    return rq


def test_grpc_stream(s, grpc, pb, st):
    """One stream, requests of 3 acc and 2 win sequences interleaved and sent
    without waiting: the server runs each sequence's requests in order."""
    accs = {7001: acc_xs(7001, 5), 7002: acc_xs(7002, 5), 7003: acc_xs(7003, 5)}
    wins = {"w-a": win_xs(11, 5), "w-b": win_xs(12, 5)}
    reqs = []
    for k in range(5):
        for sid, xs in accs.items():
            reqs.append(grpc_seq_req(pb, "acc", "%d/%d" % (sid, k), sid, xs[k], k == 0, k == 4))
        for sid, xs in wins.items():
            reqs.append(grpc_seq_req(pb, "win", "%s/%d" % (sid, k), sid, xs[k], k == 0, k == 4))
    try:
        rest = list(st.ModelStreamInfer(iter(reqs), timeout=120))
    except grpc.RpcError as e:
        ok(False, "gRPC ModelStreamInfer of sequences: %s %s" % (e.code().name, e.details()))
        return
    got = {}
    order = {}
    for r in rest:
        rid = r.infer_response.id
        sid = rid.split("/")[0]
        order.setdefault(sid, []).append(int(rid.split("/")[1]))
        if r.error_message:
            got[rid] = r.error_message
            continue
        names = [o.name for o in r.infer_response.outputs]
        raw = r.infer_response.raw_output_contents[names.index("y")]
        got[rid] = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    bad = []
    for sid, xs in list(accs.items()) + list(wins.items()):
        want = acc_expect(xs) if sid in accs else win_expect(xs)
        for k in range(5):
            if got.get("%s/%d" % (sid, k)) != want[k]:
                bad.append(("%s/%d" % (sid, k), got.get("%s/%d" % (sid, k)), want[k]))
    ok(len(rest) == 25 and not bad,
       "gRPC ModelStreamInfer: 25 requests of 5 interleaved sequences (uint64 and string "
       "ids, direct and oldest) on one stream, each answered with its sequence's result",
       (len(rest), bad[:3]))
    ok(all(v == sorted(v) for v in order.values()) and len(order) == 5,
       "gRPC ModelStreamInfer: each sequence's responses leave in its request order", order)


def test_grpc_unary(s, grpc, pb, st):
    xs = acc_xs(9, 3)
    want = acc_expect(xs)
    outs = []
    for k in range(3):
        code, r = ts.grpc_call(grpc, st.ModelInfer,
                               grpc_seq_req(pb, "acc", "u%d" % k, 9, xs[k], k == 0, k == 2))
        outs.append(list(struct.unpack("<4f", r.raw_output_contents[0]))
                    if code == "OK" else (code, r))
    ok(outs == want, "gRPC ModelInfer: a sequence of 3 unary calls (int64_param id, "
       "bool_param start/end) accumulates", outs)


def test_bad_inputs(s, grpc, pb, st):
    port = s.port
    code, js, _ = ts.infer(port, "acc", [("x", "FP32", [1, 4], [1, 2, 3, 4])])
    ok(code == 400 and "sequence_id" in (js or {}).get("error", ""),
       "HTTP: a request without sequence_id to a sequence model is 400 naming it", js)
    rq = grpc_seq_req(pb, "acc", "n", 5, [1, 2, 3, 4])
    del rq.parameters["sequence_id"]
    code, r = ts.grpc_call(grpc, st.ModelInfer, rq)
    ok(code == "INVALID_ARGUMENT" and "sequence_id" in r,
       "gRPC: without sequence_id is INVALID_ARGUMENT", (code, r))
    code, js, _ = acc_step(port, 0, [1, 2, 3, 4], start=True)
    ok(code == 400 and "sequence_id" in (js or {}).get("error", ""),
       "sequence_id 0 is no correlation id: 400", js)
    code, js, _ = acc_step(port, 555, [1, 2, 3, 4], start=True)
    code2, js2, _ = acc_step(port, 555, [1, 2, 3, 4], start=True)
    ok(code == 200 and code2 == 400 and "already live" in (js2 or {}).get("error", ""),
       "HTTP: a START for a live id is 400 'already live'", js2)
    code, r = ts.grpc_call(grpc, st.ModelInfer,
                           grpc_seq_req(pb, "acc", "d", 555, [1, 2, 3, 4], start=True))
    ok(code == "INVALID_ARGUMENT" and "already live" in r,
       "gRPC: a START for a live id is INVALID_ARGUMENT", (code, r))
    code, js, v = acc_step(port, 555, [1, 1, 1, 1], end=True)
    ok(code == 200 and v["y"] == [2, 3, 4, 5],
       "the live sequence is untouched by the refused START", (code, js, v))
    code, js, _ = acc_step(port, 556, [1, 2, 3, 4])
    ok(code == 400 and "sequence_start" in (js or {}).get("error", ""),
       "HTTP: a non-START request for an unknown id is 400 (its first request must START)", js)
    code, js, _ = acc_step(port, 555, [1, 2, 3, 4])
    ok(code == 400 and "ended" in (js or {}).get("error", ""),
       "HTTP: a request after the sequence's END is 400 'has ended'", js)
    code, r = ts.grpc_call(grpc, st.ModelInfer, grpc_seq_req(pb, "acc", "u", 557, [1, 2, 3, 4]))
    ok(code == "INVALID_ARGUMENT" and "sequence_start" in r,
       "gRPC: a non-START request for an unknown id is INVALID_ARGUMENT", (code, r))
    for bad, what in (({"sequence_id": 1.5}, "a float sequence_id"),
                      ({"sequence_id": -3}, "a negative sequence_id"),
                      ({"sequence_id": 3, "sequence_start": 1}, "a non-bool sequence_start"),
                      ({"sequence_id": "abc", "sequence_start": True},
                       "a string id where CORRID is TYPE_INT64")):
        code, js, _ = ts.infer(port, "acc", [("x", "FP32", [1, 4], [1, 2, 3, 4])], params=bad)
        ok(code == 400 and "sequence" in (js or {}).get("error", ""),
           "HTTP: %s is 400 naming the parameter" % what, js)
    code, js, _ = ts.infer(port, "acc", [("x", "FP32", [2, 4], [1] * 8)],
                           params=seq_params(558, start=True))
    ok(code == 400 and "one batch element" in (js or {}).get("error", ""),
       "HTTP: a sequence request of 2 batch elements is 400", js)
    rq = grpc_seq_req(pb, "acc", "big", 1, [1, 2, 3, 4], start=True)
    rq.parameters["sequence_id"].uint64_param = 1 << 63
    code, r = ts.grpc_call(grpc, st.ModelInfer, rq)
    ok(code == "INVALID_ARGUMENT" and "sequence_id" in r,
       "gRPC: a uint64_param id above 2^63-1 is INVALID_ARGUMENT", (code, r))
    xs = acc_xs(560, 2)
    a = acc_step(port, 560, xs[0], start=True)
    b = acc_step(port, 560, xs[1], end=True)
    ok(a[0] == 200 and b[0] == 200 and b[2]["y"] == acc_expect(xs)[1],
       "after every bad input the model still serves sequences")
    rej = metric(s.metrics_port, "npu_serve_sequence_requests_rejected_total", "acc")
    ok(rej is not None and rej >= 10, "npu_serve_sequence_requests_rejected_total counts "
       "the refusals (%s)" % rej)


def test_panel(s):
    """The panel's state carries a sequence model's live correlation ids."""
    def panel_ids():
        code, _, b = ts.request(s.port, "GET", "/v2/panel/state")
        for x in (ts.jbody(b) or {}).get("series", []) if code == 200 else []:
            if x.get("model") == "acc" and x.get("sequences"):
                return sorted(e["sequence_id"] for e in x["sequences"]["live"])
        return None

    a = acc_step(s.port, 4242, [1, 1, 1, 1], start=True)
    seen = ts.wait_for(lambda: panel_ids() == [4242], 4)
    b = acc_step(s.port, 4242, [1, 1, 1, 1], end=True)
    ok(a[0] == 200 and seen and b[0] == 200 and ts.wait_for(lambda: panel_ids() == [], 4),
       "the panel's state lists the live correlation ids (4242, then none)", panel_ids())


def test_bad_configs(s):
    """Explicit loads of 'accx' with config overrides the server must refuse."""
    base = {"name": "accx", "max_batch_size": 4,
            "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [4]}],
            "sequence_batching": {
                "control_input": [
                    {"name": n, "control": [{"kind": k, "fp32_false_true": [0, 1]}]}
                    for n, k in (("START", "CONTROL_SEQUENCE_START"),
                                 ("END", "CONTROL_SEQUENCE_END"),
                                 ("READY", "CONTROL_SEQUENCE_READY"))] + [
                    {"name": "CORRID", "control": [{"kind": "CONTROL_SEQUENCE_CORRID",
                                                    "data_type": "TYPE_INT64"}]}],
                "state": [{"input_name": "state_in", "output_name": "state_out",
                           "data_type": "TYPE_FP32", "dims": [4]}]}}

    def load(cfg):
        code, _, b = ts.request(s.port, "POST", "/v2/repository/models/accx/load",
                                {"parameters": {"config": json.dumps(cfg)}})
        return code, (ts.jbody(b) or {}).get("error", b.decode(errors="replace"))

    def variant(fn):
        cfg = json.loads(json.dumps(base))
        fn(cfg["sequence_batching"])
        return cfg

    cases = [
        (lambda sb: sb["control_input"][2].update(name="NOPE"),
         "NOPE", "a control input named in the config but missing from the model"),
        (lambda sb: sb["state"][0].update(dims=[5]), "dims",
         "state dims that do not match the model"),
        (lambda sb: sb["state"][0].update(data_type="TYPE_INT32"), "data_type",
         "a state data_type that does not match the model"),
        (lambda sb: sb["state"][0].update(output_name="nosuch"), "nosuch",
         "a state output missing from the model"),
        (lambda sb: sb["control_input"][0]["control"][0].update(kind="CONTROL_SEQUENCE_BOGUS"),
         "kind", "an unknown control kind"),
        (lambda sb: sb["control_input"][0]["control"][0].update(fp32_false_true=[1]),
         "two values", "a false_true list of one value"),
        (lambda sb: sb["state"][0].update(dims=[-1]), "initial_state",
         "a variable state dim without an initial_state shape"),
    ]
    for fn, needle, what in cases:
        code, err = load(variant(fn))
        ok(code == 400 and needle in err, "load refuses %s: 400 naming it" % what, (code, err))
    code, err = load(variant(lambda sb: sb["control_input"].pop(1)))
    ok(code == 400 and "besides the sequence controls" in err,
       "load refuses a config that leaves out a control input the model has", (code, err))
    cfg = variant(lambda sb: None)
    cfg["dynamic_batching"] = {}
    code, err = load(cfg)
    ok(code == 400 and "dynamic_batching" in err,
       "load refuses dynamic_batching together with sequence_batching", (code, err))
    del cfg["dynamic_batching"]
    code, err = load(cfg)
    xs = acc_xs(3, 2)
    a = ts.infer(s.port, "accx", [("x", "FP32", [1, 4], xs[0])], params=seq_params(3, True))
    b = ts.infer(s.port, "accx", [("x", "FP32", [1, 4], xs[1])], params=seq_params(3, False, True))
    ok(code == 200 and a[0] == 200 and b[0] == 200 and b[2]["y"] == acc_expect(xs)[1],
       "the same model loads with a good override (JSON) and accumulates", (code, err, a, b))


def test_bounds_and_timeout():
    """A server with --max-sequences 2, --max-sequence-state-bytes 40 and an
    idle timeout of 0.4 s."""
    repo = os.path.join(WORK, "seq-bounds-repo")
    make_repo(repo, idle_us=400000)
    s = ts.Server("seq-bounds", repo, "--max-sequences", "2", "--max-sequence-state-bytes", "40")
    try:
        if not ok(s.up(), "the bounded server starts", s.log_text()[-2000:] if s else ""):
            return
        grpc, pb, pbg = ts.grpc_stubs()
        st = pbg.GRPCInferenceServiceStub(grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port))
        a = acc_step(s.port, 1, [1, 1, 1, 1], start=True)
        b = acc_step(s.port, 2, [2, 2, 2, 2], start=True)
        c = acc_step(s.port, 3, [3, 3, 3, 3], start=True)
        ok(a[0] == 200 and b[0] == 200 and c[0] == 503 and
           "--max-sequences" in (c[1] or {}).get("error", ""),
           "HTTP: a third START over --max-sequences 2 is 503 naming the flag", c)
        code, r = ts.grpc_call(grpc, st.ModelInfer,
                               grpc_seq_req(pb, "acc", "g", 4, [1, 2, 3, 4], start=True))
        ok(code == "UNAVAILABLE" and "--max-sequences" in r,
           "gRPC: a START over --max-sequences is UNAVAILABLE", (code, r))
        w1 = win_step(s.port, "a", [1, 1], start=True)
        w2 = win_step(s.port, "b", [1, 1], start=True)
        ok(w1[0] == 200 and w2[0] == 503 and
           "--max-sequence-state-bytes" in (w2[1] or {}).get("error", ""),
           "a START whose state passes --max-sequence-state-bytes (2 x 24 > 40) is 503", w2)
        live = stats_of(s.port, "acc").get("sequence_stats", {}).get("live", [])
        ok(sorted(e["sequence_id"] for e in live) == [1, 2] and
           all(e["requests"] == 1 and e["state_bytes"] == 16 for e in live),
           "the model's statistics list the live correlation ids with their state", live)
        ok(metric(s.metrics_port, "npu_serve_sequences_active", "acc") == 2,
           "npu_serve_sequences_active is 2")

        time.sleep(1.2)   # > 0.4 s idle: both time out (the instances reap them)
        act = metric(s.metrics_port, "npu_serve_sequences_active", "acc")
        tmo = metric(s.metrics_port, "npu_serve_sequences_timed_out_total", "acc")
        ok(act == 0 and tmo == 2, "idle sequences time out by themselves: active %s, "
           "timed out %s" % (act, tmo))
        d = acc_step(s.port, 1, [1, 1, 1, 1])
        ok(d[0] == 400 and "timed out" in (d[1] or {}).get("error", ""),
           "HTTP: a request for a timed-out id is 400 'timed out'", d)
        code, r = ts.grpc_call(grpc, st.ModelInfer, grpc_seq_req(pb, "acc", "t", 2, [1] * 4))
        ok(code == "INVALID_ARGUMENT" and "timed out" in r,
           "gRPC: a request for a timed-out id is INVALID_ARGUMENT", (code, r))
        e = acc_step(s.port, 1, [5, 5, 5, 5], start=True)
        ok(e[0] == 200 and e[2]["y"] == [5, 5, 5, 5],
           "a timed-out id starts again from zero state; its freed room takes new sequences", e)
        code, _, b = ts.request(s.metrics_port, "GET", "/metrics")
        rc, out = ts.promtool(b)
        ok(code == 200 and rc == 0 and b"npu_serve_sequences_started_total" in b,
           "/metrics with the sequence series passes promtool", out[:500])
    finally:
        rc = s.stop()
        ok(rc == 0, "the bounded server drains and exits 0 with live sequences (%s)" % rc,
           s.log_text()[-1500:])


def main():
    repo = os.path.join(WORK, "seq-repo")
    make_repo(repo)
    s = ts.Server("seq", repo, "--model-control-mode", "explicit", "--load-model", "acc",
                  "--load-model", "win")
    try:
        if not ok(s.up(), "npu serve starts with sequence models", s.log_text()[-3000:]):
            return
        grpc, pb, pbg = ts.grpc_stubs()
        st = pbg.GRPCInferenceServiceStub(grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port))
        test_config(s, grpc, pb, st)
        test_direct_http(s)
        test_oldest_http(s)
        test_grpc_stream(s, grpc, pb, st)
        test_grpc_unary(s, grpc, pb, st)
        test_bad_inputs(s, grpc, pb, st)
        test_panel(s)
        test_bad_configs(s)
        code, _, _ = ts.request(s.port, "GET", "/v2/health/ready")
        ok(code == 200, "the server is ready after everything")
    finally:
        rc = s.stop()
        ok(rc == 0, "the server exits 0 on SIGTERM (%s)" % rc, s.log_text()[-1500:])
    test_bounds_and_timeout()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        ok(False, "the script ran to the end", repr(e))
    print("%d passed, %d failed" % (ts.passed, ts.failed))
    sys.exit(1 if ts.failed else 0)
