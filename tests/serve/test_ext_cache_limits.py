#!/usr/bin/env python3
"""npu serve: Triton's response cache, rate limiter, trace and logging
extensions (issue 34), over HTTP and gRPC, with their bad inputs.

usage: test_ext_cache_limits.py WORKDIR  (NPU, PROMTOOL from the environment)."""
import json
import os
import re
import stat
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_model  # noqa: E402
import test_serve as ts  # noqa: E402

WORK = ts.WORK
ok = ts.ok
JSON_HDR = {"Content-Type": "application/json"}

CACHED = """max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
response_cache { enable: true }
"""
UNCACHED = """max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
"""
SEQ_CACHE = """max_batch_size: 8
response_cache { enable: true }
sequence_batching { max_sequence_idle_microseconds: 1000000 }
"""
ENS_CACHE = """platform: "ensemble"
max_batch_size: 8
response_cache { enable: true }
"""
# Two models whose instances each need resource R (count 1) to run a batch.
RL = """max_batch_size: 1
input { name: "x0" data_type: TYPE_FP32 dims: [ %d, %d ] }
output { name: "y" data_type: TYPE_FP32 dims: [ %d, %d ] }
dynamic_batching { default_queue_policy { max_queue_size: %d } }
instance_group { count: 1 kind: KIND_CPU rate_limiter { resources { name: "R" count: 1 } } }
"""
ROWS, COLS = 256, 128
TS_ORDER = ["REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
            "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END"]


def make_repo(repo, k):
    ts.onnx_model(f"{repo}/cached/1/model.onnx", "Relu", 1, "N,4")
    ts.write(f"{repo}/cached/config.pbtxt", CACHED)
    ts.onnx_model(f"{repo}/uncached/1/model.onnx", "Relu", 1, "N,4")
    ts.write(f"{repo}/uncached/config.pbtxt", UNCACHED)
    ts.onnx_model(f"{repo}/seqcache/1/model.onnx", "Relu", 1, "N,4")
    ts.write(f"{repo}/seqcache/config.pbtxt", SEQ_CACHE)
    ts.onnx_model(f"{repo}/enscache/1/model.onnx", "Relu", 1, "N,4")
    ts.write(f"{repo}/enscache/config.pbtxt", ENS_CACHE)
    for name, q in (("rl_a", 8), ("rl_b", 1)):
        ts.write(f"{repo}/{name}/1/model.onnx", make_model.slow(k, ROWS, COLS))
        ts.write(f"{repo}/{name}/config.pbtxt", RL % (ROWS, COLS, ROWS, COLS, q))


def post(port, path, body, headers=None):
    st, _, b = ts.request(port, "POST", path, body, dict(JSON_HDR, **(headers or {})))
    return st, ts.jbody(b)


def get(port, path, headers=None):
    st, _, b = ts.request(port, "GET", path, None, headers)
    return st, ts.jbody(b)


def metric(port, name, model):
    st, _, b = ts.request(port, "GET", "/metrics")
    for line in b.decode().splitlines() if st == 200 else []:
        if line.startswith('%s{model="%s",' % (name, model)):
            return int(float(line.split()[-1]))
    return None


def cache_stats(port, model):
    st, j = get(port, "/v2/models/%s/stats" % model)
    s = j["model_stats"][0]["inference_stats"]
    return s["cache_hit"]["count"], s["cache_miss"]["count"], j["model_stats"][0]


def raw_infer(port, model, vals, binary=True):
    """The whole response body of a one-row binary-output request."""
    body = json.dumps({"inputs": [{"name": "x0", "datatype": "FP32", "shape": [1, 4],
                                   "data": vals}],
                       "outputs": [{"name": "y", "parameters": {"binary_data": binary}}]})
    st, h, b = ts.request(port, "POST", "/v2/models/%s/infer" % model, body, JSON_HDR)
    return st, b


def slow_input():
    return [{"name": "x0", "datatype": "FP32", "shape": [1, ROWS, COLS],
             "data": [0.5] * (ROWS * COLS)}]


def read_traces(tdir, prefix):
    out = []
    for f in sorted(os.listdir(tdir)):
        if f.startswith(prefix + "."):
            try:
                out += json.load(open(os.path.join(tdir, f)))
            except ValueError:
                pass
    return out


