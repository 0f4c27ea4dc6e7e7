#!/bin/sh
# The guest sees our PCI device with the IDs of npu_hw.h.
. /npu/guest-lib.sh

dev=$(npu_pci_dev)
if [ -z "$dev" ]; then
	echo "not ok 1 - an NPU PCI device (1234:4e50) is present"
	echo "# devices: $(cat /sys/bus/pci/devices/*/vendor /sys/bus/pci/devices/*/device | tr '\n' ' ')"
	exit 1
fi
echo "ok 1 - an NPU PCI device (1234:4e50) is present at $(basename "$dev")"
class=$(cat "$dev/class")
[ "$class" = 0x120000 ] && r=ok || r="not ok"
echo "$r 2 - its class is 0x120000, processing accelerator (got $class)"
rev=$(cat "$dev/revision")
[ "$rev" = 0x01 ] && r=ok || r="not ok"
echo "$r 3 - its revision is 0x01 (got $rev)"
# resource lines: start end flags; BAR0 is 64 KiB of memory, BAR2 holds MSI-X.
set -- $(sed -n 1p "$dev/resource")
size=$(( $2 - $1 + 1 ))
[ "$size" = 65536 ] && r=ok || r="not ok"
echo "$r 4 - BAR0 is 64 KiB (got $size bytes)"
set -- $(sed -n 3p "$dev/resource")
[ $(( $2 )) -ne 0 ] && r=ok || r="not ok"
echo "$r 5 - BAR2 (MSI-X) is present"
# It sits behind the PCIe root port, as a PCIe endpoint.
parent=$(basename "$(dirname "$(readlink -f "$dev")")")
[ "$parent" != pci0000:00 ] && r=ok || r="not ok"
echo "$r 6 - it is behind a PCIe root port ($parent)"
# tools/npu-vm --npus N: N functions, each at its own address behind a
# root port of its own.
set -- $(npu_pci_devs)
[ $# = "$NPU_VM_NPUS" ] && r=ok || r="not ok"
echo "$r 7 - $NPU_VM_NPUS NPU functions (tools/npu-vm --npus $NPU_VM_NPUS; found $#: $(for d; do basename "$d"; done | tr '\n' ' '))"
parents=$(for d; do basename "$(dirname "$(readlink -f "$d")")"; done | sort -u | wc -l)
[ "$parents" = $# ] && r=ok || r="not ok"
echo "$r 8 - each behind a root port of its own ($parents root ports for $# functions)"
