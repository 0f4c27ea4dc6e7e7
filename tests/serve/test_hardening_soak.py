#!/usr/bin/env python3
"""The short hostile-client soak of the serve suite (issue 28): tests/serve/hostile.py
for SOAK_SECS (default 30) seconds of attack against a token-protected server in
explicit mode, after a quiet phase of the good client alone, then the same for
ASAN_SOAK_SECS (default 15) on the ASan+UBSan build (build/asan, `make asan`) if
it is there, with LeakSanitizer on and SIGTERM at the end.

Asserted, with the bounds stated in each line: the good client (127.0.0.2, HTTP
and gRPC) sees 0 failures during and after the attack and keeps its p99 under
GOOD_P99_MS; the server's peak RSS stays under RSS_CEILING_MB; a few seconds
after the attackers are gone its fds and threads are back within FD_MARGIN and
THREAD_MARGIN of the start; it exits 0 on SIGTERM; the ASan log holds no report.

usage: test_hardening_soak.py WORKDIR   (NPU from the environment, as test_serve.py)"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_serve as ts  # noqa: E402
import hostile  # noqa: E402

SOAK_SECS = float(os.environ.get("SOAK_SECS", "30"))
ASAN_SOAK_SECS = float(os.environ.get("ASAN_SOAK_SECS", "15"))
ASAN_NPU = os.environ.get("ASAN_NPU", os.path.join(HERE, "..", "..", "build", "asan",
                                                   "userspace", "cli", "npu"))
GOOD_P99_MS = 2000.0      # generous: 2 shared cores, a Python client, attackers busy
ASAN_GOOD_P99_MS = 5000.0  # the ASan build is several times slower
RSS_CEILING_MB = 600.0    # the issue saw 1 GB from 16 pre-auth bodies alone
ASAN_RSS_CEILING_MB = 1200.0   # ASan's shadow memory and quarantine on top
FD_MARGIN = 8             # a log file, an eventfd or two may come and go
THREAD_MARGIN = 4

API_TOKEN = "soak-api-token"
ADMIN_TOKEN = "soak-admin-token"

RELU_CONFIG = """name: "relu"
max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
dynamic_batching { max_queue_delay_microseconds: 1000 }
instance_group { count: 2 kind: KIND_CPU }
"""

SLOW_CONFIG = """name: "slow"
max_batch_size: 1
input { name: "x0" data_type: TYPE_FP32 dims: [ %d, %d ] }
output { name: "y" data_type: TYPE_FP32 dims: [ %d, %d ] }
dynamic_batching { default_queue_policy { max_queue_size: 8 } }
instance_group { count: 1 kind: KIND_CPU }
""" % (ts.SLOW_ROWS, ts.SLOW_COLS, ts.SLOW_ROWS, ts.SLOW_COLS)


def make_repo(repo):
    ms = ts.calibrate_slow()
    print("# slow model: %d MatMuls (%s ms for 4)" % (ts.SLOW_K, ms), flush=True)
    ts.onnx_model(f"{repo}/relu/1/model.onnx", "Relu", 1, "N,4")
    ts.write(f"{repo}/relu/config.pbtxt", RELU_CONFIG)
    ts.write(f"{repo}/slow/1/model.onnx",
             ts.make_model.slow(ts.SLOW_K, ts.SLOW_ROWS, ts.SLOW_COLS))
    ts.write(f"{repo}/slow/config.pbtxt", SLOW_CONFIG)
    ts.onnx_model(f"{repo}/churn/1/model.onnx", "Relu", 1, "N,4")   # auto-completed


def soak(label, npu, secs, p99_ms, rss_mb, extra_env=None):
    """One server, one hostile run; returns (summary, server, exit status) after SIGTERM."""
    saved_npu, saved_env = ts.NPU, dict(os.environ)
    ts.NPU = npu
    if extra_env:
        os.environ.update(extra_env)
    try:
        s = ts.Server("soak-" + label, os.path.join(ts.WORK, "repo"),
                      "--model-control-mode", "explicit", "--load-model", "relu",
                      "--load-model", "slow", "--api-token", API_TOKEN,
                      "--admin-token", ADMIN_TOKEN)
    finally:
        ts.NPU = saved_npu
        os.environ.clear()
        os.environ.update(saved_env)
    try:
        if not ts.ok(s.up(), "%s: the server starts (%s)" % (label, s.port), s.log_text()[-2000:]):
            return None, s, None
        cfg = hostile.Config(http_port=s.port, grpc_port=s.grpc_port, pid=s.proc.pid,
                             token=API_TOKEN, admin_token=ADMIN_TOKEN, duration=secs,
                             quiet=max(4.0, secs / 4), churn_model="churn", settle_max=12.0,
                             model="relu:x0:FP32:1x4",
                             slow_model="slow:x0:FP32:1x%dx%d" % (ts.SLOW_ROWS, ts.SLOW_COLS),
                             json_path=os.path.join(ts.WORK, "soak-%s.json" % label),
                             workdir=os.path.join(ts.WORK, "hostile-" + label))
        summary = hostile.run(cfg)
        print("\n".join("# " + line for line in hostile.table(summary).splitlines()), flush=True)
        check(label, summary, p99_ms, rss_mb)
    finally:
        rc = s.stop(60)
        ts.ok(rc == 0, "%s: the server exits 0 on SIGTERM after the soak (status %s)" %
              (label, rc), s.log_text()[-1500:])
    return summary, s, rc


def check(label, sm, p99_ms, rss_mb):
    mix = ", ".join("%s x%d" % kv for kv in sm["attack_mix"].items())
    for proto in ("http", "grpc"):
        g = sm["good"].get(proto)
        if not ts.ok(g is not None and g["attack"]["requests"] > 0,
                     "%s: the good %s client ran during the attack" % (label, proto), g):
            continue
        a, q, after = g["attack"], g["quiet"], g["after"]
        ts.ok(a["failures"] == 0,
              "%s: good %s client: 0 failures of %d during %.0f s of attack (%s)" %
              (label, proto, a["requests"], sm["duration_s"]["attack"], mix),
              a["failure_samples"])
        ts.ok(a["p99_ms"] is not None and a["p99_ms"] < p99_ms,
              "%s: good %s client: p99 %s ms under attack < %.0f ms (quiet p50/p99 %s/%s ms)" %
              (label, proto, a["p99_ms"], p99_ms, q["p50_ms"], q["p99_ms"]), a)
        ts.ok(after["requests"] > 0 and after["failures"] == 0,
              "%s: good %s client: served after the attack (%d requests, %d failures)" %
              (label, proto, after["requests"], after["failures"]), after["failure_samples"])
    sv = sm["server"]
    st, en = sv["start"], sv["end"]
    ts.ok(sv["alive_at_end"], "%s: the server is alive after the attack" % label)
    ts.ok(sv["peak_rss_mb"] is not None and sv["peak_rss_mb"] < rss_mb,
          "%s: peak RSS %s MB < %.0f MB" % (label, sv["peak_rss_mb"], rss_mb))
    if ts.ok(st is not None and en is not None, "%s: /proc samples at start and end" % label):
        ts.ok(en["fds"] <= st["fds"] + FD_MARGIN,
              "%s: fds back after the attack: %d at the end, %d at the start (+%d allowed; "
              "peak %s)" % (label, en["fds"], st["fds"], FD_MARGIN, sv["peak_fds"]))
        ts.ok(en["threads"] <= st["threads"] + THREAD_MARGIN,
              "%s: threads back after the attack: %d at the end, %d at the start (+%d allowed; "
              "peak %s)" % (label, en["threads"], st["threads"], THREAD_MARGIN,
                            sv["peak_threads"]))


SAN_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
               "SUMMARY: AddressSanitizer", "SUMMARY: UndefinedBehaviorSanitizer")


def main():
    make_repo(os.path.join(ts.WORK, "repo"))
    try:
        soak("release", ts.NPU, SOAK_SECS, GOOD_P99_MS, RSS_CEILING_MB)
    except Exception as e:
        ts.ok(False, "release soak: %s: %s" % (type(e).__name__, e))
    if not os.path.exists(ASAN_NPU):
        print("# %s is not built (make asan): the ASan soak is skipped" % ASAN_NPU, flush=True)
        return
    try:
        _, s, rc = soak("asan", os.path.abspath(ASAN_NPU), ASAN_SOAK_SECS, ASAN_GOOD_P99_MS,
                    ASAN_RSS_CEILING_MB,
                    {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                     "UBSAN_OPTIONS": "print_stacktrace=1"})
        log = s.log_text()
        found = [m for m in SAN_MARKERS if m in log]
        at = log.find(found[0]) if found else 0
        # LeakSanitizer runs at a normal exit only: an _exit(1) after a failed drain
        # proves nothing about leaks.
        ts.ok(not found and rc == 0, "asan: no ASan/LSan/UBSan report in the server's log after "
              "the soak and SIGTERM, and LeakSanitizer ran (exit status %s)" % rc,
              log[at:at + 3000] if found else "")
    except Exception as e:
        ts.ok(False, "asan soak: %s: %s" % (type(e).__name__, e))


if __name__ == "__main__":
    try:
        main()
    finally:
        print("%d passed, %d failed" % (ts.passed, ts.failed))
    sys.exit(1 if ts.failed else 0)