def grpc_infer_req(pb, model, vals):
    rq = pb.ModelInferRequest(model_name=model, id="g")
    t = rq.inputs.add()
    t.name, t.datatype = "x0", "FP32"
    t.shape.extend([1, 4])
    rq.raw_input_contents.append(struct.pack("<4f", *vals))
    return rq


def reload(port, model, cache, batch):
    """A real reload: a config override (unchanged files are kept as they are)."""
    cfg = {"max_batch_size": batch,
           "input": [{"name": "x0", "data_type": "TYPE_FP32", "dims": [4]}],
           "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [4]}],
           "response_cache": {"enable": cache}}
    return post(port, "/v2/repository/models/%s/load" % model,
                {"parameters": {"config": json.dumps(cfg)}})[0]


def test_cache(s, grpc, pb, stub):
    p = s.port
    x = [-1.0, 2.0, -3.0, 4.0]
    st1, b1 = raw_infer(p, "cached", x)
    st2, b2 = raw_infer(p, "cached", x)
    st3, b3 = raw_infer(p, "uncached", x)
    hit, miss, _ = cache_stats(p, "cached")
    ok(st1 == st2 == st3 == 200 and b1 == b2,
       "cache: a hit answers byte for byte what the miss did", (st1, st2, b1, b2))
    ok(b1.replace(b'"cached"', b'"uncached"') == b3,
       "cache: the cached answer equals the uncached model's", (b1, b3))
    ok((hit, miss) == (1, 1), "cache: statistics cache_hit 1, cache_miss 1", (hit, miss))
    st, js, vals = ts.infer(p, "cached", [("x0", "FP32", [1, 4], x)])
    ok(st == 200 and vals["y"] == [0.0, 2.0, 0.0, 4.0],
       "cache: the JSON form is another key (a miss) with the right values", (st, vals))
    st, js, vals = ts.infer(p, "cached", [("x0", "FP32", [1, 4], x)])
    hit, miss, ms = cache_stats(p, "cached")
    ok(st == 200 and vals["y"] == [0.0, 2.0, 0.0, 4.0] and (hit, miss) == (2, 2),
       "cache: then hit in JSON form", (hit, miss))
    ok(ms["execution_count"] == 2 and ms["inference_stats"]["success"]["count"] == 4,
       "cache: hits never reach the model (execution_count 2 of 4 successes)", ms)
    # gRPC: the same bytes, its own key form, then a hit.
    c1, r1 = ts.grpc_call(grpc, stub.ModelInfer, grpc_infer_req(pb, "cached", x))
    c2, r2 = ts.grpc_call(grpc, stub.ModelInfer, grpc_infer_req(pb, "cached", x))
    hit2, miss2, _ = cache_stats(p, "cached")
    ok(c1 == c2 == "OK" and r1.raw_output_contents == r2.raw_output_contents and
       r1.raw_output_contents[0] == struct.pack("<4f", 0.0, 2.0, 0.0, 4.0) and
       r2.id == "g" and hit2 == hit + 1, "cache: gRPC hit with the same bytes and its own id",
       (c1, c2, hit2, miss2))
    c, r = ts.grpc_call(grpc, stub.ModelStatistics, pb.ModelStatisticsRequest(name="cached"))
    ok(c == "OK" and r.model_stats[0].inference_stats.cache_hit.count == hit2 and
       r.model_stats[0].inference_stats.cache_miss.count == miss2,
       "cache: gRPC ModelStatistics cache_hit / cache_miss", (c, r))
    # Fill past the byte bound: evictions, bytes within the bound.
    for i in range(12):
        raw_infer(p, "cached", [float(i), 1.0, 2.0, 3.0])
    ev = metric(p, "npu_serve_cache_evictions_total", "cached")
    nb = metric(p, "npu_serve_cache_bytes", "cached")
    ne = metric(p, "npu_serve_cache_entries", "cached")
    ok(ev and ev > 0 and nb is not None and 0 < nb <= 40000 and ne and ne < 14,
       "cache: LRU evictions keep it within --cache-config size (%s evictions, %s bytes, %s entries)"
       % (ev, nb, ne))
    # The most recent is still there, the first one was evicted.
    h0 = metric(p, "npu_serve_cache_hits_total", "cached")
    raw_infer(p, "cached", [11.0, 1.0, 2.0, 3.0])
    raw_infer(p, "cached", x)
    h1 = metric(p, "npu_serve_cache_hits_total", "cached")
    ok(h1 == h0 + 1, "cache: least recently used goes first (%s -> %s hits)" % (h0, h1))
    rc, out = ts.promtool(ts.request(s.metrics_port, "GET", "/metrics")[2])
    ok(rc == 0, "cache: /metrics is promtool-clean", out)
    # A reload never answers from the old load's entries.
    raw_infer(p, "cached", [9.0, 9.0, 9.0, 9.0])
    hit, miss, _ = cache_stats(p, "cached")
    st = reload(p, "cached", True, 7)
    raw_infer(p, "cached", [9.0, 9.0, 9.0, 9.0])
    hit2, miss2, _ = cache_stats(p, "cached")
    ok(st == 200 and hit2 == hit and miss2 == miss + 1,
       "cache: after a reload the same request misses", (st, hit, hit2, miss, miss2))
    # The config says so, over REST and gRPC.
    st, cfg = get(p, "/v2/models/cached/config")
    c, r = ts.grpc_call(grpc, stub.ModelConfig, pb.ModelConfigRequest(name="cached"))
    ok(st == 200 and cfg["response_cache"] == {"enable": True} and c == "OK" and
       r.config.response_cache.enable, "cache: response_cache in the config (REST and gRPC)",
       (cfg, c, r))
    # Not cacheable: refused at load with the reason.
    st, idx = post(p, "/v2/repository/index", {})
    reasons = {m["name"]: m.get("reason", "") for m in idx or []}
    ok("response_cache" in reasons.get("seqcache", "") and
       "sequence_batching" in reasons.get("seqcache", ""),
       "cache: refused with sequence_batching, with the reason", reasons.get("seqcache"))
    ok("response_cache" in reasons.get("enscache", "") and
       "ensemble" in reasons.get("enscache", ""),
       "cache: refused for an ensemble, with the reason", reasons.get("enscache"))


