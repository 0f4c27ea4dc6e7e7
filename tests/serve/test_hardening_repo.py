#!/usr/bin/env python3
"""Hardening of the repository, the batcher and the request codec (issue 28):
version directories that name one version twice (the double free of
defect 1), JSON amplification (8), the queue bound and the cancelled
counter (9), timeouts that overflow (12), absolute paths in answers (13),
long ids and zero-element tensors (14), and the plan budget (7a).

usage: test_hardening_repo.py WORKDIR  (NPU, PROMTOOL from the environment;
NPU_ASAN: the ASan+UBSan CLI, default build/asan/userspace/cli/npu when it
exists: the double-free and zero-element cases run on it too)."""
import json
import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_serve as ts  # noqa: E402

WORK = ts.WORK
ASAN = os.environ.get("NPU_ASAN", "build/asan/userspace/cli/npu")
JSON_HDR = {"Content-Type": "application/json"}

RELU_CONFIG = """max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
dynamic_batching { max_queue_delay_microseconds: 1000 }
"""

# Waits up to 3 s for a batch of 8; no max_queue_size: the server's bound applies.
HOLD_CONFIG = """max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 3000000 }
instance_group { count: 1 kind: KIND_CPU }
"""

# A variable dim: the config does not bound the elements of a request.
VAR_CONFIG = """max_batch_size: 1
input { name: "x0" data_type: TYPE_FP32 dims: [ -1 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ -1 ] }
"""

VAR64_CONFIG = VAR_CONFIG.replace("TYPE_FP32", "TYPE_FP64")

HUGE_TIMEOUT = 9223372036854775807


def post(port, path, body=None, timeout=60):
    return ts.request(port, "POST", path, json.dumps(body or {}).encode(), JSON_HDR, timeout)


def index(port):
    st, _, b = post(port, "/v2/repository/index")
    return st, b


def relu(path):
    ts.onnx_model(path, "Relu", 1, "N,4")


def infer_relu(port, model, params=None):
    st, js, v = ts.infer(port, model, [("x0", "FP32", [1, 4], [1, -2, 3, -4])], params=params)
    return st, js, v


def live(s):
    return s.proc.poll() is None and ts.request(s.port, "GET", "/v2/health/live")[0] == 200


def sanitizer_clean(s):
    text = s.log_text()
    return "AddressSanitizer" not in text and "runtime error" not in text, text[-2000:]


def status_field(pid, key):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# ---- Defect 1: two directories for one version --------------------------------

def dup_repo(repo):
    relu(f"{repo}/dup/1/model.onnx")
    relu(f"{repo}/dup/01/model.onnx")
    ts.write(f"{repo}/dup/config.pbtxt", RELU_CONFIG)
    relu(f"{repo}/dupall/1/model.onnx")
    relu(f"{repo}/dupall/01/model.onnx")
    relu(f"{repo}/dupall/2/model.onnx")
    ts.write(f"{repo}/dupall/config.pbtxt", RELU_CONFIG + "version_policy { all { } }\n")
    # Version 1 listed twice by the policy: a duplicate that is not the disk's.
    relu(f"{repo}/twice/1/model.onnx")
    relu(f"{repo}/twice/2/model.onnx")
    ts.write(f"{repo}/twice/config.pbtxt",
             RELU_CONFIG + "version_policy { specific { versions: [ 1, 1 ] } }\n")


