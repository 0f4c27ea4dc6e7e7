#!/usr/bin/env python3
"""The HTTP front end against hostile clients (issue 28; Documentation/serving.md,
"Limits and hardening"): auth and size checks on the headers before any body,
the server-wide body budget, header and body deadlines, the per-client
connection cap, management calls once any token is set, cross-site and DNS
rebinding refusals, TLS 1.2+, what the panel shows an API token, and queued
requests dropped when their client leaves. Raw sockets from 127.0.0.1, the
well-behaved client from 127.0.0.2. Prints "ok - ..." lines and
"N passed, N failed".

usage: test_hardening_http.py WORKDIR"""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_serve as ts  # noqa: E402

ok = ts.ok
API, ADMIN = "api-Hard-51c0e", "admin-Hard-9ad27"
RELU_BODY = json.dumps({"inputs": [{"name": "x0", "shape": [1, 4], "datatype": "FP32",
                                    "data": [1, -2, 3, -4]}]}).encode()


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def connect(port, src="127.0.0.1", timeout=10):
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.settimeout(timeout)
    c.bind((src, 0))
    c.connect(("127.0.0.1", port))
    return c


def head(method, path, headers):
    lines = ["%s %s HTTP/1.1" % (method, path)] + ["%s: %s" % kv for kv in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_response(c, timeout=5.0):
    """(status, headers, body) of one response, status 0 if none came in time."""
    c.settimeout(timeout)
    data = b""
    deadline = time.time() + timeout
    try:
        while b"\r\n\r\n" not in data and time.time() < deadline:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        if b"\r\n\r\n" not in data:
            return 0, {}, data
        hdr, body = data.split(b"\r\n\r\n", 1)
        lines = hdr.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        h = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            h[k.strip().lower()] = v.strip()
        n = int(h.get("content-length", "0"))
        while len(body) < n and time.time() < deadline:
            chunk = c.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, h, body
    except OSError:
        return 0, {}, data


def raw(port, method, path, headers, body=b"", src="127.0.0.1", timeout=10):
    c = connect(port, src, timeout)
    try:
        headers = dict(headers)
        headers.setdefault("Host", "127.0.0.1:%d" % port)
        if body or method == "POST":
            headers.setdefault("Content-Length", str(len(body)))
        c.sendall(head(method, path, headers) + body)
        return read_response(c, timeout)
    finally:
        c.close()


def closed_by_peer(c, wait):
    """True if the server closes (or resets) 'c' within 'wait' seconds."""
    c.settimeout(wait)
    try:
        while True:
            if not c.recv(4096):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def repo_with(name, models):
    repo = os.path.join(ts.WORK, name)
    for m in models:
        ts.onnx_model("%s/%s/1/model.onnx" % (repo, m), "Relu", 1, "N,4")
    return repo


# ---- Auth and size on the headers, the body budget -----------------------------------

def test_preauth(s):
    bearer = {"Authorization": "Bearer " + API}
    big = 64 << 20
    # A refused request is answered on its headers: the body is never awaited.
    for what, hdrs, want in (("no token", {}, 401),
                             ("a wrong token", {"Authorization": "Bearer nope"}, 401),
                             ("a body over the limit, with the token", bearer, 413)):
        c = connect(s.port)
        hdrs = dict(hdrs, Host="127.0.0.1", **{"Content-Type": "application/json",
                                             "Content-Length": str(big + 1 if want == 413 else big)})
        c.sendall(head("POST", "/v2/models/relu/infer", hdrs))
        t0 = time.time()
        st, h, _ = read_response(c, 5)
        c.close()
        ok(st == want and h.get("connection", "").lower() == "close",
           "infer with %s and a 64 MiB Content-Length: %d on the headers, before the body (%.2f s)"
           % (what, want, time.time() - t0), (st, h))
    # The review's attack: 16 connections pushing 8 MiB each with no token.
    before = rss_mb(s.proc.pid)
    socks = []
    for _ in range(16):
        c = connect(s.port)
        c.sendall(head("POST", "/v2/models/relu/infer",
                       {"Host": "127.0.0.1", "Content-Length": str(big)}))
        socks.append(c)
    chunk = b"0" * (64 << 10)
    sent = 0
    for _ in range(128):
        for c in socks:
            try:
                c.setblocking(False)
                c.send(chunk)
                sent += len(chunk)
            except OSError:
                pass
    time.sleep(0.5)
    after = rss_mb(s.proc.pid)
    for c in socks:
        c.close()
    ok(after - before < 64, "16 unauthenticated 64 MiB uploads: the server's RSS grows %.0f MB (< 64)"
       % (after - before), (before, after, sent))


def test_body_budget(s):
    """--http-max-body-bytes 4 MiB, --http-max-buffered-bytes 8 MiB."""
    hdr = {"Host": "127.0.0.1", "Content-Type": "application/json", "Content-Length": str(4 << 20)}
    held = []
    for _ in range(2):
        c = connect(s.port)
        c.sendall(head("POST", "/v2/models/relu/infer", hdr) + b"{")
        held.append(c)
    time.sleep(0.3)
    c = connect(s.port)
    c.sendall(head("POST", "/v2/models/relu/infer", hdr))
    st, _, body = read_response(c, 5)
    c.close()
    ok(st == 503 and b"max-buffered-bytes" in body,
       "a third 4 MiB body while two hold the 8 MiB budget: 503 on its headers", (st, body[:200]))
    for c in held:
        c.close()
    ok(ts.wait_for(lambda: raw(s.port, "POST", "/v2/models/relu/infer",
                               {"Content-Type": "application/json"}, RELU_BODY)[0] == 200, 5),
       "the budget comes back when those clients leave: the next request is served")
    # Clients that send half a body and close normally (FIN, not a reset):
    # their connections, and the budget they reserved, go at once, not
    # after the inactivity timeout (60 s).
    for _ in range(2):
        c = connect(s.port)
        c.sendall(head("POST", "/v2/models/relu/infer", hdr) + b"{" * 1024)
        c.close()
    t0 = time.time()

    def third_gets_budget():
        c = connect(s.port)
        c.sendall(head("POST", "/v2/models/relu/infer", hdr))
        st, _, _ = read_response(c, 0.3)
        c.close()
        return st != 503
    ok(ts.wait_for(third_gets_budget, 5),
       "two clients that close mid-body give their connections and budget back at once (%.1f s)"
       % (time.time() - t0))


# ---- Deadlines and connection caps --------------------------------------------------

def test_slowloris(s):
    """--http-header-timeout-secs 2, --http-body-timeout-secs 3,
    --http-max-connections-per-client 40."""
    attackers, refused = [], 0
    for i in range(60):
        try:
            c = connect(s.port)
            c.sendall(b"GET /v2/health/live HTTP/1.1\r\n")
            attackers.append(c)
        except OSError:
            refused += 1
    time.sleep(0.3)
    # Past the per-client cap the server closes at once.
    capped = sum(1 for c in attackers[40:] if closed_by_peer(c, 0.5)) + refused
    ok(capped >= 15, "60 connections from one address, cap 40: %d of the last 20 closed at once"
       % capped)
    good, worst = 0, 0.0
    t_end = time.time() + 2.5
    while time.time() < t_end:
        for c in attackers[:40]:
            try:
                c.send(b"X-Trickle: 1\r\n")   # one header line, again and again
            except OSError:
                pass
        t0 = time.time()
        st, _, _ = raw(s.port, "GET", "/v2/health/live", {}, src="127.0.0.2", timeout=5)
        worst = max(worst, time.time() - t0)
        good += st == 200
        time.sleep(0.25)
    ok(good >= 5, "a client at 127.0.0.2 is served during the trickle (%d answers, slowest %.2f s)"
       % (good, worst))
    # The header deadline (2 s) closed every trickler, though each kept sending.
    alive = [c for c in attackers[:40] if not closed_by_peer(c, 1.5)]
    ok(not alive, "connections trickling header lines are closed after --http-header-timeout-secs (%d of 40 left)"
       % len(alive))
    for c in attackers:
        c.close()
    # A body trickled a byte at a time outlives --http-body-timeout-secs: closed.
    c = connect(s.port)
    c.sendall(head("POST", "/v2/models/relu/infer",
                   {"Host": "127.0.0.1", "Content-Type": "application/json",
                    "Content-Length": str(len(RELU_BODY))}))
    t0, closed = time.time(), False
    for b in RELU_BODY[:-1]:
        try:
            c.send(bytes([b]))
        except OSError:
            closed = True
            break
        if closed_by_peer(c, 0.4):
            closed = True
            break
        if time.time() - t0 > 8:
            break
    waited = time.time() - t0
    c.close()
    ok(closed and 2.5 < waited < 7,
       "a body trickled a byte at a time is closed after --http-body-timeout-secs 3 (%.1f s)" % waited)
    st, _, text = raw(s.port, "GET", "/metrics", {})
    hits = {}
    for line in text.decode().splitlines():
        if line.startswith("npu_serve_limit_hits_total{"):
            hits[line.split('"')[1]] = float(line.split()[-1])
    ok(hits.get("http_header_timeout", 0) >= 40 and hits.get("http_body_timeout", 0) >= 1,
       "npu_serve_limit_hits_total counts the closed connections", hits)


# ---- Management, cross-site requests, DNS rebinding ---------------------------------

def test_api_token_only(s):
    """--api-token set, --admin-token not: management is off, not open."""
    bearer = {"Authorization": "Bearer " + API, "Content-Type": "application/json"}
    for path in ("/v2/repository/index", "/v2/repository/models/relu/unload",
                 "/v2/repository/models/relu/load"):
        st, _, body = raw(s.port, "POST", path, {"Content-Type": "application/json"}, b"{}")
        ok(st == 403 and b"--admin-token" in body,
           "only --api-token: %s without a token: 403 naming --admin-token" % path, (st, body[:160]))
        st, _, body = raw(s.port, "POST", path, bearer, b"{}")
        ok(st == 403 and b"--admin-token" in body,
           "only --api-token: %s with the API token: 403 naming --admin-token" % path,
           (st, body[:200]))
    st, _, _ = raw(s.port, "GET", "/v2/models/relu/ready", {"Authorization": "Bearer " + API})
    ok(st == 200, "only --api-token: the model was neither unloaded nor reloaded", st)


def test_cross_site(s):
    """No tokens, explicit mode, --allowed-host npu.test."""
    port = s.port
    unload = "/v2/repository/models/relu/unload"
    js = {"Content-Type": "application/json"}
    for what, hdrs, want, needle in (
            ("Content-Type text/plain", {"Content-Type": "text/plain"}, 415, b"Content-Type"),
            ("a form's Content-Type", {"Content-Type": "application/x-www-form-urlencoded"}, 415,
             b"Content-Type"),
            ("multipart", {"Content-Type": "multipart/form-data; boundary=x"}, 415, b"Content-Type"),
            ("another site's Origin", dict(js, Origin="http://evil.example"), 403, b"Origin"),
            ("Origin on another port", dict(js, Origin="http://127.0.0.1:1"), 403, b"Origin"),
            ("Origin null", dict(js, Origin="null"), 403, b"Origin"),
            ("a rebound Host name", dict(js, Host="evil.example:%d" % port), 403, b"Host"),
            ("a rebound Host and its own Origin",
             dict(js, Host="evil.example:%d" % port, Origin="http://evil.example:%d" % port), 403,
             b"Host")):
        st, _, body = raw(port, "POST", unload, hdrs)
        ok(st == want and needle in body, "unload with %s: %d naming %s" % (what, want, needle.decode()),
           (st, body[:200]))
    st, _, _ = raw(port, "GET", "/v2/models/relu/ready", {})
    ok(st == 200, "none of those unloaded the model", st)
    for what, hdrs in (("Host localhost", dict(js, Host="localhost:%d" % port)),
                       ("Host npu.test (--allowed-host)", dict(js, Host="npu.test:%d" % port)),
                       ("its own Origin", dict(js, Origin="http://127.0.0.1:%d" % port))):
        st, _, body = raw(port, "POST", "/v2/repository/index", hdrs, b"{}")
        ok(st == 200, "repository index with %s: 200" % what, (st, body[:200]))
    st, _, body = raw(port, "POST", "/v2/models/relu/infer", js, RELU_BODY)
    ok(st == 200, "infer with Content-Type application/json: 200", (st, body[:200]))
    st, _, body = raw(port, "POST", unload, js)
    ok(st == 200, "unload with Content-Type application/json: 200", (st, body[:200]))


def test_panel_scope(s):
    """Tokens set; the repository has a model that fails to load."""
    def state(tok):
        st, _, body = raw(s.port, "GET", "/v2/panel/state", {"Authorization": "Bearer " + tok})
        return st, (ts.jbody(body) or {}).get("models", [])
    st, models = state(API)
    broken = [m for m in models if m.get("name") == "broken"]
    ok(st == 200 and broken and all("reason" not in m for m in models),
       "the panel state shows an API token the models' states but not the index's failure reasons",
       (st, models))
    st, models = state(ADMIN)
    ok(st == 200 and any(m.get("name") == "broken" and m.get("reason") for m in models),
       "the admin token sees the failure reason", (st, models))


# ---- TLS 1.2+ ------------------------------------------------------------------------

def tls_handshake(port, version):
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-" + version,
                        "-cipher", "DEFAULT@SECLEVEL=0", "-brief"],
                       input="", capture_output=True, text=True, timeout=20)
    return r.returncode == 0 and "CONNECTION ESTABLISHED" in r.stderr, r.stderr[-300:]


