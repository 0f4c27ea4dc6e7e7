// SPDX-License-Identifier: MIT
// The npu-serve panel. It polls GET v2/panel/state every second (the
// endpoints are in Documentation/serving.md) and draws with Chart.js; no
// chart code of its own. Management buttons call the repository API
// (POST v2/repository/models/{m}/load | unload) with the admin token.
'use strict';

const POLL_MS = 1000;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b',
	'#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const SPAN_COLORS = { decode: '#9e9e9e', queue: '#ffb74d', input: '#64b5f6',
	npu: '#2e7d32', cpu: '#8e24aa', output: '#4dd0e1' };

const panel = {
	charts: {},
	state: null,
	polls: 0,
	errors: 0,
	actions: [],
	timelineKey: null,
};
window.npuPanel = panel;

function tokens() {
	return {
		api: sessionStorage.getItem('npu-api-token') || '',
		admin: sessionStorage.getItem('npu-admin-token') || '',
	};
}

// The admin token is accepted wherever the API token is.
function headers(admin) {
	const t = tokens();
	// The admin token reads everything the API token does, and more (failure reasons).
	const tok = t.admin || (admin ? '' : t.api);
	return tok ? { Authorization: 'Bearer ' + tok } : {};
}

function el(id) { return document.getElementById(id); }

function setStatus(text, error) {
	const s = el('status');
	s.textContent = text;
	s.className = error ? 'status error' : 'status';
}

function lineChart(id, yTitle, opts) {
	const cfg = {
		type: 'line',
		data: { datasets: [] },
		options: {
			animation: false,
			maintainAspectRatio: false,
			parsing: false,
			normalized: true,
			spanGaps: false,
			scales: {
				x: { type: 'linear', title: { display: true, text: 'seconds ago' },
					ticks: { callback: (v) => String(-v) } },
				y: { beginAtZero: true, title: { display: true, text: yTitle } },
			},
			elements: { point: { radius: 0 }, line: { borderWidth: 1.5 } },
			plugins: { legend: { labels: { boxWidth: 12 } } },
		},
	};
	if (opts && opts.y2) {
		cfg.options.scales.y2 = { beginAtZero: true, position: 'right',
			title: { display: true, text: opts.y2 }, grid: { drawOnChartArea: false } };
	}
	panel.charts[id] = new Chart(el(id), cfg);
	return panel.charts[id];
}

function initCharts() {
	lineChart('chart-throughput', 'requests/s');
	lineChart('chart-latency', 'ms');
	lineChart('chart-queue', 'requests queued');
	lineChart('chart-failures', 'per second');
	lineChart('chart-devices', 'share of a second');
	lineChart('chart-inflight', 'batches running');
	lineChart('chart-memory', 'MiB', { y2: 'cores' });
	panel.charts['chart-batch'] = new Chart(el('chart-batch'), {
		type: 'bar',
		data: { labels: [], datasets: [] },
		options: { animation: false, maintainAspectRatio: false,
			scales: { x: { title: { display: true, text: 'batch size' } },
				y: { beginAtZero: true, title: { display: true, text: 'batches' } } } },
	});
	panel.charts['chart-timeline'] = new Chart(el('chart-timeline'), {
		type: 'bar',
		data: { labels: [], datasets: [{ label: 'span', data: [], backgroundColor: [] }] },
		options: {
			indexAxis: 'y', animation: false, maintainAspectRatio: false,
			scales: { x: { beginAtZero: true, title: { display: true, text: 'µs since the request arrived' } } },
			plugins: {
				legend: { display: false },
				tooltip: { callbacks: { label: (ctx) => {
					const s = ctx.raw.span;
					let t = s.name + ': ' + s.dur_us.toFixed(1) + ' µs';
					if (s.cycles !== undefined)
						t += ', ' + s.cycles + ' modeled cycles';
					if (s.job_dur_us !== undefined)
						t += ', job submit to done ' + s.job_dur_us.toFixed(1) + ' µs';
					return t;
				} } },
			},
		},
	});
}

