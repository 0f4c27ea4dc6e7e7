// SPDX-License-Identifier: MIT
/*
 * npu compress: prune a model with one-shot reconstruction from
 * calibration samples (issue 35; npu/npu_compress.h): prints the report
 * per layer, writes it as JSON with --report, and the model with -o:
 * the pruned .onnx, or with --quantize the pruned model calibrated and
 * compiled for the NPU as a .npub.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "npu/npu.h"
#include "npu_cli.h"

static void compress_usage(FILE *out)
{
	fprintf(out,
		"usage: npu compress MODEL.onnx --prune magnitude|nm:N:M|channels [--sparsity S]\n"
		"                    --calib-dir DIR [--eval-dir DIR] [--accuracy-target COS]\n"
		"                    [--no-reconstruct] [--report FILE.json] -o OUT.onnx\n"
		"       npu compress MODEL.onnx --prune ... --calib-dir DIR --quantize int8|int16|mixed\n"
		"                    [--device sim|accel] [--pruned-onnx FILE.onnx] -o OUT.npub\n\n"
		"Prunes the weights of Conv (groups 1), Gemm and MatMul layers and re-solves\n"
		"what is kept so each layer reproduces its original outputs on the\n"
		"calibration samples (least squares, bias corrected). OUT.onnx is the same\n"
		"standard ONNX model with the new weights.\n"
		"  --prune magnitude   unstructured: the smallest weights of each layer\n"
		"  --prune nm:N:M      keep N of every M weights along the input channels (2:4)\n"
		"  --prune channels    remove output channels and the inputs that read them\n"
		"                      (through BatchNorm, activations, residual Add, Concat,\n"
		"                      depthwise convs, SE blocks); the model gets smaller\n"
		"  --sparsity S        fraction removed per layer / channel group, in [0, 1)\n"
		"                      (default 0.5; the most any layer gets with a target)\n"
		"  --calib-dir DIR     calibration samples as `npu compile --calib-dir` reads them\n"
		"  --eval-dir DIR      held-out samples: the reported cosine, the target's check\n"
		"  --accuracy-target C per-layer sparsity by sensitivity so that the lowest\n"
		"                      output cosine against the original stays >= C\n"
		"  --no-reconstruct    plain magnitude masks (for comparison)\n"
		"  --quantize Q        then calibrate the pruned model on the same --calib-dir and\n"
		"                      compile it as `npu compile` does: int8, int16 (16x8\n"
		"                      mode) or mixed (mixed precision to --accuracy-target);\n"
		"                      -o is then a .npub, and --accuracy-target judges the\n"
		"                      quantized model against the original fp32 one\n"
		"  --device D          with --quantize: the NPU to compile for (default sim)\n"
		"  --pruned-onnx FILE  with --quantize: also write the pruned .onnx\n"
		"The report's SQNR columns: each layer's output against the original, plain\n"
		"magnitude and reconstructed; measured on the pruned model's inputs when the\n"
		"sequential pass was kept (the last line says which).\n"
		"  --report FILE       the report as JSON\n");
}

static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.4f", v);
	else
		fputs("null", f);
}

static int write_report(const char *path, const char *model, const char *method,
			const char *quantize, const struct npu_compress_result *r)
{
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f) {
		fprintf(stderr, "npu compress: %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(f, "{\n  \"model\": ");
	npu_cli_json_string(f, model);
	fprintf(f, ",\n  \"method\": ");
	npu_cli_json_string(f, method);
	fprintf(f, ",\n  \"quantize\": ");
	if (quantize)
		npu_cli_json_string(f, quantize);
	else
		fputs("null", f);
	fprintf(f, ", \"quantized_cosine\": ");
	if (quantize)
		json_num(f, r->quantized_cosine);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"calib_samples\": %zu, \"eval_samples\": %zu, \"sequential\": %s,\n  \"cosine\": ",
		r->calib_samples, r->eval_samples, r->sequential ? "true" : "false");
	json_num(f, r->cosine);
	fprintf(f, ",\n  \"macs_before\": %llu, \"macs_after\": %llu,\n"
		   "  \"weight_bytes_before\": %llu, \"weight_bytes_after\": %llu,\n"
		   "  \"layers\": [\n",
		(unsigned long long)r->macs_before, (unsigned long long)r->macs_after,
		(unsigned long long)r->weight_bytes_before, (unsigned long long)r->weight_bytes_after);
	for (i = 0; i < r->num_layers; i++) {
		const struct npu_compress_layer *l = &r->layers[i];

		fprintf(f, "    {\"node\": ");
		npu_cli_json_string(f, l->node);
		fprintf(f, ", \"op\": ");
		npu_cli_json_string(f, l->op_type);
		fprintf(f, ", \"pattern\": ");
		npu_cli_json_string(f, l->pattern);
		fprintf(f, ", \"sparsity\": %.4f, \"sqnr_magnitude_db\": ", l->sparsity);
		json_num(f, l->sqnr_magnitude_db);
		fprintf(f, ", \"sqnr_db\": ");
		json_num(f, l->sqnr_db);
		fprintf(f, ", \"macs_before\": %llu, \"macs_after\": %llu, \"weight_bytes_before\": %llu, \"weight_bytes_after\": %llu, \"note\": ",
			(unsigned long long)l->macs_before, (unsigned long long)l->macs_after,
			(unsigned long long)l->weight_bytes_before,
			(unsigned long long)l->weight_bytes_after);
		npu_cli_json_string(f, l->note);
		fprintf(f, "}%s\n", i + 1 < r->num_layers ? "," : "");
	}
	fprintf(f, "  ],\n  \"refused\": [");
	for (i = 0; i < r->num_notes; i++) {
		fprintf(f, "%s\n    ", i ? "," : "");
		npu_cli_json_string(f, r->notes[i]);
	}
	fprintf(f, "%s]\n}\n", r->num_notes ? "\n  " : "");
	if (fclose(f)) {
		fprintf(stderr, "npu compress: %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static void print_db(double v)
{
	if (isfinite(v))
		printf(" %8.2f", v);
	else
		printf(" %8s", "exact");
}

static void print_report(const struct npu_compress_result *r, const struct npu_compress_options *o)
{
	size_t i;

	printf("%-32s %-6s %-12s %8s %8s %8s %12s %12s\n", "layer", "op", "pattern", "sparsity",
	       "SQNRmag", "SQNR", "MACs", "MACs after");
	for (i = 0; i < r->num_layers; i++) {
		const struct npu_compress_layer *l = &r->layers[i];

		printf("%-32.32s %-6s %-12s %8.3f", l->node, l->op_type, l->pattern, l->sparsity);
		print_db(l->sqnr_magnitude_db);
		print_db(l->sqnr_db);
		printf(" %12llu %12llu%s%s\n", (unsigned long long)l->macs_before,
		       (unsigned long long)l->macs_after, *l->note ? "  " : "", l->note);
	}
	for (i = 0; i < r->num_notes; i++)
		printf("refused: %s\n", r->notes[i]);
	printf("MACs %llu -> %llu (%.1f%% saved), weight bytes %llu -> %llu (%.1f%% saved)\n",
	       (unsigned long long)r->macs_before, (unsigned long long)r->macs_after,
	       r->macs_before ? 100.0 * (double)(r->macs_before - r->macs_after) / (double)r->macs_before : 0,
	       (unsigned long long)r->weight_bytes_before, (unsigned long long)r->weight_bytes_after,
	       r->weight_bytes_before ? 100.0 * (double)(r->weight_bytes_before - r->weight_bytes_after) /
					(double)r->weight_bytes_before : 0);
	printf("output cosine vs the original: %.6f (lowest over %zu %s sample%s; %s)\n", r->cosine,
	       r->eval_samples, r->eval_samples == r->calib_samples ? "calibration" : "held-out",
	       r->eval_samples == 1 ? "" : "s",
	       r->sequential ? "layers re-solved in order on the pruned model's inputs"
			     : "one-shot reconstruction on the original inputs");
	if (o->quantize)
		printf("quantized (%s on %s) cosine vs the original fp32: %.6f (lowest over the same %zu sample%s)\n",
		       o->quantize, o->device ? o->device : "sim", r->quantized_cosine,
		       r->eval_samples, r->eval_samples == 1 ? "" : "s");
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(data, 1, size, f) == size;

	if (f && fclose(f))
		ok = false;
	if (!ok) {
		fprintf(stderr, "npu compress: %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("wrote %s (%zu bytes)\n", path, size);
	return 0;
}

static int parse_double(const char *opt, const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	if (errno || end == v || *end) {
		fprintf(stderr, "npu compress: %s '%s': not a number\n", opt, v);
		return 1;
	}
	return 0;
}

int npu_cmd_compress(int argc, char **argv)
{
	struct npu_compress_options o;
	struct npu_compress_result *r = NULL;
	const char *model = NULL, *out = NULL, *report = NULL, *method = NULL, *pruned = NULL;
	int i, rc = 1;

	npu_compress_options_init(&o);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			compress_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--no-reconstruct")) {
			o.no_reconstruct = 1;
		} else if (a[0] == '-' && a[1] && !v) {
			fprintf(stderr, "npu compress: %s needs a value\n", a);
			return 2;
		} else if (!strcmp(a, "--prune")) {
			method = v, i++;
			if (!strcmp(v, "magnitude"))
				o.method = NPU_PRUNE_MAGNITUDE;
			else if (!strcmp(v, "channels"))
				o.method = NPU_PRUNE_CHANNELS;
			else if (sscanf(v, "nm:%d:%d", &o.nm_n, &o.nm_m) == 2)
				o.method = NPU_PRUNE_NM;
			else {
				fprintf(stderr, "npu compress: --prune '%s': expected magnitude, nm:N:M or channels\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--sparsity")) {
			if (parse_double(a, v, &o.sparsity))
				return 2;
			i++;
		} else if (!strcmp(a, "--accuracy-target")) {
			if (parse_double(a, v, &o.accuracy_target))
				return 2;
			if (!(o.accuracy_target > 0 && o.accuracy_target <= 1)) {
				fprintf(stderr, "npu compress: --accuracy-target %s: a cosine in (0, 1]\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--calib-dir") || !strcmp(a, "--calib")) {
			o.calib_dir = v, i++;
		} else if (!strcmp(a, "--eval-dir")) {
			o.eval_dir = v, i++;
		} else if (!strcmp(a, "--quantize")) {
			if (strcmp(v, "int8") && strcmp(v, "int16") && strcmp(v, "mixed")) {
				fprintf(stderr, "npu compress: --quantize '%s': expected int8, int16 or mixed\n", v);
				return 2;
			}
			o.quantize = v, i++;
		} else if (!strcmp(a, "--device")) {
			o.device = v, i++;
		} else if (!strcmp(a, "--pruned-onnx")) {
			pruned = v, i++;
		} else if (!strcmp(a, "--report")) {
			report = v, i++;
		} else if (!strcmp(a, "-o")) {
			out = v, i++;
		} else if (a[0] == '-') {
			fprintf(stderr, "npu compress: unknown option %s\n", a);
			compress_usage(stderr);
			return 2;
		} else if (!model) {
			model = a;
		} else {
			fprintf(stderr, "npu compress: one model only ('%s', '%s')\n", model, a);
			return 2;
		}
	}
	if (o.quantize && !o.calib_dir) {
		fprintf(stderr, "npu compress: --quantize %s calibrates the pruned model on --calib-dir DIR, which is missing\n",
			o.quantize);
		return 2;
	}
	if (!model || !method || !out || !o.calib_dir) {
		fprintf(stderr, "npu compress: %s\n", !model ? "no model given" : !method ? "--prune METHOD is required" :
			!o.calib_dir ? "--calib-dir DIR is required" : "-o OUT.onnx is required");
		compress_usage(stderr);
		return 2;
	}
	if (o.quantize && ends_with(out, ".onnx")) {
		fprintf(stderr, "npu compress: --quantize %s writes a compiled model: -o %s should be a .npub (without --quantize, -o writes the pruned .onnx)\n",
			o.quantize, out);
		return 2;
	}
	if (!o.quantize && ends_with(out, ".npub")) {
		fprintf(stderr, "npu compress: -o %s: a .npub is a compiled model, which needs --quantize int8|int16|mixed\n",
			out);
		return 2;
	}
	if (!o.quantize && (o.device || pruned)) {
		fprintf(stderr, "npu compress: %s goes with --quantize int8|int16|mixed\n",
			o.device ? "--device" : "--pruned-onnx");
		return 2;
	}
	if (o.quantize && !strcmp(o.quantize, "mixed") && !(o.accuracy_target > 0)) {
		fprintf(stderr, "npu compress: --quantize mixed needs --accuracy-target COS (the cosine against the original fp32 model it must keep)\n");
		return 2;
	}
	if (o.device && !strcmp(o.device, "cpu")) {
		fprintf(stderr, "npu compress: --device cpu: --quantize compiles for an NPU (sim or accel)\n");
		return 2;
	}
	if (o.quantize)
		o.npub_path = out;
	if (npu_compress_file(model, &o, &r) != NPU_OK) {
		fprintf(stderr, "npu compress: %s\n", npu_last_error());
		return 1;
	}
	print_report(r, &o);
	if (report && write_report(report, model, method, o.quantize, r))
		goto out;
	if (o.quantize) {	/* the library wrote the .npub */
		printf("wrote %s\n", out);
		if (pruned && write_file(pruned, r->onnx, r->onnx_size))
			goto out;
	} else if (write_file(out, r->onnx, r->onnx_size)) {
		goto out;
	}
	rc = 0;
out:
	npu_compress_result_free(r);
	return rc;
}