def run_concurrently(fns, timeout=120):
    res = [None] * len(fns)

    def run(i):
        res[i] = fns[i]()
    th = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in th:
        t.start()
    for t in th:
        t.join(timeout)
    return res


def spans(traces, model):
    out = []
    for t in traces:
        if t.get("model_name") == model:
            d = {x["name"]: x["ns"] for x in t["timestamps"]}
            if "COMPUTE_START" in d and "COMPUTE_END" in d:
                out.append((d["COMPUTE_START"], d["COMPUTE_END"]))
    return out


def overlaps(a, b):
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


def rl_run(s, tdir, prefix):
    p = s.port
    st, _ = post(p, "/v2/trace/setting", {"trace_level": ["TIMESTAMPS"], "trace_rate": "1",
                                          "trace_count": "-1", "log_frequency": "1",
                                          "trace_file": prefix})
    body = {"inputs": slow_input()}
    fns = [lambda m=m: post(p, "/v2/models/%s/infer" % m, body)[0]
           for m in ("rl_a", "rl_b", "rl_a", "rl_b")]
    # Staggered by 20 ms: both models' requests are waiting while the first runs.
    res = run_concurrently([lambda f=f, i=i: (time.sleep(0.02 * i), f())[1]
                            for i, f in enumerate(fns)])
    post(p, "/v2/trace/setting", {"trace_level": ["OFF"]})
    tr = read_traces(tdir, prefix)
    return st, res, spans(tr, "rl_a"), spans(tr, "rl_b")


def test_rate_limit(s, s2, tdir, tdir2):
    st, res, a, b = rl_run(s, tdir, "rl1.json")
    ok(st == 200 and res.count(200) >= 3 and len(a) >= 1 and len(b) >= 1,
       "rate limit: the requests ran and were traced", (st, res, a, b))
    ok(not overlaps(a, b),
       "rate limit: with R count 1 the two models never compute at once", (a, b))
    st, res, a2, b2 = rl_run(s2, tdir2, "rl2.json")
    ok(st == 200 and overlaps(a2, b2),
       "rate limit: with --rate-limit-resource R:2 they overlap", (st, res, a2, b2))
    # rl_b's queue holds 1: while the limiter holds it back, more are refused with the reason.
    p = s.port
    body = {"inputs": slow_input()}
    fns = [lambda: post(p, "/v2/models/rl_a/infer", body)] + \
        [lambda: post(p, "/v2/models/rl_b/infer", body) for _ in range(5)]
    res = run_concurrently(fns)
    rej = [r for r in res[1:] if r and r[0] == 503]
    ok(rej and all("exceeds maximum queue size" in (r[1] or {}).get("error", "") for r in rej),
       "rate limit: a full queue behind the limiter answers 503 with the reason",
       [(r[0], (r[1] or {}).get("error", "")[:120]) if r else None for r in res])
    n = metric(s.metrics_port, "npu_serve_queue_rejected_full_total", "rl_b")
    ok(n is not None and n >= len(rej), "rate limit: those rejections are counted (%s)" % n)


