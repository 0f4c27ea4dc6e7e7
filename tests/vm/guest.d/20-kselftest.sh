#!/bin/sh
# Guest side of `make kselftest` (and of the VM suite): load npu.ko unless
# it is loaded, then run every kselftest binary listed in
# /npu/kselftest/TESTS (tools/npu-vm copies build/kselftest/ there) and pass
# their TAP through. Exit status: 0 only if every binary passed.
KSFT=/npu/kselftest
KVER=$(uname -r)
export NPU_KO=/lib/modules/$KVER/extra/npu.ko
# A short job timeout keeps the hang / recovery tests quick.
export NPU_KO_ARGS="job_timeout_ms=1000"

grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug

if ! grep -q '^npu ' /proc/modules; then
	if ! insmod "$NPU_KO" $NPU_KO_ARGS; then
		echo "not ok 1 insmod $NPU_KO"
		exit 1
	fi
fi
# Every NPU the VM has (tools/npu-vm --npus; npu_multi_test needs two).
. /npu/guest-lib.sh
npu_wait_accel "$NPU_VM_NPUS" ||
	echo "# only $(ls /dev/accel 2>/dev/null | tr '\n' ' ')of $NPU_VM_NPUS NPUs came up"

tests=$(cat "$KSFT/TESTS" 2>/dev/null)
[ -n "$tests" ] || tests=$(cd "$KSFT" && ls *_test 2>/dev/null)
if [ -z "$tests" ]; then
	echo "not ok 1 no kselftest binaries in $KSFT"
	exit 1
fi

rc=0
for t in $tests; do
	echo "# ---- $t"
	"$KSFT/$t"
	r=$?
	echo "# ---- $t: exit $r"
	[ $r -eq 0 ] || rc=1
done
exit $rc
