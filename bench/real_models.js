// SPDX-License-Identifier: MIT
// Helper of bench/real-models (run with NODE_PATH at the npm cache that
// holds onnxruntime-node):
//   node real_models.js list   PKGDIR              the unique .onnx files of
//                     the packages unpacked under PKGDIR, one JSON line each
//                     {model, sha256, packages[]}
//   node real_models.js inputs MODEL OUTDIR SEED   write one .npy per input
//                     (the model's own spec below, else uniform [-1, 1) for
//                     floats, zeros for integers, symbolic dims 1) and print
//                     "NAME=OUTDIR/NAME.npy" lines
//   node real_models.js ort    MODEL OUTDIR NAME=FILE.npy...   ORT's outputs
//                     as OUTDIR/<output>.npy (names as `npu run` writes them)
//   node real_models.js cmp    OURS_DIR ORT_DIR    every output: worst
//                     cosine and max abs error, as one JSON object
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

// Inputs a model needs to run as its application runs it (rates, frame
// sizes, state shapes); keyed by file name. Everything else is generic.
const SPECS = {
	'silero_vad.onnx': { input: [1, 512], sr: 16000n, h: [2, 1, 64], c: [2, 1, 64] },
	'silero_vad_legacy.onnx': { input: [1, 512], sr: 16000n, h: [2, 1, 64], c: [2, 1, 64] },
	'silero_vad_v5.onnx': { input: [1, 512], sr: 16000n, state: [2, 1, 128] },
	'silero_vad_v6.onnx': { input: [1, 512], sr: 16000n, state: [2, 1, 128] },
	// openWakeWord: 1 s of audio, then 76 mel frames of 32 bins.
	'melspectrogram.onnx': { input: [1, 16000] },
	'embedding_model.onnx': { input_1: [1, 76, 32, 1] },
	// PP-OCRv4 (Guten OCR's models): a page, a text line, a line for cls.
	'ch_PP-OCRv4_det_infer.onnx': { x: [1, 3, 640, 640] },
	'ch_PP-OCRv4_rec_infer.onnx': { x: [1, 3, 48, 320] },
	'ch_ppocr_mobile_v2.0_cls_infer.onnx': { x: [1, 3, 48, 192] },
};
const STATE_INPUTS = /^(h|c|state)$/;	// recurrent state starts at zero

function sha256(file) {
	return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function walk(dir, out) {
	for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
		const p = path.join(dir, e.name);
		if (e.isDirectory())
			walk(p, out);
		else if (e.name.endsWith('.onnx'))
			out.push(p);
	}
	return out;
}

function npyDescr(type) {
	return { float32: '<f4', int64: '<i8', int32: '<i4', bool: '|b1', uint8: '|u1', int8: '|i1' }[type];
}

