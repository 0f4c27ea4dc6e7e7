#!/usr/bin/env python3
"""The panel suite (see tests/panel/run): npu serve's web panel in headless
Chromium (python3-selenium + chromedriver), under load generated here;
the bench / compile HTML reports; the deployment manifests against the
server. Prints "ok - ..." / "not ok - ..." and "N passed, N failed".

usage: test_panel.py WORKDIR   (NPU, PANEL_SHOTS from the environment;
every process started goes to WORKDIR/pids so the caller can kill it)."""
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
import make_model  # noqa: E402

WORK = sys.argv[1]
NPU = os.environ.get("NPU", "build/bin/npu")
SHOTS = os.environ.get("PANEL_SHOTS", "build/panel")
ADMIN = "panel-admin-5e1f"

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


def note(text):
    print("# " + text, flush=True)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def track(pid):
    with open(os.path.join(WORK, "pids"), "a") as f:
        f.write("%d\n" % pid)


def descendants(pid):
    """Every process below pid (chromedriver's browsers), from /proc."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out


# ---- The server ----------------------------------------------------------------

RELU_CONFIG = """max_batch_size: 8
input { name: "x0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
dynamic_batching { max_queue_delay_microseconds: 2000 }
instance_group { count: 2 kind: KIND_CPU }
"""

NPU_CONFIG = """max_batch_size: 4
input { name: "x0" data_type: TYPE_FP32 dims: [ 16 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 16 ] }
dynamic_batching { }
instance_group { kind: KIND_NPU count: 1 }
parameters { key: "device" value { string_value: "sim" } }
parameters { key: "keep_small_segments" value { string_value: "true" } }
parameters { key: "calib_dir" value { string_value: "calib" } }
"""


def write_npy(path, shape, vals):
    import struct
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    write(path, b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
          + struct.pack("<%df" % len(vals), *vals))


def make_repo(repo):
    for v in (1, 2):
        write(f"{repo}/relu/{v}/model.onnx", make_model.model("Relu", 1, "N,4".split(","), 1))
    write(f"{repo}/relu/config.pbtxt", RELU_CONFIG)
    write(f"{repo}/onnpu/1/model.onnx", make_model.model("Relu", 1, "N,16".split(","), 1))
    write(f"{repo}/onnpu/config.pbtxt", NPU_CONFIG)
    for k in range(4):  # int8 calibration samples of onnpu
        write_npy(f"{repo}/onnpu/calib/s{k}.npy", [1, 16], [((i * 5 + k * 3) % 9) - 4.0 for i in range(16)])
    write(f"{repo}/idle/1/model.onnx", make_model.model("Neg", 1, "N,4".split(","), 1))
    # A model that fails to load: its reason is on the panel.
    write(f"{repo}/broken/1/model.onnx", b"this is not an ONNX file")
    # An ensemble of idle twice: shown as its steps.
    write(f"{repo}/pipe/1/.keep", b"")
    write(f"{repo}/pipe/config.pbtxt", """platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "idle" input_map { key: "x0" value: "IN" } output_map { key: "y" value: "A" } },
  { model_name: "idle" input_map { key: "x0" value: "A" } output_map { key: "y" value: "OUT" } } ] }