// Points {x: seconds relative to now, y} of one series field.
function points(now, t, ys, scale) {
	const out = [];
	for (let i = 0; i < t.length; i++) {
		const y = ys[i];
		out.push({ x: (t[i] - now) / 1000, y: y === null ? null : y * (scale || 1) });
	}
	return out;
}

// Replace a chart's datasets keeping their objects where labels match
// (Chart.js then keeps the legend's hidden state).
function setDatasets(chart, list) {
	const old = new Map(chart.data.datasets.map((d) => [d.label, d]));
	chart.data.datasets = list.map((d, i) => {
		const o = old.get(d.label) || {};
		o.label = d.label;
		o.data = d.data;
		o.borderColor = d.color || COLORS[i % COLORS.length];
		o.backgroundColor = o.borderColor;
		o.borderDash = d.dash || [];
		if (d.yAxisID)
			o.yAxisID = d.yAxisID;
		return o;
	});
	chart.update('none');
}

function seriesLabel(s) { return s.model + ' v' + s.version; }

function drawModelCharts(st) {
	const now = st.now_ms;
	const thr = [], lat = [], q = [], fails = [];
	st.series.forEach((s, i) => {
		const c = COLORS[i % COLORS.length], name = seriesLabel(s);
		thr.push({ label: name, data: points(now, s.t_ms, s.requests_per_s), color: c });
		lat.push({ label: name + ' p50', data: points(now, s.t_ms, s.p50_ms), color: c });
		lat.push({ label: name + ' p90', data: points(now, s.t_ms, s.p90_ms), color: c, dash: [6, 3] });
		lat.push({ label: name + ' p99', data: points(now, s.t_ms, s.p99_ms), color: c, dash: [2, 2] });
		q.push({ label: name, data: points(now, s.t_ms, s.queue), color: c });
		fails.push({ label: name + ' failures', data: points(now, s.t_ms, s.failures), color: c });
		fails.push({ label: name + ' rejections', data: points(now, s.t_ms, s.rejections), color: c, dash: [4, 3] });
	});
	setDatasets(panel.charts['chart-throughput'], thr);
	setDatasets(panel.charts['chart-latency'], lat);
	setDatasets(panel.charts['chart-queue'], q);
	setDatasets(panel.charts['chart-failures'], fails);

	// Batch-size histogram: one bar group per size, a dataset per series.
	const sizes = new Set();
	st.series.forEach((s) => Object.keys(s.batch_sizes).forEach((k) => sizes.add(Number(k))));
	const labels = Array.from(sizes).sort((a, b) => a - b);
	const bc = panel.charts['chart-batch'];
	bc.data.labels = labels.map(String);
	bc.data.datasets = st.series.filter((s) => Object.keys(s.batch_sizes).length).map((s, i) => ({
		label: seriesLabel(s),
		data: labels.map((k) => s.batch_sizes[String(k)] || 0),
		backgroundColor: COLORS[i % COLORS.length],
	}));
	bc.update('none');
}

function drawDeviceCharts(st) {
	const now = st.now_ms;
	const util = [], infl = [], mem = [];
	st.devices.forEach((d, i) => {
		const c = COLORS[i % COLORS.length];
		util.push({ label: d.device + ' busy (wall)', data: points(now, d.t_ms, d.busy), color: c });
		if (d.device !== 'cpu') {
			util.push({ label: d.device + ' NPU modeled', data: points(now, d.t_ms, d.npu_modeled), color: c, dash: [6, 3] });
			util.push({ label: d.device + ' host (CPU ops)', data: points(now, d.t_ms, d.host), color: c, dash: [2, 2] });
		}
		infl.push({ label: d.device, data: points(now, d.t_ms, d.in_flight), color: c });
	});
	mem.push({ label: 'server RSS (MiB)', data: points(now, st.process.t_ms, st.process.rss_bytes, 1 / 1048576), color: COLORS[0] });
	mem.push({ label: 'server CPU (cores)', data: points(now, st.process.t_ms, st.process.cpu_cores), color: COLORS[1], yAxisID: 'y2' });
	setDatasets(panel.charts['chart-devices'], util);
	setDatasets(panel.charts['chart-inflight'], infl);
	setDatasets(panel.charts['chart-memory'], mem);
}

