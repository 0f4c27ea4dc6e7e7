#!/bin/sh
# The npu CLI is a program on the public API (issue 31): userspace/cli
# includes only <npu/...> (userspace/include), the tools library's
# <npu-tools/...> (userspace/tools/include), its own headers and system
# headers. Fails on any other project header: the library's internals
# (userspace/src), firmware-sim, the hardware contract or the uapi taken
# directly. Prints each offending include as file: header.
# usage: test_cli_public_includes.sh SOURCE_ROOT
set -eu
root=${1:?usage: test_cli_public_includes.sh SOURCE_ROOT}
cli=$root/userspace/cli
[ -d "$cli" ] || { echo "no userspace/cli under $root"; exit 1; }
allowed() {	# allowed HEADER q|a: 0 if the CLI may include it
	case $1 in
	npu/*) [ -f "$root/userspace/include/$1" ] && return 0 ;;
	npu-tools/*) [ -f "$root/userspace/tools/include/$1" ] && return 0 ;;
	esac
	if [ "$2" = q ]; then
		[ -f "$cli/$1" ]	# the CLI's own header
		return
	fi
	# <...>: a system header, unless it names one of the project's
	for d in userspace/src firmware-sim/include driver/hw uapi; do
		[ -f "$root/$d/$1" ] && return 1
	done
	return 0
}
bad=$(for f in "$cli"/*.c "$cli"/*.h; do
	sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1 q/p;
		 s/^[[:space:]]*#[[:space:]]*include[[:space:]]*<([^>]+)>.*/\1 a/p' "$f" |
	while read -r h kind; do
		allowed "$h" "$kind" || echo "userspace/cli/${f##*/}: $h"
	done
done)
if [ -n "$bad" ]; then
	echo "the CLI includes headers that are neither public (<npu/...>) nor the tools library's (<npu-tools/...>):"
	printf '%s\n' "$bad"
	exit 1
fi
echo "userspace/cli includes only public and tools headers"
