// SPDX-License-Identifier: MIT
/*
 * npu compile: place, quantize and compile a model for the NPU; explain
 * where every node runs, report accuracy against fp32, write a .npub.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "npu/npu_model.h"
#include "npu_cli.h"
#include "report.h"

#define MAX_SHAPES 32

static void compile_usage(FILE *out)
{
	fprintf(out,
		"usage: npu compile MODEL.onnx [--device sim|sim:N|accel|accel:K|accel:*] [--providers LIST]\n"
		"                   [--parallel data|pipeline|auto] [--shape NAME=DIMS]...\n"
		"                   --calib-dir DIR | --calib random\n"
		"                   [--calib-method minmax|mse|percentile|entropy]\n"
		"                   [--percentile P] [--calib-seed N] [--calib-samples N]\n"
		"                   [--explain] [-o OUT.npub [--no-source]] [--threads N] [--json]\n"
		"                   [--quant-report [--report-samples N]]\n"
		"                   [--accuracy-target COS] [--keep-fp32 NODE[,NODE]...]\n"
		"                   [--int16 NODE[,NODE]...] [--precision int8|int16] [--codegen K=V,...]\n"
		"                   [--cpu K=V,...]\n"
		"                   [--bias-correction on|off] [--eval-dir DIR]\n\n"
		"Compiles the model for the NPU: fp32 graph passes, int8 calibration,\n"
		"placement of every node on the NPU or the CPU, code generation.\n"
		"  --shape NAME=DIMS   fix dynamic input dims (needed for dynamic models)\n"
		"  --calib-dir DIR     calibration inputs (required on an NPU device): DIR/*.npy,\n"
		"                      one file per sample for a one-input model, or\n"
		"                      DIR/<sample>/<input name>.npy; read one at a time\n"
		"  --calib random      calibrate on --calib-samples random normal inputs\n"
		"                      instead (smoke tests: noise gives poor int8 ranges)\n"
		"                      (--calib DIR is the same as --calib-dir DIR)\n"
		"  --calib-method M    activation ranges: minmax (default), mse, percentile,\n"
		"                      entropy (see Documentation/compiler.md)\n"
		"  --explain           print every node's placement (its provider) and the reason;\n"
		"                      on a device set, how runs use the devices and why\n"
		"  --parallel M        on a device set (sim:4, accel:*): pipeline cuts the NPU\n"
		"                      work into one stage per device (a saved .npub keeps the\n"
		"                      cut); data leaves it whole; auto (default): the cost\n"
		"                      model, data parallel while the model fits one device,\n"
		"                      else a pipeline. Documentation/multi-npu.md\n"
		"  --providers LIST    execution providers in priority order (default npu,cpu)\n"
		"  --report F.html     with --explain: also write the placement as one offline\n"
		"                      HTML file with a chart (Chart.js inline)\n"
		"  -o OUT.npub         save the compiled model ('npu run OUT.npub' runs it): its\n"
		"                      graph and code, loaded without import, pass or codegen\n"
		"  --no-source         leave the ONNX model out of OUT.npub: smaller, and it\n"
		"                      then runs only at the compiled shapes on an NPU device\n"
		"  --quant-report      per NPU node: SQNR and cosine of its int8 output against\n"
		"                      fp32, local (the node alone) and end to end, worst local\n"
		"                      SQNR first, on the calibration samples (--report-samples N\n"
		"                      of them, default 8; 0: all)\n"
		"  --bias-correction on|off  correct conv biases for the mean shift of their\n"
		"                      int8 weights (calibration input means; default: on\n"
		"                      for int16 nodes only)\n"
		"  --eval-dir DIR      accuracy against fp32 (cosine, SQNR per output) over every\n"
		"                      DIR/*.npy (a one-input model): data calibration never saw\n"
		"  --keep-fp32 NODES   keep these nodes (comma-separated, names as --explain\n"
		"                      shows them) in fp32 on the CPU\n"
		"  --accuracy-target COS  mixed precision: hold out the last quarter of the\n"
		"                      calibration samples, calibrate on the rest, and promote\n"
		"                      the NPU nodes whose int8 error alone hurts the outputs\n"
		"                      most to int16, then (if that is not enough) keep them\n"
		"                      in fp32 on the CPU, until the outputs' cosine against\n"
		"                      fp32 on the held-out samples reaches COS (0..1]\n"
		"  --int16 NODES       run these nodes (comma-separated, names as --explain\n"
		"                      shows them) with int16 activations (16x8 mode)\n"
		"  --codegen K=V,...   how NPU code is built, for measuring a technique:\n"
		"                      array_modes, out_lut, tile_search, prefetch, gap_split\n"
		"                      = 0|1; pixel_mm, fuse = auto|off|force; fuse_rows = N;\n"
		"                      lut_producer = any|last (a .npub keeps them)\n"
		"  --cpu K=V,...       how the CPU part is planned: fuse = 0|1, nchwc =\n"
		"                      auto|0|1 (cpu device), winograd = auto|0|all\n"
		"                      (a .npub keeps them)\n"
		"  --precision P       int8 (default) or int16: every node with an int16 form\n"
		"Prints the MACs on the NPU, the device memory plan and the accuracy of the\n"
		"int8 model against the fp32 CPU model on one random input.\n");
}

static const char *human_bytes(uint64_t b, char *buf, size_t size)
{
	if (b >= (1ull << 20))
		snprintf(buf, size, "%.1f MiB", b / 1048576.0);
	else
		snprintf(buf, size, "%.1f KiB", b / 1024.0);
	return buf;
}

/* Cosine and max |a-b| of every output of two models run on one input. */
static int accuracy(struct npu_session *npu, struct npu_session *ref,
		    struct npu_host_tensor *inputs, int count, bool json)
{
	size_t o, n_out;