def test_rl_config(s, grpc, pb, stub):
    st, cfg = get(s.port, "/v2/models/rl_a/config")
    c, r = ts.grpc_call(grpc, stub.ModelConfig, pb.ModelConfigRequest(name="rl_a"))
    want = {"resources": [{"name": "R", "global": False, "count": 1}], "priority": 0}
    ok(st == 200 and cfg["instance_group"][0].get("rate_limiter") == want and c == "OK" and
       r.config.instance_group[0].rate_limiter.resources[0].name == "R" and
       r.config.instance_group[0].rate_limiter.resources[0].count == 1,
       "rate limit: rate_limiter in the config (REST and gRPC)", (cfg, c, r))


def test_trace(s, tdir, grpc, pb, stub, s2):
    p = s.port
    st, j = get(p, "/v2/trace/setting")
    ok(st == 200 and j["trace_level"] == ["OFF"] and j["trace_rate"] == "1000" and
       j["trace_count"] == "-1", "trace: the default settings", j)
    st, j = post(p, "/v2/trace/setting", {"trace_level": ["TIMESTAMPS"], "trace_rate": "1",
                                          "log_frequency": "1", "trace_file": "t.json"})
    ok(st == 200 and j["trace_level"] == ["TIMESTAMPS"] and j["trace_file"] == "t.json" and
       j["log_frequency"] == "1", "trace: POST sets and returns the settings", j)
    for i in range(3):
        ts.infer(p, "uncached", [("x0", "FP32", [1, 4], [float(i)] * 4)])
    tr = [t for t in read_traces(tdir, "t.json") if t.get("model_name") == "uncached"]
    good = [t for t in tr if [x["name"] for x in t["timestamps"]] == TS_ORDER and
            all(t["timestamps"][i]["ns"] <= t["timestamps"][i + 1]["ns"] for i in range(6))]
    ok(len(tr) == 3 and len(good) == 3,
       "trace: one trace per request, its 7 timestamps in order", tr[:1])
    mode = stat.S_IMODE(os.stat(os.path.join(tdir, "t.json.0")).st_mode)
    ok(mode == 0o600, "trace: trace files are 0600 (%o)" % mode)
    # A model's own settings: TENSORS into its own file.
    st, j = post(p, "/v2/models/uncached/trace/setting",
                 {"trace_level": ["TIMESTAMPS", "TENSORS"], "trace_file": "m.json"})
    ok(st == 200 and "TENSORS" in j["trace_level"] and j["trace_rate"] == "1",
       "trace: a model's settings start from the server's", j)
    ts.infer(p, "uncached", [("x0", "FP32", [1, 4], [-1.0, 1.5, -2.0, 3.0])])
    tr = read_traces(tdir, "m.json")
    ok(tr and tr[-1]["TENSOR_QUEUE_INPUT"][0]["data"] == "-1,1.5,-2,3" and
       tr[-1]["TENSOR_BACKEND_OUTPUT"][0]["data"] == "0,1.5,0,3" and
       tr[-1]["TENSOR_QUEUE_INPUT"][0]["shape"] == "1,4",
       "trace: TENSORS has the inputs and outputs", tr[-1:])
    st, j = post(p, "/v2/models/uncached/trace/setting", {"trace_level": None, "trace_file": None})
    ok(st == 200 and j["trace_file"] == "t.json", "trace: null gives a model the server's setting back", j)
    st, j = get(p, "/v2/models/cached/trace/setting")
    ok(st == 200 and j["trace_file"] == "t.json", "trace: GET a model's settings", j)
    # gRPC TraceSetting
    V = pb.TraceSettingRequest.SettingValue
    c, r = ts.grpc_call(grpc, stub.TraceSetting, pb.TraceSettingRequest(
        settings={"trace_rate": V(value=["2"]), "trace_level": V(value=["TIMESTAMPS"])}))
    ok(c == "OK" and list(r.settings["trace_rate"].value) == ["2"] and
       list(r.settings["trace_level"].value) == ["TIMESTAMPS"], "trace: gRPC TraceSetting sets", (c, r))
    c, r = ts.grpc_call(grpc, stub.TraceSetting, pb.TraceSettingRequest(model_name="cached"))
    ok(c == "OK" and list(r.settings["trace_rate"].value) == ["2"],
       "trace: gRPC TraceSetting reads a model's", (c, r))
    # A planted link is never followed.
    os.symlink(os.path.join(WORK, "victim"), os.path.join(tdir, "evil.json.0"))
    post(p, "/v2/trace/setting", {"trace_rate": "1", "trace_file": "evil.json"})
    ts.infer(p, "uncached", [("x0", "FP32", [1, 4], [1.0] * 4)])
    ok(not os.path.exists(os.path.join(WORK, "victim")), "trace: a symlink in --trace-dir is not followed")
    post(p, "/v2/trace/setting", {"trace_level": ["OFF"], "trace_file": "t.json"})
    bad = [({"trace_bogus": "1"}, "trace_bogus"), ({"trace_level": ["LOUD"]}, "LOUD"),
           ({"trace_level": ["OFF", "TENSORS"]}, "OFF"), ({"trace_rate": "0"}, "trace_rate"),
           ({"trace_count": "-2"}, "trace_count"), ({"log_frequency": "x"}, "log_frequency"),
           ({"trace_file": "../x"}, "'..'"), ({"trace_file": "a/b"}, "'/'"),
           ({"trace_file": ".hidden"}, "hidden"), ({"trace_rate": None}, "cannot be cleared")]
    for body, word in bad:
        st, j = post(p, "/v2/trace/setting", body)
        ok(st == 400 and word in (j or {}).get("error", ""), "trace: bad %s: 400 naming it" % body, (st, j))
    st, j = post(p, "/v2/models/nosuch/trace/setting", {"trace_rate": "1"})
    ok(st == 404, "trace: an unknown model: 404", (st, j))
    c, r = ts.grpc_call(grpc, stub.TraceSetting, pb.TraceSettingRequest(
        settings={"trace_file": V(value=["../../etc/x"])}))
    ok(c == "INVALID_ARGUMENT" and "'..'" in r, "trace: gRPC bad trace_file: INVALID_ARGUMENT", (c, r))
    c, r = ts.grpc_call(grpc, stub.TraceSetting, pb.TraceSettingRequest(
        settings={"trace_level": V(value=["NOPE"])}))
    ok(c == "INVALID_ARGUMENT", "trace: gRPC bad trace_level: INVALID_ARGUMENT", (c, r))
    ok(s.up(), "trace: the server still serves")


