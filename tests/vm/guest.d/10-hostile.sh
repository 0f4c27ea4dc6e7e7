#!/bin/sh
# A hostile guest against BAR0 (tests/vm/npu_hostile.c), before any driver
# binds the device. Unbinds a driver if one holds it, and leaves the device
# disabled again for the tests after it.
. /npu/guest-lib.sh

if ! command -v npu-hostile >/dev/null; then
	echo "ok 1 - hostile guest # SKIP npu-hostile not built (tests/vm/run builds it)"
	exit 0
fi
dev=$(npu_pci_dev) || { echo "not ok 1 - hostile guest: no NPU device"; exit 1; }
if [ -e "$dev/driver" ]; then
	echo "# unbinding $(basename "$(readlink -f "$dev/driver")") from $(basename "$dev")"
	echo "$(basename "$dev")" >"$dev/driver/unbind"
fi
npu-hostile
rc=$?
# Balance the sysfs enable (it also clears bus mastering).
echo 0 >"$dev/enable" 2>/dev/null
exit $rc