	if (npu_session_run(npu, inputs, (size_t)count) != NPU_OK) {
		fprintf(stderr, "npu compile: running the compiled model: %s\n",
			npu_last_error());
		return -1;
	}
	if (npu_session_run(ref, inputs, (size_t)count) != NPU_OK) {
		fprintf(stderr, "npu compile: running the fp32 model: %s\n",
			npu_last_error());
		return -1;
	}
	n_out = npu_model_num_outputs(npu_plan_model(npu_session_plan(npu)));
	if (json)
		printf(",\n  \"accuracy\": [");
	for (o = 0; o < n_out; o++) {
		struct npu_host_tensor a, b;
		double dot = 0, na = 0, nb = 0, max_err = 0, cosine;
		size_t i, n;

		if (npu_session_output(npu, o, &a) || npu_session_output(ref, o, &b) ||
		    a.dtype != NPU_TYPE_FLOAT || a.nbytes != b.nbytes)
			continue;
		n = a.nbytes / sizeof(float);
		for (i = 0; i < n; i++) {
			double x = ((float *)a.data)[i], y = ((float *)b.data)[i];

			dot += x * y;
			na += x * x;
			nb += y * y;
			if (fabs(x - y) > max_err)
				max_err = fabs(x - y);
		}
		cosine = na > 0 && nb > 0 ? dot / sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
		if (json) {
			printf("%s\n    {\"output\": ", o ? "," : "");
			npu_cli_json_string(stdout, a.name);
			printf(", \"cosine\": %.6f, \"max_abs_error\": %.6g}", cosine, max_err);
		} else {
			printf("accuracy vs fp32 CPU: output '%s': cosine %.5f, max abs error %.4g\n",
			       a.name, cosine, max_err);
		}
	}
	if (json)
		printf("\n  ]");
	return 0;
}

static void json_num(double v)
{
	if (isfinite(v))
		printf("%.6g", v);
	else
		printf("%s", isnan(v) ? "null" : v > 0 ? "1e999" : "-1e999");
}

