#!/usr/bin/env python3
"""The serve suite: npu serve on 127.0.0.1 with ephemeral ports and
repositories of small ONNX models, driven over HTTP with urllib-level
http.client. Prints "ok - ..." / "not ok - ..." and "N passed, N failed".

usage: test_serve.py WORKDIR   (NPU, PROMTOOL from the environment;
every server's pid goes to WORKDIR/pids so the caller can kill it)."""
import http.client
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_model  # noqa: E402

WORK = sys.argv[1]
NPU = os.environ.get("NPU", "build/bin/npu")
PROMTOOL = os.environ.get("PROMTOOL", "promtool")
TESTDATA = "/usr/share/libonnx-testdata/data/node"

passed = failed = 0


def ok(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + what, flush=True)
    else:
        failed += 1
        print("not ok - " + what + (": " + str(detail) if detail else ""), flush=True)
    return cond


# ---- Models and repositories -------------------------------------------------

def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def onnx_model(path, op, n_inputs, dims, elem=1):
    write(path, make_model.model(op, n_inputs, dims.split(","), elem))


SLOW_K, SLOW_ROWS, SLOW_COLS = 96, 512, 256
SLOW_TARGET_MS = 200.0   # one run of the 'slow' model, whatever the kernels' speed


def calibrate_slow():
    """Pick the MatMul chain length so that one run takes ~SLOW_TARGET_MS
    with one thread (the priority and drain tests need an instance that
    stays busy for a while, on a fast or a slow build)."""
    global SLOW_K
    path = os.path.join(WORK, "slow-probe.onnx")
    k = 4
    write(path, make_model.slow(k, SLOW_ROWS, SLOW_COLS))
    r = subprocess.run([NPU, "run", path, "--random-inputs", "1", "--shape",
                        "x0=1x%dx%d" % (SLOW_ROWS, SLOW_COLS), "--output-dir",
                        os.path.join(WORK, "probe"), "--threads", "1", "--repeat", "3"],
                       capture_output=True, text=True, timeout=300)
    ms = None
    for line in r.stdout.splitlines():
        if line.startswith("time:"):
            ms = float(line.split()[1])
    if ms:
        SLOW_K = max(1, min(1024, int(round(k * SLOW_TARGET_MS / max(ms, 0.01)))))
    return ms

RELU_CONFIG = """# A dynamic-batching model (comments, lists, nested messages)
name: "relu"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  {
    name: "x0"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
output [ { name: "y", data_type: TYPE_FP32, dims: [4] } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 20000
}
instance_group [ { count: 2 kind: KIND_CPU } ]
"""

TADD_CONFIG = """name: "tadd"
backend: "onnxruntime"
max_batch_size: 0
input { name: "x" data_type: TYPE_FP32 dims: [3, 4, 5] }
input { name: "y" data_type: TYPE_FP32 dims: [3, 4, 5] }
output { name: "sum" data_type: TYPE_FP32 dims: [3, 4, 5] }
instance_group [ { count: 1, kind: KIND_GPU, gpus: [ 0 ] } ]
"""

SLOW_CONFIG = """name: "slow"
max_batch_size: 1
input { name: "x0" data_type: TYPE_FP32 dims: [ %d, %d ] }
output { name: "y" data_type: TYPE_FP32 dims: [ %d, %d ] }
dynamic_batching {
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { max_queue_size: 6 allow_timeout_override: true }
  priority_queue_policy { key: 1 value: { max_queue_size: 6 allow_timeout_override: true } }
}
instance_group { count: 1 kind: KIND_CPU }
parameters { key: "note" value: { string_value: "a parameter" } }
""" % (SLOW_ROWS, SLOW_COLS, SLOW_ROWS, SLOW_COLS)


# Requests wait up to 3 s for a batch of 8 that 6 queue slots never make:
# the queue is full for certain while the test sends more.
HOLD_CONFIG = """name: "hold"
max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
dynamic_batching {
  preferred_batch_size: [ 8 ]
  max_queue_delay_microseconds: 3000000
  default_queue_policy { max_queue_size: 6 }
}
instance_group { count: 1 kind: KIND_CPU }
"""


NPU_CONFIG = """max_batch_size: 4
input { name: "x0" data_type: TYPE_FP32 dims: [ 16 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 16 ] }
dynamic_batching { }
instance_group { kind: KIND_NPU count: 1 }
parameters { key: "device" value { string_value: "sim" } }
parameters { key: "keep_small_segments" value { string_value: "true" } }
parameters { key: "calib" value { string_value: "random" } }
"""


ORDERED_CONFIG = """name: "ordered"
max_batch_size: 2
input { name: "x0" data_type: TYPE_FP32 dims: [ %d, %d ] }
output { name: "y" data_type: TYPE_FP32 dims: [ %d, %d ] }
dynamic_batching { preserve_ordering: true }
instance_group { count: 2 kind: KIND_CPU }
""" % (SLOW_ROWS, SLOW_COLS, SLOW_ROWS, SLOW_COLS)


def tadd_model(path):
    # test_add of the ONNX test data renamed: outputs are named in the config.
    src = os.path.join(TESTDATA, "test_add", "model.onnx")
    shutil.copy(src, path)


def main_repo(repo):
    ms = calibrate_slow()
    print("# slow model: %d MatMuls (%s ms for 4)" % (SLOW_K, ms), flush=True)
    onnx_model(f"{repo}/relu/1/model.onnx", "Relu", 1, "N,4")
    write(f"{repo}/relu/config.pbtxt", RELU_CONFIG)
    onnx_model(f"{repo}/hold/1/model.onnx", "Relu", 1, "N,4")
    write(f"{repo}/hold/config.pbtxt", HOLD_CONFIG)
    os.makedirs(f"{repo}/plain/1", exist_ok=True)
    shutil.copy(os.path.join(TESTDATA, "test_relu", "model.onnx"), f"{repo}/plain/1/model.onnx")
    os.makedirs(f"{repo}/tadd/1", exist_ok=True)
    tadd_model(f"{repo}/tadd/1/model.onnx")
    write(f"{repo}/tadd/config.pbtxt", TADD_CONFIG)
    write(f"{repo}/slow/1/model.onnx", make_model.slow(SLOW_K, SLOW_ROWS, SLOW_COLS))
    write(f"{repo}/slow/config.pbtxt", SLOW_CONFIG)
    write(f"{repo}/ordered/1/model.onnx", make_model.slow(SLOW_K, SLOW_ROWS, SLOW_COLS))
    write(f"{repo}/ordered/config.pbtxt", ORDERED_CONFIG)
    onnx_model(f"{repo}/add/1/model.onnx", "Add", 2, "N,3")   # no config: auto-complete
    onnx_model(f"{repo}/i64/1/model.onnx", "Neg", 1, "N,2", 7)  # int64, auto-complete
    onnx_model(f"{repo}/onnpu/1/model.onnx", "Relu", 1, "N,16")
    write(f"{repo}/onnpu/config.pbtxt", NPU_CONFIG)


# ---- Server and HTTP ---------------------------------------------------------