function drawTimeline(st) {
	const sel = el('timeline-model');
	const names = st.timelines.map((t) => t.model);
	if (Array.from(sel.options).map((o) => o.value).join() !== names.join()) {
		const keep = sel.value;
		sel.textContent = '';
		names.forEach((n) => {
			const o = document.createElement('option');
			o.value = n;
			o.textContent = n;
			sel.appendChild(o);
		});
		if (names.includes(keep))
			sel.value = keep;
	}
	const t = st.timelines.find((x) => x.model === sel.value);
	const chart = panel.charts['chart-timeline'];
	if (!t) {
		el('timeline-info').textContent = 'No request has run yet.';
		return;
	}
	const key = t.model + '/' + t.time_ms;
	if (key === panel.timelineKey)
		return;
	panel.timelineKey = key;
	el('timeline-info').textContent = 'model ' + t.model + ' version ' + t.version + ' on ' + t.device +
		', request ' + (t.id ? '"' + t.id + '"' : '(no id)') + ' in a batch of ' + t.batch + ' (' +
		t.requests_in_batch + ' requests), ' + new Date(t.time_ms).toLocaleTimeString() +
		(t.run_us !== undefined ? ', run ' + t.run_us.toFixed(1) + ' µs' : '') +
		(t.note ? '. ' + t.note + '.' : '');
	chart.data.labels = t.spans.map((s) => s.name);
	chart.data.datasets[0].data = t.spans.map((s) => ({ x: [s.start_us, s.start_us + Math.max(s.dur_us, 0.5)], y: s.name, span: s }));
	chart.data.datasets[0].backgroundColor = t.spans.map((s) => SPAN_COLORS[s.cat] || '#999');
	chart.update('none');
	panel.timelineShown = key;
}

function canManage(st) {
	return st.server.model_control_mode === 'explicit' &&
		(!st.server.admin_token_required || tokens().admin !== '');
}

function drawModels(st) {
	const body = el('models').querySelector('tbody');
	const manage = canManage(st);
	document.body.classList.toggle('hidden-admin', !manage);
	const rows = [];
	const seen = new Set();
	st.models.forEach((m) => {
		rows.push({ name: m.name, version: m.version || '', state: m.state || '', reason: m.reason || '',
			first: !seen.has(m.name), steps: m.steps || null });
		seen.add(m.name);
	});
	const sig = JSON.stringify(rows) + manage;
	if (sig === panel.modelsSig)
		return;
	panel.modelsSig = sig;
	body.textContent = '';
	rows.forEach((r) => {
		const tr = document.createElement('tr');
		tr.dataset.model = r.name;
		tr.dataset.version = r.version;
		[r.name, r.version, r.state, r.reason].forEach((v, i) => {
			const td = document.createElement('td');
			td.textContent = v;
			if (i === 2)
				td.className = 'state state-' + v;
			if (i === 3)
				td.className = 'reason';
			tr.appendChild(td);
		});
		const td = document.createElement('td');
		td.className = 'admin';
		if (r.first && manage) {
			[['load', 'Load'], ['unload', 'Unload'], ['reload', 'Reload']].forEach(([op, text]) => {
				const b = document.createElement('button');
				b.textContent = text;
				b.className = 'btn-' + op;
				b.dataset.model = r.name;
				b.addEventListener('click', () => manageModel(r.name, op));
				td.appendChild(b);
			});
		}
		tr.appendChild(td);
		body.appendChild(tr);
		if (r.steps) {
			// An ensemble: its steps in order, on a row of their own.
			const st = document.createElement('tr');
			const sd = document.createElement('td');
			st.className = 'steps';
			st.dataset.ensemble = r.name;
			sd.colSpan = 5;
			sd.textContent = 'steps: ' + r.steps.join(' \u2192 ');
			st.appendChild(sd);
			body.appendChild(st);
		}
	});
}