/* --quant-report: per NPU node, worst local SQNR first. */
static int quant_report(struct npu_plan *plan, size_t samples, bool json)
{
	struct npu_quant_report *r = NULL;
	size_t i;

	if (npu_plan_quant_report(plan, samples, &r) != NPU_OK) {
		fprintf(stderr, "npu compile: --quant-report: %s\n", npu_last_error());
		return -1;
	}
	if (json) {
		printf(",\n  \"quant_report\": {\"samples\": %zu, \"compared\": %llu, \"mismatches\": %llu, \"layers\": [",
		       r->samples, (unsigned long long)r->compared, (unsigned long long)r->mismatches);
		for (i = 0; i < r->num_layers; i++) {
			const struct npu_quant_layer *l = &r->layers[i];

			printf("%s\n    {\"node\": ", i ? "," : "");
			npu_cli_json_string(stdout, l->node);
			printf(", \"op\": ");
			npu_cli_json_string(stdout, l->op_type);
			printf(", \"value\": ");
			npu_cli_json_string(stdout, l->value);
			printf(", \"segment\": %d, \"local_sqnr_db\": ", l->segment);
			json_num(l->local_sqnr_db);
			printf(", \"local_cosine\": ");
			json_num(l->local_cosine);
			printf(", \"e2e_sqnr_db\": ");
			json_num(l->e2e_sqnr_db);
			printf(", \"e2e_cosine\": ");
			json_num(l->e2e_cosine);
			printf("}");
		}
		printf("\n  ], \"outputs\": [");
		for (i = 0; i < r->num_outputs; i++) {
			printf("%s\n    {\"output\": ", i ? "," : "");
			npu_cli_json_string(stdout, r->outputs[i].node);
			printf(", \"e2e_sqnr_db\": ");
			json_num(r->outputs[i].e2e_sqnr_db);
			printf(", \"e2e_cosine\": ");
			json_num(r->outputs[i].e2e_cosine);
			printf("}");
		}
		printf("\n  ]}");
	} else {
		printf("quantization report: %zu NPU nodes over %zu sample(s), worst local SQNR first\n",
		       r->num_layers, r->samples);
		printf("  %8s %9s  %8s %9s  %-14s %s\n", "local dB", "local cos", "e2e dB", "e2e cos",
		       "op", "node");
		for (i = 0; i < r->num_layers; i++) {
			const struct npu_quant_layer *l = &r->layers[i];

			printf("  %8.2f %9.6f  %8.2f %9.6f  %-14s %s\n", l->local_sqnr_db,
			       l->local_cosine, l->e2e_sqnr_db, l->e2e_cosine, l->op_type, l->node);
		}
		for (i = 0; i < r->num_outputs; i++)
			printf("model output '%s' over the %zu sample(s): SQNR %.2f dB, cosine %.6f\n",
			       r->outputs[i].node, r->samples, r->outputs[i].e2e_sqnr_db,
			       r->outputs[i].e2e_cosine);
		printf("host int8 emulation vs device: %llu of %llu segment output elements differ\n",
		       (unsigned long long)r->mismatches, (unsigned long long)r->compared);
	}
	npu_quant_report_free(r);
	return 0;
}

/*
 * --eval-dir: cosine and SQNR of every float output against the fp32 model
 * over all samples of DIR (its .npy files, a one-input model), summed: held-out
 * data the calibration never saw.
 */
static int eval_dir(struct npu_session *npu, struct npu_session *ref, const char *dir,
		    bool json)
{
	char path[4096], **names = NULL;
	int n = npu_cli_list_samples(dir, true, &names), k, rc = -1;
	size_t o, n_out = npu_model_num_outputs(npu_plan_model(npu_session_plan(npu)));
	double (*acc)[4] = calloc(n_out + 1, sizeof(*acc));	/* ab, aa, bb, (a-b)^2 */

	if (n <= 0 || !acc) {
		fprintf(stderr, "npu compile: --eval-dir %s: no .npy samples\n", dir);
		goto out;
	}
	for (k = 0; k < n; k++) {
		struct npu_host_tensor in = { 0 };

		snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		if (npu_tensor_file_read(path, &in) != NPU_OK) {
			fprintf(stderr, "npu compile: --eval-dir: %s\n", npu_last_error());
			goto out;
		}
		if (npu_session_run(npu, &in, 1) != NPU_OK || npu_session_run(ref, &in, 1) != NPU_OK) {
			fprintf(stderr, "npu compile: --eval-dir %s: %s\n", path, npu_last_error());
			npu_host_tensor_free(&in);
			goto out;
		}
		npu_host_tensor_free(&in);
		for (o = 0; o < n_out; o++) {
			struct npu_host_tensor a, b;
			size_t i;

			if (npu_session_output(npu, o, &a) || npu_session_output(ref, o, &b) ||
			    a.dtype != NPU_TYPE_FLOAT || a.nbytes != b.nbytes)
				continue;
			for (i = 0; i < a.nbytes / sizeof(float); i++) {
				double x = ((float *)a.data)[i], y = ((float *)b.data)[i];

				acc[o][0] += x * y;
				acc[o][1] += x * x;
				acc[o][2] += y * y;
				acc[o][3] += (x - y) * (x - y);
			}
		}
	}
	if (json)
		printf(",\n  \"eval\": {\"dir\": "), npu_cli_json_string(stdout, dir),
			printf(", \"samples\": %d, \"outputs\": [", n);
	for (o = 0; o < n_out; o++) {
		double cosine = acc[o][1] > 0 && acc[o][2] > 0
				? acc[o][0] / sqrt(acc[o][1] * acc[o][2]) : 0.0;
		double sqnr = acc[o][3] > 0 ? 10.0 * log10(acc[o][2] / acc[o][3]) : INFINITY;

		if (json) {
			printf("%s{\"cosine\": %.6f, \"sqnr_db\": ", o ? ", " : "", cosine);
			json_num(sqnr);
			printf("}");
		} else {
			printf("held-out accuracy vs fp32 over %d sample(s) of %s: output %zu: cosine %.5f, SQNR %.2f dB\n",
			       n, dir, o, cosine, sqnr);
		}
	}
	if (json)
		printf("]}");
	rc = 0;
out:
	free(acc);
	npu_cli_free_names(names, n);
	return rc;
}

