#!/usr/bin/env python3
"""BYTES tensors and the system shared-memory extension of npu serve
(issue 34): BYTES in and out over JSON, binary and gRPC, on an Identity
string model and an engine string model (ONNX StringNormalizer), their
batching and bad inputs; shared-memory regions registered, listed and
unregistered over HTTP and gRPC, inputs read and outputs written in place
(no host copy), and every bad region.

usage: test_ext_bytes_shm.py WORKDIR  (NPU, PROMTOOL from the environment)."""
import json
import mmap
import os
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
STRNORM = os.path.join(ts.TESTDATA, "test_strnormalizer_export_monday_casesensintive_upper")

BIDENT_CONFIG = """max_batch_size: 8
input { name: "x0" data_type: TYPE_STRING dims: [ 2 ] }
output { name: "y" data_type: TYPE_STRING dims: [ 2 ] }
dynamic_batching { max_queue_delay_microseconds: 300000 }
"""

# Fixed shapes, no batching: the plan fixes the output's size, so it is bound in place.
FIXED_CONFIG = """max_batch_size: 0
input { name: "x0" data_type: TYPE_FP32 dims: [ 2, 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 2, 4 ] }
"""

# Waits up to 2 s for a batch of 8: a request that stays queued a while.
HOLD_CONFIG = """max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 2000000 }
"""

SHM_PREFIX = "/npu-test-%d-" % os.getpid()
created = []


def ser(strings):
    """Triton's serialized BYTES: 4-byte LE length then the bytes, per element."""
    out = b""
    for s in strings:
        b = s.encode() if isinstance(s, str) else s
        out += struct.pack("<I", len(b)) + b
    return out


def deser(blob):
    out, off = [], 0
    while off < len(blob):
        n = struct.unpack_from("<I", blob, off)[0]
        out.append(blob[off + 4:off + 4 + n])
        off += 4 + n
    return out


def post(port, path, body=None, headers=None, timeout=60):
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    return ts.request(port, "POST", path, body, headers or JSON_HDR, timeout)


def infer_raw(port, model, req, blobs=b"", timeout=60):
    """POST an inference request (JSON + binary); returns (status, json, binary part)."""
    body = json.dumps(req).encode()
    hdr = dict(JSON_HDR)
    if blobs:
        hdr["Inference-Header-Content-Length"] = str(len(body))
        body += blobs
    st, h, data = ts.request(port, "POST", "/v2/models/%s/infer" % model, body, hdr, timeout)
    hl = int(h.get("inference-header-content-length", len(data)))
    return st, ts.jbody(data[:hl]), data[hl:]


def err_of(js):
    return (js or {}).get("error", "")


# ---- TensorProto (the ONNX test data) without the onnx package ---------------

def varint(b, off):
    x = shift = 0
    while True:
        c = b[off]
        off += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return x, off


def tensor_strings(path):
    """(dims, [bytes]) of a STRING TensorProto file."""
    b = open(path, "rb").read()
    off, dims, strs = 0, [], []
    while off < len(b):
        key, off = varint(b, off)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, off = varint(b, off)
            if num == 1:
                dims.append(v)
        elif wt == 2:
            n, off = varint(b, off)
            v = b[off:off + n]
            off += n
            if num == 6:
                strs.append(v)
            elif num == 1:   # packed dims
                p = 0
                while p < len(v):
                    d, p = varint(v, p)
                    dims.append(d)
        elif wt == 5:
            off += 4
        elif wt == 1:
            off += 8
    return dims, strs


# ---- Shared memory on the client side -------------------------------------------

