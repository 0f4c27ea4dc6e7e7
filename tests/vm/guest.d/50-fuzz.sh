#!/bin/sh
# The uAPI fuzzer (tests/kselftest/npu_fuzz.c): random valid and invalid
# ioctls, mmaps, PRIME, syncobjs and io_uring submits from several processes,
# with fork, exit and SIGKILL; afterwards no BO, job or context may be left
# (debugfs npu_counters) and a correctness job must pass. Splats in the
# kernel log fail the run on the host.
#   NPU_FUZZ_OPS (default 100000), NPU_FUZZ_SEED (default 1: make check is
#   reproducible; make soak passes new seeds),
#   NPU_FUZZ_PROCS (default 4); tests/vm/run-debug passes them (make soak).
# On a kernel with failslab / fail_page_alloc (the debug kernel) a second
# run of a tenth of the operations makes 1% of the fuzzer workers' kernel
# allocations fail (task-filter: only processes with make-it-fail, which
# the workers set): the driver's error paths must leak nothing either.
. /npu/guest-lib.sh

fuzz=/npu/kselftest/npu_fuzz
if [ ! -x "$fuzz" ]; then
	echo "ok 1 - uAPI fuzzer # SKIP npu_fuzz not built (make -C tests/kselftest)"
	exit 0
fi
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
if ! grep -q "^npu " /proc/modules && ! insmod "$NPU_KO" job_timeout_ms=1000; then
	echo "not ok 1 - uAPI fuzzer: npu.ko does not load"
	exit 1
fi
i=0
while [ ! -e /dev/accel/accel0 ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done

seed=${NPU_FUZZ_SEED:-1}
ops=${NPU_FUZZ_OPS:-100000}
"$fuzz" -s "$seed" -n "$ops" -p "${NPU_FUZZ_PROCS:-4}" || exit 1

fi=/sys/kernel/debug
if [ ! -d $fi/failslab ] || [ ! -d $fi/fail_page_alloc ]; then
	echo "ok 2 - npu_fuzz with failing allocations # SKIP kernel without failslab / fail_page_alloc"
	exit 0
fi
for d in $fi/failslab $fi/fail_page_alloc; do
	echo 1 >$d/probability
	echo 1 >$d/interval
	echo -1 >$d/times
	echo 0 >$d/verbose
	echo Y >$d/task-filter
	echo N >$d/ignore-gfp-wait
done
# User and shmem pages (highmem-capable) are not failed: a fault there is
# a SIGBUS for the fuzzer, not a driver error path.
echo Y >$fi/fail_page_alloc/ignore-gfp-highmem
"$fuzz" -s "$((seed + 1))" -n "$((ops / 10))" -p "${NPU_FUZZ_PROCS:-4}" -f >/tmp/fuzz-f.txt 2>&1
rc=$?
sed 's/^\(not \)\{0,1\}ok 1 /\1ok 2 /' /tmp/fuzz-f.txt
for d in $fi/failslab $fi/fail_page_alloc; do
	echo 0 >$d/probability
done
exit $rc
