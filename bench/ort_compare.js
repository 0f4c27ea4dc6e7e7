// SPDX-License-Identifier: MIT
// Helper of bench/ort-compare (run with NODE_PATH at the npm cache):
//   node ort_compare.js gen   SHAPE SEED OUT.npy [doc]    random float32 input
//                     ("doc": a synthetic page of dark text-like strokes
//                     on white, ImageNet-normalized, for detection models)
//   node ort_compare.js ort   MODEL IN_NAME IN.npy OUTDIR THREADS ITERS
//   node ort_compare.js cmp   A.npy B.npy                  max abs err, cosine
//   node ort_compare.js all   RUNNER WORKDIR ITERS CASES.json
//                     each case {name, model, input, in_name, threads}: ours
//                     (RUNNER, bench/npu-runner.c, a child process) and ORT
//                     run alternately, one run each, ITERS times after a
//                     warm-up; prints one JSON line per case (medians, ratio,
//                     cosine of every output)
//   node ort_compare.js ref   CASES.json              reference outputs:
//                     each case {model, in_name, input, outdir} runs once
//                     on one thread, its outputs go to outdir/<name>.npy
//   node ort_compare.js profile RUNNER MODEL IN_NAME IN.npy THREADS ITERS
//                     per-op-type milliseconds per run, ours (node timings)
//                     against ORT's session profiling, as JSON
'use strict';
const child_process = require('child_process');
const readline = require('readline');
const fs = require('fs');
const path = require('path');

function readNpy(file) {
	const b = fs.readFileSync(file);
	if (b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not .npy');
	const major = b[6];
	const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
	const hstart = major === 1 ? 10 : 12;
	const h = b.toString('latin1', hstart, hstart + hlen);
	const descr = /'descr':\s*'([^']+)'/.exec(h)[1];
	if (/'fortran_order':\s*True/.test(h)) throw new Error(file + ': fortran order');
	const shape = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
	if (descr !== '<f4') throw new Error(file + ': only <f4 is handled here, got ' + descr);
	const off = hstart + hlen;
	const data = new Float32Array(b.buffer.slice(b.byteOffset + off, b.byteOffset + b.length));
	return { shape, data };
}

