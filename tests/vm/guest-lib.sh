# Helpers for tests/vm/guest.d/*.sh, sourced by guest-suite.sh (and usable
# from `tools/npu-vm shell`: `. /npu/guest-lib.sh`).

NPU_KVER=$(uname -r)
NPU_KO=/lib/modules/$NPU_KVER/extra/npu.ko

# The sysfs directory of our PCI device (vendor 0x1234, device 0x4e50).
npu_pci_dev() {
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x4e50 ]; then
			echo "$d"
			return 0
		fi
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