// Sequence models: their live correlation ids (sequence_stats of the model's statistics).
function drawSequences(st) {
	const box = el('sequences');
	const lines = st.series.filter((s) => s.sequences).map((s) => {
		const q = s.sequences, live = q.live || [];
		const ids = live.slice(0, 32).map((e) => e.sequence_id + ' (' + e.requests + ' req, idle ' +
			e.idle_ms + ' ms)').join(', ');
		return seriesLabel(s) + ': ' + live.length + ' live sequence' + (live.length === 1 ? '' : 's') +
			' of ' + q.max_sequences + ' (' + q.strategy + ')' + (ids ? ': ' + ids : '') +
			(live.length > 32 ? ', ...' : '');
	});
	box.textContent = lines.length ? 'Sequences: ' + lines.join('; ') : '';
}

async function manageModel(name, op) {
	const out = el('action-result');
	const path = 'v2/repository/models/' + encodeURIComponent(name) + '/' + (op === 'unload' ? 'unload' : 'load');
	out.textContent = op + ' ' + name + '...';
	const t0 = performance.now();
	try {
		const r = await fetch(path, { method: 'POST', headers: headers(true) });
		const text = await r.text();
		const ms = (performance.now() - t0).toFixed(0);
		let msg = r.ok ? 'done' : text;
		try { if (!r.ok) msg = JSON.parse(text).error; } catch (e) { /* not JSON */ }
		out.textContent = op + ' ' + name + ': ' + r.status + ' ' + msg + ' (' + ms + ' ms)';
		panel.actions.push({ op: op, model: name, status: r.status });
	} catch (e) {
		out.textContent = op + ' ' + name + ': ' + e;
	}
	poll();
}

async function downloadTrace(ev) {
	ev.preventDefault();
	const model = el('timeline-model').value;
	const r = await fetch('v2/panel/trace' + (model ? '?model=' + encodeURIComponent(model) : ''),
		{ headers: headers(false) });
	if (!r.ok) {
		setStatus('trace: ' + r.status, true);
		return;
	}
	const blob = await r.blob();
	const a = document.createElement('a');
	a.href = URL.createObjectURL(blob);
	a.download = 'npu-serve-' + (model || 'request') + '.trace.json';
	document.body.appendChild(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function showTokenBoxes(st) {
	el('api-token-box').hidden = !st.server.api_token_required;
	el('admin-token-box').hidden = !st.server.admin_token_required || st.server.model_control_mode !== 'explicit';
	el('token-apply').hidden = el('api-token-box').hidden && el('admin-token-box').hidden;
}

let polling = false;
async function poll() {
	if (polling)
		return;
	polling = true;
	try {
		const r = await fetch('v2/panel/state', { headers: headers(false), cache: 'no-store' });
		if (r.status === 401 || r.status === 403) {
			el('api-token-box').hidden = false;
			el('token-apply').hidden = false;
			setStatus('the API token is needed (' + r.status + ')', true);
			return;
		}
		if (!r.ok) {
			setStatus('state: HTTP ' + r.status, true);
			return;
		}
		const st = await r.json();
		panel.state = st;
		panel.polls++;
		el('server-info').textContent = 'version ' + st.server.version + ', model control ' +
			st.server.model_control_mode + (st.server.tls ? ', HTTPS' : '');
		showTokenBoxes(st);
		drawModels(st);
		drawSequences(st);
		drawModelCharts(st);
		drawDeviceCharts(st);
		drawTimeline(st);
		setStatus('updated ' + new Date(st.now_ms).toLocaleTimeString(), false);
	} catch (e) {
		panel.errors++;
		setStatus('cannot reach the server: ' + e.message, true);
	} finally {
		polling = false;
	}
}

function start() {
	initCharts();
	el('token-apply').addEventListener('click', () => {
		sessionStorage.setItem('npu-api-token', el('api-token').value.trim());
		sessionStorage.setItem('npu-admin-token', el('admin-token').value.trim());
		panel.modelsSig = null;
		el('token-note').textContent = 'tokens kept for this tab only';
		poll();
	});
	el('timeline-model').addEventListener('change', () => { panel.timelineKey = null; poll(); });
	el('trace-link').addEventListener('click', downloadTrace);
	poll();
	setInterval(poll, POLL_MS);
}

start();
