#!/bin/sh
# libnpu-user on the accel backend, in the guest: `npu info`, the device
# layer's unit tests unchanged with NPU_DEVICE=accel, the same command
# stream on sim and on accel with bit-identical results, blocking and
# io_uring jobs/s, and `npu trace` with the driver's tracepoints.
#
# The unit tests are looked up in /npu/vm and /npu/bin (test_device_api,
# test_device_jobs); tests/vm/run copies them there from the meson build.
. /npu/guest-lib.sh
export PATH=/npu/bin:/npu/vm:$PATH
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

if ! command -v npu >/dev/null; then
	echo "ok 1 - libnpu-user on accel # SKIP no npu CLI in /npu/bin (make)"
	exit 0
fi
if [ ! -e /dev/accel/accel0 ]; then
	npu_load_driver || { echo "not ok 1 - npu.ko loads"; exit 1; }
	i=0
	while [ ! -e /dev/accel/accel0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
fi

if npu info --device accel --json >/tmp/info.json 2>/tmp/info.err &&
   grep -q '"backend": "accel"' /tmp/info.json; then
	ok "npu info --device accel --json"
else
	notok "npu info --device accel --json: $(cat /tmp/info.err)"
fi
sed 's/^/# /' /tmp/info.json

for t in test_device_api test_device_jobs; do
	if ! command -v $t >/dev/null; then
		skip "$t on accel" "$t not in the guest image"
		continue
	fi
	if NPU_DEVICE=accel $t >/tmp/$t.log 2>&1; then
		ok "$t on accel (NPU_DEVICE=accel)"
	else
		notok "$t on accel (NPU_DEVICE=accel)"
	fi
	sed 's/^/# /' /tmp/$t.log
done

cat >/tmp/eq.npucs <<'CS'
# DMA + CONV2D over random data: sim and accel must agree bit for bit
.buffer x 4096 init=random:11
.buffer w 4096 init=random:12
.buffer q 4096 init=hex:0010000000100000001000000010000018181818
.buffer y 4096
dma_copy dst=sram:0 src=x bytes=4096
dma_copy dst=sram:8192 src=w bytes=4096
dma_copy dst=sram:16384 src=q bytes=4096
conv2d sync input=0 weight=8192 quant=16384 output=32768 in_h=8 in_w=8 in_c=16 out_c=4 k_h=3 k_w=3 pad_top=1 pad_left=1 pad_bottom=1 pad_right=1 flags=no_bias zp_in=1 zp_w=-1 zp_out=2
dma_copy sync dst=y src=sram:32768 bytes=256
CS
s=$(npu submit /tmp/eq.npucs --device sim --json --dump y 2>&1 | grep -o '"crc32": "[0-9a-f]*"')
a=$(npu submit /tmp/eq.npucs --device accel --json --dump y 2>&1 | grep -o '"crc32": "[0-9a-f]*"')
if [ -n "$s" ] && [ "$s" = "$a" ]; then
	ok "the same stream gives bit-identical output on sim and accel ($s)"
else
	notok "the same stream gives bit-identical output on sim and accel (sim $s, accel $a)"
fi

# The 16x8 mode (ISA 1.2), on a device that reports NPU_CAP_INT16.
cat >/tmp/eq16.npucs <<'CS'
# 16x8 mode (ISA 1.2): CONV2D i16, ELTWISE i16, ELTWISE int8->int16, LUT i16
.buffer x 4096 init=random:11
.buffer w 4096 init=random:12
.buffer q 4096 init=hex:0010000000100000001000000010000018181818
.buffer t 4096 init=random:13
.buffer y 2048
dma_copy dst=sram:0 src=x bytes=4096
dma_copy dst=sram:8192 src=w bytes=4096
dma_copy dst=sram:16384 src=q bytes=4096
dma_copy dst=sram:20480 src=t bytes=4096
conv2d sync i16 input=0 weight=8192 quant=16384 output=32768 in_h=8 in_w=8 in_c=16 out_c=4 in_row_stride=256 in_pixel_stride=32 out_row_stride=64 out_pixel_stride=8 k_h=3 k_w=3 pad_top=1 pad_left=1 pad_bottom=1 pad_right=1 flags=no_bias zp_w=-1
eltwise i16 a=32768 b=32768 output=33280 count=256 mode=1 shift=12 mult_a=3
eltwise types=4 a=8192 b=8192 output=33792 count=256 mode=0 bcast=2 shift=8 mult_a=300 zp_a=3
lut i16 input=33280 output=34304 table=20480 count=256
dma_copy sync dst=y src=sram:32768 bytes=2048
CS
s=$(npu submit /tmp/eq16.npucs --device sim --json --dump y 2>&1 | grep -o '"crc32": "[0-9a-f]*"')
a=$(npu submit /tmp/eq16.npucs --device accel --json --dump y 2>&1 | grep -o '"crc32": "[0-9a-f]*"')
if [ -n "$s" ] && [ "$s" = "$a" ]; then
	ok "an int16 stream (CONV2D, ELTWISE, LUT) gives bit-identical output on sim and accel ($s)"
else
	notok "an int16 stream (CONV2D, ELTWISE, LUT) gives bit-identical output on sim and accel (sim $s, accel $a)"
fi

for mode in "" "--async --inflight 32"; do
	if npu submit /tmp/eq.npucs --device accel --repeat 200 --quiet $mode >/tmp/rate.log 2>&1; then
		ok "200 jobs on accel ${mode:-blocking}: $(tail -n 2 /tmp/rate.log | head -n 1)"
	else
		notok "200 jobs on accel ${mode:-blocking}"
		sed 's/^/# /' /tmp/rate.log
	fi
done

if npu trace -o /tmp/trace.json /tmp/eq.npucs --device accel --repeat 3 --quiet 2>/tmp/trace.err &&
   grep -q '"traceEvents"' /tmp/trace.json &&
   [ "$(grep -o '"cat":"npu.device"' /tmp/trace.json | wc -l)" -eq 3 ]; then
	ok "npu trace on accel: $(tail -n 1 /tmp/trace.err)"
	grep -q '"cat":"npu.tracepoint"' /tmp/trace.json && ok "the trace holds driver tracepoints" ||
		skip "the trace holds driver tracepoints" "$(grep -o '"tracefs":"[^"]*"' /tmp/trace.json)"
else
	notok "npu trace on accel"
	sed 's/^/# /' /tmp/trace.err
fi
[ -d /out ] && cp /tmp/trace.json /out/libnpu-accel-trace.json 2>/dev/null
exit $rc