/* What --accuracy-target and --keep-fp32 did: which nodes, at what cost. */
static void mixed_precision(struct npu_plan *plan, bool json)
{
	struct npu_mixed_precision mp;
	struct npu_node_placement p;
	size_t i, n, kept = 0;

	npu_mixed_precision_init(&mp);
	if (npu_plan_mixed_precision(plan, &mp) != NPU_OK)
		return;
	n = npu_plan_num_placements(plan);
	if (json) {
		printf(",\n  \"kept_fp32\": [");
		for (i = 0; i < n; i++)
			if (!npu_plan_placement(plan, i, &p) && strstr(p.reason, "kept in fp32")) {
				printf("%s", kept++ ? ", " : "");
				npu_cli_json_string(stdout, p.node);
			}
		printf("]");
		if (mp.target <= 0)
			return;
		printf(",\n  \"mixed_precision\": {\"target\": %g, \"calib_samples\": %zu, \"holdout_samples\": %zu,\n",
		       mp.target, mp.calib_samples, mp.holdout_samples);
		printf("    \"holdout_cosine_int8\": %.6f, \"holdout_cosine\": %.6f, \"reached\": %s, \"compilations\": %zu,\n",
		       mp.holdout_cosine_int8, mp.holdout_cosine, mp.reached ? "true" : "false",
		       mp.compilations);
		printf("    \"segments_int8\": %zu, \"segments\": %zu, \"npu_cycles_int8\": %llu, \"npu_cycles\": %llu,\n",
		       mp.segments_int8, mp.segments, (unsigned long long)mp.npu_cycles_int8,
		       (unsigned long long)mp.npu_cycles);
		printf("    \"cpu_macs_int8\": %llu, \"cpu_macs\": %llu, \"clock_mhz\": %u, \"kept\": [",
		       (unsigned long long)mp.cpu_macs_int8, (unsigned long long)mp.cpu_macs,
		       mp.clock_mhz);
		for (i = 0; i < mp.num_kept; i++) {
			printf("%s{\"node\": ", i ? ", " : "");
			npu_cli_json_string(stdout, mp.kept[i]);
			printf(", \"alone_output_sqnr_db\": ");
			json_num(mp.kept_sqnr_db[i]);
			printf("}");
		}
		printf("], \"holdout_cosine_int16\": ");
		json_num(mp.holdout_cosine_int16);
		printf(", \"int16\": [");
		for (i = 0; i < mp.num_int16; i++) {
			printf("%s", i ? ", " : "");
			npu_cli_json_string(stdout, mp.int16[i]);
		}
		printf("]}");
		return;
	}
	for (i = 0; i < n; i++)
		if (!npu_plan_placement(plan, i, &p) && strstr(p.reason, "kept in fp32") &&
		    !(mp.target > 0 && strstr(p.reason, "accuracy target")))
			printf("%s%s", kept++ ? ", " : "kept in fp32 on the CPU as asked: ", p.node);
	if (kept)
		printf("\n");
	if (mp.target <= 0)
		return;
	printf("accuracy target %g: cosine against fp32 on %zu held-out sample(s) (calibrated on the other %zu): int8 %.5f -> %.5f, %s after %zu compilation(s)\n",
	       mp.target, mp.holdout_samples, mp.calib_samples, mp.holdout_cosine_int8,
	       mp.holdout_cosine, mp.reached ? "reached" : "NOT reached", mp.compilations);
	if (mp.holdout_cosine_int16 > 0)
		printf("  with int16 alone (no node in fp32) the best held-out cosine was %.5f\n",
		       mp.holdout_cosine_int16);
	printf("  %zu node(s) promoted to int16 (16x8 mode):", mp.num_int16);
	for (i = 0; i < mp.num_int16; i++)
		printf("%s %s", i ? "," : "", mp.int16[i]);
	printf("\n  %zu node(s) kept in fp32 on the CPU, most sensitive first (output SQNR with only that node in int8):",
	       mp.num_kept);
	for (i = 0; i < mp.num_kept; i++)
		printf("%s %s (%.1f dB)", i ? "," : "", mp.kept[i], mp.kept_sqnr_db[i]);
	printf("\n  cost per run: NPU segments %zu -> %zu; modeled NPU time %.1f -> %.1f us; CPU MACs %.4f -> %.4f GMACs (%+.1f us at the compiler's 30 GFLOP/s CPU estimate)\n",
	       mp.segments_int8, mp.segments,
	       mp.clock_mhz ? mp.npu_cycles_int8 / (double)mp.clock_mhz : 0.0,
	       mp.clock_mhz ? mp.npu_cycles / (double)mp.clock_mhz : 0.0,
	       mp.cpu_macs_int8 / 1e9, mp.cpu_macs / 1e9,
	       ((double)mp.cpu_macs - (double)mp.cpu_macs_int8) * 2.0 / 30e9 * 1e6);
}