def test_logging(s, ldir, grpc, pb, stub, s2):
    p = s.port
    st, j = get(p, "/v2/logging")
    ok(st == 200 and j == {"log_file": "", "log_info": True, "log_warnings": True,
                           "log_errors": True, "log_verbose_level": 0, "log_format": "default"},
       "logging: the default settings", j)
    st, j = post(p, "/v2/logging", {"log_file": "serve.log"})
    ok(st == 200 and j["log_file"] == "serve.log", "logging: log_file under --log-dir", j)
    log = os.path.join(ldir, "serve.log")
    reload(p, "uncached", False, 7)
    text = open(log).read() if os.path.exists(log) else ""
    ok("loaded model 'uncached'" in text, "logging: the log goes to the file", text[-300:])
    mode = stat.S_IMODE(os.stat(log).st_mode) if os.path.exists(log) else 0
    ok(mode == 0o600, "logging: the log file is 0600 (%o)" % mode)
    post(p, "/v2/logging", {"log_info": False})
    reload(p, "uncached", False, 8)
    text2 = open(log).read()
    ok(text2 == text, "logging: log_info false drops info lines", text2[len(text):])
    st, j = post(p, "/v2/logging", {"log_info": True, "log_format": "ISO8601"})
    reload(p, "uncached", False, 7)
    new = open(log).read()[len(text2):]
    ok(st == 200 and re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z npu-serve info: loaded",
                               new, re.M), "logging: ISO8601 format", new)
    before = open(log).read()
    ts.infer(p, "nosuch", [("x0", "FP32", [1, 4], [1.0] * 4)])
    ok(open(log).read() == before, "logging: no debug lines at log_verbose_level 0")
    st, j = post(p, "/v2/logging", {"log_verbose_level": 1})
    ts.infer(p, "nosuch", [("x0", "FP32", [1, 4], [1.0] * 4)])
    new = open(log).read()[len(before):]
    ok(st == 200 and j["log_verbose_level"] == 1 and "debug: infer 'nosuch'" in new,
       "logging: log_verbose_level 1 shows debug lines", new)
    SV = pb.LogSettingsRequest.SettingValue
    c, r = ts.grpc_call(grpc, stub.LogSettings, pb.LogSettingsRequest(
        settings={"log_verbose_level": SV(uint32_param=0), "log_format": SV(string_param="default"),
                  "log_warnings": SV(bool_param=True)}))
    ok(c == "OK" and r.settings["log_verbose_level"].uint32_param == 0 and
       r.settings["log_format"].string_param == "default" and r.settings["log_info"].bool_param,
       "logging: gRPC LogSettings sets and returns", (c, r))
    c, r = ts.grpc_call(grpc, stub.LogSettings, pb.LogSettingsRequest())
    ok(c == "OK" and r.settings["log_file"].string_param == "serve.log", "logging: gRPC LogSettings reads", (c, r))
    bad = [({"log_bogus": 1}, "log_bogus"), ({"log_info": "yes"}, "log_info"),
           ({"log_verbose_level": -1}, "log_verbose_level"), ({"log_format": "xml"}, "log_format"),
           ({"log_file": "../x"}, "'..'"), ({"log_file": "/etc/passwd"}, "'/'")]
    for body, word in bad:
        st, j = post(p, "/v2/logging", body)
        ok(st == 400 and word in (j or {}).get("error", ""), "logging: bad %s: 400 naming it" % body, (st, j))
    c, r = ts.grpc_call(grpc, stub.LogSettings, pb.LogSettingsRequest(
        settings={"log_file": SV(string_param="a/b")}))
    ok(c == "INVALID_ARGUMENT" and "'/'" in r, "logging: gRPC bad log_file: INVALID_ARGUMENT", (c, r))
    st, j = post(s2.port, "/v2/logging", {"log_file": "x.log"})
    ok(st == 400 and "--log-dir" in j["error"], "logging: without --log-dir a log_file is refused", j)
    post(p, "/v2/logging", {"log_file": ""})
    ok(s.up(), "logging: the server still serves")