class Server:
    def __init__(self, name, repo, *args):
        self.name = name
        self.port_file = os.path.join(WORK, name + ".port")
        self.log = os.path.join(WORK, name + ".log")
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        cmd = [NPU, "serve", "--model-repository", repo, "--http-port", "0",
               "--metrics-port", "0", "--grpc-port", "0", "--port-file", self.port_file,
               "--threads", "1",
               "--exit-timeout-secs", "20"] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        with open(os.path.join(WORK, "pids"), "a") as f:
            f.write("%d\n" % self.proc.pid)
        deadline = time.time() + 60
        self.port = self.metrics_port = self.grpc_port = None
        while time.time() < deadline and self.proc.poll() is None:
            if os.path.exists(self.port_file):
                kv = dict(line.split("=") for line in open(self.port_file).read().split())
                self.port, self.metrics_port = int(kv["http"]), int(kv["metrics"])
                self.grpc_port = int(kv.get("grpc", -1))
                break
            time.sleep(0.05)

    def up(self):
        return self.port is not None and self.proc.poll() is None

    def log_text(self):
        return open(self.log).read()

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def request(port, method, path, body=None, headers=None, timeout=30):
    """(status, headers dict, body bytes); status 0 on a connection error."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        h = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, h, data
    except (OSError, http.client.HTTPException) as e:
        return 0, {}, str(e).encode()


def jbody(data):
    try:
        return json.loads(data)
    except ValueError:
        return None


def tensor_copies(port, model):
    """npu_serve_tensor_copies_total of a model (None when absent)."""
    st, _, b = request(port, "GET", "/metrics")
    for line in b.decode().splitlines() if st == 200 else []:
        if line.startswith('npu_serve_tensor_copies_total{model="%s",' % model):
            return int(float(line.split()[-1]))
    return None


def infer(port, model, inputs, outputs=None, version=None, params=None, binary_in=False,
          timeout=60):
    """inputs: [(name, datatype, shape, flat values)]. Returns (status, json, {name: values})."""
    fmt = {"FP32": "f", "INT64": "q", "FP64": "d", "INT32": "i", "UINT8": "B", "BOOL": "?"}
    req = {"inputs": []}
    blobs = b""
    for name, dt, shape, vals in inputs:
        t = {"name": name, "datatype": dt, "shape": shape}
        if binary_in:
            blob = struct.pack("<%d%s" % (len(vals), fmt[dt]), *vals)
            t["parameters"] = {"binary_data_size": len(blob)}
            blobs += blob
        else:
            t["data"] = vals
        req["inputs"].append(t)
    if outputs:
        req["outputs"] = outputs
    if params:
        req["parameters"] = params
    path = "/v2/models/%s%s/infer" % (model, "/versions/%s" % version if version else "")
    body = json.dumps(req).encode()
    headers = {"Content-Type": "application/json"}
    if binary_in:
        headers["Inference-Header-Content-Length"] = str(len(body))
        body += blobs
    st, h, data = request(port, "POST", path, body, headers, timeout)
    if st != 200:
        return st, jbody(data), None
    hl = int(h.get("inference-header-content-length", len(data)))
    js = json.loads(data[:hl])
    vals, off = {}, hl
    for o in js["outputs"]:
        if "data" in o:
            vals[o["name"]] = o["data"]
        else:
            n = o["parameters"]["binary_data_size"]
            k = fmt[o["datatype"]]
            size = struct.calcsize(k)
            vals[o["name"]] = list(struct.unpack("<%d%s" % (n // size, k), data[off:off + n]))
            off += n
    return st, js, vals


def make_cert(dirname):
    """A self-signed certificate for 127.0.0.1 in WORK/dirname: (cert, key), or (None, error)."""
    d = os.path.join(WORK, dirname)
    os.makedirs(d, exist_ok=True)
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                        "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=60)
    return (cert, key) if r.returncode == 0 else (None, r.stderr[-300:])


def f32(vals):
    return [struct.unpack("<f", struct.pack("<f", v))[0] for v in vals]


# ---- .npy and npu run ---------------------------------------------------------

def write_npy(path, shape, vals):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(vals), *vals))


def read_npy(path):
    data = open(path, "rb").read()
    hl = struct.unpack("<H", data[8:10])[0]
    body = data[10 + hl:]
    return list(struct.unpack("<%df" % (len(body) // 4), body))


def npu_run(model, inputs, out_name):
    """inputs: [(name, shape, values)] -> output values from `npu run`."""
    d = os.path.join(WORK, "npurun")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    args = [NPU, "run", model, "--output-dir", d, "--quiet"]
    for name, shape, vals in inputs:
        p = os.path.join(d, "in_%s.npy" % name)
        write_npy(p, shape, vals)
        args += ["--input", "%s=%s" % (name, p)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if r.returncode:
        return None
    return read_npy(os.path.join(d, out_name + ".npy"))


def rand_vals(n, seed):
    x, out = seed, []
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(f32([(x % 2001 - 1000) / 250.0])[0])
    return out


# ---- The tests ----------------------------------------------------------------

def test_endpoints(s, repo):
    st, _, _ = request(s.port, "GET", "/v2/health/live")
    ok(st == 200, "GET /v2/health/live is 200")
    st, _, _ = request(s.port, "GET", "/v2/health/ready")
    ok(st == 200, "GET /v2/health/ready is 200 with every model loaded")
    st, _, b = request(s.port, "GET", "/v2")
    js = jbody(b)
    ok(st == 200 and js["name"] == "npu-serve" and "binary_tensor_data" in js["extensions"],
       "GET /v2: server metadata with its extensions", b)
    st, _, b = request(s.port, "GET", "/v2/models/relu")
    js = jbody(b)
    ok(st == 200 and js["versions"] == ["1"] and js["inputs"][0] ==
       {"name": "x0", "datatype": "FP32", "shape": [-1, 4]},
       "GET /v2/models/relu: metadata with the batch dim as -1", b)
    st, _, b = request(s.port, "GET", "/v2/models/relu/versions/1")
    ok(st == 200 and jbody(b)["name"] == "relu", "GET /v2/models/relu/versions/1")
    st, _, _ = request(s.port, "GET", "/v2/models/relu/ready")
    st2, _, _ = request(s.port, "GET", "/v2/models/relu/versions/1/ready")
    ok(st == 200 and st2 == 200, "GET .../ready and .../versions/1/ready are 200")
    st, _, b = request(s.port, "GET", "/v2/models/relu/config")
    js = jbody(b)
    ok(st == 200 and js["max_batch_size"] == 8 and
       js["dynamic_batching"]["preferred_batch_size"] == [4, 8] and
       js["instance_group"][0] == {"count": 2, "kind": "KIND_CPU"},
       "GET /v2/models/relu/config reflects config.pbtxt", b)
    st, _, b = request(s.port, "GET", "/v2/models/plain/config")
    js = jbody(b)
    ok(st == 200 and js["max_batch_size"] == 0 and js["input"][0]["dims"] == [3, 4, 5] and
       js["output"][0]["name"] == "y",
       "a model without config.pbtxt gets its config from the model (fixed dims: no batching)", b)
    st, _, b = request(s.port, "GET", "/v2/models/add/config")
    js = jbody(b)
    ok(st == 200 and js["max_batch_size"] == 4 and "dynamic_batching" in js and
       js["input"][1]["dims"] == [3],
       "auto-complete of a model with a dynamic first dim: max_batch_size 4, dynamic batching", b)
    st, _, b = request(s.port, "GET", "/v2/models/slow/config")
    js = jbody(b)
    ok(st == 200 and js["dynamic_batching"]["priority_levels"] == 2 and
       js["parameters"]["note"]["string_value"] == "a parameter" and
       js["dynamic_batching"]["priority_queue_policy"]["1"]["max_queue_size"] == 6,
       "priority levels, queue policies and parameters are parsed", b)
    st, _, b = request(s.port, "POST", "/v2/repository/index", "")
    js = jbody(b)
    names = sorted(m["name"] for m in js) if js else []
    ok(st == 200 and names == ["add", "hold", "i64", "onnpu", "ordered", "plain", "relu", "slow", "tadd"] and
       all(m["state"] == "READY" for m in js), "POST /v2/repository/index lists every model READY", b)
    st, _, b = request(s.port, "POST", "/v2/repository/index", {"ready": True})
    ok(st == 200 and len(jbody(b)) == 9, "POST /v2/repository/index {ready: true}")
    st, _, b = request(s.port, "POST", "/v2/repository/models/relu/unload")
    ok(st == 503 and b"model-control-mode" in b,
       "load/unload refused with --model-control-mode=none (503, names the flag)", b)
    st, _, b = request(s.port, "GET", "/metrics")
    ok(st == 200 and b"npu_serve_inference_request_success_total" in b,
       "GET /metrics on the HTTP port")
    st, _, b = request(s.metrics_port, "GET", "/metrics")
    st2, _, _ = request(s.metrics_port, "GET", "/v2/health/live")
    ok(st == 200 and st2 == 404, "--metrics-port serves /metrics only")


def test_infer(s):
    x = [1.0, -2.0, 3.5, -4.25, 5.0, 6.0, -7.0, 8.0]
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [2, 4], [x[:4], x[4:]])], params=None)
    ok(st == 200 and v["y"] == [max(a, 0.0) for a in x] and js["outputs"][0]["shape"] == [2, 4]
       and js["model_version"] == "1", "infer with nested JSON data", js)
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [2, 4], x)])
    ok(st == 200 and v["y"] == [max(a, 0.0) for a in x], "infer with flat JSON data", js)
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [2, 4], x)], binary_in=True,
                      outputs=[{"name": "y", "parameters": {"binary_data": True}}])
    ok(st == 200 and v["y"] == [max(a, 0.0) for a in x] and
       js["outputs"][0]["parameters"]["binary_data_size"] == 32,
       "infer with binary input and binary output", js)
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [2, 4], x)], binary_in=True)
    ok(st == 200 and "data" in js["outputs"][0], "binary input, JSON output", js)
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [2, 4], x)],
                      params={"binary_data_output": True})
    ok(st == 200 and "parameters" in js["outputs"][0] and v["y"] == [max(a, 0.0) for a in x],
       "JSON input, parameters.binary_data_output", js)
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [1, 4], x[:4])], version=1)
    ok(st == 200 and js["model_version"] == "1", "infer on /versions/1", js)
    st, js, v = infer(s.port, "i64", [("x0", "INT64", [3, 2], [1, -2, 3, 1 << 40, -5, 0])],
                      binary_in=True, params={"binary_data_output": True})
    ok(st == 200 and v["y"] == [-1, 2, -3, -(1 << 40), 5, 0] and
       js["outputs"][0]["datatype"] == "INT64", "INT64 tensors, binary both ways", js)
    st, js, v = infer(s.port, "i64", [("x0", "INT64", [1, 2], [7, -8])])
    ok(st == 200 and v["y"] == [-7, 8], "INT64 tensors as JSON", js)

    # The same inputs through `npu run`: bit-identical outputs.
    a, b = rand_vals(60, 1), rand_vals(60, 2)
    ref = npu_run(os.path.join(s.repo, "tadd/1/model.onnx"),
                  [("x", [3, 4, 5], a), ("y", [3, 4, 5], b)], "sum")
    st, js, v = infer(s.port, "tadd", [("x", "FP32", [3, 4, 5], a), ("y", "FP32", [3, 4, 5], b)])
    ok(ref is not None and st == 200 and v["sum"] == ref,
       "test_add (a Triton config, backend onnxruntime): JSON outputs equal npu run", js)
    copies = tensor_copies(s.port, "tadd")
    st, js, v = infer(s.port, "tadd", [("x", "FP32", [3, 4, 5], a), ("y", "FP32", [3, 4, 5], b)],
                      binary_in=True, params={"binary_data_output": True})
    ok(ref is not None and st == 200 and v["sum"] == ref,
       "test_add: binary outputs equal npu run", js)
    # IO binding: inputs read in the request body, the output written by the
    # session into the buffer the response sends.
    ok(copies is not None and tensor_copies(s.port, "tadd") == copies,
       "binary tensors both ways: no tensor copied (npu_serve_tensor_copies_total %s -> %s)" %
       (copies, tensor_copies(s.port, "tadd")))
    c = rand_vals(60, 3)
    ref = npu_run(os.path.join(s.repo, "plain/1/model.onnx"), [("x", [3, 4, 5], c)], "y")
    st, js, v = infer(s.port, "plain", [("x", "FP32", [3, 4, 5], c)])
    ok(ref is not None and st == 200 and v["y"] == ref,
       "test_relu without config.pbtxt: outputs equal npu run", js)
    # KIND_NPU on the simulator: int8, calibrated on random [0, 1) inputs.
    st, _, b = request(s.port, "GET", "/v2/models/onnpu")
    ok(st == 200 and jbody(b)["device"] == "sim", "KIND_NPU with parameter device=sim loads on sim",
       b)
    e = [i / 16.0 for i in range(16)]
    st, js, v = infer(s.port, "onnpu", [("x0", "FP32", [2, 16], e + e[::-1])])
    ok(st == 200 and all(abs(a - b) < 0.02 for a, b in zip(v["y"], e + e[::-1])),
       "inference on the NPU simulator (int8) within 0.02 of relu", js)
    d = rand_vals(3 * 4, 4)
    ref = npu_run(os.path.join(s.repo, "relu/1/model.onnx"), [("x0", [3, 4], d)], "y")
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [3, 4], d)], binary_in=True,
                      params={"binary_data_output": True})
    ok(ref is not None and st == 200 and v["y"] == ref, "relu batch of 3: outputs equal npu run")


def timeline_of(port, model, after_ms, send):
    """The panel's timeline of 'model' kept after after_ms, sending requests
    (send()) until one is kept: at most 40 tries in about 10 s."""
    for _ in range(40):
        send()
        st, _, b = request(port, "GET", "/v2/panel/state")
        for t in (jbody(b) or {}).get("timelines", []) if st == 200 else []:
            if t["model"] == model and t["time_ms"] >= after_ms:
                return t
        time.sleep(0.25)
    return None


def check_spans(spans, what, run_start, run_us, digits=None):
    """Spans present, ordered, not overlapping; the run's steps (cpu / npu)
    inside the run and summing to at most its time. Returns the problems.
    digits: the JSON's significant digits (/v2/panel/state has 6), else
    full precision."""
    bad = []
    if not spans:
        return ["%s: no spans" % what]
    eps = 0.002  # us
    if digits:
        top = max([run_start + run_us] + [x["start_us"] + x["dur_us"] for x in spans])
        eps += top * 10.0 ** (1 - digits) * (len(spans) + 1)
    for a, b in zip(spans, spans[1:]):
        if b["start_us"] + eps < a["start_us"]:
            bad.append("%s: '%s' starts before '%s'" % (what, b["name"], a["name"]))
        if b["start_us"] + eps < a["start_us"] + a["dur_us"]:
            bad.append("%s: '%s' (at %.3f us) overlaps '%s' (%.3f + %.3f us)" %
                       (what, b["name"], b["start_us"], a["name"], a["start_us"], a["dur_us"]))
    steps = [x for x in spans if x["cat"] in ("cpu", "npu")]
    if not steps:
        bad.append("%s: no measured step" % what)
    for x in steps:
        if x["start_us"] + eps < run_start or x["start_us"] + x["dur_us"] > run_start + run_us + eps:
            bad.append("%s: step '%s' outside the run" % (what, x["name"]))
    if sum(x["dur_us"] for x in steps) > run_us + eps:
        bad.append("%s: steps sum to %.3f us, the run took %.3f" %
                   (what, sum(x["dur_us"] for x in steps), run_us))
    return bad


def test_timeline(s):
    """The panel's request timeline: measured steps of the run (the engine's
    npu_session_run_with() timings), in /v2/panel/state and as a trace."""
    e = [i / 16.0 - 0.5 for i in range(16)]
    cases = (
        ("onnpu", lambda: infer(s.port, "onnpu", [("x0", "FP32", [1, 16], e)]), "npu"),
        ("relu", lambda: infer(s.port, "relu", [("x0", "FP32", [1, 4], e[:4])]), "cpu"),
        ("tadd", lambda: infer(s.port, "tadd", [("x", "FP32", [3, 4, 5], rand_vals(60, 1)),
                                                ("y", "FP32", [3, 4, 5], rand_vals(60, 2))]), "cpu"),
        ("slow", lambda: infer(s.port, "slow", [("x0", "FP32", [1, SLOW_ROWS, SLOW_COLS], slow_input())],
                               binary_in=True), "cpu"),
    )
    for model, send, kind in cases:
        t = timeline_of(s.port, model, int(time.time() * 1000) - 5, send)
        if not ok(t is not None, "a timeline of %s is kept while requests run" % model):
            continue
        spans = t["spans"]
        cats = [x["cat"] for x in spans]
        ok(cats[:3] == ["decode", "queue", "input"] and cats[-1] == "output" and kind in cats,
           "%s: decode, queue, input, measured %s steps, output" % (model, kind), cats)
        ok("measured" in t["note"], "%s: the timeline says it is measured" % model, t["note"])
        bad = check_spans(spans, model, t["run_start_us"], t["run_us"], digits=6)
        ok(not bad, "%s: spans ordered, not overlapping, steps inside the run and summing to "
           "at most its %.1f us" % (model, t["run_us"]), bad)
        if kind == "npu":
            npu = [x for x in spans if x["cat"] == "npu"]
            ok(npu and all(x["cycles"] > 0 and x["segment"] >= 0 and
                           x["start_us"] <= x["job_start_us"] * (1 + 1e-5) + 0.002 and
                           x["job_start_us"] + x["job_dur_us"] <=
                           (x["start_us"] + x["dur_us"]) * (1 + 2e-5) + 0.002
                           for x in npu),
               "onnpu: each NPU segment has modeled cycles and its job's submit..done inside it", npu)
        else:
            ok(all(x["cat"] != "npu" for x in spans), "%s (cpu): no NPU span" % model, cats)
        if model == "slow":
            # SLOW_K MatMuls: past the panel's 64 spans, CPU stretches merge.
            steps = [x for x in spans if x["cat"] == "cpu"]
            ok(sum(x.get("nodes", 0) for x in steps) == SLOW_K and len(spans) <= 64 and
               (SLOW_K <= 59 or len(steps) < SLOW_K),
               "slow: its %d MatMuls all in the timeline, merged past 64 spans (%d step spans)" %
               (SLOW_K, len(steps)), [(x["name"], x.get("nodes")) for x in steps[:4]])
        st, _, data = request(s.port, "GET", "/v2/panel/trace?model=" + model)
        tr = jbody(data) or {}
        xs = [x for x in tr.get("traceEvents", []) if x.get("ph") == "X"]
        host = [x for x in xs if x["tid"] == 1]
        jobs = [x for x in xs if x["tid"] == 2]
        meta = tr.get("metadata", {})
        as_spans = [{"name": x["name"], "cat": x["cat"], "start_us": x["ts"], "dur_us": x["dur"]}
                    for x in host]
        bad = check_spans(as_spans, model + " trace", meta.get("run_start_us", 0), meta.get("run_us", 0))
        ok(st == 200 and host and not bad and (kind != "npu" or
                                                (jobs and all(x["cat"] == "npu.job" for x in jobs))),
           "GET /v2/panel/trace?model=%s: a Chrome trace of the measured spans%s" %
           (model, " and the NPU jobs on their own track" if kind == "npu" else ""),
           (st, bad, data[:300]))
    st, _, _ = request(s.port, "GET", "/v2/panel/trace?model=nosuchmodel")
    ok(st == 404, "the trace of a model with no timeline: 404", st)


def concurrent(n_threads, per_thread, fn):
    """Run fn(thread, i) in n_threads threads; return the list of results."""
    results = []
    lock = threading.Lock()

    def worker(t):
        for i in range(per_thread):
            r = fn(t, i)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    return results


def test_batching(s):
    def one(t, i):
        x = rand_vals(4, 100 * t + i + 7)
        st, js, v = infer(s.port, "relu", [("x0", "FP32", [1, 4], x)])
        return st == 200 and v["y"] == [max(a, 0.0) for a in x]

    res = concurrent(12, 4, one)
    ok(len(res) == 48 and all(res), "48 concurrent requests: every output right",
       "%d of %d" % (sum(res), len(res)))
    st, _, b = request(s.port, "GET", "/v2/models/relu/stats")
    js = jbody(b)
    stats = js["model_stats"][0] if js else {}
    sizes = [bs["batch_size"] for bs in stats.get("batch_stats", [])]
    ok(st == 200 and max(sizes or [0]) > 1 and
       stats["execution_count"] < stats["inference_count"],
       "batches larger than 1 in the stats (sizes %s, %s executions for %s inferences)" %
       (sizes, stats.get("execution_count"), stats.get("inference_count")), b)
    ok(all(bs <= 8 for bs in sizes), "no batch exceeds max_batch_size 8")


def slow_input():
    return [0.001] * (SLOW_ROWS * SLOW_COLS)


def arrived(port, model):
    """Requests that reached the model's scheduler so far (answered,
    queued or running): it only grows."""
    st, _, b = request(port, "GET", "/v2/models/%s/stats" % model, timeout=5)
    if st != 200:
        return -1
    m = jbody(b)["model_stats"][0]
    return (m["inference_stats"]["success"]["count"] + m["inference_stats"]["fail"]["count"] +
            m["pending"] + m["executing"])


def test_priorities(s):
    x = slow_input()
    order = []
    lock = threading.Lock()

    def send(tag, prio):
        st, js, _ = infer(s.port, "slow", [("x0", "FP32", [1, SLOW_ROWS, SLOW_COLS], x)],
                          binary_in=True, params={"priority": prio, "binary_data_output": True})
        with lock:
            order.append((tag, st))

    # Three requests at level 1 keep the single instance busy; three at
    # the default level (2) queue behind them, then one more at level 1,
    # which must run before them. Each is sent once the previous one has
    # reached the queue, so the arrival order is known.
    plan = [("busy0", 1), ("busy1", 1), ("busy2", 1), ("low0", 2), ("low1", 2), ("low2", 2),
            ("high", 1)]
    base = arrived(s.port, "slow")
    threads = []
    for i, (tag, prio) in enumerate(plan):
        t = threading.Thread(target=send, args=(tag, prio))
        t.start()
        threads.append(t)
        wait_for(lambda: arrived(s.port, "slow") >= base + i + 1, 20, 0.002)
    for t in threads:
        t.join(120)
    tags = [t for t, st in order]
    ok(all(st == 200 for t, st in order) and len(order) == 7 and
       tags.index("high") < min(tags.index("low%d" % i) for i in range(3)),
       "priority level 1 runs before level 2 requests queued earlier (order %s)" % tags, order)
    ok([t for t in tags if t.startswith("low")] == ["low0", "low1", "low2"] and
       [t for t in tags if t.startswith("busy")] == ["busy0", "busy1", "busy2"],
       "FIFO within a priority level", tags)

    # Queue timeout: behind a busy instance, a 1 ms timeout expires.
    res = []

    def timed(tag, params):
        st, js, _ = infer(s.port, "slow", [("x0", "FP32", [1, SLOW_ROWS, SLOW_COLS], x)],
                          binary_in=True, params=params)
        res.append((tag, st, (js or {}).get("error", "") if st != 200 else ""))

    def in_order(requests):
        base = arrived(s.port, "slow")
        threads = []
        for i, (tag, params) in enumerate(requests):
            t = threading.Thread(target=timed, args=(tag, params))
            t.start()
            threads.append(t)
            wait_for(lambda: arrived(s.port, "slow") >= base + i + 1, 20, 0.002)
        for t in threads:
            t.join(120)

    in_order([("busy", {"binary_data_output": True}), ("busy2", {"binary_data_output": True}),
              ("t", {"timeout": 1000})])
    t = [r for r in res if r[0] == "t"]
    ok(t and t[0][1] == 503 and "timeout" in t[0][2],
       "a request whose queue timeout expires is rejected (503, says so)", res)

    # Queue full: "hold" keeps 6 queued for 3 s (a batch of 8 never forms);
    # of 9 requests sent at once, exactly 3 find the queue full.
    held = []

    def hold(i):
        st, js, _ = infer(s.port, "hold", [("x0", "FP32", [1, 4], [i, -i, i, -i])])
        with lock:
            held.append((st, (js or {}).get("error", "") if st != 200 else ""))

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    full = [r for r in held if r[0] == 503 and "queue size" in r[1]]
    ok(len(held) == 9 and len(full) == 3 and sum(r[0] == 200 for r in held) == 6,
       "a full queue rejects (%d of 9 rejected, 503 'exceeds maximum queue size')" % len(full),
       held)
    st, _, b = request(s.port, "GET", "/v2/models/slow/stats")
    timeouts = jbody(b)["model_stats"][0]["rejected"]["timeout"]
    st, _, b = request(s.port, "GET", "/v2/models/hold/stats")
    js = jbody(b)["model_stats"][0]
    ok(timeouts >= 1 and js["rejected"]["queue_full"] == 3,
       "rejections are counted in the stats (slow: %d timeouts, hold: %s)" % (timeouts,
                                                                           js["rejected"]))

    # preserve_ordering with 2 instances: a batch of 2 queued first answers
    # before a batch of 1 that another instance finishes earlier.
    order = []

    def ordered(tag, n, delay):
        time.sleep(delay)
        st, js, _ = infer(s.port, "ordered", [("x0", "FP32", [n, SLOW_ROWS, SLOW_COLS], x * n)],
                          binary_in=True, params={"binary_data_output": True})
        with lock:
            order.append((tag, st, time.time()))

    def executing():
        st, _, b = request(s.port, "GET", "/v2/models/ordered/stats", timeout=5)
        return st == 200 and jbody(b)["model_stats"][0]["executing"] >= 1

    threads = [threading.Thread(target=ordered, args=("two", 2, 0)),
               threading.Thread(target=ordered, args=("one", 1, 0))]
    threads[0].start()
    ok(wait_for(executing, 20), "the stats show a request executing")
    threads[1].start()      # queued after 'two', run by the other instance
    for t in threads:
        t.join(120)
    # Unordered, 'one' (one run, sent once 'two' runs) would be back about
    # a run before 'two' (two runs); held back, both leave together (the
    # two responses then race over two connections: allow 60 ms).
    t = {tag: when for tag, st, when in order}
    ok(len(order) == 2 and all(st == 200 for _, st, _ in order) and
       t["one"] >= t["two"] - 0.06,
       "preserve_ordering: the later request is held until the earlier one is done "
       "(one - two = %+.0f ms)" % ((t.get("one", 0) - t.get("two", 0)) * 1000), order)


BAD = [
    # (what, path, body, headers, status, substring of the error)
    ("malformed JSON", "/v2/models/relu/infer", b'{"inputs": [', {}, 400, "malformed JSON"),
    ("not an object", "/v2/models/relu/infer", b'[1, 2]', {}, 400, "not a JSON object"),
    ("no inputs", "/v2/models/relu/infer", b'{"inputs": []}', {}, 400, "'inputs'"),
    ("wrong datatype", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "INT32", "data": [1, 2, 3, 4]}]},
     {}, 400, "datatype INT32 but model 'relu' expects FP32"),
    ("unknown datatype", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP99", "data": [1, 2, 3, 4]}]},
     {}, 400, "datatype 'FP99'"),
    ("wrong shape", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [1, 5], "datatype": "FP32", "data": [1, 2, 3, 4, 5]}]},
     {}, 400, "shape[1] is 5 but model 'relu' expects 4"),
    ("wrong rank", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
     {}, 400, "shape has 1 dims"),
    ("too few data elements", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3]}]},
     {}, 400, "has 3 elements but shape needs 4"),
    ("too many data elements", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4, 5]}]},
     {}, 400, "more elements than its shape"),
    ("a string in data", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, "x", 4]}]},
     {}, 400, "data[2] is not a number"),
    ("missing input", "/v2/models/tadd/infer",
     {"inputs": [{"name": "x", "shape": [3, 4, 5], "datatype": "FP32", "data": [0] * 60}]},
     {}, 400, "input 'y' of model 'tadd' is missing"),
    ("unknown input", "/v2/models/relu/infer",
     {"inputs": [{"name": "z", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
     {}, 400, "unexpected inference input 'z'"),
    ("unknown output", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}],
      "outputs": [{"name": "nope"}]}, {}, 400, "unexpected inference output 'nope'"),
    ("batch > max_batch_size", "/v2/models/relu/infer",
     {"inputs": [{"name": "x0", "shape": [9, 4], "datatype": "FP32", "data": [0] * 36}]},
     {}, 400, "batch size 9 exceeds max_batch_size 8"),
    ("unknown model", "/v2/models/nosuch/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
     {}, 404, "unknown model 'nosuch'"),
    ("unknown version", "/v2/models/relu/versions/7/infer",
     {"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
     {}, 404, "version 7 is not loaded"),
    ("bad version", "/v2/models/relu/versions/abc/infer", b"{}", {}, 400,
     "'abc' is not a positive integer"),
    ("binary_data_size disagrees with the shape", "/v2/models/relu/infer", "BIN:12:16", None, 400,
     "binary_data_size 12 but shape"),
    ("binary data shorter than binary_data_size (truncated)", "/v2/models/relu/infer",
     "BIN:16:10", None, 400, "only 10 bytes of binary data remain"),
    ("binary data longer than announced", "/v2/models/relu/infer", "BIN:16:20", None, 400,
     "4 bytes of binary data after"),
    ("Inference-Header-Content-Length beyond the body", "/v2/models/relu/infer", b'{}',
     {"Inference-Header-Content-Length": "500"}, 400, "exceeds the body"),
    ("Inference-Header-Content-Length not a number", "/v2/models/relu/infer", b'{}',
     {"Inference-Header-Content-Length": "x1"}, 400, "Inference-Header-Content-Length"),
    ("truncated JSON body", "/v2/models/relu/infer",
     b'{"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2,', {},
     400, "malformed JSON"),
    ("priority out of range", "/v2/models/slow/infer", "PRIO", None, 400,
     "'priority' 3 is outside [1, 2]"),
    ("unknown endpoint", "/v2/nothing", None, {}, 404, "unknown endpoint"),
    ("wrong method", "/v2/health/live", b"", {}, 405, "method POST"),
]


def bad_request(port, path, body, headers):
    if body == "PRIO":
        st, js, _ = infer(port, "slow", [("x0", "FP32", [1, SLOW_ROWS, SLOW_COLS],
                                          [0.0] * (SLOW_ROWS * SLOW_COLS))],
                          binary_in=True, params={"priority": 3})
        return st, js
    if isinstance(body, str) and body.startswith("BIN:"):
        _, declared, actual = body.split(":")
        hdr = json.dumps({"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32",
                                      "parameters": {"binary_data_size": int(declared)}}]}).encode()
        st, _, b = request(port, "POST", path, hdr + b"\0" * int(actual),
                           {"Inference-Header-Content-Length": str(len(hdr))})
        return st, jbody(b)
    method = "GET" if body is None else "POST"
    if path == "/v2/health/live":
        method = "POST"
    st, _, b = request(port, method, path, body, headers)
    return st, jbody(b)


def test_bad_inputs(s):
    for what, path, body, headers, status, msg in BAD:
        st, js = bad_request(s.port, path, body, headers)
        err = (js or {}).get("error", "")
        ok(st == status and msg in err, "%s: %d naming it (%s)" % (what, status, err[:90]),
           "got %d %r" % (st, js))
    # A body over --http-max-body-bytes (4 MiB here): 413 on the headers,
    # before a byte of the body is sent.
    import socket
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"POST /v2/models/relu/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (5 << 20))
    try:
        b = c.recv(4096)
    except OSError as e:
        b = str(e).encode()
    c.close()
    ok(b.startswith(b"HTTP/1.1 413") and b"exceeds" in b,
       "a body over --http-max-body-bytes: 413 before the body is sent", b[:200])
    # Still up, nothing lost.
    st, js, v = infer(s.port, "relu", [("x0", "FP32", [1, 4], [1, -1, 2, -2])])
    ok(st == 200 and v["y"] == [1, 0, 2, 0], "the server still serves after every bad input")
    st, _, b = request(s.port, "GET", "/v2/models/relu/stats")
    ok(st == 200 and jbody(b)["model_stats"][0]["inference_stats"]["fail"]["count"] == 0,
       "bad requests never reach the model's queue (fail count 0)")


def promtool(text):
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       timeout=60)
    return p.returncode, (p.stdout + p.stderr).decode()


def test_metrics(s):
    st, _, b = request(s.metrics_port, "GET", "/metrics")
    rc, out = promtool(b)
    ok(st == 200 and rc == 0, "promtool check metrics is clean", out)
    text = b.decode()
    for name in ("npu_serve_inference_request_success_total", "npu_serve_queue_duration_seconds_bucket",
                 "npu_serve_compute_input_duration_seconds_bucket",
                 "npu_serve_compute_infer_duration_seconds_bucket",
                 "npu_serve_compute_output_duration_seconds_bucket",
                 "npu_serve_request_duration_seconds_bucket", "npu_serve_batch_size_bucket",
                 "npu_serve_pending_requests", "npu_serve_device_busy_seconds_total",
                 "npu_serve_device_utilization_ratio", "npu_serve_queue_rejected_timeout_total"):
        ok(name in text, "metric %s" % name)
    line = [ln for ln in text.splitlines()
            if ln.startswith('npu_serve_batch_size_bucket{model="relu",version="1",le="1"}')]
    total = [ln for ln in text.splitlines()
             if ln.startswith('npu_serve_batch_size_count{model="relu",version="1"}')]
    ok(line and total and int(line[0].split()[-1]) < int(total[0].split()[-1]),
       "the batch-size histogram shows batches larger than 1", (line, total))
    busy = [ln for ln in text.splitlines() if ln.startswith('npu_serve_device_busy_seconds_total{device="sim"}')]
    cyc = [ln for ln in text.splitlines() if ln.startswith('npu_serve_device_cycles_total{device="sim"}')]
    ok(busy and float(busy[0].split()[-1]) > 0 and cyc and int(cyc[0].split()[-1]) > 0,
       "per-device busy time and modeled NPU cycles for sim (%s)" % cyc, (busy, cyc))


def test_sigterm(s):
    x = slow_input()
    res = []

    def one(i):
        time.sleep(0.01 * i)
        st, js, _ = infer(s.port, "slow", [("x0", "FP32", [1, SLOW_ROWS, SLOW_COLS], x)],
                          binary_in=True, params={"binary_data_output": True})
        res.append(st)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()

    def queued():
        st, _, b = request(s.port, "GET", "/v2/models/slow/stats", timeout=5)
        return st == 200 and jbody(b)["model_stats"][0]["pending"] >= 2

    # SIGTERM while one request runs and others wait in the queue.
    ok(wait_for(queued, 10), "requests are queued behind the busy instance before SIGTERM")
    t0 = time.time()
    rc = s.stop(60)
    for t in threads:
        t.join(60)
    log = s.log_text()
    ok(rc == 0 and res.count(200) == 4,
       "SIGTERM drains the requests in flight (%s) and exits 0 (rc %s, %.2f s)" %
       (res, rc, time.time() - t0))
    ok("SIGTERM" in log and "stopped" in log, "the log says it drained and stopped")
    st, _, _ = request(s.port, "GET", "/v2/health/live", timeout=2)
    ok(st == 0, "nothing listens after the exit")


# ---- gRPC (inference.GRPCInferenceService, a real grpcio client) -------------------

def grpc_stubs():
    """Generate the Python stubs of userspace/serve/grpc_service.proto into WORK."""
    out = os.path.join(WORK, "grpcpy")
    os.makedirs(out, exist_ok=True)
    proto_dir = os.path.join(HERE, "..", "..", "userspace", "serve")
    r = subprocess.run(["protoc", "--proto_path=" + proto_dir, "--python_out=" + out,
                        "--grpc_python_out=" + out,
                        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                        os.path.join(proto_dir, "grpc_service.proto"),
                        os.path.join(proto_dir, "model_config.proto")],
                       capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise RuntimeError("protoc: " + r.stderr)
    sys.path.insert(0, out)
    import grpc  # noqa: F401  (python3-grpcio)
    import grpc_service_pb2
    import grpc_service_pb2_grpc
    return grpc, grpc_service_pb2, grpc_service_pb2_grpc


def grpc_call(grpc, fn, req):
    """(code name, response or details)."""
    try:
        return "OK", fn(req, timeout=60)
    except grpc.RpcError as e:
        return e.code().name, e.details()


def test_grpc(s):
    grpc, pb, pbg = grpc_stubs()
    ok(s.grpc_port and s.grpc_port > 0, "gRPC listens on an ephemeral port (%s)" % s.grpc_port)
    ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
    st = pbg.GRPCInferenceServiceStub(ch)
    c, r = grpc_call(grpc, st.ServerLive, pb.ServerLiveRequest())
    ok(c == "OK" and r.live, "gRPC ServerLive", (c, r))
    c, r = grpc_call(grpc, st.ServerReady, pb.ServerReadyRequest())
    ok(c == "OK" and r.ready, "gRPC ServerReady", (c, r))
    c, r = grpc_call(grpc, st.ServerMetadata, pb.ServerMetadataRequest())
    ok(c == "OK" and r.name == "npu-serve" and "statistics" in r.extensions,
       "gRPC ServerMetadata", (c, r))
    c, r = grpc_call(grpc, st.ModelReady, pb.ModelReadyRequest(name="relu", version="1"))
    c2, r2 = grpc_call(grpc, st.ModelReady, pb.ModelReadyRequest(name="nosuch"))
    ok(c == "OK" and r.ready and c2 == "OK" and not r2.ready, "gRPC ModelReady")
    c, r = grpc_call(grpc, st.ModelMetadata, pb.ModelMetadataRequest(name="tadd"))
    ok(c == "OK" and r.name == "tadd" and [i.name for i in r.inputs] == ["x", "y"] and
       list(r.inputs[0].shape) == [3, 4, 5] and r.outputs[0].name == "sum",
       "gRPC ModelMetadata", (c, r))

    def infer_req(model, tensors, raw=True, version=""):
        rq = pb.ModelInferRequest(model_name=model, model_version=version, id="g")
        for name, dt, shape, vals in tensors:
            t = rq.inputs.add()
            t.name, t.datatype = name, dt
            t.shape.extend(shape)
            fmt = {"FP32": "f", "INT64": "q"}[dt]
            if raw:
                rq.raw_input_contents.append(struct.pack("<%d%s" % (len(vals), fmt), *vals))
            elif dt == "FP32":
                t.contents.fp32_contents.extend(vals)
            else:
                t.contents.int64_contents.extend(vals)
        return rq

    def out_vals(resp, i, fmt="f"):
        b = resp.raw_output_contents[i]
        return list(struct.unpack("<%d%s" % (len(b) // struct.calcsize(fmt), fmt), b))

    a, b = rand_vals(60, 11), rand_vals(60, 12)
    ref = npu_run(os.path.join(s.repo, "tadd/1/model.onnx"),
                  [("x", [3, 4, 5], a), ("y", [3, 4, 5], b)], "sum")
    c, r = grpc_call(grpc, st.ModelInfer, infer_req("tadd", [("x", "FP32", [3, 4, 5], a),
                                                             ("y", "FP32", [3, 4, 5], b)]))
    ok(c == "OK" and r.model_name == "tadd" and r.id == "g" and r.outputs[0].name == "sum" and
       list(r.outputs[0].shape) == [3, 4, 5] and out_vals(r, 0) == ref,
       "gRPC ModelInfer with raw_input_contents: raw_output_contents equal npu run", (c, r))
    c, r = grpc_call(grpc, st.ModelInfer, infer_req("tadd", [("x", "FP32", [3, 4, 5], a),
                                                             ("y", "FP32", [3, 4, 5], b)],
                                                    raw=False))
    ok(c == "OK" and out_vals(r, 0) == ref, "gRPC ModelInfer with typed contents (fp32_contents)")
    c, r = grpc_call(grpc, st.ModelInfer, infer_req("i64", [("x0", "INT64", [2, 2],
                                                             [1, -2, 1 << 40, 0])], raw=False))
    ok(c == "OK" and out_vals(r, 0, "q") == [-1, 2, -(1 << 40), 0] and
       r.outputs[0].datatype == "INT64", "gRPC ModelInfer INT64 (int64_contents)", (c, r))
    # Errors as gRPC status codes naming the problem.
    for what, rq, code, msg in (
            ("unknown model", infer_req("nosuch", [("x0", "FP32", [1, 4], [0] * 4)]),
             "NOT_FOUND", "unknown model 'nosuch'"),
            ("unknown version", infer_req("relu", [("x0", "FP32", [1, 4], [0] * 4)], version="9"),
             "NOT_FOUND", "version 9 is not loaded"),
            ("wrong shape", infer_req("relu", [("x0", "FP32", [1, 5], [0] * 5)]),
             "INVALID_ARGUMENT", "shape[1] is 5"),
            ("wrong datatype", infer_req("relu", [("x0", "INT64", [1, 4], [0] * 4)]),
             "INVALID_ARGUMENT", "datatype INT64 but model 'relu' expects FP32"),
            ("batch > max_batch_size", infer_req("relu", [("x0", "FP32", [9, 4], [0] * 36)]),
             "INVALID_ARGUMENT", "exceeds max_batch_size 8"),
            ("raw contents shorter than the shape", infer_req("relu", [("x0", "FP32", [2, 4],
                                                                         [0] * 4)]),
             "INVALID_ARGUMENT", "binary_data_size 16 but shape")):
        c, r = grpc_call(grpc, st.ModelInfer, rq)
        ok(c == code and msg in str(r), "gRPC %s: %s naming it (%s)" % (what, code, r), (c, r))
    rq = infer_req("relu", [("x0", "FP32", [1, 4], [0] * 4)])
    rq.raw_input_contents.append(b"1234")
    c, r = grpc_call(grpc, st.ModelInfer, rq)
    ok(c == "INVALID_ARGUMENT" and "raw_input_contents has 2 entries" in str(r),
       "gRPC raw_input_contents count mismatch", (c, r))
    # Concurrent calls on one channel are batched like the HTTP ones.
    futures = []
    for i in range(24):
        x = rand_vals(4, 500 + i)
        futures.append((x, st.ModelInfer.future(infer_req("relu", [("x0", "FP32", [1, 4], x)]),
                                                timeout=60)))
    good = 0
    for x, f in futures:
        try:
            good += out_vals(f.result(), 0) == [max(v, 0.0) for v in x]
        except grpc.RpcError:
            pass
    ok(good == 24, "24 concurrent gRPC calls on one channel: all right (%d)" % good)
    c, r = grpc_call(grpc, st.ModelStatistics, pb.ModelStatisticsRequest(name="relu"))
    ok(c == "OK" and r.model_stats[0].inference_count >= 24 and
       r.model_stats[0].inference_stats.success.count >= 24, "gRPC ModelStatistics", (c, r))
    test_grpc_config(s, grpc, pb, st)
    test_grpc_stream(s, grpc, pb, st)
    c, r = grpc_call(grpc, st.RepositoryIndex, pb.RepositoryIndexRequest(ready=True))
    ok(c == "OK" and sorted(m.name for m in r.models) ==
       ["add", "hold", "i64", "onnpu", "ordered", "plain", "relu", "slow", "tadd"], "gRPC RepositoryIndex", (c, r))
    c, r = grpc_call(grpc, st.RepositoryModelUnload,
                     pb.RepositoryModelUnloadRequest(model_name="relu"))
    ok(c == "UNAVAILABLE" and "model-control-mode" in str(r),
       "gRPC RepositoryModelUnload refused in mode none", (c, r))
    ch.close()


def config_from_grpc(cfg):
    """The fields of a gRPC ModelConfig we serve, in the REST /config form."""
    import model_config_pb2 as mc
    dt = mc.DataType.Name
    kind = mc.ModelInstanceGroup.Kind.Name
    out = {"name": cfg.name, "platform": cfg.platform, "backend": cfg.backend,
           "max_batch_size": cfg.max_batch_size,
           "input": [{"name": t.name, "data_type": dt(t.data_type), "dims": list(t.dims)}
                     for t in cfg.input],
           "output": [{"name": t.name, "data_type": dt(t.data_type), "dims": list(t.dims)}
                      for t in cfg.output],
           "instance_group": [dict({"count": g.count, "kind": kind(g.kind)},
                                   **({"gpus": list(g.gpus)} if g.gpus else {}))
                              for g in cfg.instance_group],
           "parameters": {k: {"string_value": v.string_value} for k, v in cfg.parameters.items()}}
    vp = cfg.version_policy.WhichOneof("policy_choice")
    out["version_policy"] = {
        "latest": {"latest": {"num_versions": cfg.version_policy.latest.num_versions}},
        "all": {"all": {}},
        "specific": {"specific": {"versions": list(cfg.version_policy.specific.versions)}}}[vp]
    if cfg.default_model_filename:
        out["default_model_filename"] = cfg.default_model_filename
    if cfg.WhichOneof("scheduling_choice") == "dynamic_batching":
        b = cfg.dynamic_batching

        def qp(q):
            return {"max_queue_size": q.max_queue_size,
                    "default_timeout_microseconds": q.default_timeout_microseconds,
                    "allow_timeout_override": q.allow_timeout_override,
                    "timeout_action": mc.ModelQueuePolicy.TimeoutAction.Name(q.timeout_action)}
        out["dynamic_batching"] = {
            "preferred_batch_size": list(b.preferred_batch_size),
            "max_queue_delay_microseconds": b.max_queue_delay_microseconds,
            "preserve_ordering": b.preserve_ordering, "priority_levels": b.priority_levels,
            "default_priority_level": b.default_priority_level,
            "default_queue_policy": qp(b.default_queue_policy),
            "priority_queue_policy": {str(k): qp(v) for k, v in b.priority_queue_policy.items()}}
    return out


def test_grpc_config(s, grpc, pb, st):
    """ModelConfig: Triton's message, the same data as REST .../config."""
    names = ["add", "hold", "i64", "onnpu", "ordered", "plain", "relu", "slow", "tadd"]
    same = []
    for name in names:
        c, r = grpc_call(grpc, st.ModelConfig, pb.ModelConfigRequest(name=name))
        hst, _, b = request(s.port, "GET", "/v2/models/%s/config" % name)
        if c == "OK" and hst == 200 and config_from_grpc(r.config) == jbody(b):
            same.append(name)
        elif c == "OK":
            print("# %s: gRPC %s\n#   REST %s" % (name, config_from_grpc(r.config), jbody(b)))
    ok(same == names, "gRPC ModelConfig equals REST .../config for every model (%s)" %
       ", ".join(same), (c, r))
    c, r = grpc_call(grpc, st.ModelConfig, pb.ModelConfigRequest(name="slow", version="1"))
    ok(c == "OK" and r.config.dynamic_batching.priority_levels == 2 and
       r.config.dynamic_batching.priority_queue_policy[1].max_queue_size == 6 and
       r.config.parameters["note"].string_value == "a parameter" and
       r.config.instance_group[0].kind == r.config.instance_group[0].KIND_CPU,
       "gRPC ModelConfig of slow/1: priority queue policy, parameters, KIND_CPU", (c, r))
    c, r = grpc_call(grpc, st.ModelConfig, pb.ModelConfigRequest(name="onnpu"))
    ok(c == "OK" and r.config.instance_group[0].kind == r.config.instance_group[0].KIND_NPU and
       r.config.parameters["device"].string_value == "sim" and
       r.config.WhichOneof("scheduling_choice") == "dynamic_batching",
       "gRPC ModelConfig of onnpu: KIND_NPU, device sim, dynamic batching", (c, r))
    c, r = grpc_call(grpc, st.ModelConfig, pb.ModelConfigRequest(name="nosuch"))
    ok(c == "NOT_FOUND" and "nosuch" in str(r), "gRPC ModelConfig of an unknown model: NOT_FOUND",
       (c, r))
    c, r = grpc_call(grpc, st.ModelConfig, pb.ModelConfigRequest(name="relu", version="x"))
    ok(c == "INVALID_ARGUMENT" and "version" in str(r),
       "gRPC ModelConfig with a bad version: INVALID_ARGUMENT", (c, r))