def test_tls(cert, key):
    repo = repo_with("tlsrepo", ["relu"])
    s = ts.Server("hard-tls", repo, "--tls-cert", cert, "--tls-key", key, "--grpc-port", "-1")
    try:
        if not ok(s.up(), "an HTTPS server starts", s.log_text()[-300:]):
            return
        for v, want in (("tls1", False), ("tls1_1", False), ("tls1_2", True), ("tls1_3", True)):
            got, err = tls_handshake(s.port, v)
            ok(got == want, "HTTPS: a %s handshake is %s" % (v.replace("_", "."),
                                                              "accepted" if want else "refused"), err)
    finally:
        s.stop(10)


# ---- Cancellation -----------------------------------------------------------------

CANCEL_CONFIG = """name: "slow"
max_batch_size: 1
input { name: "x0" data_type: TYPE_FP32 dims: [ %d, %d ] }
output { name: "y" data_type: TYPE_FP32 dims: [ %d, %d ] }
dynamic_batching { default_queue_policy { max_queue_size: 64 } }
instance_group { count: 1 kind: KIND_CPU }
"""


def executions(port):
    st, _, body = raw(port, "GET", "/v2/models/slow/stats", {})
    js = ts.jbody(body) or {}
    stats = js.get("model_stats", [{}])[0]
    return stats.get("execution_count", -1), stats