function writeNpy(file, type, shape, data) {
	let dict = "{'descr': '" + npyDescr(type) + "', 'fortran_order': False, 'shape': (" +
		shape.join(', ') + (shape.length === 1 ? ',' : '') + '), }';
	const total = Math.ceil((10 + dict.length + 1) / 64) * 64;
	dict = dict.padEnd(total - 10 - 1, ' ') + '\n';
	const head = Buffer.alloc(10);
	head.write('\x93NUMPY', 0, 'latin1');
	head[6] = 1;
	head.writeUInt16LE(dict.length, 8);
	fs.writeFileSync(file, Buffer.concat([head, Buffer.from(dict, 'latin1'),
		Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function readNpy(file, ort) {
	const b = fs.readFileSync(file);
	const hlen = b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
	const hstart = b[6] === 1 ? 10 : 12;
	const h = b.toString('latin1', hstart, hstart + hlen);
	const descr = /'descr':\s*'([^']+)'/.exec(h)[1];
	const shape = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
	const raw = b.buffer.slice(b.byteOffset + hstart + hlen, b.byteOffset + b.length);
	const types = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
			'<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array],
			'|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array] };
	if (!types[descr])
		throw new Error(file + ': dtype ' + descr + ' not handled');
	const [type, Arr] = types[descr];
	const data = new Arr(raw);
	return ort ? new ort.Tensor(type, data, shape) : { type, shape, data };
}

// Park-Miller: the same inputs for the same seed on every machine.
function rng(seed) {
	let s = (seed >>> 0) % 2147483647 || 1;
	return () => (s = (s * 48271) % 2147483647) / 2147483647;
}

async function inputs(ort, model, outdir, seed) {
	const s = await ort.InferenceSession.create(model);
	const spec = SPECS[path.basename(model)] || {};
	const next = rng(seed);
	fs.mkdirSync(outdir, { recursive: true });
	for (const m of s.inputMetadata) {
		const want = spec[m.name];
		const shape = Array.isArray(want) ? want :
			(m.shape || []).map(d => typeof d === 'number' && d > 0 ? d : 1);
		const n = shape.reduce((a, b) => a * b, 1);
		let data;
		if (typeof want === 'bigint')
			data = BigInt64Array.of(want);
		else if (m.type === 'float32')
			data = Float32Array.from({ length: n }, () => STATE_INPUTS.test(m.name) ? 0 : next() * 2 - 1);
		else if (m.type === 'int64')
			data = new BigInt64Array(n);
		else if (m.type === 'int32')
			data = new Int32Array(n);
		else if (m.type === 'bool' || m.type === 'uint8')
			data = new Uint8Array(n);
		else
			throw new Error(model + ': input ' + m.name + ' of type ' + m.type + ' not handled');
		// The input's own name: what --calib-dir DIR/<sample>/<input>.npy wants.
		const file = path.join(outdir, m.name.replace(/\//g, '_') + '.npy');
		writeNpy(file, m.type, typeof want === 'bigint' ? [] : shape, data);
		console.log(m.name + '=' + file);
	}
}

async function runOrt(ort, model, outdir, pairs) {
	const s = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
	const feeds = {};
	for (const p of pairs) {
		const i = p.lastIndexOf('=');
		feeds[p.slice(0, i)] = readNpy(p.slice(i + 1), ort);
	}
	const r = await s.run(feeds);
	fs.mkdirSync(outdir, { recursive: true });
	for (const k of s.outputNames) {
		const t = r[k];
		if (!npyDescr(t.type))
			continue;
		writeNpy(path.join(outdir, k.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), t.type, t.dims, t.data);
	}
}

function cmp(ours, theirs) {
	const res = { outputs: 0, cosine: 1, max_abs_err: 0, missing: [] };
	for (const f of fs.readdirSync(theirs).filter(f => f.endsWith('.npy')).sort()) {
		const b = readNpy(path.join(theirs, f));
		if (!fs.existsSync(path.join(ours, f))) {
			res.missing.push(f);
			continue;
		}
		const a = readNpy(path.join(ours, f));
		if (a.data.length !== b.data.length || a.type !== b.type) {
			res.missing.push(f + ' (' + a.type + ' ' + a.shape + ' vs ' + b.type + ' ' + b.shape + ')');
			continue;
		}
		let dot = 0, na = 0, nb = 0, err = 0;
		for (let i = 0; i < a.data.length; i++) {
			const x = Number(a.data[i]), y = Number(b.data[i]);
			dot += x * y; na += x * x; nb += y * y;
			err = Math.max(err, Math.abs(x - y));
		}
		const cos = na === 0 && nb === 0 ? 1 : na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
		res.outputs++;
		res.cosine = Math.min(res.cosine, cos);
		res.max_abs_err = Math.max(res.max_abs_err, err);
	}
	return res;
}

async function main() {
	const [cmd, ...a] = process.argv.slice(2);
	if (cmd === 'list') {
		const byHash = new Map();
		for (const f of walk(a[0], []).sort()) {
			const h = sha256(f);
			const pkg = path.relative(a[0], f).split(path.sep)[0].replace('+', '/');
			if (!byHash.has(h))
				byHash.set(h, { model: f, sha256: h.slice(0, 16), packages: [] });
			if (!byHash.get(h).packages.includes(pkg))
				byHash.get(h).packages.push(pkg);
		}
		for (const v of byHash.values())
			console.log(JSON.stringify(v));
		return;
	}
	if (cmd === 'cmp') {
		console.log(JSON.stringify(cmp(a[0], a[1])));
		return;
	}
	const ort = require('onnxruntime-node');
	if (cmd === 'inputs')
		await inputs(ort, a[0], a[1], Number(a[2] || 1));
	else if (cmd === 'ort')
		await runOrt(ort, a[0], a[1], a.slice(2));
	else
		throw new Error('usage: real_models.js list|inputs|ort|cmp ...');
}

main().catch(e => {
	console.error('real_models.js: ' + e.message);
	process.exit(1);
});