def test_grpc_stream(s, grpc, pb, st):
    """ModelStreamInfer: one response per request on one stream, errors per
    message, the stream open throughout."""
    import queue

    def req(rid, model="relu", vals=None, shape=(1, 4)):
        rq = pb.ModelInferRequest(model_name=model, id=rid)
        t = rq.inputs.add()
        t.name, t.datatype = "x0", "FP32"
        t.shape.extend(shape)
        rq.raw_input_contents.append(struct.pack("<%df" % len(vals), *vals))
        return rq

    q = queue.Queue()

    def gen():
        for _ in range(100):
            item = q.get(timeout=60)
            if item is None:
                return
            yield item

    call = st.ModelStreamInfer(gen(), timeout=60)
    it = iter(call)
    want = {}
    try:
        # The first answer comes while the stream is still open.
        x = rand_vals(4, 900)
        want["s0"] = [max(v, 0.0) for v in x]
        q.put(req("s0", vals=x))
        first = next(it)
        ok(first.error_message == "" and first.infer_response.id == "s0" and
           list(struct.unpack("<4f", first.infer_response.raw_output_contents[0])) == want["s0"],
           "gRPC ModelStreamInfer: the first response arrives before the client half-closes",
           first)
        for i in range(1, 7):
            rid = "s%d" % i
            if i == 3:    # a wrong shape in the middle
                q.put(req(rid, vals=[1.0] * 5, shape=(1, 5)))
            elif i == 5:  # an unknown model
                q.put(req(rid, model="nosuch", vals=[1.0] * 4))
            else:
                x = rand_vals(4, 900 + i)
                want[rid] = [max(v, 0.0) for v in x]
                q.put(req(rid, vals=x))
        q.put(None)
        rest = list(it)
        code = call.code().name
    except grpc.RpcError as e:
        ok(False, "gRPC ModelStreamInfer: %s %s" % (e.code().name, e.details()))
        q.put(None)
        return
    got = {r.infer_response.id: r for r in rest}
    good = [rid for rid in want if rid != "s0" and rid in got and got[rid].error_message == "" and
            list(struct.unpack("<4f", got[rid].infer_response.raw_output_contents[0])) == want[rid]]
    ok(len(rest) == 6 and sorted(good) == ["s1", "s2", "s4", "s6"] and code == "OK",
       "gRPC ModelStreamInfer: 7 requests on one stream, every good one answered right by id "
       "(%s), status %s" % (good, code), rest)
    e3, e5 = got.get("s3"), got.get("s5")
    ok(e3 is not None and "x0" in e3.error_message and e3.infer_response.model_name == "relu",
       "gRPC ModelStreamInfer: a wrong shape is that message's error_message (%s)" %
       (e3.error_message if e3 else None), e3)
    ok(e5 is not None and "unknown model 'nosuch'" in e5.error_message,
       "gRPC ModelStreamInfer: an unknown model is that message's error (%s)" %
       (e5.error_message if e5 else None), e5)
    # Garbage bytes as a message: an error answer, and the stream goes on.
    raw = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
    fn = raw.stream_stream("/inference.GRPCInferenceService/ModelStreamInfer",
                           request_serializer=lambda b: b,
                           response_deserializer=pb.ModelStreamInferResponse.FromString)
    x = rand_vals(4, 950)
    try:
        out = list(fn(iter([b"\xff\xff\xff", req("g1", vals=x).SerializeToString()]), timeout=60))
    except grpc.RpcError as e:
        out = [e.code().name]
    ok(len(out) == 2 and "cannot parse" in out[0].error_message and
       out[1].infer_response.id == "g1" and out[1].error_message == "",
       "gRPC ModelStreamInfer: an unparsable message is answered with an error, the next one "
       "runs", out)
    raw.close()
    # A client that goes away with requests still queued on the stream.
    big = rand_vals(SLOW_ROWS * SLOW_COLS, 960)
    rq = pb.ModelInferRequest(model_name="slow", id="gone")
    t = rq.inputs.add()
    t.name, t.datatype = "x0", "FP32"
    t.shape.extend([1, SLOW_ROWS, SLOW_COLS])
    rq.raw_input_contents.append(struct.pack("<%df" % len(big), *big))
    call = st.ModelStreamInfer(iter([rq, rq, rq]), timeout=60)
    time.sleep(0.2)
    call.cancel()
    time.sleep(1.0)
    try:
        c, after = "OK", list(st.ModelStreamInfer(iter([req("after", vals=[1.0, -1.0, 2.0, -2.0])]),
                                                   timeout=60))
    except grpc.RpcError as e:
        c, after = e.code().name, []
    ok(len(after) == 1 and after[0].infer_response.id == "after" and after[0].error_message == "",
       "gRPC ModelStreamInfer: a stream cancelled with requests queued leaves the server serving",
       (c, after))


