#!/bin/sh
# Several NPUs from the CLI (issue 33): `npu info` lists every device of a
# spec, `npu bench --device sim:2` spreads concurrent sessions over both
# NPUs and accounts every run, in data parallel and pipeline mode (outputs
# as one NPU's), and bad specs and modes are errors naming the part.
# usage: test_cli_multi_device.sh PATH/TO/npu
set -eu
npu=${1:?usage: test_cli_multi_device.sh NPU}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Eight MatMuls with a constant weight: one NPU segment.
model=$dir/mm.onnx
python3 "$(dirname "$0")/../../serve/make_model.py" "$model" slow 8 64 64

"$npu" info --device sim:3 --json >"$dir/info.json"
python3 - "$dir/info.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert [d["device"] for d in doc["devices"]] == ["sim", "sim#1", "sim#2"], doc["devices"]
assert doc["device"] == "sim" and doc["backend"] == "sim", doc
assert all(d["mac_rows"] > 0 for d in doc["devices"]), doc
PY
"$npu" info --device sim:2 | grep -q '^\[1\] sim#1$'

"$npu" bench "$model" --device sim:2 --calib random --shape x0=2,64,64 --iters 3 \
	--warmup 1 --json >"$dir/bench.json"
python3 - "$dir/bench.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
p = doc["parallel"]
assert p["mode"] == "data" and p["sessions"] == 2, p
assert [d["name"] for d in p["devices"]] == ["sim", "sim#1"], p
assert sum(d["runs"] for d in p["devices"]) == 6, p
assert doc["npu_segments"] == 1, doc
assert doc["modeled_latency_ms"] == doc["modeled_npu_ms"] > 0, doc
assert p["modeled_throughput_per_s"] > 0 and p["wall_throughput_per_s"] > 0, p
assert sum(d["modeled_busy_ms"] for d in p["devices"]) > 0, p
assert all(d["peak_memory_bytes"] > 0 for d in p["devices"] if d["runs"]), p
PY

# Pipeline: the one segment cut in two, one stage per NPU, every run through both.
"$npu" bench "$model" --device sim:2 --parallel pipeline --calib random --shape x0=2,64,64 \
	--iters 3 --warmup 1 --json >"$dir/pipe.json"
python3 - "$dir/pipe.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
p = doc["parallel"]
assert p["mode"] == "pipeline" and p["stages"] == 2 and doc["npu_segments"] == 2, p
assert [d["runs"] for d in p["devices"]] == [6, 6], p
assert all(d["modeled_busy_ms"] > 0 for d in p["devices"]), p
c = p["cost_model"]
assert c["pipeline_scaling"] > 1.5 and c["data_scaling"] == 2, c
assert c["crossing_bytes"] > 0 and c["device_bytes_max"] < c["model_bytes"], c
assert c["why"].startswith("pipeline (asked for): 2 stages"), c
PY
# The same outputs as one NPU, and --explain says how the devices are used.
"$npu" run "$model" --device sim --calib random --shape x0=2,64,64 --random-inputs 5 \
	--output-dir "$dir/one" --quiet
"$npu" run "$model" --device sim:2 --parallel pipeline --calib random --shape x0=2,64,64 \
	--random-inputs 5 --output-dir "$dir/pipe" --quiet
for f in "$dir"/one/*.npy; do cmp "$f" "$dir/pipe/$(basename "$f")"; done
"$npu" compile "$model" --device sim:2 --parallel pipeline --calib random --shape x0=2,64,64 \
	--explain >"$dir/explain.txt"
grep -q "^devices: 2, pipeline (asked for): 2 stages" "$dir/explain.txt"
"$npu" compile "$model" --device sim:2 --calib random --shape x0=2,64,64 --explain \
	>"$dir/explain.txt"
grep -q "^devices: 2, data parallel (auto): modeled throughput 2.00x" "$dir/explain.txt"
# The accuracy search runs its candidates on the device set, in both modes.
for mode in data pipeline; do
	"$npu" compile "$model" --device sim:2 --parallel $mode --calib random --shape x0=2,64,64 \
		--accuracy-target 0.9 >"$dir/mixed.txt"
	grep -q "accuracy vs fp32 CPU" "$dir/mixed.txt"
done

fails() {	# fails CODE TEXT CMD...: exits CODE, stderr says TEXT
	code=$1 text=$2
	shift 2
	set +e
	"$@" >/dev/null 2>"$dir/err"
	rc=$?
	set -e
	if [ "$rc" -ne "$code" ] || ! grep -q "$text" "$dir/err"; then
		echo "expected exit $code and '$text' from: $*"; cat "$dir/err"; exit 1
	fi
}
fails 1 "count must be 1..16" "$npu" info --device sim:0
fails 1 "'gpu0' is not a device" "$npu" info --device gpu0
fails 1 "no npu accel device 9" "$npu" info --device accel:9
fails 1 "named twice" "$npu" info --device /dev/accel/accel0,/dev/accel/accel0
fails 2 "tiles: not built yet" "$npu" bench "$model" --device sim:2 --parallel tiles
fails 2 "expected data, pipeline or auto" "$npu" bench "$model" --device sim:2 --parallel sideways
fails 2 "expected data, pipeline or auto" "$npu" run "$model" --device sim:2 --parallel 2
fails 1 "needs an NPU device set" "$npu" bench "$model" --device cpu --shape x0=2,64,64 \
	--parallel data --iters 1
fails 1 "count must be 1..16" "$npu" bench "$model" --device sim:99 --calib random
echo "ok"