function writeNpy(file, shape, data) {
	let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
		shape.join(', ') + (shape.length === 1 ? ',' : '') + '), }';
	const total = Math.ceil((10 + dict.length + 1) / 64) * 64;
	dict = dict.padEnd(total - 10 - 1, ' ') + '\n';
	const head = Buffer.alloc(10);
	head.write('\x93NUMPY', 0, 'latin1');
	head[6] = 1; head[7] = 0;
	head.writeUInt16LE(dict.length, 8);
	fs.writeFileSync(file, Buffer.concat([head, Buffer.from(dict, 'latin1'),
		Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function median(a) {
	const s = [...a].sort((x, y) => x - y);
	return s[Math.floor(s.length / 2)];
}

// Our side: bench/npu-runner as a child that runs on command.
function startRunner(runner, model, input, threads, profile) {
	const args = [model, input, String(threads)];
	if (profile) args.push('--profile');
	const child = child_process.spawn(runner, args, { stdio: ['pipe', 'pipe', 'inherit'] });
	const rl = readline.createInterface({ input: child.stdout });
	const waiting = [];
	const lines = [];
	rl.on('line', l => { if (waiting.length) waiting.shift()(l); else lines.push(l); });
	child.on('exit', code => { while (waiting.length) waiting.shift()('error runner exited ' + code); });
	const next = () => lines.length ? Promise.resolve(lines.shift()) :
		new Promise(res => waiting.push(res));
	return {
		async cmd(c) {
			child.stdin.write(c + '\n');
			const l = await next();
			if (l.startsWith('error')) throw new Error('npu-runner: ' + l);
			return l;
		},
		async ops() {
			child.stdin.write('ops\n');
			const ops = {};
			for (;;) {
				const l = await next();
				if (l === 'end') return ops;
				if (l.startsWith('error')) throw new Error('npu-runner: ' + l);
				const [, type, nodes, runs, ms] = l.split(' ');
				ops[type] = { nodes: Number(nodes), ms: Number(ms) / Math.max(1, Number(runs)) };
			}
		},
		close() { child.stdin.end(); },
	};
}

function compareDirs(ours, theirs) {
	const res = {};
	for (const f of fs.readdirSync(theirs)) {
		const b = readNpy(path.join(theirs, f));
		let a;
		try { a = readNpy(path.join(ours, f)); } catch (e) { res[f] = { error: 'missing' }; continue; }
		if (a.shape.join('x') !== b.shape.join('x')) { res[f] = { error: 'shape' }; continue; }
		let dot = 0, na = 0, nb = 0, maxErr = 0;
		for (let i = 0; i < a.data.length; i++) {
			dot += a.data[i] * b.data[i]; na += a.data[i] ** 2; nb += b.data[i] ** 2;
			const e = Math.abs(a.data[i] - b.data[i]);
			if (e > maxErr || Number.isNaN(e)) maxErr = e;
		}
		res[f.replace(/\.npy$/, '')] = { cosine: na && nb ? dot / Math.sqrt(na * nb) : (na === nb ? 1 : 0),
			max_abs_err: maxErr };
	}
	return res;
}

async function ortSession(ort, model, threads, extra) {
	return ort.InferenceSession.create(model, Object.assign({
		intraOpNumThreads: Number(threads), interOpNumThreads: 1,
		executionMode: 'sequential', graphOptimizationLevel: 'all' }, extra || {}));
}

async function main() {
	const [cmd, ...args] = process.argv.slice(2);
	if (cmd === 'gen') {
		const shape = args[0].split(/[x,]/).map(Number);
		let seed = BigInt(args[1]) & 0xffffffffn;
		const n = shape.reduce((a, b) => a * b, 1);
		const data = new Float32Array(n);
		let s = Number(seed) >>> 0 || 1;
		const rnd = () => {	// xorshift32, uniform [0, 1)
			s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
			return s / 4294967296;
		};
		if (args[3] === 'doc' && shape.length === 4) {
			const [N, C, H, W] = shape;
			const mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225];
			const ink = new Uint8Array(H * W);
			for (let y = 16; y + 24 < H; y += 28 + Math.floor(rnd() * 20)) {
				let x = 10 + Math.floor(rnd() * 40);
				const end = W - 10 - Math.floor(rnd() * W / 3);
				const h = 12 + Math.floor(rnd() * 10);
				while (x + 6 < end) {	// a word: strokes of random width
					const w = 4 + Math.floor(rnd() * 8);
					for (let yy = y; yy < y + h; yy++)
						for (let xx = x; xx < x + w && xx < end; xx++)
							if (rnd() < 0.8) ink[yy * W + xx] = 1;
					x += w + 2 + (rnd() < 0.2 ? 10 : 0);
				}
			}
			for (let b = 0; b < N; b++)
				for (let c = 0; c < C; c++)
					for (let i = 0; i < H * W; i++) {
						const v = ink[i] ? 0.1 * rnd() : 0.9 + 0.1 * rnd();
						data[(b * C + c) * H * W + i] = (v - mean[c % 3]) / std[c % 3];
					}
		} else {
			for (let i = 0; i < n; i++)
				data[i] = rnd();
		}
		writeNpy(args[2], shape, data);
	} else if (cmd === 'ort') {
		const ort = require('onnxruntime-node');
		const [model, inName, inFile, outDir, threads, iters] = args;
		const sess = await ort.InferenceSession.create(model, {
			intraOpNumThreads: Number(threads), interOpNumThreads: 1,
			executionMode: 'sequential', graphOptimizationLevel: 'all' });
		const x = readNpy(inFile);
		const feeds = { [inName]: new ort.Tensor('float32', x.data, x.shape) };
		let out = await sess.run(feeds);	// warm-up
		const times = [];
		for (let i = 0; i < Number(iters); i++) {
			const t0 = process.hrtime.bigint();
			out = await sess.run(feeds);
			times.push(Number(process.hrtime.bigint() - t0) / 1e6);
		}
		for (const name of sess.outputNames) {
			const t = out[name];
			writeNpy(path.join(outDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'),
				t.dims, t.data);
		}
		console.log(JSON.stringify({ median_ms: median(times), min_ms: Math.min(...times),
			outputs: sess.outputNames }));
	} else if (cmd === 'ref') {
		// Reference outputs, one session per case, one thread, no timing.
		const ort = require('onnxruntime-node');
		for (const c of JSON.parse(fs.readFileSync(args[0], 'utf8'))) {
			const x = readNpy(c.input);
			const sess = await ortSession(ort, c.model, 1);
			const out = await sess.run({ [c.in_name]: new ort.Tensor('float32', x.data, x.shape) });
			fs.mkdirSync(c.outdir, { recursive: true });
			for (const name of sess.outputNames)
				writeNpy(path.join(c.outdir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'),
					out[name].dims, out[name].data);
			await sess.release();
		}
	} else if (cmd === 'all') {
		const ort = require('onnxruntime-node');
		const [runner, work, iters, casesFile] = args;
		const settleMs = Number(process.env.ORT_COMPARE_SETTLE_MS ?? 150);
		for (const c of JSON.parse(fs.readFileSync(casesFile, 'utf8'))) {
			const x = readNpy(c.input);
			const feeds = { [c.in_name]: new ort.Tensor('float32', x.data, x.shape) };
			const sess = await ortSession(ort, c.model, c.threads);
			const ours = startRunner(runner, c.model, c.input, c.threads, false);
			// NPU_RUNNER_BASE: a second build of ours (the tree before a
			// change) in the same rotation, for before / after ratios.
			const baseRunner = process.env.NPU_RUNNER_BASE;
			const base = baseRunner ? startRunner(baseRunner, c.model, c.input, c.threads, false) : null;
			await ours.cmd('run');		// warm-up (plans on first use)
			if (base)
				await base.cmd('run');
			let out = await sess.run(feeds);
			const tn = [], to = [], tb = [];
			const orders = base ? [['npu', 'ort', 'base'], ['ort', 'base', 'npu'], ['base', 'npu', 'ort']] :
				[['npu', 'ort'], ['ort', 'npu']];
			for (let i = 0; i < Number(iters); i++) {
				// Rotate who goes first, so none always follows another.
				for (const who of orders[i % orders.length]) {
					// Let the other engine's leftover work (ORT's spinning
					// pool: ~50 ms of CPU after a run) end first.
					await new Promise(r => setTimeout(r, settleMs));
					if (who === 'npu') {
						tn.push(Number((await ours.cmd('run')).split(' ')[1]));
					} else if (who === 'base') {
						tb.push(Number((await base.cmd('run')).split(' ')[1]));
					} else {
						const t0 = process.hrtime.bigint();
						out = await sess.run(feeds);
						to.push(Number(process.hrtime.bigint() - t0) / 1e6);
					}
				}
			}
			const dn = path.join(work, c.name + '-t' + c.threads + '-npu'), dort = dn.replace(/-npu$/, '-ort');
			fs.mkdirSync(dn, { recursive: true }); fs.mkdirSync(dort, { recursive: true });
			await ours.cmd('out ' + dn);
			ours.close();
			if (base)
				base.close();
			for (const name of sess.outputNames) {
				const t = out[name];
				writeNpy(path.join(dort, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), t.dims, t.data);
			}
			await sess.release();
			const mn = median(tn), mo = median(to);
			const r = { name: c.name, threads: c.threads, runs: tn.length,
				npu_ms: mn, ort_ms: mo, ratio: mn / mo, outputs: compareDirs(dn, dort) };
			if (base) {
				r.base_ms = median(tb);
				r.base_ratio = r.base_ms / mo;
			}
			console.log(JSON.stringify(r));
		}
	} else if (cmd === 'profile') {
		const ort = require('onnxruntime-node');
		const [runner, model, inName, inFile, threads, iters] = args;
		const x = readNpy(inFile);
		const feeds = { [inName]: new ort.Tensor('float32', x.data, x.shape) };
		const prefix = path.join(path.dirname(inFile), 'ortprof');
		const sess = await ortSession(ort, model, threads, { enableProfiling: true, profileFilePrefix: prefix });
		const ours = startRunner(runner, model, inFile, threads, true);
		for (let i = 0; i < Number(iters); i++) {
			await ours.cmd('run');
			await sess.run(feeds);
		}
		const npuOps = await ours.ops();
		ours.close();
		sess.endProfiling();
		const file = fs.readdirSync(path.dirname(prefix)).filter(f => f.startsWith('ortprof') && f.endsWith('.json'))
			.map(f => path.join(path.dirname(prefix), f))[0];
		const events = JSON.parse(fs.readFileSync(file, 'utf8'));
		const ortOps = {};
		let runs = 0;
		for (const e of events) {
			if (e.cat === 'Session' && e.name === 'model_run') runs++;
			if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
			const op = e.args.op_name;
			ortOps[op] = ortOps[op] || { nodes: new Set(), us: 0 };
			ortOps[op].nodes.add(e.name);
			ortOps[op].us += e.dur;
		}
		const ortOut = {};
		for (const [op, v] of Object.entries(ortOps))
			ortOut[op] = { nodes: v.nodes.size, ms: v.us / 1e3 / Math.max(1, runs) };
		console.log(JSON.stringify({ npu: npuOps, ort: ortOut, ort_runs: runs }));
	} else if (cmd === 'cmp') {
		const a = readNpy(args[0]), b = readNpy(args[1]);
		if (a.shape.join('x') !== b.shape.join('x')) {
			console.log(JSON.stringify({ error: 'shape ' + a.shape.join('x') + ' vs ' + b.shape.join('x') }));
			return;
		}
		let maxErr = 0, dot = 0, na = 0, nb = 0, at = 0, maxAbs = 0;
		for (let i = 0; i < a.data.length; i++) {
			const e = Math.abs(a.data[i] - b.data[i]);
			maxAbs = Math.max(maxAbs, Math.abs(b.data[i]));
			if (e > maxErr || Number.isNaN(e)) { maxErr = e; at = i; }
			dot += a.data[i] * b.data[i]; na += a.data[i] ** 2; nb += b.data[i] ** 2;
		}
		const cos = na && nb ? dot / Math.sqrt(na * nb) : (na === nb ? 1 : 0);
		console.log(JSON.stringify({ max_abs_err: maxErr, at, cosine: cos, max_abs: maxAbs, n: a.data.length }));
	} else {
		throw new Error('usage: ort_compare.js gen|ort|cmp ...');
	}
}
main().catch(e => { console.error('ort_compare.js: ' + e.message); process.exit(1); });