def test_grpc_repository(s):
    grpc, pb, pbg = grpc_stubs()
    ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
    st = pbg.GRPCInferenceServiceStub(ch)
    c, r = grpc_call(grpc, st.RepositoryModelLoad, pb.RepositoryModelLoadRequest(model_name="bad"))
    ok(c == "INVALID_ARGUMENT" and "config.pbtxt:3:" in str(r),
       "gRPC RepositoryModelLoad of a garbage config: INVALID_ARGUMENT with line:column", (c, r))
    c, r = grpc_call(grpc, st.RepositoryModelUnload,
                     pb.RepositoryModelUnloadRequest(model_name="other"))
    c2, r2 = grpc_call(grpc, st.ModelReady, pb.ModelReadyRequest(name="other"))
    ok(c == "OK" and c2 == "OK" and not r2.ready, "gRPC RepositoryModelUnload", (c, r, r2))
    c, r = grpc_call(grpc, st.RepositoryModelLoad, pb.RepositoryModelLoadRequest(model_name="other"))
    c2, r2 = grpc_call(grpc, st.ModelReady, pb.ModelReadyRequest(name="other"))
    ok(c == "OK" and r2.ready, "gRPC RepositoryModelLoad", (c, r, r2))
    ch.close()


# ---- Repository lifecycle (explicit and poll) -----------------------------------

