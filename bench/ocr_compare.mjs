// SPDX-License-Identifier: MIT
// Helper of bench/ocr-compare: reads images with Guten OCR
// (@gutenye/ocr-node: PP-OCRv4 det + rec on onnxruntime-node with
// PaddleOCR-style pre- and post-processing) and prints one JSON line per
// image in npu-ocr's --json format:
//   {"image": PATH, "lines": [{"box": [x0, y0, x1, y1], "text": "...", "score": S}]}
// Run with NODE_PATH unset: the package is resolved from the directory given.
//   node ocr_compare.mjs NPM_DIR IMAGE.png...
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [npmDir, ...images] = process.argv.slice(2);
if (!npmDir || !images.length) {
	console.error('usage: node ocr_compare.mjs NPM_DIR IMAGE.png...');
	process.exit(2);
}
const require = createRequire(path.join(npmDir, 'package.json'));
const entry = require.resolve('@gutenye/ocr-node');
const Ocr = (await import(pathToFileURL(entry).href)).default;
const ocr = await Ocr.create();
for (const image of images) {
	const lines = await ocr.detect(image);
	const out = lines.map((l) => {
		const xs = (l.box || []).map((p) => p[0]), ys = (l.box || []).map((p) => p[1]);
		return {
			box: xs.length ? [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] : [0, 0, 0, 0],
			text: l.text,
			score: l.mean,
		};
	});
	process.stdout.write(JSON.stringify({ image, lines: out }) + '\n');
}