def shm_create(name, size):
    key = SHM_PREFIX + name
    fd = os.open("/dev/shm" + key, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.ftruncate(fd, size)
    m = mmap.mmap(fd, size)
    os.close(fd)
    created.append(key)
    return key, m


def shm_cleanup():
    for key in created:
        try:
            os.unlink("/dev/shm" + key)
        except OSError:
            pass


def f32(vals):
    return struct.pack("<%df" % len(vals), *vals)


def unf32(b):
    return list(struct.unpack("<%df" % (len(b) // 4), b))


def metric(port, name):
    st, _, b = ts.request(port, "GET", "/metrics")
    for line in b.decode().splitlines() if st == 200 else []:
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return None


# ---- BYTES ---------------------------------------------------------------------------

def test_bytes_meta(s):
    st, _, b = ts.request(s.port, "GET", "/v2/models/bident")
    js = ts.jbody(b) or {}
    ok(st == 200 and js.get("inputs", [{}])[0].get("datatype") == "BYTES" and
       js.get("outputs", [{}])[0].get("datatype") == "BYTES",
       "bytes: model metadata says BYTES", b)
    st, _, b = ts.request(s.port, "GET", "/v2/models/bident/config")
    js = ts.jbody(b) or {}
    ok(st == 200 and js.get("input", [{}])[0].get("data_type") == "TYPE_STRING",
       "bytes: the config says TYPE_STRING", b)


def test_bytes_json(s):
    data = [["hello", "w\u00f6rld"], ["", "a \"quoted\" \u2713"]]
    req = {"inputs": [{"name": "x0", "datatype": "BYTES", "shape": [2, 2], "data": data}]}
    st, js, _ = infer_raw(s.port, "bident", req)
    out = (js or {}).get("outputs", [{}])[0]
    ok(st == 200 and out.get("datatype") == "BYTES" and out.get("shape") == [2, 2] and
       out.get("data") == sum(data, []),
       "bytes: JSON strings in (nested), JSON strings out", js)
    req["inputs"][0]["data"] = sum(data, [])
    st, js, _ = infer_raw(s.port, "bident", req)
    ok(st == 200 and js["outputs"][0]["data"] == sum(data, []),
       "bytes: JSON strings in (flat)", js)


def test_bytes_binary(s):
    elems = [b"abc", b"", "\u00e9t\u00e9".encode(), b"x" * 1000]
    blob = ser(elems)
    req = {"inputs": [{"name": "x0", "datatype": "BYTES", "shape": [2, 2],
                       "parameters": {"binary_data_size": len(blob)}}],
           "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}
    st, js, bin_ = infer_raw(s.port, "bident", req, blob)
    out = (js or {}).get("outputs", [{}])[0]
    ok(st == 200 and out.get("parameters", {}).get("binary_data_size") == len(blob) and
       bin_ == blob, "bytes: binary in, serialized binary out (4-byte LE prefixes)", (js, bin_[:40]))
    req["outputs"] = [{"name": "y", "parameters": {"binary_data": False}}]
    st, js, _ = infer_raw(s.port, "bident", req, blob)
    ok(st == 200 and js["outputs"][0].get("data") == [e.decode() for e in elems],
       "bytes: binary in, JSON strings out", js)
    # Not UTF-8: no JSON string holds it, so the output goes binary.
    raw = [b"\xff\xfe", b"ok", b"a\x00b", b"\xc3"]
    blob = ser(raw)
    req["inputs"][0]["parameters"]["binary_data_size"] = len(blob)
    st, js, bin_ = infer_raw(s.port, "bident", req, blob)
    out = (js or {}).get("outputs", [{}])[0]
    ok(st == 200 and "data" not in out and
       out.get("parameters", {}).get("binary_data_size") == len(blob) and deser(bin_) == raw,
       "bytes: an output that is not UTF-8 is sent binary even when JSON was asked", (js, bin_))


def test_bytes_grpc(s, grpc, pb, stub):
    req = pb.ModelInferRequest(model_name="bident")
    t = req.inputs.add(name="x0", datatype="BYTES", shape=[1, 2])
    t.contents.bytes_contents.extend([b"grpc", b"\x00\xffbin"])
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    ok(code == "OK" and r.outputs[0].datatype == "BYTES" and list(r.outputs[0].shape) == [1, 2] and
       deser(r.raw_output_contents[0]) == [b"grpc", b"\x00\xffbin"],
       "bytes: gRPC bytes_contents in, serialized raw_output_contents out", (code, r))
    req = pb.ModelInferRequest(model_name="bident")
    req.inputs.add(name="x0", datatype="BYTES", shape=[1, 2])
    req.raw_input_contents.append(ser([b"raw", b"input"]))
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    ok(code == "OK" and deser(r.raw_output_contents[0]) == [b"raw", b"input"],
       "bytes: gRPC serialized raw_input_contents in", (code, r))
    req = pb.ModelInferRequest(model_name="bident")
    req.inputs.add(name="x0", datatype="BYTES", shape=[1, 2])
    req.raw_input_contents.append(struct.pack("<I", 50) + b"short")
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    ok(code == "INVALID_ARGUMENT" and "x0" in r and "claims 50 bytes" in r,
       "bytes: gRPC: a length prefix past the end is INVALID_ARGUMENT naming the input", (code, r))
    req = pb.ModelInferRequest(model_name="bident")
    t = req.inputs.add(name="x0", datatype="BYTES", shape=[1, 2])
    t.contents.bytes_contents.extend([b"one"])
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    ok(code == "INVALID_ARGUMENT" and "x0" in r and "1 elements but its shape has 2" in r,
       "bytes: gRPC: too few bytes_contents for the shape is INVALID_ARGUMENT", (code, r))


def test_bytes_batching(s):
    """Requests of one element each, queued within the batch delay, run as one batch."""
    before = stats_counts(s.port, "bident")
    results = {}

    def one(i):
        req = {"inputs": [{"name": "x0", "datatype": "BYTES", "shape": [1, 2],
                           "data": ["req%d" % i, "x" * i]}]}
        st, js, _ = infer_raw(s.port, "bident", req)
        results[i] = (st, js)

    th = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in th:
        t.start()
    for t in th:
        t.join(60)
    good = all(results.get(i, (0, None))[0] == 200 and
               results[i][1]["outputs"][0]["data"] == ["req%d" % i, "x" * i] and
               results[i][1]["outputs"][0]["shape"] == [1, 2] for i in range(6))
    after = stats_counts(s.port, "bident")
    inferences = after[0] - before[0]
    executions = after[1] - before[1]
    ok(good and inferences == 6 and executions < 6,
       "bytes: 6 BYTES requests batched along dim 0 (%d executions), each gets its own rows"
       % executions, (results, before, after))


def stats_counts(port, model):
    st, _, b = ts.request(port, "GET", "/v2/models/%s/stats" % model)
    js = ts.jbody(b) or {}
    m = (js.get("model_stats") or [{}])[0]
    return m.get("inference_count", 0), m.get("execution_count", 0)


def test_bytes_engine(s, grpc, pb, stub):
    dims, xs = tensor_strings(os.path.join(STRNORM, "test_data_set_0", "input_0.pb"))
    _, want = tensor_strings(os.path.join(STRNORM, "test_data_set_0", "output_0.pb"))
    st, _, b = ts.request(s.port, "GET", "/v2/models/strnorm")
    meta = ts.jbody(b) or {}
    iname = meta.get("inputs", [{}])[0].get("name", "x")
    req = {"inputs": [{"name": iname, "datatype": "BYTES", "shape": dims,
                       "data": [x.decode() for x in xs]}]}
    st, js, _ = infer_raw(s.port, "strnorm", req)
    got = [x.encode() for x in (js or {}).get("outputs", [{}])[0].get("data", [])]
    ok(st == 200 and got == want,
       "bytes: the engine runs StringNormalizer (upper) over HTTP: %s -> %s" % (xs, want), js)
    req = pb.ModelInferRequest(model_name="strnorm")
    t = req.inputs.add(name=iname, datatype="BYTES", shape=dims)
    t.contents.bytes_contents.extend(xs)
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    ok(code == "OK" and deser(r.raw_output_contents[0]) == want,
       "bytes: StringNormalizer over gRPC matches the ONNX test's expected output", (code, r))


def test_bytes_bad(s):
    def bad(req, blobs, want, what, model="bident"):
        st, js, _ = infer_raw(s.port, model, req, blobs)
        ok(st == 400 and want in err_of(js), "bytes: %s: 400 naming it" % what, (st, js))

    def binreq(blob, shape=(1, 2)):
        return {"inputs": [{"name": "x0", "datatype": "BYTES", "shape": list(shape),
                            "parameters": {"binary_data_size": len(blob)}}]}

    blob = struct.pack("<I", 100) + b"abc" + ser(["b"])
    bad(binreq(blob), blob, "input 'x0': BYTES element 0 at offset 0 claims 100 bytes",
        "a length prefix past the end of the data")
    blob = ser(["a", "b"]) + b"\x01\x00"
    bad(binreq(blob), blob, "input 'x0': the BYTES data holds more than the 2 elements",
        "prefixes that do not fill binary_data_size exactly")
    blob = ser(["a"]) + b"\x05\x00"
    bad(binreq(blob), blob, "length prefix cut short", "a prefix cut short")
    blob = ser(["a", "b", "c"])
    bad(binreq(blob), blob, "more than the 2 elements", "3 elements for a shape of 2 (binary)")
    blob = ser(["a"])
    bad(binreq(blob), blob, "holds 1 elements but its shape has 2", "1 element for 2 (binary)")
    bad({"inputs": [{"name": "x0", "datatype": "BYTES", "shape": [1, 2],
                     "data": ["a", "b", "c"]}]}, b"", "input 'x0': 'data' has more elements",
        "3 JSON strings for a shape of 2")
    bad({"inputs": [{"name": "x0", "datatype": "BYTES", "shape": [1, 2], "data": ["a", 7]}]},
        b"", "input 'x0': data[1] is not a string", "a JSON element that is not a string")
    bad({"inputs": [{"name": "x0", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]},
        b"", "input 'x0': datatype FP32 but model 'bident' expects BYTES",
        "FP32 sent to a BYTES input")
    bad({"inputs": [{"name": "x0", "datatype": "BYTES", "shape": [2, 4],
                     "data": ["a"] * 8}]}, b"", "input 'x0': datatype BYTES but model 'fixed' expects FP32",
        "BYTES sent to an FP32 input", model="fixed")
    st, js, _ = infer_raw(s.port, "bident", {"inputs": [{"name": "x0", "datatype": "BYTES",
                                                          "shape": [1, 2], "data": ["still", "up"]}]})
    ok(st == 200 and js["outputs"][0]["data"] == ["still", "up"],
       "bytes: the server keeps serving after the bad inputs", js)


# ---- Shared memory -------------------------------------------------------------------------

def register(port, name, key, size, offset=0):
    return post(port, "/v2/systemsharedmemory/region/%s/register" % name,
                {"key": key, "offset": offset, "byte_size": size})


def shm_req(inp, out, in_off=0, out_off=0, in_size=32, out_size=32, model_shape=(2, 4)):
    req = {"inputs": [{"name": "x0", "datatype": "FP32", "shape": list(model_shape),
                       "parameters": {"shared_memory_region": inp,
                                      "shared_memory_byte_size": in_size}}]}
    if in_off:
        req["inputs"][0]["parameters"]["shared_memory_offset"] = in_off
    if out:
        req["outputs"] = [{"name": "y", "parameters": {"shared_memory_region": out,
                                                       "shared_memory_byte_size": out_size}}]
        if out_off:
            req["outputs"][0]["parameters"]["shared_memory_offset"] = out_off
    return req


def test_shm_http(s):
    key_in, m_in = shm_create("in", 4096)
    key_out, m_out = shm_create("out", 4096)
    st, _, b = register(s.port, "in", key_in, 4096)
    ok(st == 200, "shm: register a region over HTTP", b)
    st, _, b = register(s.port, "out", key_out, 1024, offset=1024)
    ok(st == 200, "shm: register a region at an offset of its object", b)
    st, _, b = ts.request(s.port, "GET", "/v2/systemsharedmemory/status")
    js = ts.jbody(b)
    want = sorted([{"name": "in", "key": key_in, "offset": 0, "byte_size": 4096},
                   {"name": "out", "key": key_out, "offset": 1024, "byte_size": 1024}],
                  key=lambda r: r["name"])
    ok(st == 200 and isinstance(js, list) and sorted(js, key=lambda r: r["name"]) == want,
       "shm: status lists every region as Triton's JSON", js)
    st, _, b = ts.request(s.port, "GET", "/v2/systemsharedmemory/region/out/status")
    ok(st == 200 and ts.jbody(b) == [want[1]], "shm: status of one region", b)

    vals = [-1.5, 2.0, -3.0, 4.25, 0.5, -0.5, 7.0, -8.0]
    m_in[64:96] = f32(vals)
    expect = [max(v, 0.0) for v in vals]
    ref = ts.infer(s.port, "fixed", [("x0", "FP32", [2, 4], vals)])
    c0 = ts.tensor_copies(s.port, "fixed")
    st, js, bin_ = infer_raw(s.port, "fixed", shm_req("in", "out", in_off=64, out_off=32))
    c1 = ts.tensor_copies(s.port, "fixed")
    out = (js or {}).get("outputs", [{}])[0]
    got = unf32(m_out[1024 + 32:1024 + 64])
    ok(st == 200 and got == expect and ref[2] and ref[2]["y"] == expect,
       "shm: input read from and output written into regions, same as without shm", (js, got, ref))
    ok(st == 200 and "data" not in out and not bin_ and
       out.get("parameters") == {"shared_memory_region": "out", "shared_memory_byte_size": 32,
                                 "shared_memory_offset": 32},
       "shm: the response carries only the output's shared-memory parameters", js)
    ok(c0 is not None and c1 == c0, "shm: the shared-memory request made 0 host copies (%s -> %s)"
       % (c0, c1))
    # The same request over binary HTTP copies the output into the response at most.
    st, js, _ = infer_raw(s.port, "fixed", shm_req("in", None, in_off=64))
    ok(st == 200 and js["outputs"][0].get("data") == expect,
       "shm: a shared-memory input with a JSON output", js)
    return m_in, m_out


def test_shm_bad(s, m_in):
    def bad(req, want, what, status=400, model="fixed"):
        st, js, _ = infer_raw(s.port, model, req)
        ok(st == status and want in err_of(js), "shm: %s: %d naming it" % (what, status),
           (st, js))

    bad(shm_req("nosuch", None), "input 'x0': shared memory region 'nosuch' is not registered",
        "an unregistered input region")
    bad(shm_req("in", "nosuch"), "output 'y': shared memory region 'nosuch' is not registered",
        "an unregistered output region")
    bad(shm_req("in", None, in_size=16),
        "input 'x0': shared_memory_byte_size 16 but shape of 8 FP32 elements needs 32 bytes",
        "a byte size too small for the tensor")
    bad(shm_req("in", None, in_off=4080),
        "input 'x0': shared_memory_offset 4080 + shared_memory_byte_size 32 exceed the 4096 bytes of region 'in'",
        "an offset past the region")
    bad(shm_req("in", "out", out_size=16),
        "output 'y' is 32 bytes but shared_memory_byte_size of region 'out' gives 16",
        "an output region too small")
    bad(shm_req("in", "out", out_off=1000),
        "output 'y': shared_memory_offset 1000 + shared_memory_byte_size 32 exceed the 1024 bytes",
        "an output offset past the region")
    req = shm_req("in", None)
    del req["inputs"][0]["parameters"]["shared_memory_byte_size"]
    bad(req, "needs both parameters.shared_memory_region and parameters.shared_memory_byte_size",
        "a region without a byte size")
    req = shm_req("in", None)
    req["inputs"][0]["data"] = [0] * 8
    bad(req, "input 'x0' has both shared memory parameters and 'data'", "shared memory and data")
    key, _ = shm_create("dup", 4096)
    st, _, b = register(s.port, "in", key, 4096)
    ok(st == 400 and "'in' is already registered" in err_of(ts.jbody(b)),
       "shm: registering a name twice: 400", b)
    st, _, b = register(s.port, "ghost", SHM_PREFIX + "does-not-exist", 4096)
    ok(st == 404 and "cannot open shared memory object" in err_of(ts.jbody(b)),
       "shm: a key that does not exist: 404", b)
    st, _, b = register(s.port, "big", key, 8192)
    ok(st == 400 and "exceed the 4096 bytes" in err_of(ts.jbody(b)),
       "shm: a region larger than its object: 400", b)
    st, _, b = register(s.port, "bad/name", key, 16)
    ok(st in (400, 404), "shm: a region name with a slash is refused", (st, b))
    # Another user's object (root here: chown it; else create it as nobody).
    other, _ = shm_create("other", 4096)
    try:
        os.chown("/dev/shm" + other, 65534, 65534)
        st, _, b = register(s.port, "other", other, 4096)
        ok(st == 400 and "belongs to uid 65534" in err_of(ts.jbody(b)),
           "shm: a region whose object belongs to another user is refused", b)
    except PermissionError:
        ok(True, "shm: another user's region # SKIP cannot chown as uid %d" % os.getuid())
    st, _, b = ts.request(s.port, "GET", "/v2/systemsharedmemory/region/nosuch/status")
    ok(st == 404, "shm: status of an unknown region: 404", b)
    st, _, b = post(s.port, "/v2/systemsharedmemory/region/nosuch/unregister")
    ok(st == 404, "shm: unregistering an unknown region: 404", b)
    st, js, _ = infer_raw(s.port, "fixed", shm_req("in", "out"))
    ok(st == 200, "shm: the server keeps serving after the bad regions", js)


def test_shm_unregister_in_use(s):
    """A queued request holds its region: unregistering it does not unmap it under the request."""
    key, m = shm_create("held", 4096)
    vals = [1.0, -2.0, 3.0, -4.0]
    m[0:16] = f32(vals)
    st, _, b = register(s.port, "held", key, 4096)
    mapped0 = metric(s.metrics_port, "npu_serve_shm_mapped_bytes")
    res = {}

    def go():
        res["r"] = infer_raw(s.port, "hold", shm_req("held", "held", out_off=512, in_size=16,
                                                      out_size=16, model_shape=(1, 4)))

    t = threading.Thread(target=go)
    t.start()
    time.sleep(0.5)   # queued: the batch waits up to 2 s for 8 requests
    st2, _, b2 = post(s.port, "/v2/systemsharedmemory/region/held/unregister")
    st3, _, b3 = ts.request(s.port, "GET", "/v2/systemsharedmemory/region/held/status")
    t.join(60)
    st4, js, _ = res.get("r", (0, None, b""))
    got = unf32(m[512:528])
    ok(st == 200 and st2 == 200 and st3 == 404,
       "shm: a region in use unregisters at once (gone from the status)", (b, b2, b3))
    ok(st4 == 200 and got == [1.0, 0.0, 3.0, 0.0],
       "shm: the request using it still reads and writes it", (js, got))
    mapped1 = metric(s.metrics_port, "npu_serve_shm_mapped_bytes")
    ok(mapped0 is not None and mapped1 is not None and mapped1 == mapped0 - 4096,
       "shm: its mapping goes once the request is done (%s -> %s bytes)" % (mapped0, mapped1))


def test_shm_grpc(s, grpc, pb, stub):
    key_in, m_in = shm_create("gin", 4096)
    key_out, m_out = shm_create("gout", 4096)
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryRegister,
                           pb.SystemSharedMemoryRegisterRequest(name="gin", key=key_in,
                                                                offset=0, byte_size=4096))
    ok(code == "OK", "shm: gRPC SystemSharedMemoryRegister", r)
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryRegister,
                           pb.SystemSharedMemoryRegisterRequest(name="gout", key=key_out,
                                                                offset=0, byte_size=4096))
    code2, r2 = ts.grpc_call(grpc, stub.SystemSharedMemoryRegister,
                             pb.SystemSharedMemoryRegisterRequest(name="gout", key=key_out,
                                                                  offset=0, byte_size=4096))
    ok(code == "OK" and code2 == "INVALID_ARGUMENT" and "already registered" in r2,
       "shm: gRPC: registering a name twice is INVALID_ARGUMENT", (code, r2))
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryRegister,
                           pb.SystemSharedMemoryRegisterRequest(name="gx", key=SHM_PREFIX + "none",
                                                                byte_size=64))
    ok(code == "NOT_FOUND", "shm: gRPC: a key that does not exist is NOT_FOUND", (code, r))
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryStatus,
                           pb.SystemSharedMemoryStatusRequest(name="gin"))
    ok(code == "OK" and list(r.regions.keys()) == ["gin"] and r.regions["gin"].key == key_in and
       r.regions["gin"].byte_size == 4096, "shm: gRPC SystemSharedMemoryStatus of one region", r)
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryStatus,
                           pb.SystemSharedMemoryStatusRequest())
    ok(code == "OK" and {"gin", "gout"} <= set(r.regions.keys()),
       "shm: gRPC SystemSharedMemoryStatus of all regions", r)
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryStatus,
                           pb.SystemSharedMemoryStatusRequest(name="nosuch"))
    ok(code == "NOT_FOUND", "shm: gRPC status of an unknown region is NOT_FOUND", (code, r))

    vals = [3.0, -1.0, 0.25, -7.5, 9.0, -9.0, 1.0, 2.0]
    m_in[256:288] = f32(vals)
    req = pb.ModelInferRequest(model_name="fixed")
    t = req.inputs.add(name="x0", datatype="FP32", shape=[2, 4])
    t.parameters["shared_memory_region"].string_param = "gin"
    t.parameters["shared_memory_byte_size"].int64_param = 32
    t.parameters["shared_memory_offset"].int64_param = 256
    o = req.outputs.add(name="y")
    o.parameters["shared_memory_region"].string_param = "gout"
    o.parameters["shared_memory_byte_size"].int64_param = 32
    c0 = ts.tensor_copies(s.port, "fixed")
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    c1 = ts.tensor_copies(s.port, "fixed")
    got = unf32(m_out[0:32])
    ok(code == "OK" and got == [max(v, 0.0) for v in vals],
       "shm: gRPC infer with input and output in shared memory", (code, r, got))
    ok(code == "OK" and len(r.raw_output_contents) == 1 and not r.raw_output_contents[0] and
       r.outputs[0].parameters["shared_memory_region"].string_param == "gout" and
       r.outputs[0].parameters["shared_memory_byte_size"].int64_param == 32,
       "shm: gRPC: the output has its region's parameters and no contents", r)
    ok(c0 is not None and c1 == c0, "shm: gRPC: 0 host copies (%s -> %s)" % (c0, c1))
    # Mixed: one raw input is not needed for an input in shared memory.
    t.parameters["shared_memory_region"].string_param = "nosuch"
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    ok(code == "INVALID_ARGUMENT" and "'nosuch' is not registered" in r,
       "shm: gRPC: an unregistered region is INVALID_ARGUMENT", (code, r))
    t.parameters["shared_memory_region"].string_param = "gin"
    t.parameters["shared_memory_byte_size"].int64_param = 64
    code, r = ts.grpc_call(grpc, stub.ModelInfer, req)
    ok(code == "INVALID_ARGUMENT" and "needs 32 bytes" in r,
       "shm: gRPC: a byte size that does not fit the tensor is INVALID_ARGUMENT", (code, r))
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryUnregister,
                           pb.SystemSharedMemoryUnregisterRequest(name="gin"))
    code2, r2 = ts.grpc_call(grpc, stub.SystemSharedMemoryUnregister,
                             pb.SystemSharedMemoryUnregisterRequest(name="gin"))
    ok(code == "OK" and code2 == "NOT_FOUND", "shm: gRPC unregister, then NOT_FOUND", (code, r2))
    code, r = ts.grpc_call(grpc, stub.SystemSharedMemoryUnregister,
                           pb.SystemSharedMemoryUnregisterRequest())
    code2, r2 = ts.grpc_call(grpc, stub.SystemSharedMemoryStatus,
                             pb.SystemSharedMemoryStatusRequest())
    ok(code == "OK" and code2 == "OK" and not r2.regions,
       "shm: gRPC unregister of all regions empties the status", r2)
    code, r = ts.grpc_call(grpc, stub.ServerMetadata, pb.ServerMetadataRequest())
    ok(code == "OK" and "system_shared_memory" in r.extensions,
       "shm: server metadata lists system_shared_memory", r)