class Load:
    """Clients hammering a model until stopped; counts every failure."""

    def __init__(self, port, model, threads=3):
        self.port, self.model = port, model
        self.stop_flag = False
        self.ok = self.failed = 0
        self.versions = set()
        self.errors = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self):
        deadline = time.time() + 120
        while not self.stop_flag and time.time() < deadline:
            st, js, v = infer(self.port, self.model, [("x0", "FP32", [1, 4], [1, -2, 3, -4])])
            with self.lock:
                if st == 200 and v["y"] in ([1, 0, 3, 0], [-1, 2, -3, 4]):
                    self.ok += 1
                    self.versions.add(js["model_version"])
                else:
                    self.failed += 1
                    self.errors.append((st, js))

    def finish(self):
        self.stop_flag = True
        for t in self.threads:
            t.join(60)
        return self


def served_version(port, model):
    st, js, v = infer(port, model, [("x0", "FP32", [1, 4], [1, -2, 3, -4])])
    return js["model_version"] if st == 200 else None


def index_of(port, model):
    st, _, b = request(port, "POST", "/v2/repository/index")
    return {m.get("version"): m for m in jbody(b) or [] if m["name"] == model}


def wait_for(pred, secs, interval=0.1):
    deadline = time.time() + secs
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()


SW_CONFIG = """name: "sw"
max_batch_size: 4
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
dynamic_batching { max_queue_delay_microseconds: 1000 }
"""


def test_slow_clients(s):
    """--http-timeout-secs 2: a client that stops sending is disconnected;
    headers over the per-connection limit are refused."""
    import socket
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"POST /v2/models/sw/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Length: 100\r\n\r\n{\"inputs\"")
    t0 = time.time()
    try:
        data = c.recv(4096)
    except OSError:
        data = b""
    waited = time.time() - t0
    c.close()
    ok(data == b"" and 1.5 < waited < 9,
       "a client that stops mid-body is disconnected after --http-timeout-secs (%.1f s)" % waited,
       data[:100])
    st, _, b = request(s.port, "GET", "/v2/health/live", headers={"X-Big": "a" * (128 << 10)})
    ok(st in (0, 400, 413, 431), "headers over the 64 KiB limit are refused (%d)" % st)
    st, _, _ = request(s.port, "GET", "/v2/health/live")
    ok(st == 200, "the server still serves after the slow and oversized clients")


