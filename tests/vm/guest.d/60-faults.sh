#!/bin/sh
# The fault campaign (tests/kselftest/npu_faults.c): innocent processes run
# checksummed copy jobs while hangs, MMU faults, firmware boot failures,
# function resets and unbind/rebind are injected, and a guilty process
# submits faulting and overlong jobs. No innocent job may be lost or
# corrupted; every injection must be followed by a working device.
#   NPU_FAULTS_SECONDS (default 60), NPU_FAULTS_SEED (default 1: make check is
#   reproducible; make soak passes new seeds);
#   tests/vm/run-debug passes them (make soak).
. /npu/guest-lib.sh

faults=/npu/kselftest/npu_faults
if [ ! -x "$faults" ]; then
	echo "ok 1 - fault campaign # SKIP npu_faults not built (make -C tests/kselftest)"
	exit 0
fi
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
if ! grep -q '^npu ' /proc/modules; then
	# A short job timeout keeps the hangs short.
	insmod "$NPU_KO" job_timeout_ms=1000 || {
		echo "not ok 1 - fault campaign: npu.ko does not load"
		exit 1
	}
fi
i=0
while [ ! -e /dev/accel/accel0 ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
echo "# job_timeout_ms=$(cat /sys/module/npu/parameters/job_timeout_ms 2>/dev/null)"
seed=${NPU_FAULTS_SEED:-1}
exec "$faults" -s "$seed" -t "${NPU_FAULTS_SECONDS:-60}"