def test_cancel():
    ts.calibrate_slow()
    repo = os.path.join(ts.WORK, "cancelrepo")
    ts.write("%s/slow/1/model.onnx" % repo, ts.make_model.slow(ts.SLOW_K, ts.SLOW_ROWS, ts.SLOW_COLS))
    ts.write("%s/slow/config.pbtxt" % repo, CANCEL_CONFIG % ((ts.SLOW_ROWS, ts.SLOW_COLS) * 2))
    s = ts.Server("hard-cancel", repo, "--grpc-port", "-1")
    try:
        if not ok(s.up(), "a server with a slow model starts", s.log_text()[-300:]):
            return
        vals = [0.0] * (ts.SLOW_ROWS * ts.SLOW_COLS)
        hdr = json.dumps({"inputs": [{"name": "x0", "shape": [1, ts.SLOW_ROWS, ts.SLOW_COLS],
                                      "datatype": "FP32",
                                      "parameters": {"binary_data_size": 4 * len(vals)}}]}).encode()
        import struct
        body = hdr + struct.pack("<%df" % len(vals), *vals)
        headers = {"Content-Type": "application/octet-stream",
                   "Inference-Header-Content-Length": str(len(hdr)),
                   "Host": "127.0.0.1", "Content-Length": str(len(body))}
        base, _ = executions(s.port)
        # One request keeps the instance busy; twelve more queue and their clients leave.
        first = connect(s.port, timeout=60)
        first.sendall(head("POST", "/v2/models/slow/infer", headers) + body)
        gone = []
        for _ in range(12):
            c = connect(s.port)
            c.sendall(head("POST", "/v2/models/slow/infer", headers) + body)
            gone.append(c)
        time.sleep(0.1)
        for c in gone:
            c.close()
        st, _, _ = read_response(first, 60)
        first.close()
        ok(st == 200, "the request whose client stayed is answered", st)
        ts.wait_for(lambda: (lambda st: st.get("pending") == 0 and st.get("executing") == 0)(
            executions(s.port)[1]), 120)
        n, stats = executions(s.port)
        ran = n - base
        ok(1 <= ran <= 3, "12 queued requests whose clients left: %d of 13 ran (the rest dropped)" % ran,
           stats)
    finally:
        s.stop(30)