def test_explicit():
    repo = os.path.join(WORK, "repo-explicit")
    onnx_model(f"{repo}/sw/1/model.onnx", "Relu", 1, "N,4")
    write(f"{repo}/sw/config.pbtxt", SW_CONFIG)
    onnx_model(f"{repo}/other/1/model.onnx", "Relu", 1, "N,4")
    write(f"{repo}/bad/1/model.onnx", make_model.model("Relu", 1, ["N", "4"], 1))
    write(f"{repo}/bad/config.pbtxt", 'name: "bad"\nmax_batch_size: 4\n'
          'input { name: "x0" data_type: TYPE_FP32 dims: [ 4 }\n')
    s = Server("explicit", repo, "--model-control-mode", "explicit", "--load-model", "sw",
               "--strict-readiness=true", "--http-timeout-secs", "2")
    s.repo = repo
    if not ok(s.up(), "explicit mode: the server starts", s.log_text() if s.proc else ""):
        return s
    idx = index_of(s.port, "other")
    ok(list(idx.keys()) == [None], "explicit mode loads only --load-model (others listed, no state)",
       idx)
    st, _, _ = request(s.port, "GET", "/v2/models/other/ready")
    ok(st == 400, "GET .../ready of a model not loaded is 400")
    st, _, b = request(s.port, "POST", "/v2/repository/models/other/load")
    ok(st == 200 and served_version(s.port, "other") == "1", "POST .../other/load loads it", b)
    st, _, b = request(s.port, "POST", "/v2/repository/models/bad/load")
    err = (jbody(b) or {}).get("error", "")
    ok(st == 400 and "config.pbtxt:3:" in err, "garbage config.pbtxt: 400 with line:column (%s)" %
       err, b)
    idx = index_of(s.port, "bad")
    ok(idx.get(None, {}).get("state") == "UNAVAILABLE" and "config.pbtxt:3:" in
       idx[None].get("reason", ""), "the index shows the config error as the reason", idx)
    st, _, _ = request(s.port, "GET", "/v2/health/ready")
    ok(st == 400, "--strict-readiness: not ready while a model asked for failed to load")
    st, _, b = request(s.port, "POST", "/v2/repository/models/nosuch/load")
    ok(st == 404 and b"nosuch" in b, "loading an unknown model is 404", b)
    test_slow_clients(s)

    load = Load(s.port, "sw")
    time.sleep(0.3)
    # Version 2 (Neg): loaded and warmed before the swap.
    onnx_model(f"{repo}/sw/2/model.onnx", "Neg", 1, "N,4")
    st, _, b = request(s.port, "POST", "/v2/repository/models/sw/load")
    ok(st == 200 and served_version(s.port, "sw") == "2", "version 2 swapped in under load", b)
    time.sleep(0.3)
    # A failed load (a truncated model file): version 2 keeps serving.
    write(f"{repo}/sw/3/model.onnx", b"\x08\x08\x12\x04trun")
    st, _, b = request(s.port, "POST", "/v2/repository/models/sw/load")
    err = (jbody(b) or {}).get("error", "")
    ok(st == 400 and "version 3" in err, "a failed load of version 3 is 400 naming it (%s)" %
       err[:120], b)
    idx = index_of(s.port, "sw")
    ok(idx.get("2", {}).get("state") == "READY" and idx.get("3", {}).get("state") == "UNAVAILABLE"
       and "version 3" in idx.get("3", {}).get("reason", ""),
       "the index: version 2 READY, version 3 UNAVAILABLE with the reason", idx)
    ok(served_version(s.port, "sw") == "2", "version 2 still serves after the failed load")
    time.sleep(0.3)
    # Rollback to version 1 with a config override (Triton's load parameters.config).
    shutil.rmtree(f"{repo}/sw/3")
    cfg = {"name": "sw", "max_batch_size": 4,
           "input": [{"name": "x0", "data_type": "TYPE_FP32", "dims": [4]}],
           "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [4]}],
           "version_policy": {"specific": {"versions": [1]}},
           "dynamic_batching": {"max_queue_delay_microseconds": 1000}}
    st, _, b = request(s.port, "POST", "/v2/repository/models/sw/load",
                       {"parameters": {"config": json.dumps(cfg)}})
    ok(st == 200 and served_version(s.port, "sw") == "1",
       "rollback to version 1 with a config override", b)
    time.sleep(0.3)
    # Our extension: load version 2 besides 1, then unload it.
    st, _, b = request(s.port, "POST", "/v2/repository/models/sw/versions/2/load")
    st1, js1, _ = infer(s.port, "sw", [("x0", "FP32", [1, 4], [1, 2, 3, 4])], version=1)
    st2, js2, _ = infer(s.port, "sw", [("x0", "FP32", [1, 4], [1, 2, 3, 4])], version=2)
    ok(st == 200 and st1 == 200 and st2 == 200 and js2["model_version"] == "2",
       "POST .../versions/2/load: versions 1 and 2 both serve", b)
    st, _, b = request(s.port, "POST", "/v2/repository/models/sw/versions/2/unload")
    st2, _, _ = infer(s.port, "sw", [("x0", "FP32", [1, 4], [1, 2, 3, 4])], version=2)
    ok(st == 200 and st2 == 404, "POST .../versions/2/unload: version 2 is gone, 1 serves", b)
    time.sleep(0.3)
    load.finish()
    ok(load.failed == 0 and load.ok > 20 and {"1", "2"} <= load.versions,
       "swap, failed load and rollback under continuous load: %d requests, 0 failed "
       "(versions seen %s)" % (load.ok, sorted(load.versions)),
       "%d failed: %s" % (load.failed, load.errors[:3]))
    # Unload drains: a request in flight finishes.
    st, _, b = request(s.port, "POST", "/v2/repository/models/sw/unload")
    st2, js, _ = infer(s.port, "sw", [("x0", "FP32", [1, 4], [1, 2, 3, 4])])
    ok(st == 200 and st2 == 404, "POST .../unload: the model is gone (404 after)", js)
    idx = index_of(s.port, "sw")
    ok(idx.get("1", {}).get("state") == "UNAVAILABLE", "the index shows it UNAVAILABLE", idx)
    log = s.log_text()
    ok("loaded model 'sw' version 2" in log and "failed to load 'sw' version 3" in log,
       "the log says what loaded and why a load failed")
    try:
        test_grpc_repository(s)
    except Exception as e:
        ok(False, "grpc repository: %s: %s" % (type(e).__name__, e))
    return s


