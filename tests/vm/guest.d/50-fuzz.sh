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
# the workers set), and where the kernel has the stacktrace filter, only
# allocations with an npu.ko function on the stack: the driver's error
# paths must leak nothing either.
# Each fuzzer run is bounded in time below NPU_SCRIPT_LIMIT, the harness's
# watchdog for this script, so that a slow run reports instead of being killed.
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
limit=${NPU_SCRIPT_LIMIT:-2400}
"$fuzz" -s "$seed" -n "$ops" -p "${NPU_FUZZ_PROCS:-4}" -t $((limit * 3 / 4)) || exit 1

fi=/sys/kernel/debug
if [ ! -d $fi/failslab ] || [ ! -d $fi/fail_page_alloc ]; then
	echo "ok 2 - npu_fuzz with failing allocations # SKIP kernel without failslab / fail_page_alloc"
	exit 0
fi
for d in $fi/failslab $fi/fail_page_alloc; do
	echo 1 >$d/probability
	echo 1 >$d/interval
	# Counts down once per injected failure: the difference is the count.
	echo 100000000 >$d/times
	echo 0 >$d/verbose
	echo Y >$d/task-filter
	echo N >$d/ignore-gfp-wait
done
# User and shmem pages (highmem-capable) are not failed: a fault there is
# a SIGBUS for the fuzzer, not a driver error path.
echo Y >$fi/fail_page_alloc/ignore-gfp-highmem
scope="the fuzzer workers' allocations"
if [ -e $fi/failslab/require-start ]; then
	# npu.ko's text: its lowest and highest function addresses, plus 4 KiB
	# for the last function's body (the filter compares return addresses).
	# 64-bit hex is split because the shell's arithmetic is signed.
	set -- $(awk '$4 == "[npu]" && ($2 == "t" || $2 == "T") { print $1 }' /proc/kallsyms | sort | sed -n '1p;$p')
	if [ $# -eq 2 ] && [ "$1" != 0000000000000000 ]; then
		hi=${2%????????}
		lo=$((0x${2#$hi} + 4096))
		[ $lo -gt $((0xffffffff)) ] && lo=$((0xffffffff))
		for d in $fi/failslab $fi/fail_page_alloc; do
			echo 0x$1 >$d/require-start
			printf '0x%s%08x\n' "$hi" $lo >$d/require-end
			echo 32 >$d/stacktrace-depth
		done
		scope="$scope with an npu.ko function on the stack (0x$1-$(cat $fi/failslab/require-end))"
	fi
fi
echo "# failing allocations: 1 in 100 of $scope"
"$fuzz" -s "$((seed + 1))" -n "$((ops / 10))" -p "${NPU_FUZZ_PROCS:-4}" -t $((limit / 8)) -f >/tmp/fuzz-f.txt 2>&1
rc=$?
sed 's/^\(not \)\{0,1\}ok 1 /\1ok 2 /' /tmp/fuzz-f.txt
for d in $fi/failslab $fi/fail_page_alloc; do
	echo 0 >$d/probability
done
slab=$((100000000 - $(cat $fi/failslab/times)))
page=$((100000000 - $(cat $fi/fail_page_alloc/times)))
echo "# failing allocations: $slab slab and $page page allocations failed"
if [ $((slab + page)) -gt 0 ]; then
	echo "ok 3 - failures were injected into $scope"
else
	echo "not ok 3 - failures were injected into $scope (none was)"
	rc=1
fi
exit $rc