def test_versions_explicit(npu, tag):
    repo = os.path.join(WORK, "repo-dup-" + tag)
    dup_repo(repo)
    ts.NPU = npu
    s = ts.Server("dup-explicit-" + tag, repo, "--model-control-mode", "explicit")
    ts.NPU = NPU
    try:
        if not ts.ok(s.up(), "%s: explicit mode starts" % tag, s.log_text()):
            return
        for model in ("dup", "dupall"):
            st1, _, b1 = post(s.port, "/v2/repository/models/%s/load" % model)
            st2, _, b2 = post(s.port, "/v2/repository/models/%s/load" % model)
            ts.ok(st1 == 400 and b"'%s/01'" % model.encode() in b1 and st2 == 400,
                  "%s: '%s' with version dirs 1 and 01 is refused, naming %s/01 (%d)"
                  % (tag, model, model, st1), b1[:300])
            st, b = index(s.port)
            ts.ok(st == 200 and b"%s/01" % model.encode() in b and b"canonical" in b,
                  "%s: the index gives the reason for '%s'" % (tag, model), b[:400])
            post(s.port, "/v2/repository/models/%s/unload" % model)
            ts.ok(live(s), "%s: '%s' load, load, unload: the server lives" % (tag, model),
                  s.log_text()[-1500:])
        st1, _, b1 = post(s.port, "/v2/repository/models/twice/load")
        st2, _, b2 = post(s.port, "/v2/repository/models/twice/load")
        got = infer_relu(s.port, "twice")
        ts.ok(st1 == 200 and st2 == 200 and got[0] == 200 and got[2]["y"] == [1, 0, 3, 0],
              "%s: versions [1, 1] in the policy load once, twice, and serve" % tag,
              (st1, b1[:200], st2, b2[:200], got[:2]))
        st3, _, b3 = post(s.port, "/v2/repository/models/twice/unload")
        ts.ok(st3 == 200 and live(s), "%s: ... and unload without a double free" % tag,
              s.log_text()[-1500:])
        st, _, _ = ts.request(s.port, "GET", "/v2/models/twice/ready")
        ts.ok(st != 200, "%s: 'twice' is unloaded" % tag, st)
    finally:
        s.stop(30)
        if npu != NPU:
            clean, text = sanitizer_clean(s)
            ts.ok(clean, "%s: no ASan/UBSan report in the server's log" % tag, text)


def test_versions_poll(npu, tag):
    repo = os.path.join(WORK, "repo-dup-poll-" + tag)
    dup_repo(repo)
    ts.NPU = npu
    s = ts.Server("dup-poll-" + tag, repo, "--model-control-mode", "poll",
                  "--repository-poll-secs", "1")
    ts.NPU = NPU
    try:
        if not ts.ok(s.up(), "%s: poll mode starts" % tag, s.log_text()):
            return
        ok0 = infer_relu(s.port, "twice")[0] == 200
        # A change to version 2 only: the unchanged version 1 is kept, and the
        # keep loop sees it twice (the issue: "poll mode triggers it by itself").
        for model in ("dupall", "twice"):
            ts.onnx_model(f"{repo}/{model}/2/model.onnx", "Neg", 1, "N,4")
        reloaded = ts.wait_for(lambda: "'twice' changed" in s.log_text(), 10)
        time.sleep(1)
        st, b = index(s.port)
        ts.ok(live(s) and ok0 and reloaded and infer_relu(s.port, "twice")[0] == 200,
              "%s: poll reloads a model whose policy lists a version twice" % tag,
              s.log_text()[-1500:])
        ts.ok(b"dup/01" in b and b"dupall/01" in b,
              "%s: poll: the index names the refused directories" % tag, b[:500])
        for model in ("dupall", "twice"):
            shutil.rmtree(f"{repo}/{model}")
        ts.ok(ts.wait_for(lambda: ts.request(s.port, "GET", "/v2/models/twice/ready")[0] != 200,
                          10) and time.sleep(1) is None and live(s),
              "%s: poll: removing the models unloads them without a double free" % tag,
              s.log_text()[-1500:])
    finally:
        s.stop(30)
        if npu != NPU:
            clean, text = sanitizer_clean(s)
            ts.ok(clean, "%s: poll: no ASan/UBSan report in the server's log" % tag, text)


# ---- Defect 8: JSON amplification ----------------------------------------------