def test_shm_bounds(repo):
    s = ts.Server("bytes-shm-bounds", repo, "--shm-max-regions", "2", "--shm-max-bytes", "16384")
    try:
        if not ok(s.up(), "shm: a server with --shm-max-regions 2 --shm-max-bytes 16384 starts",
                  s.log_text()):
            return
        keys = [shm_create("b%d" % i, 16384)[0] for i in range(3)]
        st1, _, _ = register(s.port, "b0", keys[0], 4096)
        st2, _, b2 = register(s.port, "b1", keys[1], 8192)
        st3, _, b3 = register(s.port, "b2", keys[2], 64)
        ok(st1 == 200 and st2 == 200 and st3 == 400 and "--shm-max-regions" in err_of(ts.jbody(b3)),
           "shm: a region over --shm-max-regions is refused", (st1, b2, b3))
        post(s.port, "/v2/systemsharedmemory/region/b1/unregister")
        st, _, b = register(s.port, "b1", keys[1], 16384)   # 4096 + 16384 > 16384
        ok(st == 400 and "--shm-max-bytes" in err_of(ts.jbody(b)),
           "shm: a region over --shm-max-bytes is refused", b)
        st, _, b = ts.request(s.metrics_port, "GET", "/metrics")
        text = b.decode()
        rc, out = ts.promtool(b)
        ok(rc == 0, "shm: promtool check metrics is clean", out)
        ok(metric(s.metrics_port, "npu_serve_shm_regions") == 1 and
           metric(s.metrics_port, "npu_serve_shm_mapped_bytes") == 4096 and
           (metric(s.metrics_port, "npu_serve_shm_register_refused_total") or 0) >= 2 and
           "npu_serve_shm_registrations_total" in text,
           "shm: regions, mapped bytes, registrations and refusals in /metrics")
    finally:
        s.stop()