/* The first calibration sample of a one-input model, as the accuracy input. */
static int calib_sample(const struct npu_model *m, const char *dir,
			struct npu_host_tensor *in)
{
	char path[4096], **names = NULL;
	int n = npu_model_num_inputs(m) == 1 ? npu_cli_list_samples(dir, true, &names) : -1;
	int rc = -1;

	if (n > 0) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[0]);
		if (npu_tensor_file_read(path, in) == NPU_OK)
			rc = 0;
	}
	npu_cli_free_names(names, n);
	return rc;
}

int npu_cmd_compile(int argc, char **argv)
{
	bool calib_in = false;	/* inputs[0] read from the calibration set */
	struct npu_model_options mo;
	struct npu_save_options save;
	struct npu_cli_model cm = { 0 }, ref = { 0 };
	struct npu_npu_stats st;
	struct npu_parallel_info pi;
	int threads = 0;
	struct npu_host_tensor *inputs = NULL;	/* one per model input */
	const char *model = NULL, *out = NULL, *shapes[MAX_SHAPES], *report = NULL, *eval = NULL;
	size_t num_shapes = 0, i, on_npu = 0;
	bool explain = false, json = false, qreport = false;
	int rc = 1, n_in = 0, report_samples = 8;
	char b1[32], b2[32], b3[32];

	npu_model_options_init(&mo);
	npu_save_options_init(&save);
	mo.device = "sim";
	for (i = 1; i < (size_t)argc; i++) {
		const char *a = argv[i], *v = i + 1 < (size_t)argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			compile_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--explain")) {
			explain = true;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--no-source")) {
			save.keep_source = 0;
		} else if (!strcmp(a, "--quant-report")) {
			qreport = true;
		} else if (v && !strcmp(a, "--report-samples")) {
			report_samples = npu_cli_parse_int("compile", a, v, 0, 100000);
			if (report_samples < 0)
				return 2;
			i++;
		} else if (v && !strcmp(a, "--device")) {
			mo.device = v, i++;
		} else if (v && !strcmp(a, "--parallel")) {
			if (npu_cli_parse_parallel("compile", v, &mo.parallel))
				return 2;
			i++;
		} else if (v && !strcmp(a, "--providers")) {
			mo.providers = v, i++;
		} else if (v && !strcmp(a, "--shape")) {
			if (num_shapes == MAX_SHAPES) {
				fprintf(stderr, "npu compile: too many --shape options\n");
				return 2;
			}
			shapes[num_shapes++] = v, i++;
		} else if (v && !strcmp(a, "--calib") && !strcmp(v, "random")) {
			mo.calib_random = 1, i++;
		} else if (v && (!strcmp(a, "--calib-dir") || !strcmp(a, "--calib"))) {
			mo.calib_dir = v, i++;
		} else if (v && !strcmp(a, "--calib-method")) {
			mo.calib_method = v, i++;
		} else if (v && !strcmp(a, "--percentile")) {
			char *end;

			mo.calib_percentile = strtod(v, &end);
			if (*end || !(mo.calib_percentile > 50.0 && mo.calib_percentile <= 100.0)) {
				fprintf(stderr, "npu compile: --percentile '%s': expected a number in (50, 100]\n", v);
				return 2;
			}
			i++;
		} else if (v && !strcmp(a, "--calib-seed")) {
			mo.calib_seed = strtoull(v, NULL, 10), i++;
		} else if (v && !strcmp(a, "--calib-samples")) {
			mo.calib_samples = npu_cli_parse_int("compile", a, v, 1, 1000);
			if (mo.calib_samples < 0)
				return 2;
			i++;
		} else if (v && !strcmp(a, "--eval-dir")) {
			eval = v, i++;
		} else if (v && !strcmp(a, "--bias-correction")) {
			if (strcmp(v, "on") && strcmp(v, "off")) {
				fprintf(stderr, "npu compile: --bias-correction '%s': expected on or off\n", v);
				return 2;
			}
			mo.bias_correction = !strcmp(v, "on") ? 1 : -1;
			i++;
		} else if (v && !strcmp(a, "--keep-fp32")) {
			mo.keep_fp32 = v, i++;
		} else if (v && !strcmp(a, "--int16")) {
			mo.int16 = v, i++;
		} else if (v && !strcmp(a, "--precision")) {
			if (strcmp(v, "int8") && strcmp(v, "int16")) {
				fprintf(stderr, "npu compile: --precision '%s': expected int8 or int16\n", v);
				return 2;
			}
			mo.precision = v, i++;
		} else if (v && !strcmp(a, "--codegen")) {
			mo.codegen = v, i++;
		} else if (v && !strcmp(a, "--cpu")) {
			mo.cpu = v, i++;
		} else if (v && !strcmp(a, "--accuracy-target")) {
			char *end;

			mo.accuracy_target = strtod(v, &end);
			if (*end || end == v || !(mo.accuracy_target > 0.0 && mo.accuracy_target <= 1.0)) {
				fprintf(stderr, "npu compile: --accuracy-target '%s': expected a cosine in (0, 1], e.g. 0.99\n", v);
				return 2;
			}
			i++;
		} else if (v && !strcmp(a, "--threads")) {
			threads = npu_cli_parse_int("compile", a, v, 1, 1024);
			if (threads < 0)
				return 2;
			i++;
		} else if (v && !strcmp(a, "-o")) {
			out = v, i++;
		} else if (v && !strcmp(a, "--report")) {
			report = v, i++;
		} else if (a[0] == '-') {
			fprintf(stderr, "npu compile: unknown option '%s' (or missing value)\n", a);
			compile_usage(stderr);
			return 2;
		} else if (!model) {
			model = a;
		} else {
			fprintf(stderr, "npu compile: more than one model given ('%s', '%s')\n", model, a);
			return 2;
		}
	}
	if (!model) {
		compile_usage(stderr);
		return 2;
	}
	if (report && !explain) {
		fprintf(stderr, "npu compile: --report goes with --explain (it draws the placement)\n");
		return 2;
	}
	if (!strcmp(mo.device, "cpu")) {
		fprintf(stderr, "npu compile: --device cpu: compilation targets the NPU (sim or accel)\n");
		return 2;
	}
	if (npu_cli_open(&cm, model, &mo, threads, "compile"))
		goto out;
	inputs = calloc(npu_model_num_inputs(cm.model) + 1, sizeof(*inputs));
	if (!inputs) {
		fprintf(stderr, "npu compile: out of memory\n");
		goto out;
	}
	for (i = 0; i < num_shapes; i++)
		if (npu_cli_apply_shape(&cm, shapes[i], "compile"))
			goto out;
	if (npu_cli_plan(&cm, "compile"))
		goto out;
	npu_npu_stats_init(&st);
	npu_plan_npu_stats(cm.plan, &st);
	npu_parallel_info_init(&pi);
	npu_plan_parallel_info(cm.plan, &pi);
	if (json)
		printf("{\n  \"model\": "), npu_cli_json_string(stdout, model), printf(",\n  \"placement\": [");
	else if (explain)
		printf("placement of %zu nodes:\n", npu_plan_num_placements(cm.plan));
	for (i = 0; i < npu_plan_num_placements(cm.plan); i++) {
		struct npu_node_placement p;

		npu_plan_placement(cm.plan, i, &p);
		on_npu += p.on_npu;
		if (json) {
			printf("%s\n    {\"node\": ", i ? "," : "");
			npu_cli_json_string(stdout, p.node);
			printf(", \"op\": ");
			npu_cli_json_string(stdout, p.op_type);
			printf(", \"device\": \"%s\", \"provider\": ", p.on_npu ? "npu" : "cpu");
			npu_cli_json_string(stdout, npu_plan_placement_provider(cm.plan, i));
			printf(", \"segment\": %d, \"macs\": %llu, \"reason\": ", p.segment,
			       (unsigned long long)p.macs);
			npu_cli_json_string(stdout, p.reason);
			printf("}");
		} else if (explain) {
			printf("  %s: %s (%s)", p.node, npu_plan_placement_provider(cm.plan, i),
			       p.reason);
			if (p.on_npu)
				printf(" [segment %d]", p.segment);
			printf("\n");
		}
	}
	if (json) {
		printf("\n  ],\n  \"nodes\": %zu, \"npu_nodes\": %zu, \"segments\": %zu,\n",
		       npu_plan_num_placements(cm.plan), on_npu, st.segments);
		printf("  \"total_macs\": %llu, \"npu_macs\": %llu, \"npu_mac_fraction\": %.6f,\n",
		       (unsigned long long)st.total_macs, (unsigned long long)st.npu_macs,
		       st.total_macs ? (double)st.npu_macs / st.total_macs : 0.0);
		printf("  \"arena_bytes\": %llu, \"arena_sum_bytes\": %llu, \"arena_lower_bound\": %llu,\n",
		       (unsigned long long)st.arena_bytes, (unsigned long long)st.arena_sum_bytes,
		       (unsigned long long)st.arena_lower_bound);
		printf("  \"host_arena_bytes\": %llu, \"host_sum_bytes\": %llu, \"host_lower_bound\": %llu,\n",
		       (unsigned long long)st.host_arena_bytes, (unsigned long long)st.host_sum_bytes,
		       (unsigned long long)st.host_lower_bound);
		printf("  \"compile_ms\": %.1f,\n  \"warnings\": [", st.compile_ms);
		for (i = 0; i < npu_plan_num_warnings(cm.plan); i++) {
			printf("%s", i ? ", " : "");
			npu_cli_json_string(stdout, npu_plan_warning(cm.plan, i));
		}
		printf("]");
		if (npu_model_num_devices(cm.model) > 1) {
			printf(",\n  \"parallel\": {\"mode\": \"%s\", \"devices\": %zu, \"stages\": %zu, \"data_scaling\": %.4f, \"pipeline_scaling\": %.4f, \"crossing_bytes\": %llu, \"device_bytes_max\": %llu, \"model_bytes\": %llu, \"why\": ",
			       pi.mode == NPU_PARALLEL_PIPELINE ? "pipeline" : "data", pi.devices,
			       pi.stages, pi.data_speedup, pi.pipeline_speedup,
			       (unsigned long long)pi.crossing_bytes,
			       (unsigned long long)pi.device_bytes_max,
			       (unsigned long long)pi.model_bytes);
			npu_cli_json_string(stdout, pi.why);
			printf("}");
		}
	} else {
		printf("%zu nodes: %zu on the NPU in %zu segment(s), %zu on the CPU; %.1f%% of %.3f GMACs on the NPU\n",
		       npu_plan_num_placements(cm.plan), on_npu, st.segments,
		       npu_plan_num_placements(cm.plan) - on_npu,
		       st.total_macs ? 100.0 * st.npu_macs / st.total_macs : 0.0,
		       st.total_macs / 1e9);
		printf("device arena: %s (every tensor in its own buffer: %s; lower bound, max live: %s)\n",
		       human_bytes(st.arena_bytes, b1, sizeof(b1)),
		       human_bytes(st.arena_sum_bytes, b2, sizeof(b2)),
		       human_bytes(st.arena_lower_bound, b3, sizeof(b3)));
		printf("host arena: %s (every tensor in its own buffer: %s; lower bound, max live: %s)\n",
		       human_bytes(st.host_arena_bytes, b1, sizeof(b1)),
		       human_bytes(st.host_sum_bytes, b2, sizeof(b2)),
		       human_bytes(st.host_lower_bound, b3, sizeof(b3)));
		printf("compile time: %.0f ms\n", st.compile_ms);
		if (explain && npu_model_num_devices(cm.model) > 1)
			printf("devices: %zu, %s\n", pi.devices, pi.why);
		for (i = 0; explain && i < npu_plan_num_warnings(cm.plan); i++)
			printf("warning: %s\n", npu_plan_warning(cm.plan, i));
	}
	mixed_precision(cm.plan, json);
	if (report) {
		char *buf = NULL, t[1024];
		size_t size = 0;
		FILE *f = open_memstream(&buf, &size);

		if (!f)
			goto out;
		snprintf(t, sizeof(t), "npu compile --explain %s on %s", model, mo.device);
		fprintf(f, "{\"kind\": \"compile\", \"title\": ");
		npu_cli_json_string(f, t);
		snprintf(t, sizeof(t), "%zu nodes: %zu on the NPU in %zu segment(s), %zu on the CPU; %.1f%% of %.3f GMACs on the NPU\n"
			 "device arena %llu bytes, compile %.0f ms",
			 npu_plan_num_placements(cm.plan), on_npu, st.segments,
			 npu_plan_num_placements(cm.plan) - on_npu,
			 st.total_macs ? 100.0 * st.npu_macs / st.total_macs : 0.0, st.total_macs / 1e9,
			 (unsigned long long)st.arena_bytes, st.compile_ms);
		fprintf(f, ", \"summary\": ");
		npu_cli_json_string(f, t);
		fprintf(f, ", \"placement\": ");
		npu_cli_report_placement(f, cm.plan);
		fprintf(f, "}\n");
		if (fclose(f) || npu_cli_report_write("compile", report, "npu compile", buf)) {
			free(buf);
			goto out;
		}
		free(buf);
		if (!json)
			printf("report: %s\n", report);
	}
	/* Accuracy: the same random input through the fp32 CPU model. */
	{
		struct npu_model_options ro = mo;

		ro.device = "cpu";
		if (npu_cli_open(&ref, model, &ro, threads, "compile"))
			goto out;
		for (i = 0; i < num_shapes; i++)
			if (npu_cli_apply_shape(&ref, shapes[i], "compile"))
				goto out;
		if (npu_cli_plan(&ref, "compile"))
			goto out;
		if (mo.calib_dir && !calib_sample(cm.model, mo.calib_dir, &inputs[0])) {
			calib_in = true;
			if (!json)
				printf("accuracy input: the first calibration sample in %s\n", mo.calib_dir);
			if (accuracy(cm.session, ref.session, inputs, 1, json))
				goto out;
		} else {
			n_in = npu_cli_random_inputs(&cm, 12345, -1.0f, 1.0f, shapes, num_shapes,
						     inputs, "compile");
			if (n_in < 0 || accuracy(cm.session, ref.session, inputs, n_in, json))
				goto out;
		}
	}
	if (eval && eval_dir(cm.session, ref.session, eval, json))
		goto out;
	if (qreport && quant_report(cm.plan, (size_t)report_samples, json))
		goto out;
	if (out) {
		if (npu_plan_save_compiled_with(cm.plan, out, &save) != NPU_OK) {
			fprintf(stderr, "npu compile: %s\n", npu_last_error());
			goto out;
		}
		if (!json)
			printf("wrote %s\n", out);
	}
	if (json)
		printf(",\n  \"output\": "), npu_cli_json_string(stdout, out ? out : ""), printf("\n}\n");
	rc = 0;
out:
	if (calib_in)
		npu_host_tensor_free(&inputs[0]);
	if (inputs)
		npu_cli_free_inputs(inputs, n_in);
	free(inputs);
	npu_cli_close(&ref);
	npu_cli_close(&cm);
	return rc;
}
