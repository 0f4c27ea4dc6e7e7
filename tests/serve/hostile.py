#!/usr/bin/env python3
"""hostile.py: a hostile-client soak of `npu serve` (issue 28).

For a bounded time it runs, from 127.0.0.1, a mix of attacks in threads of
one attacker process (each attack bounded in count and time), while a
well-behaved client in another process does valid HTTP and gRPC inference
at a steady rate from 127.0.0.2 (its sockets bound before connect; gRPC
through a small local relay so grpcio's connections leave from 127.0.0.2
too), recording every latency and failure. The server's VmRSS, open fds
and threads are sampled once a second (/proc/PID). A quiet phase (the good
client alone) comes first, for comparison; after the attack a settle phase
waits for fds and threads to come back.

Attacks (names as in the report):
  slowloris        HTTP connections trickling one header line every few s
  slow_body        HTTP bodies written a KiB at a time (valid token)
  slow_reader      a big response asked for and never read (tiny SO_RCVBUF)
  drop_mid_request HTTP clients leaving half-way through their body
  drop_mid_wait    HTTP clients leaving while their slow request is queued
  preauth_body     Content-Length 64 MiB trickled with no or a wrong token
  bad_json         malformed JSON, huge JSON of a wrong shape, huge ids,
                   parameters.timeout 2^63-1
  grpc_idle        TCP connections to gRPC that never send the preface
  grpc_big_open    ModelInfer streams of ~60 MiB with no END_STREAM, no token
  grpc_rst         slow ModelInfer calls cancelled (RST_STREAM) after sending
  grpc_no_read     a ModelStreamInfer whose client never opens its window
  churn            load/unload loop (explicit mode with the admin token)

As a module: run(Config(...)) returns the summary dict. As a script:
  hostile.py --http-port P --grpc-port G --pid PID [--token T]
             [--admin-token A] [--duration SECS] [--json FILE] ...
(hostile.py --help lists every option). Only 127.x addresses are used.
"""
import argparse
import http.client
import json
import os
import random
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "userspace", "serve")

ATTACKS = ["slowloris", "slow_body", "slow_reader", "drop_mid_request", "drop_mid_wait",
           "preauth_body", "bad_json", "grpc_idle", "grpc_big_open", "grpc_rst",
           "grpc_no_read", "churn"]

# Sizes of the attack mix at scale 1 (the counts are multiplied by --scale).
MIX = {
    "slowloris": 1100,       # above libmicrohttpd's 1024-connection limit
    "slow_body": 32,
    "slow_reader": 16,
    "drop_mid_request": 2000,
    "drop_mid_wait": 400,
    "preauth_body": 16,      # x 64 MiB announced, 63 MiB sent
    "bad_json": 400,         # of which big_json bodies of ~48 MiB: 3
    "grpc_idle": 300,        # above the 256 gRPC connections
    "grpc_big_open": 16,     # x 60 MiB
    "grpc_rst": 300,
    "grpc_no_read": 2,       # streams, each up to 120 messages
    "churn": 500,
}


# The connection floods (slowloris, grpc_idle) start this many seconds into
# the attack, so the other attackers hold their connections before a server
# without per-client limits runs out of them.
FLOOD_DELAY = 3.0

# Repeated attacks: their counts are per 30 s of attack (a long soak keeps them
# going); the others are connections held at once.
REPEATED = ("drop_mid_request", "drop_mid_wait", "bad_json", "grpc_rst", "churn")


def mix_count(attack, cfg):
    n = MIX[attack] * cfg.scale
    if attack in REPEATED:
        n *= max(1.0, cfg.duration / 30.0)
    return max(1, int(n))


class Config:
    """Everything run() needs; the script's flags map onto these fields."""

    def __init__(self, **kw):
        self.host = "127.0.0.1"          # the server and the attackers' source
        self.good_host = "127.0.0.2"     # the well-behaved client's source
        self.http_port = None
        self.grpc_port = None            # None or < 0: no gRPC parts
        self.pid = None                  # the server's pid for /proc sampling
        self.token = None                # API token (the good client uses it)
        self.admin_token = None          # enables churn
        self.duration = 30.0             # attack phase, seconds
        self.quiet = None                # quiet phase; None: duration / 2
        self.settle = 5.0                # after the attack, before the end sample
        self.settle_max = 20.0           # longest wait for fds/threads to come back
        self.model = "relu:x0:FP32:1x4"  # the good client's model
        self.slow_model = "slow:x0:FP32:1x512x256"   # big inputs and outputs
        self.churn_model = None          # a model the churn loop loads/unloads
        self.scale = 1.0
        self.attacks = list(ATTACKS)
        self.good_http_interval = 0.1
        self.good_grpc_interval = 0.2
        self.good_timeout = 10.0
        self.json_path = None
        self.workdir = None
        self.python = sys.executable or "/usr/bin/python3"
        for k, v in kw.items():
            if not hasattr(self, k):
                raise TypeError("Config: no field %r" % k)
            setattr(self, k, v)


def parse_model(spec):
    """'name:input:DTYPE:1x4' -> (name, input, dtype, [1, 4])."""
    name, inp, dt, shape = spec.split(":")
    return name, inp, dt, [int(d) for d in shape.split("x")]


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def grpc_stubs(out):
    """Generate the Python stubs of grpc_service.proto into out; import them."""
    if not os.path.exists(os.path.join(out, "grpc_service_pb2_grpc.py")):
        os.makedirs(out, exist_ok=True)
        r = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--python_out=" + out,
                            "--grpc_python_out=" + out,
                            "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                            os.path.join(PROTO_DIR, "grpc_service.proto"),
                            os.path.join(PROTO_DIR, "model_config.proto")],
                           capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise RuntimeError("protoc: " + r.stderr)
    if out not in sys.path:
        sys.path.insert(0, out)
    import grpc  # noqa: F401  (python3-grpcio)
    import grpc_service_pb2
    import grpc_service_pb2_grpc
    return grpc, grpc_service_pb2, grpc_service_pb2_grpc


