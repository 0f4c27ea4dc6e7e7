// SPDX-License-Identifier: MIT
/*
 * load-bench - what a finished compiled model (.npub 3) saves at start-up,
 * measured side by side in one run (public API only): for each model,
 * load, plan, session and first run, in rounds that interleave the models,
 * and the model's statistics (imports, compilations, code generations).
 * An ONNX model compiles on load's first plan (calibrated from --calib-dir
 * or on random inputs); a .npub runs as compiled. It prints what it
 * measured; nothing here is an assertion.
 *
 *   load-bench [--device sim|accel] [--calib-dir DIR] [--rounds N]
 *              [--shape 1x3x640x640] MODEL.onnx|MODEL.npub...
 * (--shape: the first input's dims where the model leaves them dynamic.)
 */
#include <npu/npu.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_MODELS 8
#define MAX_ROUNDS 50

static int64_t shape[8];
static int shape_rank;

enum phase { LOAD, PLAN, SESSION, RUN, TOTAL, PHASES };
static const char *const phase_name[PHASES] = { "load", "plan", "session", "first run", "total" };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Random inputs at the model's declared shapes (dynamic dims as 1). */
static int make_inputs(struct npu_model *m, struct npu_host_tensor *in, size_t n)
{
	size_t i, k, count;

	for (i = 0; i < n; i++) {
		struct npu_tensor_info info;

		if (npu_model_input_info(m, i, &info))
			return -1;
		in[i].name = info.name;
		in[i].dtype = info.dtype;
		in[i].rank = info.rank;
		count = 1;
		for (k = 0; k < (size_t)info.rank; k++) {
			in[i].dims[k] = info.dims[k] > 0 ? info.dims[k] :
					i == 0 && (int)k < shape_rank ? shape[k] : 1;
			count *= (size_t)in[i].dims[k];
		}
		in[i].nbytes = count * npu_data_type_size(info.dtype);
		in[i].data = calloc(1, in[i].nbytes ? in[i].nbytes : 1);
		if (!in[i].data)
			return -1;
		if (info.dtype == NPU_TYPE_FLOAT)
			for (k = 0; k < count; k++)
				((float *)in[i].data)[k] = (float)(k * 2654435761u % 1000) / 1000.0f;
	}
	return 0;
}

/* One cold start of 'path'; times in t[], the model's stats in *st. */
static int cold_start(struct npu_engine *e, const char *path, const char *device,
		      const char *calib_dir, double *t, struct npu_model_stats *st)
{
	struct npu_host_tensor in[16] = { 0 };
	struct npu_model_options mo;
	struct npu_model *m = NULL;
	struct npu_session *s = NULL;
	struct npu_plan *p = NULL;
	double t0 = now_ms(), t1;
	size_t n = 0, i;
	int rc = -1;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_dir = calib_dir;
	mo.calib_random = !calib_dir;
	if (npu_model_load_file(e, path, &mo, &m))
		goto out;
	t1 = now_ms();
	t[LOAD] = t1 - t0;
	n = npu_model_num_inputs(m);
	if (n > 16 || make_inputs(m, in, n))
		goto out;
	t0 = now_ms();
	if (npu_model_get_plan(m, in, n, &p))
		goto out;
	t1 = now_ms();
	t[PLAN] = t1 - t0;
	if (npu_session_create(m, NULL, &s))
		goto out;
	t0 = now_ms();
	t[SESSION] = t0 - t1;
	if (npu_session_run(s, in, n))
		goto out;
	t[RUN] = now_ms() - t0;
	t[TOTAL] = t[LOAD] + t[PLAN] + t[SESSION] + t[RUN];
	npu_model_stats_init(st);
	if (npu_model_get_stats(m, st))
		goto out;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "load-bench: %s: %s\n", path, npu_last_error());
	for (i = 0; i < n; i++)
		free(in[i].data);
	npu_session_destroy(s);
	npu_plan_release(p);
	npu_model_destroy(m);
	return rc;
}

int main(int argc, char **argv)
{
	static double t[MAX_MODELS][PHASES][MAX_ROUNDS];
	struct npu_model_stats st[MAX_MODELS];
	const char *device = "sim", *calib_dir = NULL, *models[MAX_MODELS];
	struct npu_engine_options eo;
	struct npu_engine *e;
	int rounds = 5, nm = 0, i, r, k;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--device") && i + 1 < argc)
			device = argv[++i];
		else if (!strcmp(argv[i], "--calib-dir") && i + 1 < argc)
			calib_dir = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
			char *p = argv[++i];

			for (shape_rank = 0; shape_rank < 8 && *p; shape_rank++) {
				shape[shape_rank] = strtoll(p, &p, 10);
				if (*p == 'x')
					p++;
			}
		}
		else if (argv[i][0] != '-' && nm < MAX_MODELS)
			models[nm++] = argv[i];
		else {
			fprintf(stderr, "usage: load-bench [--device sim|accel] [--calib-dir DIR] "
					"[--rounds N] [--shape DIMS] MODEL...\n");
			return 2;
		}
	}
	if (!nm || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "load-bench: give 1..%d models and 1..%d rounds\n", MAX_MODELS,
			MAX_ROUNDS);
		return 2;
	}
	npu_engine_options_init(&eo);
	eo.threads = 1;
	if (npu_engine_create(&eo, &e)) {
		fprintf(stderr, "load-bench: %s\n", npu_last_error());
		return 1;
	}
	for (r = 0; r < rounds; r++)	/* interleaved: model 0, 1, ... each round */
		for (k = 0; k < nm; k++) {
			double one[PHASES];

			if (cold_start(e, models[k], device, calib_dir, one, &st[k])) {
				npu_engine_destroy(e);
				return 1;
			}
			for (i = 0; i < PHASES; i++)
				t[k][i][r] = one[i];
		}
	npu_engine_destroy(e);
	printf("cold start on %s, 1 thread, median of %d interleaved rounds (ms):\n", device,
	       rounds);
	printf("%-40s", "model");
	for (i = 0; i < PHASES; i++)
		printf(" %10s", phase_name[i]);
	printf("  imports compilations codegens\n");
	for (k = 0; k < nm; k++) {
		const char *base = strrchr(models[k], '/');

		printf("%-40s", base ? base + 1 : models[k]);
		for (i = 0; i < PHASES; i++) {
			qsort(t[k][i], (size_t)rounds, sizeof(double), cmp_double);
			printf(" %10.1f", t[k][i][rounds / 2]);
		}
		printf("  %7llu %12llu %8llu\n", (unsigned long long)st[k].imports,
		       (unsigned long long)st[k].compilations, (unsigned long long)st[k].codegens);
	}
	for (k = 1; k < nm; k++)
		printf("total of %s / total of %s: %.3f\n", models[k], models[0],
		       t[k][TOTAL][rounds / 2] / t[0][TOTAL][rounds / 2]);
	return 0;
}
