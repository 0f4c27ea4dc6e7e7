// SPDX-License-Identifier: MIT
/*
 * npu bench: latency percentiles and throughput of a model, with the NPU's
 * modeled time, utilization and MAC share when it runs on an NPU device.
 * Prints what it measured; nothing here is a pass / fail threshold.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli_util.h"
#include "npu/npu_device.h"
#include "npu/npu_model.h"
#include "npu_cli.h"
#include "report.h"

#define MAX_SHAPES 32

static void bench_usage(FILE *out)
{
	fprintf(out,
		"usage: npu bench MODEL [--device cpu|sim|sim:N|accel|accel:K|accel:*] [--providers LIST]\n"
		"                 [--shape NAME=DIMS]... [--iters N] [--warmup N] [--threads N] [--seed N]\n"
		"                 [--parallel data|pipeline|auto] [--sessions N] [--per-op]\n"
		"                 [--json] [--report OUT.html]\n"
		"                 [--calib-dir DIR | --calib random]   (sim, accel: see npu compile)\n"
		"                 [--int16 NODE[,NODE]...] [--precision int8|int16] [--codegen K=V,...]\n"
		"                 [--cpu K=V,...]   (see npu compile)\n\n"
		"Runs MODEL (.onnx or a compiled .npub) on random inputs and reports latency\n"
		"p50 / p90 / p99, throughput, compile time and peak memory; on an NPU device\n"
		"also the modeled NPU time, the NPU utilization (ideal MAC cycles / modeled\n"
		"cycles over NPU segments), the share of MACs on the NPU and the CPU time.\n"
		"  --iters N     timed runs (default 20)    --warmup N  untimed runs (default 3)\n"
		"  --parallel M  on a device set (sim:4, accel:*): after the latency runs, N\n"
		"                sessions on their own threads run --iters runs each.\n"
		"                data: every run on the device with the least modeled work\n"
		"                outstanding; pipeline: the NPU work cut into one stage per\n"
		"                device, each run passing through them all; auto: the cost\n"
		"                model picks (default). Reports the cost model's figures, runs\n"
		"                and modeled time per device, modeled throughput against one\n"
		"                device's, and the wall-clock throughput (which this host's\n"
		"                cores bound, not the devices).\n"
		"  --sessions N  sessions of --parallel (default: one per device)\n"
		"  --per-op      time every NPU op on the device (timestamps around each op)\n"
		"                and print its roofline: ideal MAC cycles / modeled cycles;\n"
		"                on the CPU, milliseconds per run of each op type (host\n"
		"                timings around every node, summed per type, as ONNX Runtime's\n"
		"                session profile sums its Node events per op_name)\n"
		"  --report F    also write F, one offline HTML file with charts: latency\n"
		"                distribution, per-op modeled time and roofline, NPU segments,\n"
		"                CPU vs NPU time, placement (turns --per-op on)\n");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One thread of the --parallel phase: its own session, 'iters' runs. */
struct bench_worker {
	pthread_t thread;
	struct npu_model *model;
	const struct npu_host_tensor *inputs;
	size_t num_inputs;
	int iters;
	atomic_bool *failed;
	char error[512];
};

static void *bench_worker_main(void *arg)
{
	struct bench_worker *w = arg;
	struct npu_session *s = NULL;
	int k;

	if (npu_session_create(w->model, NULL, &s) != NPU_OK) {
		snprintf(w->error, sizeof(w->error), "%s", npu_last_error());
		atomic_store(w->failed, true);
		return NULL;
	}
	for (k = 0; k < w->iters && !atomic_load(w->failed); k++)
		if (npu_session_run(s, w->inputs, w->num_inputs) != NPU_OK) {
			snprintf(w->error, sizeof(w->error), "run %d: %s", k, npu_last_error());
			atomic_store(w->failed, true);
		}
	npu_session_destroy(s);
	return NULL;
}

/* What the --parallel phase measured. */
struct bench_parallel {
	int sessions;
	size_t devices;
	double wall_ms;
	uint64_t runs[NPU_DEVICE_SET_MAX], cycles[NPU_DEVICE_SET_MAX];
	uint64_t peak_bytes[NPU_DEVICE_SET_MAX];
	const char *names[NPU_DEVICE_SET_MAX];
	uint32_t clock_mhz;
	double busiest_ms;	/* modeled: the device that worked longest */
	struct npu_parallel_info info;	/* the mode and the cost model's figures */
};

