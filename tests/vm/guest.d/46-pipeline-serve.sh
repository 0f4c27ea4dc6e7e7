#!/bin/sh
# Several NPUs in use together (issue 33), on the guest's two accel nodes:
# - pipeline mode: det compiled on the host in two stages (det-p2.npub),
#   run with --device accel:* --parallel pipeline, one stage per NPU,
#   outputs bit-identical to sim's, both devices did jobs;
# - npu serve --device accel:*: an instance on each NPU, four clients,
#   a hang injected on accel1 in the middle of the load: every request
#   answered 200 (the failed run ran again on accel0) and /metrics counts
#   the failover and shows accel1 out of rotation.
. /npu/guest-lib.sh
export PATH=/npu/bin:/npu/vm:$PATH
D=/npu/data

if [ "$NPU_VM_NPUS" -lt 2 ]; then
	echo "ok 1 - pipeline and serving on several NPUs # SKIP one NPU in this guest"
	exit 0
fi
if [ ! -f $D/det-p2.npub ] || [ ! -f $D/rec-infer.json ] || ! command -v npu >/dev/null; then
	echo "ok 1 - pipeline and serving on several NPUs # SKIP no model data or npu CLI in the guest"
	exit 0
fi
npu_load_driver || { echo "not ok 1 - npu.ko loads"; exit 1; }
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
npu_wait_accel 2 || { echo "not ok 1 - two accel nodes"; exit 1; }


# ---- pipeline: det in two stages, one per NPU ----
if [ ! -d /tmp/sim-det ]; then
	npu run $D/det.npub --device sim --input x=$D/calib/input.npy \
		--output-dir /tmp/sim-det --quiet >/tmp/run-sim.txt 2>&1
