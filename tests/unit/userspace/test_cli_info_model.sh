#!/bin/sh
# `npu info MODEL` prints what the model says about itself (issue 31): its
# interface and metadata, as text and as JSON; a missing or malformed file
# is an error that names it.
# usage: test_cli_info_model.sh PATH/TO/npu
set -eu
npu=${1:?usage: test_cli_info_model.sh NPU}
model=/usr/share/libonnx-testdata/data/node/test_relu/model.onnx
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$npu" info "$model" >"$dir/text"
grep -q '^producer   backend-test$' "$dir/text"
grep -q '^graph      test_relu$' "$dir/text"
grep -q '^  x: float\[3,4,5\]$' "$dir/text"

"$npu" info --json "$model" >"$dir/json"
python3 - "$dir/json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["producer_name"] == "backend-test", doc
assert doc["graph_name"] == "test_relu", doc
assert doc["model_version"] == 0 and doc["metadata_props"] == {}, doc
assert doc["inputs"] == [{"name": "x", "type": "float", "shape": [3, 4, 5]}], doc
assert doc["outputs"][0]["name"] == "y", doc
PY

printf 'not a model' >"$dir/junk.onnx"
if "$npu" info "$dir/junk.onnx" 2>"$dir/err"; then
	echo "npu info accepted a malformed model"; exit 1
fi
grep -q "junk.onnx" "$dir/err"
if "$npu" info "$dir/missing.onnx" 2>"$dir/err"; then
	echo "npu info accepted a missing model"; exit 1
fi
grep -q "missing.onnx" "$dir/err"
echo "npu info MODEL: text, JSON and bad files checked"
