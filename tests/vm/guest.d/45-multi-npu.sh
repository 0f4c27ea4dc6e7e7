#!/bin/sh
# Several NPUs (tools/npu-vm --npus N, the VM suite boots 2): each function
# has its accel node, its own PCI address and MSI-X vectors; PP-OCRv4 det
# runs on accel0 and accel1 at the same time (`npu run --device
# /dev/accel/accelK`), each output bit-identical to sim's, and each
# device's own job counter shows it did the work. The kselftest
# npu_multi_test (20-kselftest.sh) covers hang, PRIME sharing and unbind.
. /npu/guest-lib.sh
export PATH=/npu/bin:/npu/vm:$PATH
D=/npu/data

if [ "$NPU_VM_NPUS" -lt 2 ]; then
	echo "ok 1 - several NPUs # SKIP one NPU in this guest (tools/npu-vm --npus 2)"
	exit 0
fi
if [ ! -e /dev/accel/accel0 ]; then
	npu_load_driver || { echo "not ok 1 - npu.ko loads"; exit 1; }
fi
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug

if npu_wait_accel "$NPU_VM_NPUS"; then
	ok "$NPU_VM_NPUS accel nodes: $(ls /dev/accel | tr '\n' ' ')"
else
	notok "$NPU_VM_NPUS accel nodes (found: $(ls /dev/accel 2>/dev/null | tr '\n' ' '))"
	exit 1
fi
k=0
bdfs=
while [ $k -lt "$NPU_VM_NPUS" ]; do
	b=$(basename "$(readlink -f /sys/class/accel/accel$k/device)")
	v=$(ls /sys/class/accel/accel$k/device/msi_irqs 2>/dev/null | sort -n | tr '\n' ' ')
	echo "# accel$k: $b, MSI-X IRQs $v"
	bdfs="$bdfs $b"
	k=$((k + 1))
done
[ "$(echo $bdfs | tr ' ' '\n' | sort -u | wc -l)" = "$NPU_VM_NPUS" ] &&
	ok "each accel node is a PCI function of its own:$bdfs" ||
	notok "each accel node is a PCI function of its own:$bdfs"

if [ ! -f $D/det.npub ] || ! command -v npu >/dev/null; then
	ok "det on two NPUs # SKIP no model data or npu CLI in the guest"
	exit $rc
fi

# Interrupts taken so far on the MSI-X vectors of accel<k> (/proc/interrupts).
irqs_of() {
	t=0
	for v in $(ls /sys/class/accel/accel$1/device/msi_irqs 2>/dev/null); do
		c=$(awk -v irq="$v:" '$1 == irq { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts)
		t=$((t + ${c:-0}))
	done
	echo $t
}

if [ ! -d /tmp/sim-det ]; then
	npu run $D/det.npub --device sim --input x=$D/calib/input.npy \
		--output-dir /tmp/sim-det --quiet >/tmp/run-sim.txt 2>&1 ||
		notok "npu run det.npub --device sim: $(tail -n 3 /tmp/run-sim.txt)"
fi
c0=$(npu_jobs_completed 0)
c1=$(npu_jobs_completed 1)
i0=$(irqs_of 0)
i1=$(irqs_of 1)
# Both at once: two processes, one per device.
for k in 0 1; do
	rm -rf /tmp/multi-det$k
	npu run $D/det.npub --device /dev/accel/accel$k --input x=$D/calib/input.npy \
		--repeat 2 --output-dir /tmp/multi-det$k --quiet >/tmp/multi-run$k.txt 2>&1 &
	eval pid$k=$!
done
wait $pid0
r0=$?
wait $pid1
r1=$?
for k in 0 1; do
	eval r=\$r$k
	if [ "$r" = 0 ]; then
		ok "npu run det.npub --device /dev/accel/accel$k, beside the other: $(tail -n 1 /tmp/multi-run$k.txt)"
	else
		notok "npu run det.npub --device /dev/accel/accel$k, beside the other: $(tail -n 3 /tmp/multi-run$k.txt)"
	fi
done
for k in 0 1; do
	same=1
	for f in /tmp/sim-det/*.npy; do
		[ -f "$f" ] || { same=0; break; }
		cmp -s "$f" "/tmp/multi-det$k/$(basename "$f")" || same=0
	done
	if [ $same = 1 ]; then
		ok "det on accel$k (run concurrently with accel$((1 - k))): outputs equal sim's, bit for bit"
	else
		notok "det on accel$k (run concurrently with accel$((1 - k))): outputs differ from sim's"
	fi
done
if [ -n "$c0" ] && [ -n "$c1" ]; then
	d0=$(( $(npu_jobs_completed 0) - c0 ))
	d1=$(( $(npu_jobs_completed 1) - c1 ))
	[ $d0 -gt 0 ] && [ $d1 -gt 0 ] &&
		ok "each device ran its own process's jobs (accel0 +$d0, accel1 +$d1 jobs)" ||
		notok "each device ran its own process's jobs (accel0 +$d0, accel1 +$d1 jobs)"
fi
i0=$(( $(irqs_of 0) - i0 ))
i1=$(( $(irqs_of 1) - i1 ))
[ $i0 -gt 0 ] && [ $i1 -gt 0 ] &&
	ok "each device interrupted on its own vectors (accel0 +$i0, accel1 +$i1 interrupts)" ||
	notok "each device interrupted on its own vectors (accel0 +$i0, accel1 +$i1 interrupts)"
exit $rc