def test_tokens(repo, grpc, pb, pbg):
    s = ts.Server("cl-tokens", repo, "--api-token", "apitok", "--admin-token", "admintok",
                  "--model-control-mode", "explicit", "--load-model", "uncached",
                  "--load-model", "cached", "--cache-config", "local,size=1000")
    try:
        if not ok(s.up(), "tokens: the server starts", s.log_text()):
            return
        api = {"Authorization": "Bearer apitok"}
        adm = {"Authorization": "Bearer admintok"}
        for path in ("/v2/trace/setting", "/v2/models/uncached/trace/setting", "/v2/logging"):
            st1, _ = get(s.port, path, api)
            st2, _ = post(s.port, path, {}, api)
            st3, _ = get(s.port, path, adm)
            ok(st1 == st2 == 403 and st3 == 200, "tokens: %s needs the admin token" % path,
               (st1, st2, st3))
        ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
        stub = pbg.GRPCInferenceServiceStub(ch)
        try:
            stub.TraceSetting(pb.TraceSettingRequest(), metadata=[("authorization", "Bearer apitok")],
                              timeout=30)
            c = "OK"
        except grpc.RpcError as e:
            c = e.code().name
        try:
            stub.LogSettings(pb.LogSettingsRequest(), metadata=[("authorization", "Bearer admintok")],
                             timeout=30)
            c2 = "OK"
        except grpc.RpcError as e:
            c2 = e.code().name
        ok(c == "PERMISSION_DENIED" and c2 == "OK", "tokens: gRPC settings calls need the admin token",
           (c, c2))
        body = json.dumps({"inputs": [{"name": "x0", "datatype": "FP32", "shape": [1, 4],
                                       "data": [1, 2, 3, 4]}]})
        sts = [ts.request(s.port, "POST", "/v2/models/cached/infer", body,
                          dict(JSON_HDR, **api))[0] for _ in range(2)]
        st, _, b = ts.request(s.port, "GET", "/v2/models/cached/stats", None, api)
        inf = json.loads(b)["model_stats"][0]["inference_stats"] if st == 200 else {}
        ok(sts == [200, 200] and inf["cache_hit"]["count"] == 0 and inf["cache_miss"]["count"] == 2
           and metric(s.metrics_port, "npu_serve_cache_entries", "cached") == 0,
           "cache: a response larger than the cache is not stored", (sts, inf))
        st, j = post(s.port, "/v2/trace/setting", {"trace_file": "t.json"}, adm)
        ok(st == 400 and "--trace-dir" in j["error"], "trace: without --trace-dir a trace_file is refused", j)
        st, j = post(s.port, "/v2/trace/setting", {"trace_level": ["TIMESTAMPS"]}, adm)
        ok(st == 400 and "--trace-dir" in j["error"], "trace: without --trace-dir tracing stays off", j)
    finally:
        s.stop(30)