def percentile(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


# ---- Server sampling ----------------------------------------------------------

def proc_sample(pid, kinds=False):
    """{'rss_kb', 'fds', 'threads'} of pid, or None if it is gone."""
    try:
        rss = threads = None
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = os.listdir("/proc/%d/fd" % pid)
        out = {"t": time.time(), "rss_kb": rss or 0, "fds": len(fds), "threads": threads or 0}
        if kinds:
            out["fd_kinds"] = {}
            for fd in fds:
                try:
                    k = os.readlink("/proc/%d/fd/%s" % (pid, fd)).split(":")[0]
                except OSError:
                    continue
                k = k if not k.startswith("/") else "file"
                out["fd_kinds"][k] = out["fd_kinds"].get(k, 0) + 1
        return out
    except (OSError, ValueError):
        return None


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop_ev = pid, [], threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            s = proc_sample(self.pid)
            if s:
                self.samples.append(s)
            self.stop_ev.wait(1.0)


# ---- Raw HTTP/2 (the malformed gRPC parts) ------------------------------------

def hpack_int(v, prefix, flags=0):
    mx = (1 << prefix) - 1
    if v < mx:
        return bytes([flags | v])
    out = [flags | mx]
    v -= mx
    while v >= 128:
        out.append((v & 127) | 128)
        v >>= 7
    out.append(v)
    return bytes(out)


def hpack_literal(name, value):
    """A literal header field without indexing, new name, no Huffman."""
    n, v = name.encode(), value.encode()
    return b"\x00" + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v


def h2_frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid & 0x7FFFFFFF) + payload


def wait_writable(sock, ms):
    """select() cannot take the fds above 1024 an attack holds; poll can."""
    p = select.poll()
    p.register(sock, select.POLLOUT)
    p.poll(ms)


def grpc_frame(msg):
    return b"\x00" + struct.pack(">I", len(msg)) + msg


