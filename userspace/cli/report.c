// SPDX-License-Identifier: MIT
/* report: offline HTML reports of bench and compile (see report.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "report.h"

#define CHARTJS_DEFAULT "/usr/share/javascript/chart.js/chart.min.js"

void npu_cli_report_placement(FILE *f, const struct npu_plan *plan)
{
	size_t n = plan ? npu_plan_num_placements(plan) : 0, i;

	fputc('[', f);
	for (i = 0; i < n; i++) {
		struct npu_node_placement p;

		if (npu_plan_placement(plan, i, &p) != NPU_OK)
			continue;
		fprintf(f, "%s{\"node\": ", i ? ",\n" : "");
		npu_cli_json_string(f, p.node);
		fprintf(f, ", \"op_type\": ");
		npu_cli_json_string(f, p.op_type);
		fprintf(f, ", \"on_npu\": %s, \"segment\": %d, \"macs\": %llu, \"reason\": ",
			p.on_npu ? "true" : "false", p.segment, (unsigned long long)p.macs);
		npu_cli_json_string(f, p.reason ? p.reason : "");
		fputc('}', f);
	}
	fputc(']', f);
}

/* The page's script: draws data with Chart.js; no chart code of its own. */
static const char report_js[] =
"'use strict';\n"
"const D = JSON.parse(document.getElementById('npu-data').textContent);\n"
"const R = { charts: {} }; window.npuReport = R;\n"
"const C = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];\n"
"function chart(id, cfg) {\n"
"  const box = document.createElement('div'); box.className = 'card';\n"
"  const h = document.createElement('h2'); h.textContent = cfg.title; box.appendChild(h);\n"
"  const d = document.createElement('div'); d.className = 'box'; box.appendChild(d);\n"
"  const c = document.createElement('canvas'); d.appendChild(c);\n"
"  document.getElementById('charts').appendChild(box);\n"
"  cfg.options = Object.assign({ animation: false, maintainAspectRatio: false }, cfg.options || {});\n"
"  R.charts[id] = new Chart(c, cfg);\n"
"}\n"
"function text(id, s) { document.getElementById(id).textContent = s; }\n"
"text('title', D.title);\n"
"text('summary', D.summary || '');\n"
"if (D.latency_ms && D.latency_ms.length) {\n"
"  const lo = D.latency_ms[0], hi = D.latency_ms[D.latency_ms.length - 1];\n"
"  const nb = Math.min(30, Math.max(5, Math.ceil(Math.sqrt(D.latency_ms.length))));\n"
"  const w = (hi - lo) / nb || 1, bins = new Array(nb).fill(0);\n"
"  D.latency_ms.forEach((v) => bins[Math.min(nb - 1, Math.floor((v - lo) / w))]++);\n"
"  chart('latency', { title: 'Latency distribution (' + D.latency_ms.length + ' runs; p50 ' + D.p50_ms.toFixed(3) +\n"
"    ' ms, p90 ' + D.p90_ms.toFixed(3) + ' ms, p99 ' + D.p99_ms.toFixed(3) + ' ms)', type: 'bar',\n"
"    data: { labels: bins.map((_, i) => (lo + (i + 0.5) * w).toFixed(3)),\n"
"      datasets: [{ label: 'runs', data: bins, backgroundColor: C[0] }] },\n"
"    options: { scales: { x: { title: { display: true, text: 'ms' } }, y: { title: { display: true, text: 'runs' } } } } });\n"
"}\n"
"if (D.ops && D.ops.length) {\n"
"  const ops = D.ops.slice().sort((a, b) => b.cycles - a.cycles).slice(0, 40);\n"
"  const us = (c) => D.clock_mhz ? c / D.clock_mhz : c;\n"
"  chart('ops', { title: 'Per-op modeled time (µs at ' + D.clock_mhz + ' MHz, the ' + ops.length + ' longest NPU ops)', type: 'bar',\n"
"    data: { labels: ops.map((o) => o.node + ' (' + o.kind + ')'),\n"
"      datasets: [{ label: 'modeled µs', data: ops.map((o) => us(o.cycles)), backgroundColor: C[0] }] },\n"
"    options: { indexAxis: 'y' } });\n"
"  chart('roofline', { title: 'Roofline per op: achieved vs ideal cycles (ideal: MACs / MAC array size)', type: 'bar',\n"
"    data: { labels: ops.map((o) => o.node),\n"
"      datasets: [{ label: 'achieved (modeled) cycles', data: ops.map((o) => o.cycles), backgroundColor: C[1] },\n"
"        { label: 'ideal MAC cycles', data: ops.map((o) => o.ideal_mac_cycles), backgroundColor: C[2] }] },\n"
"    options: { indexAxis: 'y' } });\n"
"  if (ops.some((o) => o.dram_bytes))\n"
"    chart('bytes', { title: 'Bytes moved per op: DMA to and from DRAM per run (KiB), same ops', type: 'bar',\n"
"      data: { labels: ops.map((o) => o.node),\n"
"        datasets: [{ label: 'KiB to/from DRAM', data: ops.map((o) => o.dram_bytes / 1024), backgroundColor: C[3] }] },\n"
"      options: { indexAxis: 'y' } });\n"
"} else if (D.cpu_ops && D.cpu_ops.length) {\n"
"  chart('ops', { title: 'Per-op host time on the CPU (ms per run, summed per op type)', type: 'bar',\n"
"    data: { labels: D.cpu_ops.map((o) => o.op_type + ' (' + o.nodes + ')'),\n"
"      datasets: [{ label: 'ms per run', data: D.cpu_ops.map((o) => o.ms_per_run), backgroundColor: C[0] }] },\n"
"    options: { indexAxis: 'y' } });\n"
"}\n"
"if (D.segments && D.segments.length)\n"
"  chart('segments', { title: 'NPU segments: achieved vs ideal cycles, last run', type: 'bar',\n"
"    data: { labels: D.segments.map((s, i) => 'segment ' + i + ' (' + s.nodes + ' nodes)'),\n"
"      datasets: [{ label: 'modeled cycles', data: D.segments.map((s) => s.cycles), backgroundColor: C[1] },\n"
"        { label: 'ideal MAC cycles', data: D.segments.map((s) => s.ideal_mac_cycles), backgroundColor: C[2] }] } });\n"
"if (D.cpu_ms !== undefined)\n"
"  chart('cpu_npu', { title: 'CPU vs NPU time per run (ms)', type: 'bar',\n"
"    data: { labels: ['host time in NPU segments', 'modeled NPU time', 'CPU (rest of the run)'],\n"
"      datasets: [{ label: 'ms per run', data: [D.npu_wall_ms, D.modeled_npu_ms, D.cpu_ms], backgroundColor: [C[2], C[3], C[0]] }] } });\n"
"if (D.placement && D.placement.length) {\n"
"  const seg = {}; D.placement.forEach((p) => { const k = p.on_npu ? 'NPU segment ' + p.segment : 'CPU'; seg[k] = (seg[k] || 0) + 1; });\n"
"  chart('placement', { title: 'Placement: nodes per device (' + D.placement.length + ' nodes)', type: 'bar',\n"
"    data: { labels: Object.keys(seg), datasets: [{ label: 'nodes', data: Object.values(seg), backgroundColor: C[4] }] } });\n"
"  const tb = document.querySelector('#placement tbody');\n"
"  D.placement.forEach((p) => { const tr = document.createElement('tr');\n"
"    [p.node, p.op_type, p.on_npu ? 'NPU segment ' + p.segment : 'CPU', String(p.macs), p.reason].forEach((v) => {\n"
"      const td = document.createElement('td'); td.textContent = v; tr.appendChild(td); });\n"
"    tb.appendChild(tr); });\n"
"} else { document.getElementById('placement-card').hidden = true; }\n";