def main():
    repo = os.path.join(WORK, "cl-repo")
    tdir, tdir2, ldir = (os.path.join(WORK, d) for d in ("traces", "traces2", "logs"))
    for d in (tdir, tdir2, ldir):
        os.makedirs(d, exist_ok=True)
    ts.SLOW_K = 8
    ts.SLOW_ROWS, ts.SLOW_COLS = ROWS, COLS
    ms = ts.calibrate_slow()
    k = max(1, ts.SLOW_K * ROWS * COLS // (512 * 256) // 2)  # ~100 ms a run
    print("# slow probe %s ms; %d MatMuls" % (ms, k), flush=True)
    make_repo(repo, k)
    grpc, pb, pbg = ts.grpc_stubs()
    common = ["--model-control-mode", "explicit", "--load-model", "*", "--rate-limit",
              "execution_count"]
    s = ts.Server("cl-main", repo, "--cache-config", "local,size=40000", "--trace-dir", tdir,
                  "--log-dir", ldir, *common)
    s2 = ts.Server("cl-r2", repo, "--rate-limit-resource", "R:2", "--trace-dir", tdir2, *common)

    try:
        if not ok(s.up() and s2.up(), "the servers start", s.log_text()[-2000:] + s2.log_text()[-2000:]):
            return
        ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
        stub = pbg.GRPCInferenceServiceStub(ch)
        c, r = ts.grpc_call(grpc, stub.ServerMetadata, pb.ServerMetadataRequest())
        st, j = get(s.port, "/v2")
        ok(c == "OK" and "trace" in r.extensions and "logging" in r.extensions and
           "trace" in j["extensions"] and "logging" in j["extensions"],
           "server metadata lists trace and logging", (r, j))
        for fn, args in ((test_cache, (s, grpc, pb, stub)),
                         (test_trace, (s, tdir, grpc, pb, stub, s2)),
                         (test_rl_config, (s, grpc, pb, stub)),
                         (test_rate_limit, (s, s2, tdir, tdir2)),
                         (test_logging, (s, ldir, grpc, pb, stub, s2))):
            try:
                fn(*args)
            except Exception as e:
                import traceback
                traceback.print_exc()
                ok(False, "%s: %s: %s" % (fn.__name__, type(e).__name__, e))

        try:
            test_tokens(repo, grpc, pb, pbg)
        except Exception as e:
            ok(False, "test_tokens: %s: %s" % (type(e).__name__, e))
        ok(s.stop(30) == 0 and s2.stop(30) == 0, "the servers stop cleanly")
        text = s.log_text() + s2.log_text()
        ok("AddressSanitizer" not in text and "runtime error" not in text and
           "LeakSanitizer" not in text, "no sanitizer report", text[-3000:])
    finally:
        for x in (s, s2):
            if x.proc.poll() is None:
                x.stop(30)
            if x.proc.poll() is None:
                x.proc.kill()


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (ts.passed, ts.failed))
    sys.exit(1 if ts.failed else 0)
