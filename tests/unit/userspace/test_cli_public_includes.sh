#!/bin/sh
# The npu CLI is a program on the public API (issue 31): userspace/cli
# includes only <npu/...> (userspace/include), the tools library's
# <npu-tools/...> (userspace/tools/include), its own headers and system
# headers. Fails on any other project header: the library's internals
# (userspace/src), firmware-sim, the hardware contract or the uapi taken
# directly. KNOWN lists the commands not yet converted, header by header;
# an entry that no longer occurs fails too, so the list only shrinks.
# usage: test_cli_public_includes.sh SOURCE_ROOT
set -eu
root=${1:?usage: test_cli_public_includes.sh SOURCE_ROOT}
cli=$root/userspace/cli
[ -d "$cli" ] || { echo "no userspace/cli under $root"; exit 1; }
KNOWN='
cmd_onnx_test.c graph/npu_ir.h
cmd_onnx_test.c graph/npu_str.h
cmd_onnx_test.c onnx/npu_onnx.h
cmd_onnx_test.c runtime/npu_npy.h
'
public() {	# public FILE HEADER QUOTED: 0 if the include is allowed
	case $2 in
	npu/*) [ -f "$root/userspace/include/$2" ] && return 0 ;;
	npu-tools/*) [ -f "$root/userspace/tools/include/$2" ] && return 0 ;;
	esac
	if [ "$3" = q ]; then
		[ -f "$cli/$2" ]	# the CLI's own header
		return
	fi
	# <...>: a system header, unless it names one of the project's
	for d in userspace/src firmware-sim/include driver/hw uapi; do
		[ -f "$root/$d/$2" ] && return 1
	done
	return 0
}
bad=0 seen=''
for f in "$cli"/*.c "$cli"/*.h; do
	name=${f##*/}
	# "file:line:header:q|a" for every #include
	sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1 q/p;
		 s/^[[:space:]]*#[[:space:]]*include[[:space:]]*<([^>]+)>.*/\1 a/p' "$f" |
	while read -r h kind; do
		public "$name" "$h" "$kind" && continue
		if printf '%s\n' "$KNOWN" | grep -qxF "$name $h"; then
			echo "known $name $h"
			continue
		fi
		echo "userspace/cli/$name includes \"$h\", not a public or tools header"
	done
done > "${TMPDIR:-/tmp}/cli-includes.$$"
out=$(cat "${TMPDIR:-/tmp}/cli-includes.$$")
rm -f "${TMPDIR:-/tmp}/cli-includes.$$"
if printf '%s\n' "$out" | grep -v '^known ' | grep -q .; then
	printf '%s\n' "$out" | grep -v '^known '
	bad=1
fi
seen=$(printf '%s\n' "$out" | sed -n 's/^known //p')
stale=$(printf '%s\n' "$KNOWN" | grep . | while read -r e; do
	printf '%s\n' "$seen" | grep -qxF "$e" || echo "$e"
done)
if [ -n "$stale" ]; then
	echo "no longer included (drop from KNOWN in $0):"
	printf '%s\n' "$stale"
	bad=1
fi
[ "$bad" -eq 0 ] && echo "userspace/cli includes only public and tools headers" \
	"($(printf '%s\n' "$KNOWN" | grep -c .) known exceptions left)"
exit "$bad"