static const char report_css[] =
"body { font-family: sans-serif; margin: 1em; background: #f4f5f7; color: #222; }\n"
".card { background: #fff; margin: 0.6em 0; padding: 0.6em 0.9em; border-radius: 6px; box-shadow: 0 1px 3px rgba(0,0,0,.15); }\n"
".card h2 { font-size: 1em; margin: 0 0 .4em 0; }\n"
".box { position: relative; height: 320px; }\n"
"table { border-collapse: collapse; width: 100%; font-size: .9em; }\n"
"th, td { text-align: left; padding: .2em .5em; border-bottom: 1px solid #e3e3e3; }\n"
"#summary { white-space: pre-wrap; font-family: monospace; }\n";

/* Text inside <script>: "</" would end it early. */
static void script_text(FILE *out, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '<' && i + 1 < n && s[i + 1] == '/')
			fputs("<\\/", out), i++;
		else
			fputc(s[i], out);
	}
}

int npu_cli_report_write(const char *cmd, const char *path, const char *title,
			 const char *data_json)
{
	const char *cjs = getenv("NPU_CHARTJS") ? getenv("NPU_CHARTJS") : CHARTJS_DEFAULT;
	char *lib = NULL;
	long n = -1;
	FILE *f = fopen(cjs, "rb"), *out;

	if (!f) {
		fprintf(stderr, "npu %s: --report needs Chart.js at %s (Debian package libjs-chart.js): %s\n",
			cmd, cjs, strerror(errno));
		return -1;
	}
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET))
		lib = malloc((size_t)n + 1);
	if (!lib || fread(lib, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "npu %s: cannot read %s\n", cmd, cjs);
		free(lib);
		fclose(f);
		return -1;
	}
	fclose(f);
	out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, "npu %s: --report %s: %s\n", cmd, path, strerror(errno));
		free(lib);
		return -1;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", out);
	for (; *title; title++)
		if (*title == '<')
			fputs("&lt;", out);
		else if (*title == '&')
			fputs("&amp;", out);
		else
			fputc(*title, out);
	fprintf(out, "</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n%s</style>\n", report_css);
	fputs("<!-- Chart.js v3 (MIT License, https://www.chartjs.org), from Debian's libjs-chart.js -->\n<script>\n",
	      out);
	script_text(out, lib, (size_t)n);
	fputs("\n</script>\n</head>\n<body>\n<h1 id=\"title\"></h1>\n<div class=\"card\" id=\"summary\"></div>\n"
	      "<div id=\"charts\"></div>\n<div class=\"card\" id=\"placement-card\"><h2>Placement: where every node runs and why</h2>\n"
	      "<table id=\"placement\"><thead><tr><th>Node</th><th>Op</th><th>Device</th><th>MACs</th><th>Reason</th></tr></thead>"
	      "<tbody></tbody></table></div>\n<script type=\"application/json\" id=\"npu-data\">\n", out);
	script_text(out, data_json, strlen(data_json));
	fputs("\n</script>\n<script>\n", out);
	fputs(report_js, out);
	fputs("</script>\n</body>\n</html>\n", out);
	free(lib);
	if (fclose(out)) {
		fprintf(stderr, "npu %s: --report %s: %s\n", cmd, path, strerror(errno));
		return -1;
	}
	return 0;
}
