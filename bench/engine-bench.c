// SPDX-License-Identifier: MIT
/*
 * engine-bench - what the engine API's object model buys, measured side
 * by side in one run on one model (public API only):
 *   - the first run at a new input shape (plans: on an NPU device it
 *     compiles) against a run at a cached shape, and the switch back;
 *   - the memory one more session costs (RSS, and the arenas it owns);
 *   - throughput of T threads sharing one model (a session each) against
 *     T separate models, for T = 1 and 2.
 * It prints what it measured; nothing here is an assertion.
 *
 *   engine-bench MODEL.onnx --device cpu|sim [--shape 1x3x640x640]
 *                [--shape2 1x3x320x480] [--iters N] [--threads T]
 */
#include <npu/npu.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int parse_dims(const char *s, int64_t *dims)
{
	int rank = 0;
	char *end;

	while (*s && rank < NPU_MODEL_MAX_RANK) {
		dims[rank++] = strtoll(s, &end, 10);
		if (end == s)
			return -1;
		s = *end ? end + 1 : end;
	}
	return rank;
}

struct input {
	struct npu_host_tensor t;
};

static int make_input(const struct npu_model *m, const char *dims, struct input *in)
{
	struct npu_tensor_info info;
	size_t n = 1, i;
	int d;

	if (npu_model_num_inputs(m) != 1 || npu_model_input_info(m, 0, &info))
		return -1;
	memset(in, 0, sizeof(*in));
	in->t.name = info.name;
	in->t.dtype = info.dtype;
	in->t.rank = parse_dims(dims, in->t.dims);
	if (in->t.rank != info.rank || info.dtype != NPU_TYPE_FLOAT)
		return -1;
	for (d = 0; d < in->t.rank; d++)
		n *= (size_t)in->t.dims[d];
	in->t.nbytes = n * sizeof(float);
	in->t.data = malloc(in->t.nbytes);
	for (i = 0; in->t.data && i < n; i++)
		((float *)in->t.data)[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
	return in->t.data ? 0 : -1;
}

static double run_ms(struct npu_session *s, const struct input *in)
{
	double t0 = now_ms();

	if (npu_session_run(s, &in->t, 1) != NPU_OK) {
		fprintf(stderr, "engine-bench: %s\n", npu_last_error());
		exit(1);
	}
	return now_ms() - t0;
}

struct worker {
	struct npu_model *model;
	const struct input *in;
	int iters;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct npu_session *s;
	int i;

	if (npu_session_create(w->model, NULL, &s) != NPU_OK) {
		fprintf(stderr, "engine-bench: %s\n", npu_last_error());
		exit(1);
	}
	for (i = 0; i < w->iters; i++)
		run_ms(s, w->in);
	npu_session_destroy(s);
	return NULL;
}

/* Inferences per second of 'threads' threads, on one model or one each. */
static double throughput(struct npu_model **models, int threads, const struct input *in,
			 int iters)
{
	struct worker w[8];
	pthread_t t[8];
	double t0 = now_ms();
	int i;

	for (i = 0; i < threads; i++) {
		w[i] = (struct worker){ models[i], in, iters };
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return threads * iters * 1e3 / (now_ms() - t0);
}

static struct npu_model *load(struct npu_engine *e, const char *path, const char *device)
{
	struct npu_model_options o;
	struct npu_model *m;

	npu_model_options_init(&o);
	o.device = device;
	if (npu_model_load_file(e, path, &o, &m) != NPU_OK) {
		fprintf(stderr, "engine-bench: %s\n", npu_last_error());
		exit(1);
	}
	return m;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *device = "cpu", *shape = "1x3x640x640", *shape2 = "1x3x320x480";
	struct npu_engine_options eo;
	struct npu_engine *e;
	struct npu_model *m, *models[8];
	struct npu_session *s, *s2;
	struct npu_model_stats st;
	struct npu_npu_stats ns;
	struct input a, b;
	double load_ms, first_a, cached_a, first_b, back_a, shared[3], separate[3];
	long rss0, rss1;
	int iters = 10, threads = 2, i, t;

	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v && !strcmp(argv[i], "--device"))
			device = v, i++;
		else if (v && !strcmp(argv[i], "--shape"))
			shape = v, i++;
		else if (v && !strcmp(argv[i], "--shape2"))
			shape2 = v, i++;
		else if (v && !strcmp(argv[i], "--iters"))
			iters = atoi(v), i++;
		else if (v && !strcmp(argv[i], "--threads"))
			threads = atoi(v), i++;
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else {
			fprintf(stderr, "usage: engine-bench MODEL.onnx [--device cpu|sim] [--shape D] [--shape2 D] [--iters N] [--threads T]\n");
			return 2;
		}
	}
	if (!path || iters < 1 || threads < 1 || threads > 8) {
		fprintf(stderr, "usage: engine-bench MODEL.onnx [--device cpu|sim] [--shape D] [--shape2 D] [--iters N] [--threads T<=8]\n");
		return 2;
	}
	npu_engine_options_init(&eo);
	eo.threads = threads;
	if (npu_engine_create(&eo, &e) != NPU_OK) {
		fprintf(stderr, "engine-bench: %s\n", npu_last_error());
		return 1;
	}
	load_ms = now_ms();
	m = load(e, path, device);
	load_ms = now_ms() - load_ms;
	if (make_input(m, shape, &a) || make_input(m, shape2, &b)) {
		fprintf(stderr, "engine-bench: %s: expected one float input taking %s and %s\n",
			path, shape, shape2);
		return 1;
	}
	npu_session_create(m, NULL, &s);
	first_a = run_ms(s, &a);
	cached_a = run_ms(s, &a);
	first_b = run_ms(s, &b);
	back_a = run_ms(s, &a);

	/* One more session at a seen shape: its arenas are all it costs. */
	rss0 = rss_kib();
	npu_session_create(m, NULL, &s2);
	run_ms(s2, &a);
	rss1 = rss_kib();
	npu_npu_stats_init(&ns);
	npu_session_npu_stats(s2, &ns);
	npu_session_destroy(s2);
	npu_session_destroy(s);

	npu_model_stats_init(&st);
	npu_model_get_stats(m, &st);
	printf("%s on %s, engine of %d threads\n", path, device, npu_engine_threads(e));
	printf("  load (import once): %.1f ms\n", load_ms);
	printf("  first run at %s (plans%s): %.1f ms\n", shape,
	       strcmp(device, "cpu") ? ", compiles, calibrates" : "", first_a);
	printf("  run at the cached %s: %.1f ms\n", shape, cached_a);
	printf("  first run at %s (plans%s): %.1f ms\n", shape2,
	       strcmp(device, "cpu") ? ", compiles, no recalibration" : "", first_b);
	printf("  switch back to the cached %s: %.1f ms (%.2fx the first run)\n", shape, back_a,
	       back_a / first_a);
	printf("  model stats: %llu import, %llu calibration, %llu plans built, %llu hits\n",
	       (unsigned long long)st.imports, (unsigned long long)st.calibrations,
	       (unsigned long long)st.plans_built, (unsigned long long)st.plan_hits);
	printf("  one more session: +%ld KiB RSS (host arena %.1f MiB, device arena %.1f MiB)\n",
	       rss1 - rss0, ns.host_arena_bytes / 1048576.0, ns.arena_bytes / 1048576.0);

	/*
	 * Shared against separate models, alternated over three rounds on
	 * the same loaded models (the machine is shared: the best of each).
	 */
	for (t = 1; t <= threads && t <= 2; t++) {
		struct npu_model *sep[8];
		int round;

		shared[t] = separate[t] = 0;
		for (i = 0; i < t; i++) {
			struct npu_session *w;

			models[i] = m;
			sep[i] = load(e, path, device);
			npu_session_create(sep[i], NULL, &w);	/* plan it, as m is */
			run_ms(w, &a);
			npu_session_destroy(w);
		}
		for (round = 0; round < 3; round++) {
			double x = throughput(models, t, &a, iters);
			double y = throughput(sep, t, &a, iters);

			shared[t] = x > shared[t] ? x : shared[t];
			separate[t] = y > separate[t] ? y : separate[t];
		}
		for (i = 0; i < t; i++)
			npu_model_destroy(sep[i]);
		printf("  %d thread%s: one shared model %.2f inf/s, %d separate model%s %.2f inf/s (shared/separate %.2f)\n",
		       t, t > 1 ? "s" : "", shared[t], t, t > 1 ? "s" : "", separate[t],
		       shared[t] / separate[t]);
	}
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(a.t.data);
	free(b.t.data);
	return 0;
}
