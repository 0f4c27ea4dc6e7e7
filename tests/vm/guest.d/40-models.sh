#!/bin/sh
# PP-OCRv4 compiled for the NPU, on the real driver: the same .npub (det,
# rec, rec16 = rec in the 16x8 mode, and det-24 = det with 2:4 sparse
# weights) gives bit-identical outputs on accel and on sim, and
# examples/ocr-detect finds the rendered text on accel. Data: /npu/data,
# made on the host by tests/models/prepare and tests/vm/run.
. /npu/guest-lib.sh
export PATH=/npu/bin:/npu/vm:$PATH
D=/npu/data

if [ ! -f $D/det.npub ] || ! command -v npu >/dev/null; then
	echo "ok 1 - compiled model on accel # SKIP no model data or npu CLI in the guest"
	exit 0
fi
if [ ! -e /dev/accel/accel0 ]; then
	npu_load_driver || { echo "not ok 1 - npu.ko loads"; exit 1; }
	i=0
	while [ ! -e /dev/accel/accel0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
fi

# sim and accel in this guest share the CPU, so the fp32 CPU ops around the
# NPU segments compute the same bits; the NPU parts must then agree exactly.
# (The host's outputs can differ in the last bits: its CPU kernels take
# AVX-512 paths that this TCG guest does not have.)
for dev in accel sim; do
	if npu run $D/det.npub --device $dev --input x=$D/calib/input.npy \
		--output-dir /tmp/$dev-det --quiet >/tmp/run-$dev.txt 2>&1; then
		ok "npu run det.npub --device $dev: $(tail -n 1 /tmp/run-$dev.txt)"
	else
		notok "npu run det.npub --device $dev: $(tail -n 3 /tmp/run-$dev.txt)"
	fi
done
# identical: the outputs of one model on sim and on accel, bit for bit.
identical() {
	same=1
	for f in /tmp/sim-$1/*.npy; do
		cmp -s "$f" "/tmp/accel-$1/$(basename "$f")" || same=0
	done
	[ $same = 1 ] && ls /tmp/sim-$1/*.npy >/dev/null 2>&1
}
if identical det; then
	ok "PP-OCRv4 det compiled: outputs on accel equal sim's, bit for bit"
else
	notok "PP-OCRv4 det compiled: outputs on accel differ from sim's"
fi
# The recognizer exercises what det does not (its NPU segments around
# attention, normalization and softmax), on a seeded random input; rec16
# is the same model compiled in the 16x8 mode (--precision int16).
for m in rec rec16; do
	[ -f $D/$m.npub ] || continue
	for dev in accel sim; do
		if npu run $D/$m.npub --device $dev --random-inputs 7 \
			--output-dir /tmp/$dev-$m --quiet >/tmp/run-$m-$dev.txt 2>&1; then
			ok "npu run $m.npub --device $dev: $(tail -n 1 /tmp/run-$m-$dev.txt)"
		else
			notok "npu run $m.npub --device $dev: $(tail -n 3 /tmp/run-$m-$dev.txt)"
		fi
	done
	if identical $m; then
		ok "PP-OCRv4 $m compiled: outputs on accel equal sim's, bit for bit"
	else
		notok "PP-OCRv4 $m compiled: outputs on accel differ from sim's"
	fi
done
# det pruned to 2:4 structured sparsity (npu compress): its sparse weights
# take the NPU's sparse path on the real driver too, bit for bit as on
# sim, in fewer modeled cycles than the dense det.
if [ -f $D/det-24.npub ]; then
	for dev in accel sim; do
		if npu run $D/det-24.npub --device $dev --input x=$D/calib/input.npy \
			--output-dir /tmp/$dev-det24 >/tmp/run-det24-$dev.txt 2>&1; then
			ok "npu run det-24.npub (2:4 sparse) --device $dev: $(grep '^modeled:' /tmp/run-det24-$dev.txt)"
		else
			notok "npu run det-24.npub --device $dev: $(tail -n 3 /tmp/run-det24-$dev.txt)"
		fi
	done
	if identical det24; then
		ok "det 2:4 sparse: outputs on accel equal sim's, bit for bit"
	else
		notok "det 2:4 sparse: outputs on accel differ from sim's"
	fi
	sparse=$(sed -n 's/^modeled: \([0-9.]*\) ms.*/\1/p' /tmp/run-det24-sim.txt)
	# the dense det's run on sim above
	dense=$(sed -n 's/^modeled: \([0-9.]*\) ms.*/\1/p' /tmp/run-sim.txt)
	if [ -n "$sparse" ] && [ -n "$dense" ] &&
	   awk -v s="$sparse" -v d="$dense" 'BEGIN { exit !(s < d) }'; then
		ok "det 2:4 sparse: $sparse ms modeled against the dense det's $dense ms"
	else
		notok "det 2:4 sparse: modeled '$sparse' ms is not under the dense det's '$dense' ms"
	fi
fi
if command -v ocr-detect >/dev/null &&
   ocr-detect $D/det.npub $D/input.png --device accel --truth $D/truth.txt \
	>/tmp/ocr-accel.txt 2>&1; then
	ok "examples/ocr-detect on accel: $(grep -o 'matched.*' /tmp/ocr-accel.txt)"
else
	notok "examples/ocr-detect on accel"
fi
sed 's/^/# /' /tmp/ocr-accel.txt 2>/dev/null
exit $rc