def test_json_amplification(s):
    # The case: ~60 MiB of JSON values with a wrong shape.
    n = 30 << 20
    body = (b'{"inputs":[{"name":"x0","datatype":"FP32","shape":[1,3],"data":['
            + b"1," * (n - 1) + b"1]}]}")
    t0 = time.time()
    st, _, b = ts.request(s.port, "POST", "/v2/models/relu/infer", body, JSON_HDR, timeout=120)
    took = time.time() - t0
    hwm = status_field(s.proc.pid, "VmHWM")
    ts.ok(st == 400 and b"--max-json-bytes" in b,
          "a 60 MiB JSON body of %d values with a wrong shape: 400 naming the JSON limit "
          "(%.1f s)" % (n, took), (st, b[:300]))
    ts.ok(0 < hwm < 400 << 20, "peak RSS stays under 400 MB (VmHWM %d MB)" % (hwm >> 20), hwm)
    # Under the byte limit, the values a 32-element model may take bound the parse.
    n = 3 << 20
    body = (b'{"inputs":[{"name":"x0","datatype":"FP32","shape":[1,3],"data":['
            + b"1," * (n - 1) + b"1]}]}")
    st, _, b = ts.request(s.port, "POST", "/v2/models/relu/infer", body, JSON_HDR, timeout=120)
    hwm = status_field(s.proc.pid, "VmHWM")
    ts.ok(st == 400 and b"values" in b and b"max_batch_size x dims" in b,
          "6 MiB of JSON holding %d values for a 32-element model: 400 naming the bound" % n,
          (st, b[:300]))
    ts.ok(0 < hwm < 400 << 20, "... peak RSS still under 400 MB (%d MB)" % (hwm >> 20), hwm)
    # A variable dim: the JSON byte limit bounds what parsing may allocate.
    big = 20 << 20
    body = (b'{"inputs":[{"name":"x0","datatype":"FP32","shape":[1,%d],"data":[' % (big // 2)
            + b"1," * (big // 2 - 1) + b"1]}]}")
    st, _, b = ts.request(s.port, "POST", "/v2/models/var/infer", body, JSON_HDR, timeout=120)
    ts.ok(st == 400 and b"--max-json-bytes" in b,
          "20 MiB of JSON for a variable-dim model: 400 naming --max-json-bytes", (st, b[:300]))
    hwm = status_field(s.proc.pid, "VmHWM")
    ts.ok(0 < hwm < 400 << 20, "... and peak RSS stays under 400 MB (%d MB)" % (hwm >> 20))
    # Binary tensor data stays allowed up to the body limit.
    elems = 5 << 20
    st, js, v = ts.infer(s.port, "var", [("x0", "FP32", [1, elems], [0.5] * elems)],
                         outputs=[{"name": "y", "parameters": {"binary_data": True}}],
                         binary_in=True, timeout=120)
    ts.ok(st == 200 and js["outputs"][0]["shape"] == [1, elems],
          "20 MiB of binary tensor data is still served", (st, js))
    # No allocation sized from a declared shape before the body backs it.
    before = status_field(s.proc.pid, "VmPeak")
    st, _, b = ts.request(s.port, "POST", "/v2/models/var64/infer", json.dumps(
        {"inputs": [{"name": "x0", "datatype": "FP64", "shape": [1, 2147483647],
                     "data": [1]}]}).encode(), JSON_HDR)
    grew = status_field(s.proc.pid, "VmPeak") - before
    ts.ok(st == 400 and b"has 1 elements" in b and grew < 1 << 30,
          "a shape of 2^31 FP64 with one value: 400, no 16 GiB allocation (VmPeak +%d MB)"
          % (grew >> 20), (st, b[:200], grew))


def test_decode_outside_lock(repo):
    """A reload, and the model's other requests, do not wait for a slow
    decode: it ran under the model's writer-preferring lock."""
    import http.client
    s = ts.Server("hardening-lock", repo, "--model-control-mode", "explicit",
                  "--load-model", "var", "--max-json-bytes", str(64 << 20),
                  "--http-max-body-bytes", str(64 << 20))
    try:
        if not ts.ok(s.up(), "the server starts with --max-json-bytes 64 MiB", s.log_text()):
            return
        n = 12 << 20   # ~24 MiB of JSON: seconds of parsing
        body = (b'{"inputs":[{"name":"x0","datatype":"FP32","shape":[1,%d],"data":[' % (n + 1)
                + b"1," * (n - 1) + b"1]}]}")
        sent = threading.Event()
        big = {}

        def slow_decode():
            try:
                c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
                c.request("POST", "/v2/models/var/infer", body, JSON_HDR)
                sent.set()
                r = c.getresponse()
                big["status"], big["body"] = r.status, r.read()
                big["done"] = time.time()
                c.close()
            except (OSError, http.client.HTTPException) as e:
                big["status"], big["done"] = str(e), time.time()
            sent.set()

        t = threading.Thread(target=slow_decode)
        t.start()
        sent.wait(60)
        time.sleep(0.3)
        st_load = post(s.port, "/v2/repository/models/var/load")[0]
        t_load = time.time()
        st_small = ts.infer(s.port, "var", [("x0", "FP32", [1, 2], [1, -1])])[0]
        t_small = time.time()
        t.join(120)
        done = big.get("done", 0)
        ts.ok(big.get("status") == 400 and st_load == 200 and st_small == 200 and
              t_load < done - 1.0 and t_small < done - 1.0,
              "during a %.1f s decode a reload and a small request are answered first "
              "(%.1f s, %.1f s before it)" % (done - t_load + 0.3 if done else 0,
                                               done - t_load, done - t_small),
              (big.get("status"), st_load, st_small))
    finally:
        s.stop(30)


# ---- Defect 9: the queue bound and the cancelled counter ---------------------

def test_queue_bound(repo):
    s = ts.Server("hardening-queue", repo, "--model-control-mode", "explicit",
                  "--load-model", "hold", "--default-max-queue-size", "4")
    try:
        if ts.ok(s.up(), "the server starts with --default-max-queue-size 4", s.log_text()):
            queue_bound(s)
    finally:
        s.stop(30)


def queue_bound(s):
    results = []
    lock = threading.Lock()

    def one():
        st, js, _ = ts.infer(s.port, "hold", [("x0", "FP32", [1, 4], [1, 2, 3, 4])], timeout=60)
        with lock:
            results.append((st, (js or {}).get("error", "")))

    threads = [threading.Thread(target=one) for _ in range(7)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join(60)
    full = [e for st, e in results if st == 503]
    ts.ok(len(results) == 7 and len(full) >= 1 and all("maximum queue size 4" in e for e in full)
          and all(st in (200, 503) for st, _ in results),
          "a config without max_queue_size takes the server's bound: %d of 7 got 503" % len(full),
          results)
    st, _, b = ts.request(s.metrics_port, "GET", "/metrics")
    rc, out = ts.promtool(b)
    ts.ok(st == 200 and rc == 0 and
          b'npu_serve_inference_request_cancelled_total{model="hold",version="1"} 0' in b,
          "/metrics has npu_serve_inference_request_cancelled_total at 0 and promtool accepts it",
          out)
    st, _, b = ts.request(s.port, "GET", "/v2/models/hold/stats")
    js = ts.jbody(b) or {}
    stats = (js.get("model_stats") or [{}])[0]
    ts.ok(st == 200 and stats.get("cancelled") == 0, "the model's statistics count cancelled", b)


# ---- 7a: the input shapes a client can make the server compile ------------------

def test_shape_budget(repo):
    s = ts.Server("hardening-shapes", repo, "--model-control-mode", "explicit",
                  "--load-model", "var", "--load-model", "relu",
                  "--max-new-shapes-per-minute", "3")
    try:
        if not ts.ok(s.up(), "the server starts with --max-new-shapes-per-minute 3",
                     s.log_text()):
            return
        got = [ts.infer(s.port, "var", [("x0", "FP32", [1, n], [1.0] * n)])[0]
               for n in (1, 2, 3, 1, 2)]
        st, js, _ = ts.infer(s.port, "var", [("x0", "FP32", [1, 4], [1.0] * 4)])
        ts.ok(got == [200] * 5 and st == 503 and
              "--max-new-shapes-per-minute" in (js or {}).get("error", ""),
              "a variable-dim model: 3 new shapes a minute, the 4th is a 503 naming the flag",
              (got, st, js))
        st2 = ts.infer(s.port, "var", [("x0", "FP32", [1, 3], [1.0] * 3)])[0]
        relu_ok = [infer_relu(s.port, "relu")[0] for _ in range(2)]
        ts.ok(st2 == 200 and relu_ok == [200, 200],
              "a shape used lately, and fixed-dim models, are still served", (st2, relu_ok))
    finally:
        s.stop(30)


# ---- Defect 12: timeouts that overflow --------------------------------------

def test_timeouts(s):
    st, js, v = infer_relu(s.port, "relu", params={"timeout": HUGE_TIMEOUT})
    ts.ok(st == 200 and v["y"] == [1, 0, 3, 0], "parameters.timeout 2^63-1 us: 200, not 503",
          (st, js))
    st, js, v = infer_relu(s.port, "forever")
    ts.ok(st == 200, "default_timeout_microseconds 2^63-1: 200, not 503", (st, js))


# ---- Defect 13: no absolute paths in answers ----------------------------------

def test_paths(s, repo):
    real = os.path.realpath(repo).encode()
    answers = []
    for model in ("garbage", "nosuch", "nofile"):
        st, _, b = post(s.port, "/v2/repository/models/%s/load" % model)
        answers.append(b)
        ts.ok(st >= 400 and real not in b and repo.encode() not in b,
              "a failed load of '%s' names no absolute path (%d)" % (model, st), b[:300])
    st, b = index(s.port)
    ts.ok(st == 200 and b"garbage/1/model.onnx" in b and real not in b and repo.encode() not in b,
          "the index names files relative to the repository root", b[:600])


# ---- 7c: no stale failure reason on a READY version ----------------------------

def test_stale_reason(s):
    st1, _, b1 = post(s.port, "/v2/repository/models/st/load")
    st3, _, b3 = post(s.port, "/v2/repository/models/st/versions/3/load")
    st, b = index(s.port)
    rows = {(m["name"], m.get("version")): m for m in ts.jbody(b) or []}
    v1, v3 = rows.get(("st", "1"), {}), rows.get(("st", "3"), {})
    ts.ok(st1 == 200 and st3 == 400 and v1.get("state") == "READY" and not v1.get("reason")
          and v3.get("state") == "UNAVAILABLE" and "version 3" in v3.get("reason", ""),
          "a failed load of version 3 shows on its row, not on READY version 1",
          (st1, st3, v1, v3))


# ---- Defect 14: long ids, zero-element tensors --------------------------------

def test_ids(s):
    def with_id(ident):
        body = {"id": ident, "inputs": [{"name": "x0", "datatype": "FP32", "shape": [1, 4],
                                          "data": [1, 2, 3, 4]}]}
        st, _, b = post(s.port, "/v2/models/relu/infer", body)
        return st, ts.jbody(b) or {}

    ident = "é" * 100    # 200 bytes: a cut at 127 falls inside a character
    st, js = with_id(ident)
    ts.ok(st == 400 and "'id'" in js.get("error", "") and "127" in js.get("error", ""),
          "an id of 200 bytes: 400 naming 'id' and the limit", (st, js))
    ident = "é" * 63 + "x"   # 127 bytes
    st, js = with_id(ident)
    ts.ok(st == 200 and js.get("id") == ident, "an id of 127 bytes comes back whole", (st, js))


def test_zero_elements(s, tag):
    st, js, v = ts.infer(s.port, "var", [("x0", "FP32", [1, 0], [])])
    ts.ok(st == 200 and js["outputs"][0]["shape"] == [1, 0] and v["y"] == [],
          "%s: a zero-element tensor round trip" % tag, (st, js))
    st, js, v = ts.infer(s.port, "var", [("x0", "FP32", [1, 0], [])], binary_in=True,
                         outputs=[{"name": "y", "parameters": {"binary_data": True}}])
    ts.ok(st == 200 and v["y"] == [], "%s: ... and in binary" % tag, (st, js))


def main_repo(repo):
    relu(f"{repo}/relu/1/model.onnx")
    ts.write(f"{repo}/relu/config.pbtxt", RELU_CONFIG)
    relu(f"{repo}/hold/1/model.onnx")
    ts.write(f"{repo}/hold/config.pbtxt", HOLD_CONFIG)
    relu(f"{repo}/forever/1/model.onnx")
    ts.write(f"{repo}/forever/config.pbtxt", RELU_CONFIG.replace(
        "max_queue_delay_microseconds: 1000",
        "max_queue_delay_microseconds: 1000 default_queue_policy { "
        "default_timeout_microseconds: %d }" % HUGE_TIMEOUT))
    ts.onnx_model(f"{repo}/var/1/model.onnx", "Relu", 1, "N,M")
    ts.write(f"{repo}/var/config.pbtxt", VAR_CONFIG)
    ts.onnx_model(f"{repo}/var64/1/model.onnx", "Relu", 1, "N,M", 11)
    ts.write(f"{repo}/var64/config.pbtxt", VAR64_CONFIG)
    ts.write(f"{repo}/garbage/1/model.onnx", b"this is not an onnx model")
    os.makedirs(f"{repo}/nofile/1", exist_ok=True)
    relu(f"{repo}/st/1/model.onnx")
    ts.write(f"{repo}/st/3/model.onnx", b"not a model either")
    ts.write(f"{repo}/st/config.pbtxt",
             RELU_CONFIG + "version_policy { specific { versions: [ 1 ] } }\n")


NPU = ts.NPU


def main():
    repo = os.path.join(WORK, "repo-hardening")
    main_repo(repo)
    servers = []
    try:
        s = ts.Server("hardening-repo", repo, "--model-control-mode", "explicit",
                      "--load-model", "relu", "--load-model", "hold", "--load-model", "forever",
                      "--load-model", "var", "--load-model", "var64",
                      "--http-max-body-bytes", str(64 << 20))
        servers.append(s)
        if ts.ok(s.up(), "the server starts", s.log_text()):
            for name, fn in (("json", test_json_amplification),
                             ("lock", lambda x: test_decode_outside_lock(repo)),
                             ("queue", lambda x: test_queue_bound(repo)),
                             ("shapes", lambda x: test_shape_budget(repo)),
                             ("timeouts", test_timeouts), ("ids", test_ids),
                             ("zero", lambda x: test_zero_elements(x, "release")),
                             ("paths", lambda x: test_paths(x, repo)),
                             ("stale", test_stale_reason)):
                try:
                    fn(s)
                except Exception as e:  # a broken section fails, the rest still run
                    ts.ok(False, "%s: %s: %s" % (name, type(e).__name__, e))
        for fn in (test_versions_explicit, test_versions_poll):
            try:
                fn(NPU, "release")
            except Exception as e:
                ts.ok(False, "%s: %s: %s" % (fn.__name__, type(e).__name__, e))
        if os.access(ASAN, os.X_OK):
            for fn in (test_versions_explicit, test_versions_poll):
                try:
                    fn(ASAN, "asan")
                except Exception as e:
                    ts.ok(False, "asan %s: %s: %s" % (fn.__name__, type(e).__name__, e))
            try:
                ts.NPU = ASAN
                a = ts.Server("hardening-asan", repo, "--model-control-mode", "explicit",
                              "--load-model", "var")
                servers.append(a)
                if ts.ok(a.up(), "asan: the server starts", a.log_text()):
                    test_zero_elements(a, "asan")
                    a.stop(30)
                    clean, text = sanitizer_clean(a)
                    ts.ok(clean, "asan: zero-element tensors: no ASan/UBSan report", text)
            except Exception as e:
                ts.ok(False, "asan zero elements: %s: %s" % (type(e).__name__, e))
            finally:
                ts.NPU = NPU
        else:
            print("# no ASan build at %s (make asan): its cases are skipped" % ASAN, flush=True)
    finally:
        for x in servers:
            if x.proc.poll() is None:
                x.stop(30)
            if x.proc.poll() is None:
                x.proc.kill()


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (ts.passed, ts.failed))
    sys.exit(1 if ts.failed else 0)