def test_shm_auth(repo):
    s = ts.Server("bytes-shm-auth", repo, "--api-token", "apitok", "--admin-token", "admintok")
    try:
        if not ok(s.up(), "shm: a server with API and admin tokens starts", s.log_text()):
            return
        key, _ = shm_create("auth", 4096)
        body = json.dumps({"key": key, "offset": 0, "byte_size": 4096}).encode()
        api = dict(JSON_HDR, Authorization="Bearer apitok")
        admin = dict(JSON_HDR, Authorization="Bearer admintok")
        st1, _, _ = ts.request(s.port, "POST", "/v2/systemsharedmemory/region/a/register", body, api)
        st2, _, _ = ts.request(s.port, "POST", "/v2/systemsharedmemory/region/a/register", body, admin)
        st3, _, _ = ts.request(s.port, "GET", "/v2/systemsharedmemory/status", None, api)
        st4, _, _ = ts.request(s.port, "POST", "/v2/systemsharedmemory/unregister", b"", api)
        ok(st1 == 403 and st2 == 200 and st3 == 200 and st4 == 403,
           "shm: registering needs the admin token, status the API token", (st1, st2, st3, st4))
    finally:
        s.stop()


def make_repo(repo):
    ts.write(f"{repo}/bident/1/model.onnx", make_model.model("Identity", 1, ["N", "2"], 8))
    ts.write(f"{repo}/bident/config.pbtxt", BIDENT_CONFIG)
    os.makedirs(f"{repo}/strnorm/1", exist_ok=True)
    with open(os.path.join(STRNORM, "model.onnx"), "rb") as f:
        ts.write(f"{repo}/strnorm/1/model.onnx", f.read())
    ts.write(f"{repo}/fixed/1/model.onnx", make_model.model("Relu", 1, ["2", "4"], 1))
    ts.write(f"{repo}/fixed/config.pbtxt", FIXED_CONFIG)
    ts.write(f"{repo}/hold/1/model.onnx", make_model.model("Relu", 1, ["N", "4"], 1))
    ts.write(f"{repo}/hold/config.pbtxt", HOLD_CONFIG)


