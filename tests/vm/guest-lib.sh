# Helpers for tests/vm/guest.d/*.sh, sourced by guest-suite.sh (and usable
# from `tools/npu-vm shell`: `. /npu/guest-lib.sh`).

NPU_KVER=$(uname -r)
NPU_KO=/lib/modules/$NPU_KVER/extra/npu.ko

# NPU functions tools/npu-vm put in this guest (--npus; 1 if unknown).
NPU_VM_NPUS=$(sed -n 's/^NPU_VM_NPUS=//p' /npu/config 2>/dev/null)
NPU_VM_NPUS=${NPU_VM_NPUS:-1}

# The sysfs directories of our PCI devices (vendor 0x1234, device 0x4e50),
# one a line, in PCI address order.
npu_pci_devs() {
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x4e50 ]; then
			echo "$d"
		fi
	done
}

# The first of them (the lowest PCI address).
npu_pci_dev() {
	d=$(npu_pci_devs | head -n 1)
	[ -n "$d" ] && echo "$d"
}

# Wait up to 5 s for /dev/accel/accel0 .. accel<N-1>.
npu_wait_accel() {
	i=0
	while [ $i -lt 50 ]; do
		k=0
		while [ $k -lt "$1" ] && [ -e /dev/accel/accel$k ]; do k=$((k + 1)); done
		[ $k -ge "$1" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# Load npu.ko once; returns non-zero when it is missing or fails to load.
npu_load_driver() {
	grep -q '^npu ' /proc/modules && return 0
	[ -f "$NPU_KO" ] || return 1
	insmod "$NPU_KO"
}

npu_unload_driver() {
	grep -q '^npu ' /proc/modules || return 0
	rmmod npu
}

# TAP lines of a guest.d script: ok / notok number them, notok sets rc.
n=0
rc=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; rc=1; }

# jobs_completed of the device behind /dev/accel/accel<k> (debugfs).
npu_jobs_completed() {
	b=$(basename "$(readlink -f /sys/class/accel/accel$1/device)")
	sed -n 's/^jobs_completed //p' /sys/kernel/debug/accel/$b/npu_counters 2>/dev/null
}
