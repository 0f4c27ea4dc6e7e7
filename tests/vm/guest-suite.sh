#!/bin/sh
# The VM suite, inside the guest: run every /npu/guest.d/NN-*.sh in order.
# Each prints TAP lines ("ok N - desc", "not ok N - desc", "ok N - desc #
# SKIP why"); tests/vm/run on the host counts them. A script that exits
# non-zero without reporting a failure gets one "not ok" line here, and
# so does one that prints no TAP line at all.

. /npu/guest-lib.sh
mkdir -p /out/guest.d
for t in /npu/guest.d/[0-9][0-9]-*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	log=/out/guest.d/$name.log
	echo "# ==== $name"
	start=$(cut -d' ' -f1 /proc/uptime)
	{ sh "$t" 2>&1; echo $? >/tmp/rc.$name; } | tee "$log"
	rc=$(cat /tmp/rc.$name)
	end=$(cut -d' ' -f1 /proc/uptime)
	if [ "$rc" != 0 ] && ! grep -q '^not ok' "$log"; then
		echo "not ok - $name exited with status $rc"
	elif ! grep -qE '^(not )?ok' "$log"; then
		echo "not ok - $name printed no TAP result"
	fi
	echo "# $name: exit $rc, $(awk "BEGIN { print $end - $start }") s"
done
