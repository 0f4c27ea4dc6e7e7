#!/bin/sh
# `npu trace -o x.json` on a small command stream (both forms: FILE and
# -- COMMAND) writes Chrome-trace JSON that Perfetto loads: check its shape.
# usage: test_device_trace.sh PATH/TO/npu
set -eu
npu=${1:?usage: test_device_trace.sh NPU}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat >"$dir/small.npucs" <<'CS'
# load, scale-free copy, store
.buffer in 4096 init=random:3
.buffer out 4096
dma_copy dst=sram:0 src=in bytes=4096
dma_copy sync dst=out src=sram:0 bytes=4096
CS

"$npu" trace --no-tracefs -o "$dir/a.json" "$dir/small.npucs" --repeat 3 --quiet
"$npu" trace --no-tracefs -o "$dir/b.json" -- "$npu" submit "$dir/small.npucs" --async --repeat 4 --quiet

python3 - "$dir/a.json" 3 "$dir/b.json" 4 <<'PY'
import json, sys
args = sys.argv[1:]
for path, jobs in zip(args[0::2], args[1::2]):
    jobs = int(jobs)
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    assert isinstance(ev, list) and ev, path + ": no traceEvents"
    x = [e for e in ev if e.get("ph") == "X"]
    meta = [e for e in ev if e.get("ph") == "M"]
    dev = [e for e in x if e.get("cat") == "npu.device"]
    host = [e for e in x if e.get("cat") == "npu.host"]
    assert len(dev) == jobs and len(host) == jobs, (path, len(dev), len(host))
    assert any(m["name"] == "thread_name" for m in meta), path + ": no thread names"
    for e in x:
        for k in ("name", "ts", "dur", "pid", "tid", "args"):
            assert k in e, (path, k, e)
        assert isinstance(e["ts"], (int, float)) and e["ts"] > 0, e
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert e["name"].startswith("job "), e
        assert e["args"]["status"] == "OK", e
    for e in dev:
        assert e["args"]["cycles"] > 0 and "macs" in e["args"], e
        assert "queue" in e["args"] and "context" in e["args"], e
    # each device span lies inside its host span (same job id)
    hs = {e["name"]: e for e in host}
    for e in dev:
        h = hs[e["name"]]
        assert h["ts"] - 1 <= e["ts"] and e["ts"] + e["dur"] <= h["ts"] + h["dur"] + 1, (h, e)
    assert "tracefs" in doc["otherData"]
print("trace JSON ok")
PY