static const char *mode_name(enum npu_parallel_mode m)
{
	return m == NPU_PARALLEL_PIPELINE ? "pipeline" : "data";
}

static int bench_parallel_run(struct npu_model *m, const struct npu_host_tensor *inputs,
			      size_t num_inputs, int sessions, int iters,
			      struct bench_parallel *out)
{
	struct npu_model_device_stats before[NPU_DEVICE_SET_MAX], ds;
	struct bench_worker *w = calloc((size_t)sessions, sizeof(*w));
	atomic_bool failed = false;
	int started = 0, k, rc = 0;
	size_t d;
	double t0;

	if (!w) {
		fprintf(stderr, "npu bench: out of memory\n");
		return 1;
	}
	out->sessions = sessions;
	out->devices = npu_model_num_devices(m);
	for (d = 0; d < out->devices; d++) {
		npu_model_device_stats_init(&before[d]);
		npu_model_device_stats(m, d, &before[d]);
	}
	t0 = now_ms();
	for (k = 0; k < sessions; k++) {
		w[k] = (struct bench_worker){ .model = m, .inputs = inputs, .num_inputs = num_inputs,
					      .iters = iters, .failed = &failed };
		if (pthread_create(&w[k].thread, NULL, bench_worker_main, &w[k])) {
			fprintf(stderr, "npu bench: cannot start session thread %d\n", k);
			atomic_store(&failed, true);
			rc = 1;
			break;
		}
		started++;
	}
	for (k = 0; k < started; k++)
		pthread_join(w[k].thread, NULL);
	out->wall_ms = now_ms() - t0;
	for (k = 0; k < started; k++)
		if (w[k].error[0]) {
			fprintf(stderr, "npu bench: --parallel session %d: %s\n", k, w[k].error);
			rc = 1;
		}
	out->busiest_ms = 0;
	for (d = 0; d < out->devices; d++) {
		npu_model_device_stats_init(&ds);
		npu_model_device_stats(m, d, &ds);
		out->names[d] = ds.name;
		out->runs[d] = ds.runs - before[d].runs;
		out->cycles[d] = ds.modeled_cycles - before[d].modeled_cycles;
		out->peak_bytes[d] = ds.memory_peak_bytes;
		out->clock_mhz = ds.clock_mhz ? ds.clock_mhz : out->clock_mhz;
	}
	for (d = 0; d < out->devices; d++) {
		double ms = out->cycles[d] / (out->clock_mhz ? out->clock_mhz : 1000) / 1e3;

		if (ms > out->busiest_ms)
			out->busiest_ms = ms;
	}
	free(w);
	return rc;
}

