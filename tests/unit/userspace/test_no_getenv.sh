#!/bin/sh
# The library reads no environment variable but one (issue 31): every
# switch is an option. The one documented exception is NPU_TRACE_FILE,
# read once in npu_engine_create() (npu_engine_options.trace_file NULL).
# Fails on any other getenv / secure_getenv / environ in userspace/src.
# usage: test_no_getenv.sh SOURCE_ROOT
set -eu
root=${1:?usage: test_no_getenv.sh SOURCE_ROOT}
cd "$root"
found=$(grep -rnE '(secure_)?getenv *\(|\benviron\b' userspace/src --include='*.c' --include='*.h' || true)
allowed='userspace/src/runtime/npu_engine.c:[0-9]*:.*getenv("NPU_TRACE_FILE")'
extra=$(printf '%s\n' "$found" | grep -v "^$allowed" | grep -v '^$' || true)
if [ -n "$extra" ]; then
	echo "environment read in the library (make it an option; see Documentation/libnpu-user.md):"
	printf '%s\n' "$extra"
	exit 1
fi
if [ "$(printf '%s\n' "$found" | grep -c "^$allowed")" != 1 ]; then
	echo "expected exactly one getenv(\"NPU_TRACE_FILE\") in npu_engine.c, found:"
	printf '%s\n' "$found"
	exit 1
fi
echo "ok: the only environment read is NPU_TRACE_FILE in npu_engine_create()"