fi
c0=$(npu_jobs_completed 0)
c1=$(npu_jobs_completed 1)
rm -rf /tmp/pipe-det
if npu run $D/det-p2.npub --device 'accel:*' --parallel pipeline \
	--input x=$D/calib/input.npy --output-dir /tmp/pipe-det --quiet >/tmp/pipe.txt 2>&1; then
	same=1
	for f in /tmp/sim-det/*.npy; do
		[ -f "$f" ] || { same=0; break; }
		cmp -s "$f" "/tmp/pipe-det/$(basename "$f")" || same=0
	done
	d0=$(( $(npu_jobs_completed 0) - c0 ))
	d1=$(( $(npu_jobs_completed 1) - c1 ))
	if [ $same = 1 ] && [ $d0 -gt 0 ] && [ $d1 -gt 0 ]; then
		ok "det in two pipeline stages on accel0 and accel1: outputs equal sim's, bit for bit (accel0 +$d0, accel1 +$d1 jobs)"
	else
		notok "det in two pipeline stages: same as sim $same, accel0 +$d0, accel1 +$d1 jobs"
	fi
else
	notok "npu run det-p2.npub --device accel:* --parallel pipeline: $(tail -n 3 /tmp/pipe.txt)"
fi

# ---- npu serve on both NPUs, one failing mid-load ----
# The initramfs brings no interface up; the server and its clients talk
# over loopback.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
repo=/tmp/serve-repo
rm -rf $repo /tmp/ports
mkdir -p $repo/rec/1
cp $D/rec.npub $repo/rec/1/model.npub
cat >$repo/rec/config.pbtxt <<'EOF'
max_batch_size: 0
instance_group { kind: KIND_NPU count: 1 }
EOF
npu serve --model-repository $repo --device 'accel:*' --http-port 0 --grpc-port -1 \
	--metrics-port -1 --port-file /tmp/ports >/tmp/serve.log 2>&1 &
spid=$!
i=0
while [ ! -s /tmp/ports ] && [ $i -lt 600 ] && kill -0 $spid 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
port=$(sed -n 's/^http=//p' /tmp/ports 2>/dev/null)
url=http://127.0.0.1:$port
ready=0
i=0
while [ -n "$port" ] && [ $i -lt 600 ]; do
	wget -q -O /dev/null "$url/v2/models/rec/ready" 2>/dev/null && { ready=1; break; }
	sleep 0.1
	i=$((i + 1))
done
if [ $ready = 0 ]; then
	notok "npu serve --device accel:* serves rec: $(tail -n 5 /tmp/serve.log)"
	kill $spid 2>/dev/null
	exit 1
fi
ok "npu serve --device accel:* serves rec ($(grep -o "loaded model 'rec'.*" /tmp/serve.log | head -n 1))"

# Four clients, eight requests each; a hang on accel1 after the first ones.
client() {
	j=0
	while [ $j -lt 8 ]; do
		if wget -q -O /tmp/resp.$1.$j --header 'Content-Type: application/json' \
			--post-file $D/rec-infer.json "$url/v2/models/rec/infer" 2>/tmp/wget.$1.$j &&
		   grep -q '"outputs"' /tmp/resp.$1.$j; then
			echo ok >>/tmp/client.$1
		else
			echo "fail $j: $(cat /tmp/wget.$1.$j)" >>/tmp/client.$1
		fi
		j=$((j + 1))
	done
}
rm -f /tmp/client.*
for c in 1 2 3 4; do
	client $c &
	eval cpid$c=$!
done
# Mid-load: once 4 of the 32 have been answered (at most 60 s).
i=0
while [ "$(cat /tmp/client.* 2>/dev/null | wc -l)" -lt 4 ] && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
b1=$(basename "$(readlink -f /sys/class/accel/accel1/device)")
dbg=/sys/kernel/debug/accel/$b1
if [ -d $dbg/fail_hang ]; then
	for kv in verbose=0 interval=1 space=0 times=1 probability=100; do
		echo "${kv#*=}" >$dbg/fail_hang/${kv%%=*}
	done
else
	echo 1 >$dbg/npu_inject_hang
fi
for c in 1 2 3 4; do
	eval wait \$cpid$c
done
good=$(cat /tmp/client.* 2>/dev/null | grep -c '^ok$')
if [ "$good" = 32 ]; then
	ok "32 requests from 4 clients with a hang injected on accel1 mid-load: all answered 200"
else
	notok "32 requests with a hang on accel1: $good answered ($(grep -h fail /tmp/client.* | head -n 3))"
fi
wget -q -O /tmp/metrics "$url/metrics" 2>/dev/null
fo=$(sed -n 's|^npu_serve_device_failovers_total{device="/dev/accel/accel1"} ||p' /tmp/metrics)
rot=$(sed -n 's|^npu_serve_device_out_of_rotation{device="/dev/accel/accel1"} ||p' /tmp/metrics)
cyc0=$(sed -n 's|^npu_serve_device_cycles_total{device="/dev/accel/accel0"} ||p' /tmp/metrics)
if [ "${fo:-0}" -ge 1 ] && [ "$rot" = 1 ] && [ "${cyc0:-0}" -gt 0 ]; then
	ok "/metrics: accel1 failovers $fo, out of rotation; accel0 took the load ($cyc0 cycles)"
else
	notok "/metrics: accel1 failovers '${fo}', out of rotation '${rot}', accel0 cycles '${cyc0}'"
	grep -E "failover|rotation|hung|banned" /tmp/serve.log | head -n 5 | sed 's/^/# /'
fi
grep -q "taken out of rotation" /tmp/serve.log &&
	ok "the server's log names the device taken out of rotation" ||
	notok "the server's log names the device taken out of rotation"
kill -TERM $spid 2>/dev/null
i=0
while kill -0 $spid 2>/dev/null && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -0 $spid 2>/dev/null && { kill -KILL $spid; notok "npu serve exits on SIGTERM"; } ||
	ok "npu serve exits on SIGTERM"
exit $rc
