#!/bin/sh
# /init of the tools/npu-vm guest (busybox). The kernel console is ttyS1
# (captured to a host file); the command runs on ttyS0, the host's stdio.
# Ends with the result marker on ttyS0 and a forced power-off.

/bin/busybox mkdir -p /proc /sys /dev /tmp /run /out /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/npu/bin:/npu/vm:/npu/kselftest:/sbin:/bin:/usr/sbin:/usr/bin
export HOME=/root TERM=${TERM:-vt100}
mkdir -p /root

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null

. /npu/config
TTY=/dev/ttyS0

KMOD=/lib/modules/$NPU_VM_KVER
for m in $(cat /npu/modules.order /npu/modules.extra 2>/dev/null); do
	name=$(echo "${m%.ko}" | tr - _)
	grep -q "^$name " /proc/modules && continue
	insmod "$KMOD/$m" 2>/dev/null || echo "npu-vm: insmod $m failed" >/dev/kmsg
done

if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 npuout /out; then
	OUT_OK=1
else
	echo "npu-vm: cannot mount the 9p result share" >/dev/kmsg
	OUT_OK=0
fi

# The kernel log, streamed to the host as it is written: on the debug
# kernel both serial ports have gone silent mid-run, and a long run can
# push an early report out of the log buffer before the final dmesg.
KMSG_PID=
if [ "$OUT_OK" = 1 ]; then
	# A read returns EPIPE once records were overwritten, which ends cat;
	# the next read on the same descriptor (3: an asynchronous command's
	# stdin would be /dev/null) goes on from the oldest record left.
	(
		trap 'kill $c 2>/dev/null; exit 0' TERM
		while :; do
			cat <&3 &
			c=$!
			wait $c
			sleep 0.2
		done
	) 3</dev/kmsg >/out/kmsg.txt 2>/dev/null &
	KMSG_PID=$!
fi

# The command's terminal: no CR before LF, so the host sees clean output.
[ "$NPU_VM_MODE" = run ] && stty -F $TTY -onlcr 2>/dev/null

finish() {
	[ "$OUT_OK" = 1 ] && dmesg >/out/dmesg.txt 2>/dev/null
	# The same result through 9p: on the debug kernel ttyS0's output has
	# stalled mid-run (tools/npu-vm falls back to this file).
	[ "$OUT_OK" = 1 ] && echo "$1" >/out/.npu-vm-result
	[ -n "$KMSG_PID" ] && kill $KMSG_PID 2>/dev/null && wait $KMSG_PID 2>/dev/null
	sync
	[ "$OUT_OK" = 1 ] && umount /out
	# Shell mode has no one to read it: the user saw everything.
	# Bounded: a write to a stalled ttyS0 must not keep the guest from
	# powering off.
	[ "$NPU_VM_MODE" = run ] && timeout 10 sh -c "echo '@@NPU-VM-RESULT $1@@' >$TTY"
	poweroff -f
	sleep 10
}

if [ "$NPU_VM_LOAD_DRIVER" = 1 ]; then
	if ! insmod "$KMOD/extra/npu.ko" >$TTY 2>&1; then
		finish driver-load-failed
	fi
fi

echo "npu-vm: running $(cat /npu/cmd.sh | tail -n 1)" >/dev/kmsg
if [ "$NPU_VM_MODE" = shell ]; then
	echo "npu-vm guest shell: exit to power off. Programs in /npu/bin, results to /out." >$TTY
	# A session with ttyS0 as its controlling terminal, so Ctrl-C works.
	setsid sh -c "exec <$TTY >$TTY 2>&1; cd /root; exec sh -l"
	rc=$?
else
	cd /root
	sh /npu/cmd.sh </dev/null >$TTY 2>&1
	rc=$?
fi
finish "rc=$rc"