""")


class Server:
    def __init__(self, name, repo, *args):
        self.port_file = os.path.join(WORK, name + ".port")
        self.log = os.path.join(WORK, name + ".log")
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        cmd = [NPU, "serve", "--model-repository", repo, "--http-port", "0",
               "--metrics-port", "-1", "--grpc-port", "-1", "--port-file", self.port_file,
               "--threads", "1", "--exit-timeout-secs", "20"] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        track(self.proc.pid)
        self.port = None
        deadline = time.time() + 90
        while time.time() < deadline and self.proc.poll() is None:
            if os.path.exists(self.port_file):
                kv = dict(line.split("=") for line in open(self.port_file).read().split())
                self.port = int(kv["http"])
                break
            time.sleep(0.05)

    def log_text(self):
        return open(self.log).read()


def request(port, method, path, body=None, headers=None, timeout=30):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e).encode()


def infer_body(n, width, seed):
    vals = [((seed * 7 + i * 3) % 11) - 5.0 for i in range(n * width)]
    return {"inputs": [{"name": "x0", "shape": [n, width], "datatype": "FP32", "data": vals}]}


class Load:
    """Bounded background load: 'threads' clients on 'model' until stopped
    or 'max_secs' passed; counts answers by status."""

    def __init__(self, port, model, width, threads=2, max_secs=150):
        self.port, self.model, self.width = port, model, width
        self.stop_ev = threading.Event()
        self.counts = {}
        self.lock = threading.Lock()
        self.deadline = time.time() + max_secs
        self.threads = [threading.Thread(target=self.run, args=(t,), daemon=True)
                        for t in range(threads)]
        for t in self.threads:
            t.start()

    def run(self, t):
        i = 0
        while not self.stop_ev.is_set() and time.time() < self.deadline and i < 200000:
            st, _ = request(self.port, "POST", "/v2/models/%s/infer" % self.model,
                            infer_body(1 + (i % 3), self.width, t * 1000 + i), timeout=20)
            with self.lock:
                self.counts[st] = self.counts.get(st, 0) + 1
            i += 1
            time.sleep(0.004)

    def finish(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(30)
        return dict(self.counts)


# ---- The browser --------------------------------------------------------------------

def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,2200", "--user-data-dir=" + os.path.join(WORK, "chrome"),
              "--no-first-run", "--disable-extensions", "--disable-background-networking"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service("/usr/bin/chromedriver", log_path=os.path.join(WORK, "chromedriver.log"))
    drv = webdriver.Chrome(service=service, options=opts)
    drv.set_page_load_timeout(30)
    drv.set_script_timeout(30)
    track(service.process.pid)
    for p in descendants(service.process.pid):
        track(p)
    return drv, service


def wait_js(drv, expr, secs, interval=0.1):
    """Poll a JS expression until it is truthy; its value or None."""
    deadline = time.time() + secs
    while time.time() < deadline:
        try:
            v = drv.execute_script("return (" + expr + ");")
        except Exception:  # the page may be loading
            v = None
        if v:
            return v
        time.sleep(interval)
    return None


def severe(drv):
    try:
        return [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
    except Exception as e:  # noqa: BLE001
        return [{"message": "cannot read the console: %s" % e}]


def shot(drv, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, name)
    drv.save_screenshot(path)
    note("screenshot " + path)
    return path


def models_table(drv):
    return drv.execute_script(
        "return Array.from(document.querySelectorAll('#models tbody tr:not(.steps)')).map("
        "tr => Array.from(tr.children).slice(0, 4).map(td => td.textContent));")


def state_of(drv, model):
    return {r[1]: r[2] for r in models_table(drv) if r[0] == model}


def latency_points(drv):
    return drv.execute_script(
        "const c = npuPanel.charts['chart-latency'];"
        "return c.data.datasets.filter(d => d.label.startsWith('relu')).map("
        "d => [d.label, d.data.filter(p => p.y !== null).map(p => [Math.round(p.x * 10) / 10, p.y])]);")


def test_panel(drv, s):
    base = "http://127.0.0.1:%d/" % s.port
    load = Load(s.port, "relu", 4)
    npu_load = Load(s.port, "onnpu", 16, threads=1)
    try:
        drv.get(base)
        ok(wait_js(drv, "window.npuPanel && npuPanel.polls >= 2", 20),
           "the panel loads and polls v2/panel/state")
        rows = models_table(drv)
        names = {(r[0], r[1]) for r in rows}
        ok(("relu", "2") in names and ("onnpu", "1") in names and ("idle", "1") in names,
           "models and versions are listed", rows)
        ok(state_of(drv, "relu").get("2") == "READY", "relu version 2 is READY", rows)
        steps = drv.execute_script(
            "const r = document.querySelector('#models tr.steps[data-ensemble=\"pipe\"]');"
            "return r ? r.textContent : null;")
        ok(state_of(drv, "pipe").get("1") == "READY" and steps == "steps: idle \u2192 idle",
           "an ensemble is listed with its steps", (rows, steps))
        # The failure reason is the repository index's: the admin scope's.
        broken = [r for r in rows if r[0] == "broken"]
        ok(broken and broken[0][2] == "UNAVAILABLE" and not broken[0][3],
           "before the admin token a failed load shows UNAVAILABLE, not the index's reason", broken)

        # Latency points that move between two reads.
        ok(wait_js(drv, "npuPanel.charts['chart-latency'].data.datasets.some(d => d.label.startsWith('relu') && "
                   "d.data.filter(p => p.y !== null).length >= 2)", 20),
           "the latency chart has data points of relu")
        a = latency_points(drv)
        time.sleep(2.5)
        b = latency_points(drv)
        ok(a != b and any(len(d[1]) for d in b), "the latency chart's points move between two reads",
           (a[:1], b[:1]))
        ok(wait_js(drv, "Object.keys(npuPanel.state.series.find(s => s.model === 'relu' && "
                   "s.version === '2').batch_sizes).length > 0", 10),
           "the batch-size histogram has data")
        ok(wait_js(drv, "npuPanel.charts['chart-devices'].data.datasets.some(d => d.label.startsWith('sim') && "
                   "d.data.some(p => p.y > 0))", 15),
           "the device chart shows the NPU simulator busy")
        shot(drv, "panel-overview.png")

        # Management buttons only after the admin token.
        ok(not drv.execute_script("return document.querySelectorAll('button.btn-unload').length;"),
           "no management buttons before the admin token is entered")
        drv.find_element("id", "admin-token").send_keys(ADMIN)
        drv.find_element("id", "token-apply").click()
        ok(wait_js(drv, "document.querySelector(\"button.btn-unload[data-model='relu']\")", 10),
           "the admin token shows load / unload / reload buttons")
        ok(wait_js(drv, "Array.from(document.querySelectorAll('#models tbody tr:not(.steps)')).some(tr => "
                   "tr.dataset.model === 'broken' && tr.children[2].textContent === 'UNAVAILABLE' && "
                   "tr.children[3].textContent.length > 10)", 10),
           "with the admin token a failed load shows its reason", models_table(drv))

        drv.find_element("css selector", "button.btn-unload[data-model='relu']").click()
        ok(wait_js(drv, "Array.from(document.querySelectorAll('#models tbody tr:not(.steps)')).some(tr => "
                   "tr.dataset.model === 'relu' && tr.children[2].textContent === 'UNAVAILABLE')", 20),
           "Unload: relu's state changes to UNAVAILABLE", models_table(drv))
        ok(wait_js(drv, "npuPanel.actions.some(a => a.op === 'unload' && a.status === 200)", 5),
           "the unload button called the repository API (200)")
        shot(drv, "panel-unloaded.png")
        drv.find_element("css selector", "button.btn-load[data-model='relu']").click()
        ok(wait_js(drv, "Array.from(document.querySelectorAll('#models tbody tr:not(.steps)')).some(tr => "
                   "tr.dataset.model === 'relu' && tr.dataset.version === '2' && "
                   "tr.children[2].textContent === 'READY')", 30),
           "Load: relu version 2 is READY again", models_table(drv))

        # A version swap under load: version 3 appears on disk, Reload.
        shutil.copytree(os.path.join(s.repo, "relu", "2"), os.path.join(s.repo, "relu", "3"))
        before = load.counts.copy()
        drv.find_element("css selector", "button.btn-reload[data-model='relu']").click()
        ok(wait_js(drv, "Array.from(document.querySelectorAll('#models tbody tr:not(.steps)')).some(tr => "
                   "tr.dataset.model === 'relu' && tr.dataset.version === '3' && "
                   "tr.children[2].textContent === 'READY')", 30),
           "Reload under load: relu version 3 READY", models_table(drv))
        ok(wait_js(drv, "npuPanel.state.series.some(s => s.model === 'relu' && s.version === '3' && "
                   "s.requests_per_s.some(v => v > 0))", 15),
           "the throughput of relu v3 shows on the panel after the swap")
        time.sleep(3)
        swap = drv.execute_script(
            "return npuPanel.state.series.filter(s => s.model === 'relu').map(s => "
            "[s.version, s.requests_per_s.slice(-8), s.p99_ms.slice(-8), s.failures.slice(-8)]);")
        note("version swap under load, per series (last 8 s) [version, req/s, p99 ms, failures]:")
        for x in swap:
            note("  %s" % (x,))
        note("models table after the swap: %s" % [r for r in models_table(drv) if r[0] == "relu"])
        after = load.counts.copy()
        note("load during the swap: %s before, %s after (status: count)" % (before, after))
        shot(drv, "panel-version-swap.png")

        # The request timeline (onnpu runs on the NPU simulator).
        sel_ok = drv.execute_script(
            "const s = document.getElementById('timeline-model');"
            "if (!Array.from(s.options).some(o => o.value === 'onnpu')) return false;"
            "s.value = 'onnpu'; s.dispatchEvent(new Event('change')); return true;")
        ok(sel_ok or wait_js(drv, "Array.from(document.getElementById('timeline-model').options)"
                             ".some(o => o.value === 'onnpu')", 10), "the timeline lists onnpu")
        drv.execute_script("const s = document.getElementById('timeline-model');"
                           "s.value = 'onnpu'; s.dispatchEvent(new Event('change'));")
        spans = wait_js(drv, "(() => { const c = npuPanel.charts['chart-timeline'];"
                        "return c.data.labels.length >= 5 && c.data.labels.some(l => l.startsWith('NPU segment')) ? "
                        "c.data.labels : null; })()", 15)
        ok(spans and "queue" in spans and any(x.startswith("input copy") for x in spans)
           and "output copy" in spans,
           "the request timeline renders queue, input copy, NPU segment, output", spans)
        drv.execute_script("document.getElementById('chart-timeline').scrollIntoView();")
        time.sleep(0.3)
        shot(drv, "panel-timeline.png")
        href = drv.execute_script("return document.getElementById('trace-link').href;")
        st, data = request(s.port, "GET", "/v2/panel/trace?model=onnpu")
        tr = json.loads(data) if st == 200 else {}
        xs = [e for e in tr.get("traceEvents", []) if e.get("ph") == "X"]
        ok(href.endswith("v2/panel/trace") and xs and any(e["cat"] == "npu" for e in xs),
           "the trace link's JSON is a Chrome trace with the NPU segment", (href, st, data[:200]))
        # Measured spans: what the chart draws is the engine's timing of the run.
        shown = drv.execute_script(
            "const c = npuPanel.charts['chart-timeline'];"
            "return c.data.datasets[0].data.map(p => p.span);")
        info = drv.find_element("id", "timeline-info").text
        npu = [x for x in shown or [] if x["cat"] == "npu"]
        ok(npu and all(x["cycles"] > 0 and x["job_dur_us"] > 0 and
                       x["start_us"] <= x["job_start_us"] * (1 + 1e-5) + 0.002 and
                       x["job_start_us"] + x["job_dur_us"] <=
                       (x["start_us"] + x["dur_us"]) * (1 + 2e-5) + 0.002
                       for x in npu) and "measured" in info,
           "the timeline shows measured NPU spans: cycles, the job's submit..done inside the span",
           (info, npu))
        order = [(x["start_us"], x["start_us"] + x["dur_us"]) for x in shown or []]
        # /v2/panel/state has 6 significant digits.
        eps = 0.002 + 1e-5 * max([1.0] + [b for _, b in order]) * (len(order) + 1)
        ok(order and all(b[0] + eps >= a[1] for a, b in zip(order, order[1:])),
           "the timeline's spans are in order and do not overlap", order)
        hint = drv.find_element("id", "timeline-hint").text
        ok("Measured" in (hint or ""), "the page says the timeline is measured", hint)
        jobs = [e for e in xs if e.get("cat") == "npu.job" and e.get("tid") == 2]
        ok(jobs and all(e["args"]["modeled_cycles"] > 0 for e in jobs),
           "the trace has each NPU job on its own track with its modeled cycles", jobs)

        # Time for a new request to show on the charts: one request to 'idle'.
        t0 = time.time()
        st, _ = request(s.port, "POST", "/v2/models/idle/infer", infer_body(1, 4, 1))
        shown = wait_js(drv, "npuPanel.charts['chart-throughput'].data.datasets.some(d => "
                        "d.label === 'idle v1' && d.data.some(p => p.y > 0))", 10, interval=0.02)
        dt = time.time() - t0
        ok(st == 200 and shown, "a single request to 'idle' shows on the throughput chart")
        print("# time for a new request to show on the panel's charts: %.2f s "
              "(1 s samples, 1 s polling)" % dt, flush=True)
        errs = severe(drv)
        ok(not errs, "no console errors (SEVERE) in the panel", errs[:3])
    finally:
        counts = load.finish()
        npu_load.finish()
    note("load: %s (status: count)" % counts)
    ok(sum(counts.values()) > 50 and counts.get(200, 0) > 0, "the load generator was answered", counts)


# ---- Reports (npu bench --report, npu compile --explain --report) ------------------

def test_reports(drv):
    model = os.path.join(WORK, "report", "model.onnx")
    write(model, make_model.slow(4, 64, 256))
    out = os.path.join(WORK, "report", "bench.html")
    calib = []
    bench_help = subprocess.run([NPU, "bench", "--help"], capture_output=True, text=True, timeout=30).stdout
    if "--calib-dir" in bench_help:  # an NPU device needs int8 calibration samples
        for k in range(2):
            write_npy(os.path.join(WORK, "report", "calib", "s%d.npy" % k), [1, 64, 256],
                      [((i * 7 + k) % 13) / 6.0 - 1.0 for i in range(64 * 256)])
        calib = ["--calib-dir", os.path.join(WORK, "report", "calib")]
    r = subprocess.run([NPU, "bench", model, "--device", "sim", "--calib", "random", "--iters", "5", "--warmup", "1",
                        "--shape", "x0=1,64,256", "--report", out] + calib,
                       capture_output=True, text=True, timeout=180)
    if not ok(r.returncode == 0 and os.path.exists(out), "npu bench --report writes an HTML file",
              (r.returncode, r.stderr[-400:])):
        return
    html = open(out).read()
    ok("<script src=" not in html and "http://" not in html.replace("http://www.w3.org", ""),
       "the report is one offline file (no external script)")
    drv.get("file://" + out)
    charts = wait_js(drv, "window.npuReport && npuReport.charts && Object.keys(npuReport.charts).length >= 4 && "
                     "Object.keys(npuReport.charts)", 20)
    ok(charts and all(c in charts for c in ("latency", "ops", "roofline", "bytes", "cpu_npu")),
       "the bench report draws latency, per-op, roofline, bytes-moved and CPU-vs-NPU charts", charts)
    ok(wait_js(drv, "Object.values(npuReport.charts).every(c => c.data.datasets.length && "
               "c.data.datasets[0].data.length)", 5), "every chart of the report has data")
    ok(wait_js(drv, "document.querySelectorAll('#placement tbody tr').length > 0", 5),
       "the report lists the placement of the nodes")
    shot(drv, "bench-report.png")
    errs = severe(drv)
    ok(not errs, "no console errors in the bench report", errs[:3])

    out2 = os.path.join(WORK, "report", "compile.html")
    r = subprocess.run([NPU, "compile", model, "--device", "sim", "--calib", "random", "--shape", "x0=1,64,256", "--explain",
                        "--report", out2, "-o", os.path.join(WORK, "report", "m.npub")],
                       capture_output=True, text=True, timeout=180)
    if not ok(r.returncode == 0 and os.path.exists(out2), "npu compile --explain --report writes an HTML file",
              (r.returncode, r.stderr[-400:])):
        return
    drv.get("file://" + out2)
    ok(wait_js(drv, "window.npuReport && npuReport.charts && npuReport.charts.placement && "
               "document.querySelectorAll('#placement tbody tr').length > 0", 20),
       "the compile report draws the placement")
    errs = severe(drv)
    ok(not errs, "no console errors in the compile report", errs[:3])


# ---- Deployment manifests ---------------------------------------------------------------

def test_manifests():
    import yaml
    d = os.path.join(ROOT, "Documentation", "deploy")
    files = sorted(f for f in os.listdir(d) if f.endswith(".yaml")) if os.path.isdir(d) else []
    if not ok(files, "Documentation/deploy has manifests", d):
        return
    help_text = subprocess.run([NPU, "serve", "--help"], capture_output=True, text=True,
                               timeout=30).stdout
    flags = set(x.split("=")[0].rstrip(",") for x in help_text.split() if x.startswith("--"))
    docs = yaml.safe_load_all
    kinds = {}
    for f in files:
        for doc in docs(open(os.path.join(d, f))):
            if doc:
                kinds.setdefault(doc.get("kind"), []).append((f, doc))
    ok("ServingRuntime" in kinds and "InferenceService" in kinds,
       "a ServingRuntime and an InferenceService", sorted(kinds))
    rt = kinds.get("ServingRuntime", [(None, {})])[0][1]
    spec = rt.get("spec", {})
    ok("v2" in spec.get("protocolVersions", []),
       "the runtime speaks protocol v2", spec.get("protocolVersions"))
    ann = (rt.get("metadata", {}).get("annotations") or {})
    ok(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/path") == "/metrics",
       "Prometheus annotations scrape /metrics", ann)
    c = (spec.get("containers") or [{}])[0]
    args = list(c.get("args", [])) + list(c.get("command", []))
    used = [a.split("=")[0] for a in args if isinstance(a, str) and a.startswith("--")]
    missing = [a for a in used if a not in flags]
    ok(used and not missing, "every flag of the runtime is in npu serve --help (%d flags)" % len(used),
       missing)
    # The routes the manifests name, against a running server.
    paths = []
    for probe in ("livenessProbe", "readinessProbe"):
        p = (c.get(probe) or {}).get("httpGet", {}).get("path")
        ok(p in ("/v2/health/live", "/v2/health/ready"), "%s on a health endpoint" % probe, p)
        paths.append(p)
    paths.append(ann.get("prometheus.io/path"))
    limits = (c.get("resources") or {}).get("limits") or {}
    res = [k for k in limits if "/" in k and k.split("/")[0] not in ("cpu", "memory")]
    ok(res, "the runtime limits name the device plugin's resource", limits)
    ds = (kinds.get("DaemonSet") or [(None, {})])[0][1]
    dc = ((ds.get("spec", {}).get("template", {}).get("spec", {}).get("containers")) or [{}])[0]
    dargs = dc.get("args", [])
    try:
        dev = yaml.safe_load(dargs[dargs.index("--device") + 1])
        plugin_res = dargs[dargs.index("--domain") + 1] + "/" + dev["name"]
        paths_ok = any(p.get("path") == "/dev/accel/accel*" for g in dev["groups"] for p in g["paths"])
    except (ValueError, KeyError, TypeError, IndexError):
        plugin_res, paths_ok = None, False
    isvc = (kinds.get("InferenceService") or [(None, {})])[0][1]
    ilim = isvc.get("spec", {}).get("predictor", {}).get("model", {}).get("resources", {}).get("limits", {})
    ok(paths_ok and plugin_res in res and plugin_res in ilim,
       "the device plugin exposes /dev/accel/accel* as %s, the resource in the limits" % plugin_res,
       (plugin_res, res, ilim))
    repo = os.path.join(WORK, "deployrepo")
    write(f"{repo}/relu/1/model.onnx", make_model.model("Relu", 1, "N,4".split(","), 1))
    # The runtime's own arguments, with what differs on this machine
    # replaced: the repository, loopback and ephemeral ports, no NPU.
    local = {"--model-repository": repo, "--http-address": "127.0.0.1", "--http-port": "0",
             "--grpc-port": "0", "--device": "cpu"}
    rargs = []
    for a in c.get("args", []):
        k = a.split("=")[0]
        rargs.append(k + "=" + local[k] if k in local else a)
    rargs = [a for a in rargs if not a.startswith("--model-repository") and
             not a.startswith("--http-port")]
    s = Server("deploy", repo, *rargs)
    try:
        if ok(s.port, "a server started with the runtime's arguments", rargs):
            for p in paths:
                deadline, st = time.time() + 30, 0
                while time.time() < deadline:
                    st, _ = request(s.port, "GET", p)
                    if st == 200:
                        break
                    time.sleep(0.2)
                ok(st == 200, "GET %s answers 200" % p, st)
    finally:
        s.proc.terminate()
        try:
            s.proc.wait(20)
        except subprocess.TimeoutExpired:
            s.proc.kill()


def main():
    repo = os.path.join(WORK, "repo")
    make_repo(repo)
    s = Server("panel", repo, "--model-control-mode", "explicit", "--load-model", "*",
               "--admin-token", ADMIN)
    s.repo = repo
    drv = service = None
    try:
        if not ok(s.port, "the server starts on an ephemeral port", s.log_text()[-500:]):
            return
        try:
            drv, service = browser()
        except Exception as e:  # noqa: BLE001
            ok(False, "headless chromium starts: %s" % e)
            return
        for name, fn in (("panel", lambda: test_panel(drv, s)), ("reports", lambda: test_reports(drv)),
                         ("manifests", test_manifests)):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 a broken section fails, the rest run
                ok(False, "%s: %s: %s" % (name, type(e).__name__, e))
    finally:
        if drv is not None:
            for p in descendants(service.process.pid):
                track(p)
            try:
                drv.quit()
            except Exception:  # noqa: BLE001
                pass
        if s.proc.poll() is None:
            s.proc.terminate()
            try:
                rc = s.proc.wait(30)
                ok(rc == 0, "the server exits 0 on SIGTERM", rc)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                ok(False, "the server exits on SIGTERM")


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
