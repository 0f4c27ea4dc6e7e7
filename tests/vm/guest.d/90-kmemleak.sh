#!/bin/sh
# On a kernel with kmemleak (tests/vm/run-debug): scan after everything
# else ran and fail on a leak whose allocation backtrace is in the npu
# driver or the DRM / dma-buf / syncobj / io_uring code it drives. Other
# reports are printed, not counted (boot-time noise of the debug kernel).
ml=/sys/kernel/debug/kmemleak
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
if [ ! -e $ml ]; then
	echo "ok 1 - no kmemleak reports # SKIP kernel without kmemleak"
	exit 0
fi
# Objects freed late (RCU, deferred work) need a moment and two scans.
sleep 5
echo scan >$ml
sleep 5
echo scan >$ml
cat $ml >/tmp/kmemleak.txt
total=$(grep -c '^unreferenced object' /tmp/kmemleak.txt)
# One report: from "unreferenced object" to the next; ours if it names us.
ours=$(awk '/^unreferenced object/ { if (rep != "" && rep ~ /npu_|drm_|dma_buf|dma_fence|syncobj|io_uring|drm_sched/) n++; rep = "" }
	{ rep = rep "\n" $0 }
	END { if (rep != "" && rep ~ /npu_|drm_|dma_buf|dma_fence|syncobj|io_uring|drm_sched/) n++; print n + 0 }' /tmp/kmemleak.txt)
echo "# kmemleak: $total unreferenced objects, $ours in npu / DRM / dma-buf / io_uring paths"
if [ "$ours" -gt 0 ]; then
	sed 's/^/# /' /tmp/kmemleak.txt | head -n 200
	echo "not ok 1 - no kmemleak reports in npu / DRM paths ($ours)"
	exit 1
fi
[ "$total" -gt 0 ] && sed 's/^/# /' /tmp/kmemleak.txt | head -n 60
echo "ok 1 - no kmemleak reports in npu / DRM paths"