static void bench_parallel_print(const struct bench_parallel *p, int iters, double run_ms,
				 bool json)
{
	double total = (double)p->sessions * iters, one = run_ms > 0 ? 1000.0 / run_ms : 0;
	double modeled = p->busiest_ms > 0 ? 1000.0 * total / p->busiest_ms : 0;
	size_t d;

	if (json) {
		printf(",\n \"parallel\": {\"mode\": \"%s\", \"stages\": %zu, \"sessions\": %d, \"runs\": %.0f,\n"
		       "  \"modeled_latency_ms\": %.4f, \"modeled_throughput_per_s\": %.3f,\n"
		       "  \"modeled_throughput_one_device_per_s\": %.3f, \"modeled_scaling\": %.4f,\n"
		       "  \"wall_ms\": %.3f, \"wall_throughput_per_s\": %.3f,\n"
		       "  \"cost_model\": {\"data_scaling\": %.4f, \"pipeline_scaling\": %.4f, \"crossing_bytes\": %llu, \"device_bytes_max\": %llu, \"model_bytes\": %llu, \"why\": ",
		       mode_name(p->info.mode), p->info.stages, p->sessions, total, run_ms, modeled,
		       one, one > 0 ? modeled / one : 0, p->wall_ms,
		       p->wall_ms > 0 ? 1000.0 * total / p->wall_ms : 0, p->info.data_speedup,
		       p->info.pipeline_speedup, (unsigned long long)p->info.crossing_bytes,
		       (unsigned long long)p->info.device_bytes_max,
		       (unsigned long long)p->info.model_bytes);
		npu_cli_json_string(stdout, p->info.why);
		printf("},\n  \"devices\": [");
		for (d = 0; d < p->devices; d++) {
			double ms = p->cycles[d] / (p->clock_mhz ? p->clock_mhz : 1000) / 1e3;

			printf("%s\n   {\"name\": ", d ? "," : "");
			npu_cli_json_string(stdout, p->names[d]);
			printf(", \"runs\": %llu, \"modeled_busy_ms\": %.4f, \"utilization\": %.4f, \"peak_memory_bytes\": %llu}",
			       (unsigned long long)p->runs[d], ms,
			       p->busiest_ms > 0 ? ms / p->busiest_ms : 0,
			       (unsigned long long)p->peak_bytes[d]);
		}
		printf("]}");
		return;
	}
	printf("  parallel (%s): %d sessions x %d runs over %zu devices\n",
	       mode_name(p->info.mode), p->sessions, iters, p->devices);
	printf("    cost model: %s\n", p->info.why);
	for (d = 0; d < p->devices; d++) {
		double ms = p->cycles[d] / (p->clock_mhz ? p->clock_mhz : 1000) / 1e3;

		printf("    %-20s %5llu runs, modeled busy %9.3f ms, utilization %5.1f%%, peak memory %.1f MiB\n",
		       p->names[d], (unsigned long long)p->runs[d], ms,
		       p->busiest_ms > 0 ? 100.0 * ms / p->busiest_ms : 0,
		       p->peak_bytes[d] / 1048576.0);
	}
	printf("    modeled: latency %.3f ms per run, throughput %.1f runs/s (one device: %.1f, x%.2f)\n",
	       run_ms, modeled, one, one > 0 ? modeled / one : 0);
	printf("    wall clock: %.1f runs/s (host-bound: this machine's cores run every device)\n",
	       p->wall_ms > 0 ? 1000.0 * total / p->wall_ms : 0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples. */
static double percentile(const double *v, int n, double p)
{
	int rank = (int)(p / 100.0 * n + 0.999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

/* The figures of `npu bench --report` as JSON (report.h draws them). */
static char *report_json(const char *model, const char *device, const struct npu_cli_model *cm,
			 const struct npu_npu_stats *st, const double *lat, int iters, double sum,
			 double npu_wall, double cycles)
{
	char *buf = NULL;
	size_t size = 0, i, n;
	FILE *f = open_memstream(&buf, &size);
	int k;

	if (!f)
		return NULL;
	fprintf(f, "{\"kind\": \"bench\", \"title\": ");
	{
		char t[1024];

		snprintf(t, sizeof(t), "npu bench %s on %s", model, device);
		npu_cli_json_string(f, t);
	}
	fprintf(f, ", \"summary\": ");
	{
		char t[1024];

		snprintf(t, sizeof(t), "%d runs: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, %.2f inferences/s\n"
			 "NPU: %zu segment(s), %.1f%% of MACs, modeled %.4f ms per run at %u MHz\n"
			 "host time in NPU segments %.3f ms, on the CPU %.3f ms per run\n"
			 "device arena %llu bytes (activations); per-op timing on (--per-op)",
			 iters, percentile(lat, iters, 50), percentile(lat, iters, 90),
			 percentile(lat, iters, 99), 1000.0 * iters / sum, st->segments,
			 st->total_macs ? 100.0 * st->npu_macs / st->total_macs : 0.0,
			 cycles / iters / (st->clock_mhz ? st->clock_mhz : 1000) / 1e3, st->clock_mhz,
			 npu_wall / iters, (sum - npu_wall) / iters,
			 (unsigned long long)st->arena_bytes);
		npu_cli_json_string(f, t);
	}
	fprintf(f, ",\n\"p50_ms\": %.6f, \"p90_ms\": %.6f, \"p99_ms\": %.6f, \"clock_mhz\": %u,\n",
		percentile(lat, iters, 50), percentile(lat, iters, 90), percentile(lat, iters, 99),
		st->clock_mhz);
	fprintf(f, "\"cpu_ms\": %.6f, \"npu_wall_ms\": %.6f, \"modeled_npu_ms\": %.6f,\n",
		(sum - npu_wall) / iters, npu_wall / iters,
		cycles / iters / (st->clock_mhz ? st->clock_mhz : 1000) / 1e3);
	fprintf(f, "\"latency_ms\": [");
	for (k = 0; k < iters; k++)
		fprintf(f, "%s%.6f", k ? ", " : "", lat[k]);
	fprintf(f, "],\n\"segments\": [");
	for (i = 0; i < st->segments; i++) {
		struct npu_segment_stats ss;

		memset(&ss, 0, sizeof(ss));
		ss.struct_size = sizeof(ss);
		npu_session_npu_segment(cm->session, i, &ss);
		fprintf(f, "%s{\"nodes\": %zu, \"macs\": %llu, \"ideal_mac_cycles\": %llu, \"cycles\": %llu, \"dram_bytes\": %llu}",
			i ? ", " : "", ss.nodes, (unsigned long long)ss.macs,
			(unsigned long long)ss.ideal_mac_cycles, (unsigned long long)ss.last_cycles,
			(unsigned long long)ss.dram_bytes);
	}
	fprintf(f, "],\n\"ops\": [");
	n = npu_session_npu_num_ops(cm->session);
	for (i = 0; i < n; i++) {
		struct npu_op_stats os = { .struct_size = sizeof(os) };

		npu_session_npu_op(cm->session, i, &os);
		fprintf(f, "%s{\"segment\": %d, \"node\": ", i ? ",\n" : "", os.segment);
		npu_cli_json_string(f, os.node);
		fprintf(f, ", \"kind\": \"%s\", \"macs\": %llu, \"ideal_mac_cycles\": %llu, \"cycles\": %llu, \"dram_bytes\": %llu}",
			os.kind, (unsigned long long)os.macs, (unsigned long long)os.ideal_mac_cycles,
			(unsigned long long)os.cycles, (unsigned long long)os.dram_bytes);
	}
	fprintf(f, "],\n\"cpu_ops\": [");
	n = st->segments ? 0 : npu_session_num_op_stats(cm->session);
	for (i = 0; i < n; i++) {
		const char *type;
		size_t nodes;
		uint64_t calls;
		double ms;

		npu_session_op_stat(cm->session, i, &type, &nodes, &calls, &ms);
		fprintf(f, "%s{\"op_type\": ", i ? ", " : "");
		npu_cli_json_string(f, type);
		fprintf(f, ", \"nodes\": %zu, \"ms_per_run\": %.6f}", nodes,
			calls ? ms / ((double)calls / (double)(nodes ? nodes : 1)) : 0.0);
	}
	fprintf(f, "],\n\"placement\": ");
	npu_cli_report_placement(f, cm->plan);
	fprintf(f, "}\n");
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int cmp_op_cycles(const void *a, const void *b)
{
	const struct npu_op_stats *x = a, *y = b;

	return x->cycles < y->cycles ? 1 : x->cycles > y->cycles ? -1 : 0;
}

static uint64_t op_lost(const struct npu_op_stats *o)
{
	return o->cycles > o->ideal_mac_cycles ? o->cycles - o->ideal_mac_cycles : 0;
}

static int cmp_op_lost(const void *a, const void *b)
{
	uint64_t x = op_lost(a), y = op_lost(b);

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * The compiler's cost model (cycles predicted before code generation)
 * against the modeled cycles, over the ops it predicted; an op fused into
 * the one before it is counted with that one.
 */
static void print_cost_model(const struct npu_op_stats *ops, size_t n)
{
	double *err = calloc(n + 1, sizeof(*err)), worst = 0;
	size_t i, m = 0, fused = 0, w = 0;

	if (!err)
		return;
	for (i = 0; i < n; i++) {
		fused += ops[i].fused != 0;
		if (ops[i].fused || !ops[i].predicted_cycles || !ops[i].cycles)
			continue;
		err[m] = ((double)ops[i].predicted_cycles - (double)ops[i].cycles) /
			 (double)ops[i].cycles;
		if (err[m] < 0)
			err[m] = -err[m];
		if (err[m] >= worst) {
			worst = err[m];
			w = i;
		}
		m++;
	}
	if (m) {
		qsort(err, m, sizeof(*err), cmp_double);
		printf("  cost model: %zu ops predicted, median |error| %.2f%%, 90th %.2f%%, worst %.1f%% (%s %s); %zu ops run inside a fused group\n",
		       m, 100.0 * err[m / 2], 100.0 * err[m * 9 / 10], 100.0 * worst,
		       ops[w].kind, ops[w].node, fused);
	}
	free(err);
}

/* The NPU ops by modeled cycles, with their roofline, and per kind. */
static void print_op_table(const struct npu_session *m)
{
	size_t n = npu_session_npu_num_ops(m), i, k;
	struct npu_op_stats *ops = calloc(n + 1, sizeof(*ops));
	static const char *const kinds[] = { "conv", "matmul", "pool", "eltwise", "lut",
					     "resize", "copy", "softmax", "layernorm",
					     "reduce" };
	uint64_t total = 0, total_bytes = 0;

	if (!ops)
		return;
	for (i = 0; i < n; i++) {
		ops[i].struct_size = sizeof(ops[i]);
		npu_session_npu_op(m, i, &ops[i]);
		total += ops[i].cycles;
		total_bytes += ops[i].dram_bytes;
	}
	qsort(ops, n, sizeof(*ops), cmp_op_cycles);
	printf("  NPU ops by modeled cycles (last run; %zu ops, %llu cycles, %.2f MiB to/from DRAM):\n",
	       n, (unsigned long long)total, total_bytes / 1048576.0);
	for (i = 0; i < n && i < 15; i++)
		printf("    %-8s %-28.28s %10llu cycles %5.1f%%  %8.2f MMACs  roofline %5.1f%%  DRAM %8.1f KiB\n",
		       ops[i].kind, ops[i].node, (unsigned long long)ops[i].cycles,
		       total ? 100.0 * ops[i].cycles / total : 0.0, ops[i].macs / 1e6,
		       ops[i].cycles ? 100.0 * ops[i].ideal_mac_cycles / ops[i].cycles : 0.0,
		       ops[i].dram_bytes / 1024.0);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		uint64_t cyc = 0, ideal = 0, count = 0, bytes = 0;

		for (i = 0; i < n; i++) {
			if (strcmp(ops[i].kind, kinds[k]))
				continue;
			cyc += ops[i].cycles;
			ideal += ops[i].ideal_mac_cycles;
			bytes += ops[i].dram_bytes;
			count++;
		}
		if (count)
			printf("    all %-8s %4llu ops %10llu cycles %5.1f%%  roofline %5.1f%%  DRAM %8.1f KiB\n",
			       kinds[k], (unsigned long long)count, (unsigned long long)cyc,
			       total ? 100.0 * cyc / total : 0.0, cyc ? 100.0 * ideal / cyc : 0.0,
			       bytes / 1024.0);
	}
	/* What keeps utilization down: modeled minus ideal MAC cycles. */
	qsort(ops, n, sizeof(*ops), cmp_op_lost);
	printf("  NPU ops by lost cycles (modeled - ideal MAC cycles):\n");
	for (i = 0; i < n && i < 5; i++)
		printf("    %-8s %-28.28s %10llu lost of %10llu cycles  roofline %5.1f%%\n",
		       ops[i].kind, ops[i].node,
		       (unsigned long long)op_lost(&ops[i]),
		       (unsigned long long)ops[i].cycles,
		       ops[i].cycles ? 100.0 * ops[i].ideal_mac_cycles / ops[i].cycles : 0.0);
	print_cost_model(ops, n);
	free(ops);
}

/* Host time per op type (node timings of every run so far), per run. */
static void print_cpu_op_table(const struct npu_session *s, bool json)
{
	size_t n = npu_session_num_op_stats(s), i;
	double total = 0;

	for (i = 0; i < n; i++) {
		const char *type;
		size_t nodes;
		uint64_t calls;
		double ms;

		npu_session_op_stat(s, i, &type, &nodes, &calls, &ms);
		if (calls)
			total += ms / ((double)calls / (double)(nodes ? nodes : 1));
	}
	if (!json)
		printf("  CPU ops by host time (ms per run, summed per op type; %.3f ms in ops):\n",
		       total);
	for (i = 0; i < n; i++) {
		const char *type;
		size_t nodes;
		uint64_t calls;
		double ms, per;

		npu_session_op_stat(s, i, &type, &nodes, &calls, &ms);
		per = calls ? ms / ((double)calls / (double)(nodes ? nodes : 1)) : 0.0;
		if (json) {
			printf("%s\n  {\"op_type\": ", i ? "," : "");
			npu_cli_json_string(stdout, type);
			printf(", \"nodes\": %zu, \"ms_per_run\": %.4f}", nodes, per);
		} else {
			printf("    %-24s %4zu nodes %10.3f ms %5.1f%%\n", type, nodes, per,
			       total > 0 ? 100.0 * per / total : 0.0);
		}
	}
}

int npu_cmd_bench(int argc, char **argv)
{
	struct npu_model_options mo;
	struct npu_cli_model cm = { 0 };
	struct npu_npu_stats st;
	int threads = 0;
	struct npu_host_tensor *inputs = NULL;	/* one per model input */
	const char *model = NULL, *shapes[MAX_SHAPES];
	size_t num_shapes = 0, i;
	int iters = 20, warmup = 3, rc = 1, n_in = 0, k;
	unsigned long long seed = 1;
	double *lat = NULL, load_ms, sum = 0, npu_wall = 0, cycles = 0, ideal = 0;
	bool json = false, on_npu;
	const char *report = NULL, *parallel = NULL;
	int sessions = 0;
	struct bench_parallel par = { 0 };
	bool par_ran = false;
	struct rusage ru;

	npu_model_options_init(&mo);
	for (i = 1; i < (size_t)argc; i++) {
		const char *a = argv[i], *v = i + 1 < (size_t)argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			bench_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--per-op")) {
			mo.profile = 1;
		} else if (v && !strcmp(a, "--report")) {
			report = v, i++;
			mo.profile = 1;
		} else if (v && !strcmp(a, "--device")) {
			mo.device = v, i++;
		} else if (v && !strcmp(a, "--providers")) {
			mo.providers = v, i++;
		} else if (v && !strcmp(a, "--calib") && !strcmp(v, "random")) {
			mo.calib_random = 1, i++;	/* timing only: noise will do */
		} else if (v && (!strcmp(a, "--calib-dir") || !strcmp(a, "--calib"))) {
			mo.calib_dir = v, i++;
		} else if (v && !strcmp(a, "--int16")) {
			mo.int16 = v, i++;
		} else if (v && !strcmp(a, "--precision")) {
			if (strcmp(v, "int8") && strcmp(v, "int16")) {
				fprintf(stderr, "npu bench: --precision '%s': expected int8 or int16\n", v);
				return 2;
			}
			mo.precision = v, i++;
		} else if (v && !strcmp(a, "--codegen")) {
			mo.codegen = v, i++;
		} else if (v && !strcmp(a, "--cpu")) {
			mo.cpu = v, i++;
		} else if (v && !strcmp(a, "--shape")) {
			if (num_shapes == MAX_SHAPES) {
				fprintf(stderr, "npu bench: too many --shape options\n");
				return 2;
			}
			shapes[num_shapes++] = v, i++;
		} else if (v && (!strcmp(a, "--iters") || !strcmp(a, "--warmup") ||
				 !strcmp(a, "--threads"))) {
			int n = npu_cli_parse_int("bench", a, v, !strcmp(a, "--warmup") ? 0 : 1, 1000000);

			if (n < 0)
				return 2;
			if (!strcmp(a, "--iters"))
				iters = n;
			else if (!strcmp(a, "--warmup"))
				warmup = n;
			else
				threads = n;
			i++;
		} else if (v && !strcmp(a, "--parallel")) {
			if (npu_cli_parse_parallel("bench", v, &mo.parallel))
				return 2;
			parallel = v, i++;
		} else if (v && !strcmp(a, "--sessions")) {
			sessions = npu_cli_parse_int("bench", a, v, 1, 1024);
			if (sessions < 0)
				return 2;
			i++;
		} else if (v && !strcmp(a, "--seed")) {
			seed = strtoull(v, NULL, 10), i++;
		} else if (a[0] == '-') {
			fprintf(stderr, "npu bench: unknown option '%s' (or missing value)\n", a);
			bench_usage(stderr);
			return 2;
		} else if (!model) {
			model = a;
		} else {
			fprintf(stderr, "npu bench: more than one model given\n");
			return 2;
		}
	}
	if (!model) {
		bench_usage(stderr);
		return 2;
	}
	npu_npu_stats_init(&st);
	load_ms = now_ms();
	if (npu_cli_open(&cm, model, &mo, threads, "bench"))
		goto out;
	inputs = calloc(npu_model_num_inputs(cm.model) + 1, sizeof(*inputs));
	if (!inputs) {
		fprintf(stderr, "npu bench: out of memory\n");
		goto out;
	}
	for (i = 0; i < num_shapes; i++)
		if (npu_cli_apply_shape(&cm, shapes[i], "bench"))
			goto out;
	if (npu_cli_plan(&cm, "bench"))
		goto out;
	load_ms = now_ms() - load_ms;
	n_in = npu_cli_random_inputs(&cm, seed, -1.0f, 1.0f, shapes, num_shapes, inputs, "bench");
	lat = calloc((size_t)iters, sizeof(*lat));
	if (n_in < 0 || !lat)
		goto out;
	for (k = 0; k < warmup + iters; k++) {
		double t0 = now_ms();

		if (npu_session_run_plan(cm.session, cm.plan, inputs, (size_t)n_in) != NPU_OK) {
			fprintf(stderr, "npu bench: run %d: %s\n", k, npu_last_error());
			goto out;
		}
		if (k < warmup)
			continue;
		lat[k - warmup] = now_ms() - t0;
		sum += lat[k - warmup];
		npu_session_npu_stats(cm.session, &st);
		npu_wall += st.last_npu_wall_ms;
		cycles += (double)st.last_cycles;
		ideal += (double)st.ideal_mac_cycles;
	}
	qsort(lat, (size_t)iters, sizeof(*lat), cmp_double);
	on_npu = st.segments > 0;
	if (sessions && !parallel)
		parallel = "data";
	if (parallel && npu_model_num_devices(cm.model) == 0) {
		fprintf(stderr, "npu bench: --parallel needs an NPU device set (--device sim:N, accel:*)\n");
		goto out;
	}
	if (!parallel && npu_model_num_devices(cm.model) > 1)
		parallel = "data";
	if (parallel) {
		if (!sessions)
			sessions = (int)npu_model_num_devices(cm.model);
		npu_parallel_info_init(&par.info);
		npu_plan_parallel_info(cm.plan, &par.info);
		if (bench_parallel_run(cm.model, inputs, (size_t)n_in, sessions, iters, &par))
			goto out;
		par_ran = true;
	}
	getrusage(RUSAGE_SELF, &ru);
	if (json) {
		printf("{\"model\": ");
		npu_cli_json_string(stdout, model);
		printf(", \"device\": ");
		npu_cli_json_string(stdout, mo.device);
		printf(", \"iters\": %d, \"warmup\": %d, \"threads\": %d,\n", iters, warmup,
		       npu_engine_threads(cm.engine));
		printf(" \"latency_ms\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"mean\": %.3f, \"min\": %.3f},\n",
		       percentile(lat, iters, 50), percentile(lat, iters, 90),
		       percentile(lat, iters, 99), sum / iters, lat[0]);
		printf(" \"throughput_per_s\": %.3f,\n", 1000.0 * iters / sum);
		printf(" \"npu_segments\": %zu, \"npu_mac_fraction\": %.6f, \"npu_utilization\": %.6f,\n",
		       st.segments, st.total_macs ? (double)st.npu_macs / st.total_macs : 0.0,
		       cycles > 0 ? ideal / cycles : 0.0);
		/* One run's critical path across devices: in data-parallel
		 * mode (a run on one device) the device time itself. */
		printf(" \"modeled_latency_ms\": %.4f,\n",
		       cycles / iters / (st.clock_mhz ? st.clock_mhz : 1000) / 1e3);
		printf(" \"modeled_npu_ms\": %.4f, \"npu_wall_ms\": %.3f, \"cpu_ms\": %.3f,\n",
		       cycles / iters / (st.clock_mhz ? st.clock_mhz : 1000) / 1e3,
		       npu_wall / iters, (sum - npu_wall) / iters);
		printf(" \"compile_ms\": %.1f, \"load_ms\": %.1f, \"peak_memory_bytes\": %llu,\n",
		       st.compile_ms, load_ms, (unsigned long long)ru.ru_maxrss * 1024ull);
		printf(" \"device_arena_bytes\": %llu, \"host_arena_bytes\": %llu,\n",
		       (unsigned long long)st.arena_bytes, (unsigned long long)st.host_arena_bytes);
		printf(" \"segments\": [");
		for (i = 0; i < st.segments; i++) {
			struct npu_segment_stats ss;

			ss.struct_size = sizeof(ss);
			npu_session_npu_segment(cm.session, i, &ss);
			printf("%s\n  {\"nodes\": %zu, \"first\": ", i ? "," : "", ss.nodes);
			npu_cli_json_string(stdout, ss.first_node);
			printf(", \"last\": ");
			npu_cli_json_string(stdout, ss.last_node);
			printf(", \"macs\": %llu, \"instructions\": %llu, \"ideal_mac_cycles\": %llu, \"cycles\": %llu, \"utilization\": %.4f, \"dram_bytes\": %llu}",
			       (unsigned long long)ss.macs, (unsigned long long)ss.instructions,
			       (unsigned long long)ss.ideal_mac_cycles, (unsigned long long)ss.last_cycles,
			       ss.last_cycles ? (double)ss.ideal_mac_cycles / ss.last_cycles : 0.0,
			       (unsigned long long)ss.dram_bytes);
		}
		printf("]");
		if (mo.profile && !on_npu) {
			printf(",\n \"cpu_ops\": [");
			print_cpu_op_table(cm.session, true);
			printf("]");
		}
		if (mo.profile) {
			printf(",\n \"ops\": [");
			for (i = 0; i < npu_session_npu_num_ops(cm.session); i++) {
				struct npu_op_stats os = { .struct_size = sizeof(os) };

				npu_session_npu_op(cm.session, i, &os);
				printf("%s\n  {\"segment\": %d, \"node\": ", i ? "," : "", os.segment);
				npu_cli_json_string(stdout, os.node);
				printf(", \"kind\": \"%s\", \"macs\": %llu, \"ideal_mac_cycles\": %llu, \"cycles\": %llu, \"dram_bytes\": %llu, \"predicted_cycles\": %llu}",
				       os.kind, (unsigned long long)os.macs,
				       (unsigned long long)os.ideal_mac_cycles, (unsigned long long)os.cycles,
				       (unsigned long long)os.dram_bytes,
				       (unsigned long long)os.predicted_cycles);
			}
			printf("]");
		}
		if (par_ran)
			bench_parallel_print(&par, iters,
					     cycles / iters / (st.clock_mhz ? st.clock_mhz : 1000) / 1e3,
					     true);
		printf("}\n");
	} else {
		printf("%s on %s, %d threads, %d runs after %d warm-up:\n", model, mo.device,
		       npu_engine_threads(cm.engine), iters, warmup);
		printf("  latency ms: p50 %.3f  p90 %.3f  p99 %.3f  (mean %.3f, min %.3f)\n",
		       percentile(lat, iters, 50), percentile(lat, iters, 90),
		       percentile(lat, iters, 99), sum / iters, lat[0]);
		printf("  throughput: %.2f inferences/s\n", 1000.0 * iters / sum);
		if (on_npu) {
			printf("  NPU: %zu segment(s), %.1f%% of MACs, modeled %.3f ms per run at %u MHz, utilization %.1f%%\n",
			       st.segments, st.total_macs ? 100.0 * st.npu_macs / st.total_macs : 0.0,
			       cycles / iters / (st.clock_mhz ? st.clock_mhz : 1000) / 1e3,
			       st.clock_mhz, cycles > 0 ? 100.0 * ideal / cycles : 0.0);
			printf("  host time in NPU segments %.3f ms, on the CPU %.3f ms per run\n",
			       npu_wall / iters, (sum - npu_wall) / iters);
			for (i = 0; i < st.segments; i++) {
				struct npu_segment_stats ss;

				ss.struct_size = sizeof(ss);
				npu_session_npu_segment(cm.session, i, &ss);
				printf("    segment %zu: %zu nodes (%s .. %s), %.1f MMACs, %llu cycles, utilization %.1f%%, DRAM %.2f MiB\n",
				       i, ss.nodes, ss.first_node, ss.last_node, ss.macs / 1e6,
				       (unsigned long long)ss.last_cycles,
				       ss.last_cycles ? 100.0 * ss.ideal_mac_cycles / ss.last_cycles : 0.0,
				       ss.dram_bytes / 1048576.0);
			}
		}
		if (par_ran)
			bench_parallel_print(&par, iters,
					     cycles / iters / (st.clock_mhz ? st.clock_mhz : 1000) / 1e3,
					     false);
		if (mo.profile && on_npu)
			print_op_table(cm.session);
		if (mo.profile && !on_npu)
			print_cpu_op_table(cm.session, false);
		printf("  load + compile: %.0f ms (compile %.0f ms); peak memory %.1f MiB\n",
		       load_ms, st.compile_ms, ru.ru_maxrss / 1024.0);
	}
	rc = 0;
	if (report) {
		char *data = report_json(model, mo.device ? mo.device : "cpu", &cm, &st, lat, iters,
					 sum, npu_wall, cycles);

		if (!data) {
			fprintf(stderr, "npu bench: out of memory writing the report\n");
			rc = 1;
		} else {
			if (npu_cli_report_write("bench", report, "npu bench", data))
				rc = 1;
			else if (!json)
				printf("  report: %s\n", report);
			free(data);
		}
	}
out:
	if (inputs)
		npu_cli_free_inputs(inputs, n_in);
	free(inputs);
	free(lat);
	npu_cli_close(&cm);
	return rc;
}
