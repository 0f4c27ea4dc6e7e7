#!/bin/sh
# The layers include only downward (cli/serve -> runtime -> compiler/onnx ->
# cpu/driver -> graph/device -> common): graph/ (the IR and the op schemas)
# and onnx/ (the importer) include nothing of the CPU backend, the compiler
# or the runtime. Prints each offending include as file:line and fails.
# usage: test_layer_includes.sh PATH/TO/userspace/src
set -eu
src=${1:?usage: test_layer_includes.sh USERSPACE_SRC}
[ -d "$src/graph" ] && [ -d "$src/onnx" ] || { echo "no graph/ or onnx/ under $src"; exit 1; }
bad=0
check() {	# check DIR PATTERN: no #include "<PATTERN>/..." in DIR
	hits=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($2)/" "$src/$1" \
		--include='*.c' --include='*.h' || true)
	if [ -n "$hits" ]; then
		echo "$1/ includes a layer above it:"
		echo "$hits" | sed "s|^$src/||"
		bad=1
	fi
}
check graph 'cpu|compiler|runtime|onnx'
check onnx 'cpu|compiler|runtime'
[ "$bad" -eq 0 ] && echo "graph/ and onnx/ include only their own layer and below"
exit "$bad"