def main():
    repo = os.path.join(WORK, "bytes-shm-repo")
    make_repo(repo)
    s = ts.Server("bytes-shm", repo)
    try:
        if not ok(s.up(), "the server starts", s.log_text() if os.path.exists(s.log) else ""):
            return
        grpc, pb, pbg = ts.grpc_stubs()
        ch = grpc.insecure_channel("127.0.0.1:%d" % s.grpc_port)
        stub = pbg.GRPCInferenceServiceStub(ch)
        m_in = None
        for name, fn in (("bytes meta", lambda: test_bytes_meta(s)),
                         ("bytes json", lambda: test_bytes_json(s)),
                         ("bytes binary", lambda: test_bytes_binary(s)),
                         ("bytes grpc", lambda: test_bytes_grpc(s, grpc, pb, stub)),
                         ("bytes batching", lambda: test_bytes_batching(s)),
                         ("bytes engine", lambda: test_bytes_engine(s, grpc, pb, stub)),
                         ("bytes bad", lambda: test_bytes_bad(s)),
                         ("shm http", lambda: test_shm_http(s)),
                         ("shm bad", lambda: test_shm_bad(s, m_in)),
                         ("shm in use", lambda: test_shm_unregister_in_use(s)),
                         ("shm grpc", lambda: test_shm_grpc(s, grpc, pb, stub)),
                         ("shm bounds", lambda: test_shm_bounds(repo)),
                         ("shm auth", lambda: test_shm_auth(repo))):
            try:
                fn()
            except Exception as e:  # a broken section fails, the rest still run
                ok(False, "%s: %s: %s" % (name, type(e).__name__, e))
        ch.close()
        ok(s.proc.poll() is None, "the server is still up after every bad input")
    finally:
        rc = s.stop()
        ok(rc == 0, "the server stops cleanly on SIGTERM (exit %s)" % rc)
        shm_cleanup()


if __name__ == "__main__":
    try:
        main()
    finally:
        print("%d passed, %d failed" % (ts.passed, ts.failed))
    sys.exit(1 if ts.failed else 0)