def test_poll():
    repo = os.path.join(WORK, "repo-poll")
    onnx_model(f"{repo}/pm/1/model.onnx", "Relu", 1, "N,4")
    write(f"{repo}/pm/config.pbtxt", SW_CONFIG.replace('"sw"', '"pm"'))
    s = Server("poll", repo, "--model-control-mode", "poll", "--repository-poll-secs", "1")
    if not ok(s.up(), "poll mode: the server starts", s.log_text()):
        return s
    load = Load(s.port, "pm", threads=2)
    # Half of version 2, then nothing: stable but unparsable: not served.
    full = make_model.model("Neg", 1, ["N", "4"], 1)
    write(f"{repo}/pm/2/model.onnx", full[:len(full) // 2])
    time.sleep(3.5)
    idx = index_of(s.port, "pm")
    ok(served_version(s.port, "pm") == "1" and idx.get("2", {}).get("state") == "UNAVAILABLE",
       "poll: a half-written version is never served (index: %s)" %
       idx.get("2", {}).get("reason", "")[:100], idx)
    write(f"{repo}/pm/2/model.onnx", full)
    ok(wait_for(lambda: served_version(s.port, "pm") == "2", 10),
       "poll: the completed version 2 goes live")
    # A garbage config: the old one keeps serving, the reason in the index.
    write(f"{repo}/pm/config.pbtxt", "name: \"pm\"\nmax_batch_size: @\n")
    time.sleep(3.5)
    st, _, b = request(s.port, "POST", "/v2/repository/index")
    ok(served_version(s.port, "pm") == "2" and b"config.pbtxt:2:17: expected a value" in b,
       "poll: a garbage config.pbtxt leaves version 2 serving, line:column in the index", b)
    write(f"{repo}/pm/config.pbtxt", SW_CONFIG.replace('"sw"', '"pm"'))
    shutil.rmtree(f"{repo}/pm/2")
    ok(wait_for(lambda: served_version(s.port, "pm") == "1", 10),
       "poll: removing version 2 rolls back to version 1")
    load.finish()
    ok(load.failed == 0 and load.ok > 10,
       "poll changes under continuous load: %d requests, 0 failed" % load.ok,
       "%d failed: %s" % (load.failed, load.errors[:3]))
    st, _, b = request(s.port, "POST", "/v2/repository/models/pm/load")
    ok(st == 503 and b"polling" in b, "poll mode refuses explicit load (503)", b)
    shutil.rmtree(f"{repo}/pm")
    ok(wait_for(lambda: request(s.port, "GET", "/v2/models/pm/ready")[0] == 400, 10),
       "poll: a removed model is unloaded")
    return s


# ---- Several NPUs (--device sim:2, instance_group gpus) ----------------------

MULTI_CONFIG = """max_batch_size: 4
input { name: "x0" data_type: TYPE_FP32 dims: [ 16 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 16 ] }
dynamic_batching { }
instance_group { kind: KIND_NPU count: 1 %s }
parameters { key: "keep_small_segments" value { string_value: "true" } }
parameters { key: "calib" value { string_value: "random" } }
"""


def device_cycles(port, series="npu_serve_device_cycles_total"):
    """A per-device series (cycles by default) by device."""
    st, _, b = request(port, "GET", "/metrics")
    out = {}
    for line in b.decode().splitlines() if st == 200 else []:
        if line.startswith(series + '{device="'):
            out[line.split('"')[1]] = int(float(line.split()[-1]))
    return out


def test_multi_npu():
    """npu serve --device sim:2: an instance group places an instance on
    each NPU (Triton's per-GPU count), 'gpus' pins instances to NPUs, the
    metrics count every NPU, and a 'gpus' naming a missing NPU fails that
    model's load, naming it."""
    repo = os.path.join(WORK, "repo-npus")
    for name, extra in (("spread", ""), ("pinned", "gpus: [ 1 ]"), ("missing", "gpus: [ 0, 3 ]")):
        onnx_model(f"{repo}/{name}/1/model.onnx", "Relu", 1, "N,16")
        write(f"{repo}/{name}/config.pbtxt", MULTI_CONFIG % extra)
    onnx_model(f"{repo}/twice/1/model.onnx", "Relu", 1, "N,16")
    write(f"{repo}/twice/config.pbtxt", MULTI_CONFIG % "gpus: [ 1, 1 ]")
    for name, mode in (("piped", "pipeline"), ("badpar", "sideways")):
        onnx_model(f"{repo}/{name}/1/model.onnx", "Relu", 1, "N,16")
        write(f"{repo}/{name}/config.pbtxt", MULTI_CONFIG % "" +
              'parameters { key: "parallel" value { string_value: "%s" } }\n' % mode)
    s = Server("npus", repo, "--device", "sim:2")
    if not ok(s.up(), "sim:2: the server starts", s.log_text()):
        return s
    log = s.log_text()
    ok("loaded model 'spread' version 1" in log and "2 instances" in
       [ln for ln in log.splitlines() if "loaded model 'spread'" in ln][0],
       "sim:2: count 1 puts an instance on each of the 2 NPUs", log[-1500:])
    idx = index_of(s.port, "missing")
    ok(idx.get("1", {}).get("state") == "UNAVAILABLE" and
       "NPU 3" in idx.get("1", {}).get("reason", ""),
       "sim:2: gpus [0, 3] fails that model's load naming NPU 3 (%s)" %
       idx.get("1", {}).get("reason", "")[:160], idx)
    idx = index_of(s.port, "twice")
    bad = idx.get(None, idx.get("1", {}))
    ok(bad.get("state") == "UNAVAILABLE" and "listed twice" in bad.get("reason", ""),
       "sim:2: gpus [1, 1] is a config error", idx)
    idx = index_of(s.port, "badpar")
    ok(idx.get("1", {}).get("state") == "UNAVAILABLE" and
       "parameter parallel 'sideways'" in idx.get("1", {}).get("reason", ""),
       "parameter parallel 'sideways' fails that model's load, naming it", idx)
    idx = index_of(s.port, "piped")
    ok(idx.get("1", {}).get("state") == "READY", "parameter parallel 'pipeline' loads", idx)
    st, _, b = request(s.port, "GET", "/v2/models/pinned/config")
    cfg = jbody(b) or {}
    ok(st == 200 and cfg.get("instance_group", [{}])[0].get("gpus") == [1],
       "the config echoes gpus [1]", b)

    def one(model):
        def fn(t, i):
            # In the range random calibration saw, as the onnpu test's.
            x = [((7 * t + 3 * i + k) % 32 - 8) / 32.0 for k in range(16)]
            st, js, v = infer(s.port, model, [("x0", "FP32", [1, 16], x)])
            return st == 200 and all(abs(a - max(b, 0.0)) < 0.02 for a, b in zip(v["y"], x))
        return fn

    res = concurrent(4, 4, one("pinned"))
    cyc = device_cycles(s.port)
    ok(len(res) == 16 and all(res) and cyc.get("sim#1", 0) > 0 and cyc.get("sim", 0) == 0,
       "gpus [1]: 16 requests right, all on NPU 1 (cycles %s)" % cyc, res)
    res = concurrent(4, 4, one("piped"))
    ok(len(res) == 16 and all(res), "16 requests to a model in pipeline mode: every output right", res)
    res = concurrent(8, 6, one("spread"))
    cyc = device_cycles(s.port)
    ok(len(res) == 48 and all(res) and cyc.get("sim", 0) > 0,
       "48 concurrent requests over both NPUs: every output right, NPU 0 ran too (cycles %s)" %
       cyc, res)
    fo = device_cycles(s.port, "npu_serve_device_failovers_total")
    rot = device_cycles(s.port, "npu_serve_device_out_of_rotation")
    ok(fo == {"sim": 0, "sim#1": 0} and rot == {"sim": 0, "sim#1": 0},
       "both NPUs healthy: no failover, none out of rotation (%s, %s)" % (fo, rot))
    rc, out = promtool(request(s.metrics_port, "GET", "/metrics")[2])
    ok(rc == 0, "promtool: the per-NPU series are clean", out)
    return s


# ---- TLS and bearer tokens (--tls-cert/--tls-key, --api-token, --admin-token) ----

def https_request(port, cafile, method, path, body=None, headers=None, timeout=30):
    """Like request() over HTTPS, verifying the server against cafile."""
    import ssl
    try:
        ctx = ssl.create_default_context(cafile=cafile)
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=ctx)
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        h = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, h, data
    except (OSError, http.client.HTTPException) as e:
        return 0, {}, str(e).encode()


def test_security():
    d = os.path.join(WORK, "tls")
    cert, key = make_cert("tls")
    if not ok(cert is not None, "openssl makes a self-signed certificate", key):
        return None
    api, admin = "api-Secret-7f3a9", "admin-Secret-c41d2"
    tokfile = os.path.join(d, "admin.token")
    write(tokfile, admin + "\n")
    repo = os.path.join(WORK, "secrepo")
    onnx_model(f"{repo}/relu/1/model.onnx", "Relu", 1, "N,4")
    # 1 MiB and 16 MiB in and out: gRPC over TLS with large writes.
    onnx_model(f"{repo}/big/1/model.onnx", "Relu", 1, "N,262144")
    onnx_model(f"{repo}/huge/1/model.onnx", "Relu", 1, "N,4194304")

    # Bad flags: each refused with exit 2 and a message naming it.
    garbage = os.path.join(d, "garbage.pem")
    write(garbage, "not a certificate\n")
    for args, want in (
            (["--tls-cert", cert], "--tls-cert and --tls-key go together"),
            (["--tls-cert", os.path.join(d, "missing.pem"), "--tls-key", key], "cannot open"),
            (["--tls-cert", garbage, "--tls-key", key], "not a PEM file"),
            (["--api-token", ""], "the token is empty"),
            (["--api-token", "two words"], "space or a control"),
            (["--admin-token", "@" + os.path.join(d, "nofile")], "cannot read the token file"),
            (["--api-token", "same", "--admin-token", "same"], "must differ")):
        r = subprocess.run([NPU, "serve", "--model-repository", repo, "--http-port", "0",
                            "--grpc-port", "-1", "--metrics-port", "-1"] + args,
                           capture_output=True, text=True, timeout=30)
        ok(r.returncode == 2 and want in r.stderr, "npu serve %s: exit 2, '%s'" % (" ".join(args)[:60], want),
           (r.returncode, r.stderr[-200:]))
    # A PEM that GnuTLS refuses: the server does not start, and says why.
    bad = os.path.join(d, "bad.pem")
    write(bad, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    r = subprocess.run([NPU, "serve", "--model-repository", repo, "--http-port", "0",
                        "--grpc-port", "-1", "--metrics-port", "-1", "--tls-cert", bad, "--tls-key", key],
                       capture_output=True, text=True, timeout=30)
    ok(r.returncode == 1 and "cannot start HTTPS" in r.stderr, "a certificate GnuTLS refuses: exit 1, 'cannot start HTTPS'",
       (r.returncode, r.stderr[-300:]))

    s = Server("secure", repo, "--tls-cert", cert, "--tls-key", key, "--api-token", api,
               "--admin-token", "@" + tokfile, "--model-control-mode", "explicit", "--load-model", "*")
    if not ok(s.up(), "the server starts with TLS and tokens", s.log_text()[-500:]):
        return s
    ok("HTTPS on 127.0.0.1:" in s.log_text(), "it binds 127.0.0.1 by default (HTTPS)")
    body = json.dumps({"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32",
                                   "data": [1, -2, 3, -4]}]})
    url = "https://127.0.0.1:%d/v2/models/relu/infer" % s.port
    r = subprocess.run(["curl", "-sS", "--cacert", cert, "-H", "Authorization: Bearer " + api,
                        "-d", body, url], capture_output=True, text=True, timeout=30)
    out = jbody(r.stdout) or {}
    ok(r.returncode == 0 and out.get("outputs", [{}])[0].get("data") == [1, 0, 3, 0],
       "HTTPS round trip with curl --cacert: relu's output", (r.returncode, r.stdout[:200], r.stderr[:200]))
    r = subprocess.run(["curl", "-sS", "-H", "Authorization: Bearer " + api, "-d", body, url],
                       capture_output=True, text=True, timeout=30)
    ok(r.returncode != 0, "curl without --cacert refuses the self-signed certificate", r.returncode)
    st, _, _ = request(s.port, "GET", "/v2/health/live", timeout=5)
    ok(st != 200, "plain HTTP on the HTTPS port gets no answer", st)
    st, _, data = https_request(s.port, cert, "GET", "/metrics")
    ok(st == 200 and b"npu_serve_uptime_seconds" in data, "/metrics over HTTPS needs no token", st)

    R = lambda *a, **k: https_request(s.port, cert, *a, **k)  # noqa: E731
    inf = ("POST", "/v2/models/relu/infer", body)
    idx = ("POST", "/v2/repository/index", "{}")
    meta = ("GET", "/v2/models/relu", None)
    panel = ("GET", "/v2/panel/state", None)
    bearer = lambda t: {"Authorization": "Bearer " + t}  # noqa: E731
    cases = [
        ("health live, no token", ("GET", "/v2/health/live", None), {}, 200, None),
        ("health ready, no token", ("GET", "/v2/health/ready", None), {}, 200, None),
        ("the panel page, no token", ("GET", "/", None), {}, 200, None),
        ("infer, no token", inf, {}, 401, 'Bearer realm="npu-serve"'),
        ("infer, 'Basic' scheme", inf, {"Authorization": "Basic " + api}, 401, 'error="invalid_request"'),
        ("infer, 'Bearer' alone", inf, {"Authorization": "Bearer"}, 401, 'error="invalid_request"'),
        ("infer, two words", inf, {"Authorization": "Bearer " + api + " x"}, 401, 'error="invalid_request"'),
        ("infer, wrong token", inf, bearer(api + "x"), 401, 'error="invalid_token"'),
        ("infer, a prefix of the token", inf, bearer(api[:-1]), 401, 'error="invalid_token"'),
        ("infer, API token", inf, bearer(api), 200, None),
        ("infer, admin token", inf, bearer(admin), 200, None),
        ("metadata, no token", meta, {}, 401, "Bearer"),
        ("metadata, API token", meta, bearer(api), 200, None),
        ("panel state, no token", panel, {}, 401, "Bearer"),
        ("panel state, API token", panel, bearer(api), 200, None),
        ("repository index, no token", idx, {}, 401, "Bearer"),
        ("repository index, API token", idx, bearer(api), 403, None),
        ("repository index, wrong token", idx, bearer("nope"), 401, 'error="invalid_token"'),
        ("repository index, admin token", idx, bearer(admin), 200, None),
        ("unload, API token", ("POST", "/v2/repository/models/relu/unload", None), bearer(api), 403, None),
    ]
    for what, (m, p, b), h, want, www in cases:
        st, hd, data = R(m, p, body=b, headers=h)
        good = st == want and (www is None or www in hd.get("www-authenticate", ""))
        if want in (401, 403):
            msg = (jbody(data) or {}).get("error", "")
            good = good and ("token" in msg or "Authorization" in msg)
        ok(good, "HTTPS %s: %d" % (what, want), (st, hd.get("www-authenticate"), data[:160]))

    # gRPC over TLS (the same certificate) applies the same tokens in the
    # "authorization" metadata.
    try:
        test_security_grpc(s, api, admin, cert)
    except Exception as e:  # noqa: BLE001 the rest of the section still runs
        ok(False, "security gRPC: %s: %s" % (type(e).__name__, e))
    try:
        test_grpc_tls(s, api, cert)
    except Exception as e:  # noqa: BLE001
        ok(False, "gRPC over TLS: %s: %s" % (type(e).__name__, e))
    log = s.log_text()
    ok(api not in log and admin not in log, "no token appears in the log")
    rc = s.stop(30)
    ok(rc == 0, "the TLS server exits 0 on SIGTERM", rc)
    return None