def section(name, fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 a broken section fails, the rest still run
        ok(False, "%s: %s: %s" % (name, type(e).__name__, e))


def main():
    servers = []

    def start(name, repo, *flags):
        s = ts.Server(name, repo, "--grpc-port", "-1", *flags)
        servers.append(s)
        ok(s.up(), "server '%s' starts" % name, s.log_text()[-300:])
        return s
    try:
        repo = repo_with("hardrepo", ["relu"])
        ts.write(os.path.join(repo, "broken", "1", "model.onnx"), b"not an onnx model")
        tok = start("hard-tok", repo, "--api-token", API, "--admin-token", ADMIN)
        if tok.up():
            section("pre-auth", test_preauth, tok)
            section("panel scope", test_panel_scope, tok)
        budget = start("hard-budget", repo_with("budgetrepo", ["relu"]), "--http-max-body-bytes",
                       str(4 << 20), "--http-max-buffered-bytes", str(8 << 20))
        if budget.up():
            section("body budget", test_body_budget, budget)
        slow = start("hard-slowloris", repo_with("slowrepo", ["relu"]), "--http-header-timeout-secs",
                     "2", "--http-body-timeout-secs", "3", "--http-max-connections-per-client", "40")
        if slow.up():
            section("slowloris", test_slowloris, slow)
        apionly = start("hard-apionly", repo_with("apirepo", ["relu"]), "--api-token", API,
                        "--model-control-mode", "explicit", "--load-model", "*")
        if apionly.up():
            section("api token only", test_api_token_only, apionly)
        open_ = start("hard-open", repo_with("openrepo", ["relu"]), "--model-control-mode", "explicit",
                      "--load-model", "*", "--allowed-host", "npu.test")
        if open_.up():
            section("cross-site", test_cross_site, open_)
        cert, key = ts.make_cert("hardtls")
        if ok(cert is not None, "openssl makes a certificate", key):
            section("tls", test_tls, cert, key)
        section("cancel", test_cancel)
        for s in servers:
            ok(s.stop(30) == 0, "server '%s' exits 0 on SIGTERM" % s.name)
    finally:
        for s in servers:
            if s.proc.poll() is None:
                s.proc.kill()


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (ts.passed, ts.failed))
    sys.exit(1 if ts.failed else 0)