class H2Raw:
    """A minimal HTTP/2 client: enough to open gRPC streams and misbehave."""

    def __init__(self, host, port, window=None, timeout=5.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setblocking(False)
        self.rbuf = b""
        self.conn_window = 65535
        self.peer_initial = 65535
        self.stream_window = {}
        self.closed = False
        self.goaway = False
        settings = b""
        if window is not None:   # SETTINGS_INITIAL_WINDOW_SIZE: the server may not send
            settings += struct.pack(">HI", 4, window)
        settings += struct.pack(">HI", 2, 0)   # no push
        self.send_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, settings))

    def send_all(self, data, deadline=None):
        view = memoryview(data)
        deadline = deadline or time.time() + 10
        while view and time.time() < deadline:
            try:
                n = self.sock.send(view)
                view = view[n:]
            except BlockingIOError:
                wait_writable(self.sock, 200)
            except OSError:
                self.closed = True
                return False
        return not view

    def headers(self, sid, path, token=None, end_stream=False):
        block = b"".join(hpack_literal(k, v) for k, v in (
            (":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "127.0.0.1"), ("content-type", "application/grpc"),
            ("te", "trailers")))
        if token:
            block += hpack_literal("authorization", "Bearer " + token)
        self.stream_window[sid] = self.peer_initial
        return self.send_all(h2_frame(1, 0x4 | (0x1 if end_stream else 0), sid, block))

    def data(self, sid, payload, end_stream=False):
        return self.send_all(h2_frame(0, 0x1 if end_stream else 0, sid, payload))

    def rst(self, sid, code=8):
        return self.send_all(h2_frame(3, 0, sid, struct.pack(">I", code)))

    def can_send(self, sid):
        return min(self.conn_window, self.stream_window.get(sid, 0), 16384)

    def pump(self, read=True):
        """Read what arrived; answer SETTINGS and PING; track WINDOW_UPDATEs."""
        if not read or self.closed:
            return
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    self.closed = True
                    break
                self.rbuf += chunk
        except BlockingIOError:
            pass
        except OSError:
            self.closed = True
        while len(self.rbuf) >= 9:
            ln = struct.unpack(">I", b"\x00" + self.rbuf[:3])[0]
            if len(self.rbuf) < 9 + ln:
                break
            ftype, flags = self.rbuf[3], self.rbuf[4]
            sid = struct.unpack(">I", self.rbuf[5:9])[0] & 0x7FFFFFFF
            payload = self.rbuf[9:9 + ln]
            self.rbuf = self.rbuf[9 + ln:]
            if ftype == 4 and not flags & 1:
                for i in range(0, len(payload) - 5, 6):
                    k, v = struct.unpack(">HI", payload[i:i + 6])
                    if k == 4:
                        for s in self.stream_window:
                            self.stream_window[s] += v - self.peer_initial
                        self.peer_initial = v
                self.send_all(h2_frame(4, 1, 0))
            elif ftype == 6 and not flags & 1:
                self.send_all(h2_frame(6, 1, 0, payload))
            elif ftype == 8 and len(payload) == 4:
                inc = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
                if sid == 0:
                    self.conn_window += inc
                elif sid in self.stream_window:
                    self.stream_window[sid] += inc
            elif ftype == 7:
                self.goaway = True
            elif ftype == 3:
                self.stream_window.pop(sid, None)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ---- The attacks (run in the attacker process) -------------------------------

class Attacks:
    def __init__(self, cfg, stubs_dir):
        self.cfg = cfg
        self.stop = threading.Event()
        self.deadline = time.time() + cfg.duration
        self.lock = threading.Lock()
        self.stats = {a: {"ops": 0, "outcomes": {}} for a in cfg.attacks}
        self.socks = []
        self.stubs_dir = stubs_dir
        self.auth = ("Authorization: Bearer %s\r\n" % cfg.token) if cfg.token else ""
        self.model = parse_model(cfg.model)
        self.slow = parse_model(cfg.slow_model)

    def n(self, attack):
        return mix_count(attack, self.cfg)

    def count(self, attack, outcome, ops=1):
        with self.lock:
            st = self.stats[attack]
            st["ops"] += ops
            st["outcomes"][outcome] = st["outcomes"].get(outcome, 0) + 1

    def running(self):
        return not self.stop.is_set() and time.time() < self.deadline

    def sleep(self, secs):
        self.stop.wait(max(0.0, min(secs, self.deadline - time.time())))

    def bounded(self, timeout):
        """No blocking call outlives the attack by more than a second."""
        return max(0.5, min(timeout, self.deadline - time.time() + 1))

    def connect(self, port, rcvbuf=None, timeout=5.0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(self.bounded(timeout))
        s.connect((self.cfg.host, port))
        with self.lock:
            self.socks.append(s)
        return s

    def drop(self, s, reset=False):
        try:
            if reset:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        except OSError:
            pass

    def http_head(self, method, path, extra="", length=None):
        h = "%s %s HTTP/1.1\r\nHost: %s:%d\r\n%s" % (method, path, self.cfg.host,
                                                     self.cfg.http_port, extra)
        if length is not None:
            h += "Content-Length: %d\r\n" % length
        return (h + "\r\n").encode()

    def read_status(self, s, timeout=10.0):
        """The status code of the first response on s (0: none)."""
        s.settimeout(self.bounded(timeout))
        buf = b""
        try:
            while b"\r\n" not in buf and len(buf) < 4096:
                c = s.recv(4096)
                if not c:
                    break
                buf += c
        except OSError:
            return 0
        try:
            return int(buf.split(b" ")[1])
        except (IndexError, ValueError):
            return 0

    def infer_body(self, spec):
        """A valid binary-tensor infer body for model spec and its headers."""
        name, inp, dt, shape = spec
        n = 1
        for d in shape:
            n *= d
        hdr = json.dumps({"inputs": [{"name": inp, "datatype": dt, "shape": shape,
                                      "parameters": {"binary_data_size": 4 * n}}]}).encode()
        return hdr + bytes(4 * n), "Inference-Header-Content-Length: %d\r\n" % len(hdr)

    # slowloris: many connections trickling a header line every few seconds.
    def slowloris(self):
        self.sleep(FLOOD_DELAY)
        conns, opened, target = [], 0, self.n("slowloris")
        max_opens = target * 3
        next_line = {}
        while self.running():
            # Ramped at 100 connections a second, as a botnet would come in.
            ramp = opened + 50
            while len(conns) < target and opened < min(max_opens, ramp) and self.running():
                try:
                    s = self.connect(self.cfg.http_port, timeout=2.0)
                    s.sendall(("POST /v2/models/%s/infer HTTP/1.1\r\nHost: x\r\n" %
                               self.model[0]).encode())
                    s.setblocking(False)
                    conns.append(s)
                    next_line[s] = time.time() + random.uniform(2, 8)
                    self.count("slowloris", "opened")
                except OSError:
                    self.count("slowloris", "connect failed")
                opened += 1
            now = time.time()
            for s in list(conns):
                if now < next_line[s]:
                    continue
                next_line[s] = now + 8
                try:
                    s.send(b"X-Slow: %d\r\n" % random.randrange(1000))
                    # Anything read back means the server answered or closed it.
                    r = s.recv(4096)
                    if not r:
                        raise ConnectionResetError
                    self.count("slowloris", "answered %s" % r[9:12].decode("latin1"), 0)
                    raise ConnectionResetError
                except BlockingIOError:
                    pass
                except OSError:
                    self.count("slowloris", "closed by server", 0)
                    conns.remove(s)
                    self.drop(s)
            self.sleep(0.5)
        for s in conns:
            self.drop(s)

    # Slow body writers: a valid token, a KiB of body every 2 s.
    def slow_body(self):
        conns = []
        for _ in range(self.n("slow_body")):
            if not self.running():
                break
            try:
                s = self.connect(self.cfg.http_port)
                s.sendall(self.http_head("POST", "/v2/models/%s/infer" % self.model[0],
                                         self.auth + "Content-Type: application/json\r\n",
                                         1 << 20))
                conns.append(s)
                self.count("slow_body", "opened")
            except OSError:
                self.count("slow_body", "connect failed")
        while self.running() and conns:
            for s in list(conns):
                try:
                    s.send(b" " * 1024)
                except OSError:
                    self.count("slow_body", "closed by server", 0)
                    conns.remove(s)
                    self.drop(s)
            self.sleep(2.0)

    # Slow readers: a big answer asked for, never read.
    def slow_reader(self):
        body, hl = self.infer_body(self.slow)
        for _ in range(self.n("slow_reader")):
            if not self.running():
                break
            try:
                s = self.connect(self.cfg.http_port, rcvbuf=4096)
                s.sendall(self.http_head("POST", "/v2/models/%s/infer" % self.slow[0],
                                         self.auth + hl, len(body)) + body)
                self.count("slow_reader", "sent, never read")
            except OSError as e:
                self.count("slow_reader", "failed: %s" % type(e).__name__)
            self.sleep(0.5)

    def drop_mid_request(self):
        for i in range(self.n("drop_mid_request")):
            if not self.running():
                break
            try:
                s = self.connect(self.cfg.http_port)
                s.sendall(self.http_head("POST", "/v2/models/%s/infer" % self.model[0],
                                         self.auth, 100000) + b"{" * 5000)
                self.drop(s, reset=bool(i & 1))
                self.count("drop_mid_request", "left")
            except OSError as e:
                self.count("drop_mid_request", "failed: %s" % type(e).__name__)
            self.sleep(0.05)

    def drop_mid_wait(self):
        body, hl = self.infer_body(self.slow)
        for i in range(self.n("drop_mid_wait")):
            if not self.running():
                break
            try:
                s = self.connect(self.cfg.http_port)
                s.sendall(self.http_head("POST", "/v2/models/%s/infer" % self.slow[0],
                                         self.auth + hl, len(body)) + body)
                time.sleep(0.05)
                self.drop(s, reset=bool(i & 1))
                self.count("drop_mid_wait", "left while queued")
            except OSError as e:
                self.count("drop_mid_wait", "failed: %s" % type(e).__name__)
            self.sleep(0.2)

    # 64 MiB announced, trickled at 2 MiB per 0.5 s, with no or a wrong token.
    def preauth_body(self):
        total, sent_max, chunk = 64 << 20, 63 << 20, bytes(2 << 20)
        conns = []
        for i in range(self.n("preauth_body")):
            try:
                s = self.connect(self.cfg.http_port)
                tok = "" if i & 1 else "Authorization: Bearer not-the-token\r\n"
                s.sendall(self.http_head("POST", "/v2/models/%s/infer" % self.model[0],
                                         tok + "Content-Type: application/json\r\n", total))
                conns.append([s, 0])
            except OSError:
                self.count("preauth_body", "connect failed")
        while self.running() and conns:
            for c in list(conns):
                if c[1] >= sent_max:
                    continue
                try:
                    c[0].settimeout(2.0)
                    c[0].sendall(chunk)
                    c[1] += len(chunk)
                    if c[1] >= sent_max:
                        self.count("preauth_body", "63 MiB sent, held open")
                except socket.timeout:
                    pass     # the server stopped reading: what a bound looks like
                except OSError:
                    self.count("preauth_body", "closed by server after %d MiB" % (c[1] >> 20))
                    conns.remove(c)
                    self.drop(c[0])
            self.sleep(0.5)
        with self.lock:
            self.stats["preauth_body"]["ops"] = self.n("preauth_body")
            self.stats["preauth_body"]["outcomes"]["MiB sent"] = sum(c[1] >> 20 for c in conns)

    def bad_json(self):
        name, inp, dt, shape = self.model
        path = "/v2/models/%s/infer" % name
        n = 1
        for d in shape:
            n *= d
        good = {"name": inp, "datatype": dt, "shape": shape, "data": [1.0] * n}
        big = (b'{"inputs":[{"name":"%s","datatype":"%s","shape":[1,4],"data":[' %
               (inp.encode(), dt.encode())) + b"0," * (24 << 20) + b'0]}]}'
        cases = [
            ("malformed", b'{"inputs": [ {"name": "x0", "datatype": '),
            ("malformed", b'\xff\xfe{]]]'),
            ("malformed", b'{"inputs": {"a": ' * 2000),
            ("wrong shape", json.dumps({"inputs": [dict(good, shape=[1, 1 << 40])]}).encode()),
            ("wrong shape", json.dumps({"inputs": [dict(good, shape=[-1, 4])]}).encode()),
            ("huge id", json.dumps({"id": "\u00e9" * 100, "inputs": [good]}).encode()),
            ("huge id", json.dumps({"id": "x" * (1 << 20), "inputs": [good]}).encode()),
            ("timeout 2^63-1", json.dumps({"inputs": [good], "parameters":
                                           {"timeout": (1 << 63) - 1}}).encode()),
        ]

        def send(what, body):
            try:
                s = self.connect(self.cfg.http_port, timeout=30.0)
                s.sendall(self.http_head("POST", path, self.auth +
                                         "Content-Type: application/json\r\n", len(body)) + body)
                st = self.read_status(s, 30.0)
                self.drop(s)
                self.count("bad_json", "%s: %s" % (what, st or "no answer"))
            except OSError as e:
                self.count("bad_json", "%s: %s" % (what, type(e).__name__))

        def bigs():
            # One at a time, beside the small ones: each may take the server seconds.
            for _ in range(max(1, int(3 * self.cfg.scale * max(1.0, self.cfg.duration / 30)))):
                if not self.running():
                    break
                send("48 MiB wrong-shape JSON", big)
                self.sleep(1.0)

        t = threading.Thread(target=bigs, daemon=True)
        t.start()
        for i in range(self.n("bad_json")):
            if not self.running():
                break
            send(*cases[i % len(cases)])
            self.sleep(0.05)
        t.join(max(0.1, self.deadline + 2 - time.time()))

    def grpc_idle(self):
        self.sleep(FLOOD_DELAY)
        idle = []
        for _ in range(self.n("grpc_idle")):
            if not self.running():
                break
            try:
                idle.append(self.connect(self.cfg.grpc_port, timeout=2.0))
                self.count("grpc_idle", "connected")
            except OSError:
                self.count("grpc_idle", "connect failed")
        # Held until the attack ends; then how many the server had closed.
        self.sleep(self.deadline - time.time() - 1)
        closed = 0
        for s in idle:
            try:
                s.setblocking(False)
                if s.recv(1) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        with self.lock:
            self.stats["grpc_idle"]["outcomes"]["closed by server at the end"] = closed

    def grpc_big_open(self):
        declared = 60 << 20
        msg_head = b"\x00" + struct.pack(">I", declared)
        conns = []
        for _ in range(self.n("grpc_big_open")):
            try:
                h = H2Raw(self.cfg.host, self.cfg.grpc_port)
                with self.lock:
                    self.socks.append(h.sock)
                h.headers(1, "/inference.GRPCInferenceService/ModelInfer")
                h.data(1, msg_head)
                conns.append([h, 5])
            except OSError:
                self.count("grpc_big_open", "connect failed")
        zero = bytes(16384)
        while self.running() and conns:
            busy = False
            for c in list(conns):
                h = c[0]
                h.pump()
                if h.closed or h.goaway:
                    self.count("grpc_big_open", "closed by server after %d MiB" % (c[1] >> 20))
                    conns.remove(c)
                    continue
                for _ in range(64):
                    n = min(h.can_send(1), declared + 5 - c[1])
                    if n <= 0:
                        break
                    if not h.data(1, zero[:n]):
                        break
                    h.conn_window -= n
                    h.stream_window[1] -= n
                    c[1] += n
                    busy = True
            if not busy:
                self.sleep(0.2)
        with self.lock:
            self.stats["grpc_big_open"]["ops"] = self.n("grpc_big_open")
            self.stats["grpc_big_open"]["outcomes"]["MiB sent (still open)"] = \
                sum(c[1] >> 20 for c in conns)

    def slow_request(self, pb):
        name, inp, dt, shape = self.slow
        rq = pb.ModelInferRequest(model_name=name, id="hostile")
        t = rq.inputs.add()
        t.name, t.datatype = inp, dt
        t.shape.extend(shape)
        n = 1
        for d in shape:
            n *= d
        rq.raw_input_contents.append(bytes(4 * n))
        return rq

    def grpc_rst(self):
        grpc, pb, pbg = grpc_stubs(self.stubs_dir)
        ch = grpc.insecure_channel("%s:%d" % (self.cfg.host, self.cfg.grpc_port))
        st = pbg.GRPCInferenceServiceStub(ch)
        md = [("authorization", "Bearer " + self.cfg.token)] if self.cfg.token else []
        rq = self.slow_request(pb)
        for _ in range(self.n("grpc_rst")):
            if not self.running():
                break
            f = st.ModelInfer.future(rq, metadata=md, timeout=30)
            time.sleep(0.03)
            if f.cancel():
                self.count("grpc_rst", "cancelled")
            else:
                try:
                    f.result(timeout=1)
                    self.count("grpc_rst", "done before the reset: OK")
                except grpc.RpcError as e:
                    self.count("grpc_rst", "done before the reset: %s" % e.code().name)
                except Exception as e:
                    self.count("grpc_rst", "done before the reset: %s" % type(e).__name__)
            self.sleep(0.07)
        ch.close()

    def grpc_no_read(self):
        grpc, pb, pbg = grpc_stubs(self.stubs_dir)
        msg = grpc_frame(self.slow_request(pb).SerializeToString())
        conns = []
        for _ in range(self.n("grpc_no_read")):
            try:
                h = H2Raw(self.cfg.host, self.cfg.grpc_port, window=0)
                with self.lock:
                    self.socks.append(h.sock)
                h.headers(1, "/inference.GRPCInferenceService/ModelStreamInfer", self.cfg.token)
                conns.append([h, 0])
            except OSError:
                self.count("grpc_no_read", "connect failed")
        for _ in range(int(120 * max(1.0, self.cfg.duration / 30.0))):
            if not self.running() or not conns:
                break
            for c in list(conns):
                h = c[0]
                h.pump()
                if h.closed or h.goaway:
                    self.count("grpc_no_read", "closed by server after %d messages" % c[1])
                    conns.remove(c)
                    continue
                off = 0
                while off < len(msg) and self.running():
                    h.pump()
                    n = min(h.can_send(1), len(msg) - off)
                    if n <= 0:
                        self.sleep(0.1)
                        if h.closed:
                            break
                        continue
                    h.data(1, msg[off:off + n])
                    h.conn_window -= n
                    h.stream_window[1] -= n
                    off += n
                if off == len(msg):
                    c[1] += 1
                    self.count("grpc_no_read", "message sent", 1)
            self.sleep(0.5)
        self.sleep(self.deadline - time.time())

    def churn(self):
        if not self.cfg.churn_model or not self.cfg.admin_token:
            self.count("churn", "skipped: no --churn-model or --admin-token", 0)
            return
        adm = "Authorization: Bearer %s\r\nContent-Type: application/json\r\n" % \
            self.cfg.admin_token
        for i in range(self.n("churn")):
            if not self.running():
                break
            what = "unload" if i & 1 else "load"
            try:
                s = self.connect(self.cfg.http_port, timeout=60.0)
                s.sendall(self.http_head("POST", "/v2/repository/models/%s/%s" %
                                         (self.cfg.churn_model, what), adm, 2) + b"{}")
                st = self.read_status(s, 60.0)
                self.drop(s)
                self.count("churn", "%s: %s" % (what, st or "no answer"))
                if st == 503 and i < 2:
                    break    # not explicit mode
            except OSError as e:
                self.count("churn", "%s: %s" % (what, type(e).__name__))
            self.sleep(0.3)

    def run(self):
        threads = []
        for a in self.cfg.attacks:
            if a.startswith("grpc") and (self.cfg.grpc_port is None or self.cfg.grpc_port < 0):
                continue
            t = threading.Thread(target=self.guard, args=(a,), daemon=True)
            t.start()
            threads.append(t)
        end = self.deadline + 5
        for t in threads:
            t.join(max(0.1, end - time.time()))
        self.stop.set()
        with self.lock:
            socks, self.socks = self.socks, []
        for s in socks:
            self.drop(s)
        return self.stats

    def guard(self, attack):
        try:
            getattr(self, attack)()
        except Exception as e:   # one broken attack must not end the others
            self.count(attack, "driver error: %s: %s" % (type(e).__name__, e), 0)


# ---- The well-behaved client (run in its own process) --------------------------

class Relay(threading.Thread):
    """127.0.0.2:port -> server, each upstream socket bound to 127.0.0.2, so
    grpcio's connections reach the server from 127.0.0.2."""

    def __init__(self, good_host, host, port):
        super().__init__(daemon=True)
        self.ls = socket.socket()
        self.ls.bind((good_host, 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.good_host, self.host, self.upstream = good_host, host, port

    def run(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            try:
                u = socket.create_connection((self.host, self.upstream), timeout=10,
                                             source_address=(self.good_host, 0))
            except OSError:
                c.close()
                continue
            u.settimeout(None)
            threading.Thread(target=self.pipe, args=(c, u), daemon=True).start()

    @staticmethod
    def pipe(a, b):
        p = select.poll()
        p.register(a, select.POLLIN)
        p.register(b, select.POLLIN)
        by_fd = {a.fileno(): a, b.fileno(): b}
        try:
            while True:
                r = p.poll(60000)
                if not r:
                    break
                for fd, _ in r:
                    s = by_fd[fd]
                    d = s.recv(65536)
                    if not d:
                        raise EOFError
                    (b if s is a else a).sendall(d)
        except (OSError, EOFError):
            pass
        for s in (a, b):
            try:
                s.close()
            except OSError:
                pass


def good_client(cfg, stop_file, out_path, stubs_dir):
    """Valid requests at a steady rate until stop_file exists; every one
    recorded as (start time, latency s, error or None)."""
    name, inp, dt, shape = parse_model(cfg.model)
    n = 1
    for d in shape:
        n *= d
    vals = [float(i % 7) - 3.0 for i in range(n)]
    want = [max(v, 0.0) for v in vals] if name.startswith("relu") else None
    body = json.dumps({"inputs": [{"name": inp, "datatype": dt, "shape": shape,
                                   "data": vals}]}).encode()
    headers = {"Content-Type": "application/json"}
    if cfg.token:
        headers["Authorization"] = "Bearer " + cfg.token
    records = {"http": [], "grpc": []}
    hard_end = time.time() + 3600

    def http_loop():
        while not os.path.exists(stop_file) and time.time() < hard_end:
            t0 = time.time()
            err = None
            try:
                c = http.client.HTTPConnection(cfg.host, cfg.http_port, timeout=cfg.good_timeout,
                                               source_address=(cfg.good_host, 0))
                c.request("POST", "/v2/models/%s/infer" % name, body, headers)
                r = c.getresponse()
                data = r.read()
                c.close()
                if r.status != 200:
                    err = "HTTP %d %s" % (r.status, data[:120].decode("utf-8", "replace"))
                elif want is not None and json.loads(data)["outputs"][0]["data"] != want:
                    err = "wrong output"
            except (OSError, http.client.HTTPException, ValueError) as e:
                err = "%s: %s" % (type(e).__name__, e)
            records["http"].append((t0, time.time() - t0, err))
            time.sleep(max(0.0, cfg.good_http_interval - (time.time() - t0)))

    def grpc_loop():
        grpc, pb, pbg = grpc_stubs(stubs_dir)
        relay = Relay(cfg.good_host, cfg.host, cfg.grpc_port)
        relay.start()
        md = [("authorization", "Bearer " + cfg.token)] if cfg.token else []
        rq = pb.ModelInferRequest(model_name=name, id="good")
        t = rq.inputs.add()
        t.name, t.datatype = inp, dt
        t.shape.extend(shape)
        rq.raw_input_contents.append(struct.pack("<%df" % n, *vals))
        while not os.path.exists(stop_file) and time.time() < hard_end:
            t0 = time.time()
            err = None
            # A new connection every call: new connections are what starvation denies.
            ch = grpc.insecure_channel("%s:%d" % (cfg.good_host, relay.port))
            try:
                r = pbg.GRPCInferenceServiceStub(ch).ModelInfer(rq, metadata=md,
                                                                 timeout=cfg.good_timeout)
                got = list(struct.unpack("<%df" % n, r.raw_output_contents[0]))
                if want is not None and got != want:
                    err = "wrong output"
            except grpc.RpcError as e:
                err = "%s: %s" % (e.code().name, e.details())
            except (IndexError, struct.error) as e:
                err = "bad answer: %s" % e
            ch.close()
            records["grpc"].append((t0, time.time() - t0, err))
            time.sleep(max(0.0, cfg.good_grpc_interval - (time.time() - t0)))

    loops = [threading.Thread(target=http_loop, daemon=True)]
    if cfg.grpc_port is not None and cfg.grpc_port >= 0:
        loops.append(threading.Thread(target=grpc_loop, daemon=True))
    for t in loops:
        t.start()
    for t in loops:
        t.join(hard_end - time.time())
    with open(out_path, "w") as f:
        json.dump(records, f)


# ---- The orchestration ---------------------------------------------------------

def phase_stats(records, t0, t1):
    rs = [r for r in records if t0 <= r[0] < t1]
    lat = [r[1] for r in rs if r[2] is None]
    errs = [r[2] for r in rs if r[2] is not None]
    return {"requests": len(rs), "failures": len(errs),
            "p50_ms": round(percentile(lat, 50) * 1000, 1) if lat else None,
            "p99_ms": round(percentile(lat, 99) * 1000, 1) if lat else None,
            "max_ms": round(max(lat) * 1000, 1) if lat else None,
            "failure_samples": sorted(set(errs))[:5]}


def cfg_args(cfg):
    args = ["--http-port", str(cfg.http_port), "--duration", str(cfg.duration),
            "--host", cfg.host, "--good-host", cfg.good_host, "--model", cfg.model,
            "--slow-model", cfg.slow_model, "--scale", str(cfg.scale),
            "--attacks", ",".join(cfg.attacks),
            "--good-http-interval", str(cfg.good_http_interval),
            "--good-grpc-interval", str(cfg.good_grpc_interval),
            "--good-timeout", str(cfg.good_timeout)]
    if cfg.grpc_port is not None:
        args += ["--grpc-port", str(cfg.grpc_port)]
    if cfg.churn_model:
        args += ["--churn-model", cfg.churn_model]
    env = dict(os.environ)
    if cfg.token:
        env["HOSTILE_TOKEN"] = cfg.token      # not on a command line others can read
    if cfg.admin_token:
        env["HOSTILE_ADMIN_TOKEN"] = cfg.admin_token
    return args, env


def run(cfg):
    """The whole soak: quiet phase, attack phase, settle. Returns the summary."""
    work = cfg.workdir or tempfile.mkdtemp(prefix="hostile.")
    os.makedirs(work, exist_ok=True)
    stubs = os.path.join(work, "grpcpy")
    if cfg.grpc_port is not None and cfg.grpc_port >= 0:
        grpc_stubs(stubs)
    quiet = cfg.duration / 2 if cfg.quiet is None else cfg.quiet
    stop_file = os.path.join(work, "good.stop")
    good_out = os.path.join(work, "good.json")
    attack_out = os.path.join(work, "attack.json")
    for p in (stop_file, good_out, attack_out):
        if os.path.exists(p):
            os.unlink(p)
    args, env = cfg_args(cfg)
    me = os.path.abspath(__file__)
    start = proc_sample(cfg.pid, kinds=True) if cfg.pid else None
    sampler = Sampler(cfg.pid) if cfg.pid else None
    if sampler:
        sampler.start()
    procs = []
    try:
        good = subprocess.Popen([cfg.python, me, "--role", "good", "--out", good_out,
                                 "--stop-file", stop_file, "--stubs", stubs] + args, env=env)
        procs.append(good)
        t_quiet = time.time()
        time.sleep(quiet)
        t_attack = time.time()
        attack = subprocess.Popen([cfg.python, me, "--role", "attack", "--out", attack_out,
                                   "--stubs", stubs] + args, env=env)
        procs.append(attack)
        try:
            attack.wait(cfg.duration + 60)
        except subprocess.TimeoutExpired:
            attack.kill()
            attack.wait(10)
        t_end = time.time()
        # The good client goes on a little: does the server serve after the attack?
        time.sleep(min(5.0, max(2.0, quiet / 4)))
        t_after = time.time()
        open(stop_file, "w").close()
        try:
            good.wait(cfg.good_timeout + 30)
        except subprocess.TimeoutExpired:
            good.kill()
            good.wait(10)
        # Settle: attackers gone; fds and threads should come back to the start.
        end = None
        settle_end = time.time() + cfg.settle_max
        time.sleep(cfg.settle)
        while cfg.pid:
            end = proc_sample(cfg.pid, kinds=True)
            if not end or not start or time.time() >= settle_end or \
               (end["fds"] <= start["fds"] + 4 and end["threads"] <= start["threads"] + 2):
                break
            time.sleep(1.0)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        if sampler:
            sampler.stop_ev.set()
            sampler.join(5)
    try:
        records = json.load(open(good_out))
    except (OSError, ValueError):
        records = {"http": [], "grpc": []}
    try:
        attacks = json.load(open(attack_out))
    except (OSError, ValueError):
        attacks = {"driver error": "the attacker process left no report"}
    samples = sampler.samples if sampler else []
    attack_samples = [s for s in samples if t_attack <= s["t"] <= t_end] or samples

    def peak(key, ss):
        return max((s[key] for s in ss), default=None)

    summary = {
        "duration_s": {"quiet": round(t_attack - t_quiet, 1),
                       "attack": round(t_end - t_attack, 1),
                       "after": round(t_after - t_end, 1)},
        "attack_mix": {a: mix_count(a, cfg) for a in cfg.attacks},
        "attacks": attacks,
        "good": {proto: {"quiet": phase_stats(records[proto], t_quiet, t_attack),
                         "attack": phase_stats(records[proto], t_attack, t_end),
                         "after": phase_stats(records[proto], t_end, t_after + 1)}
                 for proto in records if records[proto] or proto == "http"},
        "server": {
            "start": start, "end": end,
            "peak_rss_mb": round(peak("rss_kb", samples) / 1024.0, 1) if samples else None,
            "peak_fds": peak("fds", samples), "peak_threads": peak("threads", samples),
            "attack_peak_fds": peak("fds", attack_samples),
            "alive_at_end": bool(cfg.pid and proc_sample(cfg.pid)),
        },
        "samples": [[round(s["t"] - t_quiet, 1), s["rss_kb"], s["fds"], s["threads"]]
                    for s in samples],
    }
    if cfg.json_path:
        with open(cfg.json_path, "w") as f:
            json.dump(summary, f, indent=1)
    return summary


def table(summary):
    """The human report."""
    out = []
    d = summary["duration_s"]
    out.append("hostile soak: quiet %.0f s, attack %.0f s, after %.0f s" %
               (d["quiet"], d["attack"], d["after"]))
    out.append("attack mix: " + ", ".join("%s x%d" % kv for kv in summary["attack_mix"].items()))
    out.append("| client | phase  | requests | failures | p50 ms | p99 ms | max ms |")
    out.append("|--------|--------|----------|----------|--------|--------|--------|")
    for proto, phases in summary["good"].items():
        for ph in ("quiet", "attack", "after"):
            s = phases[ph]
            out.append("| %-6s | %-6s | %8d | %8d | %6s | %6s | %6s |" %
                       (proto, ph, s["requests"], s["failures"], s["p50_ms"], s["p99_ms"],
                        s["max_ms"]))
            for e in s["failure_samples"]:
                out.append("|        |        |   e.g. %s" % e[:100])
    sv = summary["server"]
    st, en = sv["start"] or {}, sv["end"] or {}
    out.append("| server  | start | peak | end |")
    out.append("|---------|-------|------|-----|")
    out.append("| RSS MB  | %s | %s | %s |" % (
        round(st.get("rss_kb", 0) / 1024.0, 1) if st else "-", sv["peak_rss_mb"],
        round(en.get("rss_kb", 0) / 1024.0, 1) if en else "-"))
    out.append("| fds     | %s | %s | %s |" % (st.get("fds", "-"), sv["peak_fds"],
                                                en.get("fds", "-")))
    out.append("| threads | %s | %s | %s |" % (st.get("threads", "-"), sv["peak_threads"],
                                                en.get("threads", "-")))
    out.append("fd kinds: start %s, end %s" % (st.get("fd_kinds"), en.get("fd_kinds")))
    out.append("server alive at the end: %s" % sv["alive_at_end"])
    for a, st in sorted(summary["attacks"].items()):
        if isinstance(st, dict):
            oc = ", ".join("%s: %s" % kv for kv in sorted(st["outcomes"].items()))
            out.append("  %-16s %5d ops  %s" % (a, st["ops"], oc[:300]))
        else:
            out.append("  %s: %s" % (a, st))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--role", choices=["soak", "good", "attack"], default="soak",
                    help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--stop-file", help=argparse.SUPPRESS)
    ap.add_argument("--stubs", help=argparse.SUPPRESS)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--good-host", default="127.0.0.2")
    ap.add_argument("--http-port", type=int, required=True)
    ap.add_argument("--grpc-port", type=int, default=None)
    ap.add_argument("--pid", type=int, default=None, help="the server's pid (sampled)")
    ap.add_argument("--token", default=os.environ.get("HOSTILE_TOKEN"),
                    help="API token (or $HOSTILE_TOKEN)")
    ap.add_argument("--admin-token", default=os.environ.get("HOSTILE_ADMIN_TOKEN"),
                    help="admin token (or $HOSTILE_ADMIN_TOKEN): enables churn")
    ap.add_argument("--duration", type=float, default=30.0, help="attack seconds")
    ap.add_argument("--quiet", type=float, default=None,
                    help="quiet-phase seconds (default: half the attack)")
    ap.add_argument("--settle", type=float, default=5.0)
    ap.add_argument("--model", default="relu:x0:FP32:1x4",
                    help="the good client's model: name:input:DTYPE:shape (1x4)")
    ap.add_argument("--slow-model", default="slow:x0:FP32:1x512x256",
                    help="the model of slow readers, waits and resets")
    ap.add_argument("--churn-model", default=None)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the attack counts")
    ap.add_argument("--attacks", default=",".join(ATTACKS),
                    help="comma-separated subset of: " + ", ".join(ATTACKS))
    ap.add_argument("--good-http-interval", type=float, default=0.1)
    ap.add_argument("--good-grpc-interval", type=float, default=0.2)
    ap.add_argument("--good-timeout", type=float, default=10.0)
    ap.add_argument("--json", dest="json_path", default=None, help="write the summary here")
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args(argv)
    attacks = [x for x in a.attacks.split(",") if x]
    bad = [x for x in attacks if x not in ATTACKS]
    if bad:
        ap.error("unknown attacks: %s" % ", ".join(bad))
    cfg = Config(host=a.host, good_host=a.good_host, http_port=a.http_port,
                 grpc_port=a.grpc_port, pid=a.pid, token=a.token, admin_token=a.admin_token,
                 duration=a.duration, quiet=a.quiet, settle=a.settle, model=a.model,
                 slow_model=a.slow_model, churn_model=a.churn_model, scale=a.scale,
                 attacks=attacks, good_http_interval=a.good_http_interval,
                 good_grpc_interval=a.good_grpc_interval, good_timeout=a.good_timeout,
                 json_path=a.json_path, workdir=a.workdir)
    for h in (cfg.host, cfg.good_host):
        if not h.startswith("127."):
            ap.error("%s: only 127.x addresses" % h)
    if a.role == "good":
        signal.signal(signal.SIGTERM, lambda *_: open(a.stop_file, "w").close())
        good_client(cfg, a.stop_file, a.out, a.stubs)
        return 0
    if a.role == "attack":
        raise_fd_limit()
        stats = Attacks(cfg, a.stubs).run()
        with open(a.out, "w") as f:
            json.dump(stats, f)
        os._exit(0)   # grpcio's and the attack threads' leftovers must not hold the exit
    summary = run(cfg)
    print(table(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