def tls_channel(grpc, port, cert):
    with open(cert, "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    return grpc.secure_channel("127.0.0.1:%d" % port, creds)


def test_security_grpc(s, api, admin, cert):
    grpc, pb, pbg = grpc_stubs()
    ch = tls_channel(grpc, s.grpc_port, cert)
    g = pbg.GRPCInferenceServiceStub(ch)

    def gcall(fn, req, tok=None, raw=None):
        md = [("authorization", raw if raw is not None else "Bearer " + tok)] if (tok or raw) else None
        try:
            fn(req, timeout=30, metadata=md)
            return "OK"
        except grpc.RpcError as e:
            return e.code().name

    mm = pb.ModelMetadataRequest(name="relu")
    ri = pb.RepositoryIndexRequest()
    for what, fn, req, tok, raw, want in (
            ("ServerLive, no token", g.ServerLive, pb.ServerLiveRequest(), None, None, "OK"),
            ("ModelMetadata, no token", g.ModelMetadata, mm, None, None, "UNAUTHENTICATED"),
            ("ModelMetadata, malformed", g.ModelMetadata, mm, None, "Token " + api, "UNAUTHENTICATED"),
            ("ModelMetadata, wrong token", g.ModelMetadata, mm, "wrong", None, "UNAUTHENTICATED"),
            ("ModelMetadata, API token", g.ModelMetadata, mm, api, None, "OK"),
            ("RepositoryIndex, API token", g.RepositoryIndex, ri, api, None, "PERMISSION_DENIED"),
            ("RepositoryIndex, admin token", g.RepositoryIndex, ri, admin, None, "OK")):
        got = gcall(fn, req, tok, raw)
        ok(got == want, "gRPC %s: %s" % (what, want), got)
    ch.close()


def slow_tls_reader(port, cert, api):
    """One ModelInfer of 16 MiB to 'huge' from a hand-written HTTP/2 client
    over TLS (ALPN h2, a 4 KiB receive buffer) that reads nothing for 2 s,
    so the server's TLS writes fill the socket and must resume. Returns
    "exact" or what went wrong."""
    import socket
    import ssl
    _, pb, _ = grpc_stubs()
    n = 4194304
    pattern = [((i * 37) % 201 - 100) / 64.0 for i in range(1024)]
    rq = pb.ModelInferRequest(model_name="huge")
    x = rq.inputs.add()
    x.name, x.datatype = "x0", "FP32"
    x.shape.extend([1, n])
    rq.raw_input_contents.append(struct.pack("<1024f", *pattern) * (n // 1024))
    msg = rq.SerializeToString()
    body = b"\x00" + struct.pack(">I", len(msg)) + msg
    want = struct.pack("<1024f", *[max(v, 0.0) for v in pattern]) * (n // 1024)

    def frame(kind, flags, sid, payload):
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", sid) + payload

    def header(name, value):  # HPACK: literal, not indexed, no Huffman
        return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value

    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(60)
    data, done, buf = b"", "", b""
    try:
        raw.connect(("127.0.0.1", port))
        ctx = ssl.create_default_context(cafile=cert)
        ctx.set_alpn_protocols(["h2"])
        so = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        hb = header(b":method", b"POST") + header(b":scheme", b"https") + \
            header(b":path", b"/inference.GRPCInferenceService/ModelInfer") + \
            header(b":authority", b"127.0.0.1") + header(b"content-type", b"application/grpc") + \
            header(b"te", b"trailers") + header(b"authorization", ("Bearer " + api).encode())
        so.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
                   frame(4, 0, 0, struct.pack(">HI", 4, 2**31 - 1)) +          # initial window
                   frame(8, 0, 0, struct.pack(">I", 2**31 - 1 - 65535)) +      # connection window
                   frame(1, 4, 1, hb))
        # The request within the server's flow-control windows, as a client
        # must: reading its SETTINGS and WINDOW_UPDATEs while sending (a
        # client that overruns them gets a GOAWAY, which the server cannot
        # deliver to one that reads nothing: both would wait).
        win = {"stream": 65535, "conn": 65535, "init": 65535}

        def pump():
            nonlocal buf
            b = so.recv(1 << 16)
            if not b:
                raise OSError("the server closed the connection while the request was sent")
            buf += b
            while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
                ln, kind, flags = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
                sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                payload, buf = buf[9:9 + ln], buf[9 + ln:]
                if kind == 4 and not flags & 1:
                    for j in range(0, len(payload) - 5, 6):
                        ident, val = struct.unpack(">HI", payload[j:j + 6])
                        if ident == 4:
                            win["stream"] += val - win["init"]
                            win["init"] = val
                    so.sendall(frame(4, 1, 0, b""))  # SETTINGS ack
                elif kind == 8:
                    inc = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
                    win["conn" if sid == 0 else "stream"] += inc
                elif kind in (3, 7):
                    raise OSError("RST_STREAM or GOAWAY while sending: %r" % payload[:40])
        for i in range(0, len(body), 16384):
            chunk = body[i:i + 16384]
            while min(win["stream"], win["conn"]) < len(chunk):
                pump()
            win["stream"] -= len(chunk)
            win["conn"] -= len(chunk)
            so.sendall(frame(0, 1 if i + 16384 >= len(body) else 0, 1, chunk))
        time.sleep(2)
        while not done and len(data) < len(body) + 4096:
            b = so.recv(1 << 16)
            if not b:
                done = "the server closed the connection"
                break
            buf += b
            while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
                ln, kind, flags = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
                sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                payload, buf = buf[9:9 + ln], buf[9 + ln:]
                if kind == 0 and sid == 1:
                    data += payload
                elif kind == 1 and sid == 1 and flags & 1:
                    done = "trailers"
                elif kind in (3, 7):
                    done = "RST_STREAM or GOAWAY %r" % payload[:40]
        so.close()
    except (OSError, ssl.SSLError) as e:
        return "%s: %s" % (type(e).__name__, e)
    if done != "trailers":
        return done or "no trailers"
    try:
        r = pb.ModelInferResponse.FromString(data[5:])
    except Exception as e:  # noqa: BLE001
        return "undecodable response (%d bytes): %s" % (len(data), e)
    return "exact" if r.raw_output_contents[0] == want else "wrong output (%d bytes)" % len(data)


def test_grpc_tls(s, api, cert):
    """gRPC on the TLS port: real clients (python3-grpcio with the CA, h2load),
    and clients that do not speak TLS with ALPN h2 are dropped while the
    server keeps serving."""
    import socket
    import ssl
    grpc, pb, pbg = grpc_stubs()
    # A client that connects and never starts the handshake: dropped after
    # 10 s (checked at the end), while every other client is served.
    idle = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=5)
    idle_t0 = time.time()
    log = s.log_text()
    ok("gRPC over TLS (ALPN h2) on 127.0.0.1:%d" % s.grpc_port in log and "gRPC has no TLS" not in log,
       "the log says gRPC is served over TLS, with no cleartext warning")
    md = [("authorization", "Bearer " + api)]
    rq = pb.ModelInferRequest(model_name="relu", id="tls")
    t = rq.inputs.add()
    t.name, t.datatype = "x0", "FP32"
    t.shape.extend([1, 4])
    rq.raw_input_contents.append(struct.pack("<4f", 1, -2, 3, -4))

    def infer_ok(what):
        ch = tls_channel(grpc, s.grpc_port, cert)
        try:
            r = pbg.GRPCInferenceServiceStub(ch).ModelInfer(rq, timeout=30, metadata=md)
            got = list(struct.unpack("<4f", r.raw_output_contents[0]))
            return ok(got == [1, 0, 3, 0] and r.id == "tls", what, got)
        except grpc.RpcError as e:
            return ok(False, what, (e.code().name, e.details()))
        finally:
            ch.close()

    infer_ok("gRPC ModelInfer over TLS (python3-grpcio, the test's CA): relu's output")

    # Four connections at once, 1 MiB each way per call: every output exact.
    errs = []

    def big(k):
        n = 262144
        ch = tls_channel(grpc, s.grpc_port, cert)
        g = pbg.GRPCInferenceServiceStub(ch)
        for i in range(2):
            vals = rand_vals(n, 100 + 2 * k + i)
            req = pb.ModelInferRequest(model_name="big")
            x = req.inputs.add()
            x.name, x.datatype = "x0", "FP32"
            x.shape.extend([1, n])
            req.raw_input_contents.append(struct.pack("<%df" % n, *vals))
            try:
                r = g.ModelInfer(req, timeout=60, metadata=md)
                if r.raw_output_contents[0] != struct.pack("<%df" % n, *[max(v, 0.0) for v in vals]):
                    errs.append("connection %d call %d: wrong output" % (k, i))
            except grpc.RpcError as e:
                errs.append("connection %d call %d: %s %s" % (k, i, e.code().name, e.details()))
        ch.close()
    th = [threading.Thread(target=big, args=(k,)) for k in range(4)]
    for x in th:
        x.start()
    for x in th:
        x.join(120)
    ok(not errs and not any(x.is_alive() for x in th),
       "gRPC over TLS: 4 connections x 2 calls of 1 MiB each way, outputs exact", errs[:3])
    got = slow_tls_reader(s.grpc_port, cert, api)
    ok(got == "exact", "gRPC over TLS to a client that reads nothing for 2 s: the 16 MiB answer "
       "arrives whole afterwards (TLS writes resumed)", got)
    # The client verifies the server: another CA's client refuses it.
    other = os.path.join(WORK, "tls", "other.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    other + ".key", "-out", other, "-days", "1", "-subj", "/CN=127.0.0.1"],
                   capture_output=True, timeout=60)
    ch = tls_channel(grpc, s.grpc_port, other)
    try:
        pbg.GRPCInferenceServiceStub(ch).ServerLive(pb.ServerLiveRequest(), timeout=10)
        code = "OK"
    except grpc.RpcError as e:
        code = e.code().name
    ch.close()
    ok(code == "UNAVAILABLE", "a gRPC client trusting another CA refuses the server", code)

    # h2load: a ModelInfer message in a gRPC frame, 20 requests on 2 TLS connections.
    msg = rq.SerializeToString()
    body = os.path.join(WORK, "tls", "infer.grpc")
    write(body, b"\x00" + struct.pack(">I", len(msg)) + msg)
    r = subprocess.run(["h2load", "-n", "20", "-c", "2", "-d", body,
                        "-H", "content-type: application/grpc", "-H", "te: trailers",
                        "-H", "authorization: Bearer " + api,
                        "https://127.0.0.1:%d/inference.GRPCInferenceService/ModelInfer" % s.grpc_port],
                       capture_output=True, text=True, timeout=120)
    ok(r.returncode == 0 and "Application protocol: h2" in r.stdout and "TLS Protocol:" in r.stdout and
       "20 succeeded" in r.stdout and "status codes: 20 2xx" in r.stdout,
       "h2load over TLS: ALPN h2, 20 gRPC ModelInfer calls succeed",
       (r.returncode, r.stdout[-600:], r.stderr[-200:]))

    # Bad paths: each client is dropped, and the server goes on.
    ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
    t0 = time.time()
    try:
        pbg.GRPCInferenceServiceStub(ch).ServerLive(pb.ServerLiveRequest(), timeout=15)
        code = "OK"
    except grpc.RpcError as e:
        code = e.code().name
    ch.close()
    ok(code == "UNAVAILABLE" and time.time() - t0 < 15,
       "a plaintext (h2c) gRPC client on the TLS port: UNAVAILABLE, not a hang", code)

    def raw(payload, wrap=None):
        """Send payload, read until the server closes (bounded); the bytes back."""
        so = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=15)
        got = b""
        try:
            if wrap:
                so = wrap(so)
            so.sendall(payload)
            while len(got) < 1 << 16:
                b = so.recv(4096)
                if not b:
                    break
                got += b
        except (OSError, ssl.SSLError) as e:
            return got, type(e).__name__
        finally:
            so.close()
        return got, "closed"

    got, how = raw(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00" * 64)
    ok(how in ("closed", "ConnectionResetError") and b"HTTP/2" not in got,
       "the HTTP/2 cleartext preface on the TLS port: the connection is closed", (how, got[:40]))
    got, how = raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    ok(how in ("closed", "ConnectionResetError") and b"HTTP/1.1 200" not in got,
       "plain HTTP/1.1 on the gRPC TLS port: closed", (how, got[:40]))

    def no_h2(so):
        ctx = ssl.create_default_context(cafile=cert)
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx.wrap_socket(so, server_hostname="127.0.0.1")
    got, how = raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", no_h2)
    log = s.log_text()
    ok(how in ("SSLError", "SSLZeroReturnError", "closed", "ConnectionResetError") and not got and
       ('did not negotiate ALPN "h2"' in log or "application protocol" in log),
       "a TLS client offering only ALPN http/1.1: closed with no answer, logged", (how, got[:40]))
    ok("gRPC: TLS handshake failed" in log, "the server logs the failed handshakes",
       [ln for ln in log.splitlines() if "gRPC" in ln][-4:])
    infer_ok("after the bad clients, gRPC over TLS still answers")
    try:
        idle.settimeout(max(1.0, 15 - (time.time() - idle_t0)))
        end = idle.recv(1)
    except OSError as e:
        end = type(e).__name__
    waited = time.time() - idle_t0
    idle.close()
    # Closed (not a recv timeout), and not before the 10 s.
    ok(end in (b"", "ConnectionResetError") and waited > 9 and
       "TLS handshake not finished within 10000 ms" in s.log_text(),
       "a client that never starts the TLS handshake is dropped after 10 s (seen closed at %.1f s)" %
       waited, end)


def test_bench_smoke():
    """bench/serve-bench --quick runs end to end (wrk, h2load, npu bench):
    a table with nonzero throughput and no failed request. Not timed."""
    bench = os.path.join(HERE, "..", "..", "bench", "serve-bench")
    env = dict(os.environ, NPU=os.path.abspath(NPU) if os.sep in NPU else NPU, NPU_NO_BUILD="1")
    r = subprocess.run([bench, "--quick", "--secs", "1"], capture_output=True, text=True,
                       timeout=300, env=env)
    # The load table's rows have 9 columns (the overhead table's 6); the
    # last, copies per request, is a number for a server that counts them.
    cells = [x for x in (line.split("|")[1:-1] for line in r.stdout.splitlines()
                         if line.startswith("| small CNN")) if len(x) == 9]
    tiny = [line.split("|")[1:-1] for line in r.stdout.splitlines()
            if line.startswith("| loopback ")]
    good = [x for x in cells if float(x[4]) > 0 and int(x[7]) == 0 and
            x[8].strip().replace(".", "").isdigit()]
    ok(r.returncode == 0 and len(cells) == 4 and len(good) == 4 and len(tiny) == 2 and
       all(float(t[1]) > 0 and int(t[4]) == 0 for t in tiny),
       "bench/serve-bench --quick: HTTP and gRPC cells with throughput and 0 errors (%d of %d)" %
       (len(good), len(cells)), (r.stdout + r.stderr)[-1500:])


def main():
    repo = os.path.join(WORK, "repo")
    main_repo(repo)
    r = subprocess.run([NPU, "serve", "--help"], capture_output=True, text=True, timeout=30)
    ok(r.returncode == 0 and "--model-repository" in r.stdout, "npu serve --help")
    s = Server("main", repo, "--http-max-body-bytes", str(4 << 20), "--http-thread-count", "8")
    s.repo = repo
    servers = [s]
    try:
        if not ok(s.up(), "the server starts on an ephemeral port (%s)" % s.port, s.log_text()):
            return
        for name, fn in (("endpoints", test_endpoints), ("infer", test_infer),
                         ("timeline", test_timeline),
                         ("batching", test_batching), ("priorities", test_priorities),
                         ("bad inputs", test_bad_inputs), ("grpc", test_grpc),
                         ("metrics", test_metrics)):
            try:
                if fn is test_endpoints:
                    fn(s, repo)
                else:
                    fn(s)
            except Exception as e:  # a broken section fails, the rest still run
                ok(False, "%s: %s: %s" % (name, type(e).__name__, e))
        for fn in (test_explicit, test_poll, test_security, test_multi_npu):
            try:
                servers.append(fn())
            except Exception as e:
                ok(False, "%s: %s: %s" % (fn.__name__, type(e).__name__, e))
        try:
            test_bench_smoke()
        except Exception as e:
            ok(False, "bench smoke: %s: %s" % (type(e).__name__, e))
        try:
            test_sigterm(s)
        except Exception as e:
            ok(False, "sigterm: %s: %s" % (type(e).__name__, e))
        for x in servers[1:]:
            if x is not None:
                rc = x.stop(30)
                ok(rc == 0, "%s server exits 0 on SIGTERM" % x.name, rc)
    finally:
        for x in servers:
            if x is not None and x.proc.poll() is None:
                x.proc.kill()


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
