// SPDX-License-Identifier: MIT
/*
 * The engine API (npu/npu_model.h): one model shared by many threads, each
 * with its own session, over a mix of input shapes; cached plans (a seen
 * shape neither imports nor compiles, a new shape on an NPU device does
 * not recalibrate); batched runs; and the misuse that must give an error.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"

#define THREADS 8
#define ITERS 12
#define NUM_SHAPES 3

static const int64_t shapes[NUM_SHAPES][4] = {
	{ 1, 4, 8, 8 }, { 1, 4, 12, 16 }, { 2, 4, 8, 8 },
};

static float w1[8 * 4], b1[8], w2[4 * 8];
static int64_t w1_dims[] = { 8, 4, 1, 1 }, b1_dims[] = { 8 }, w2_dims[] = { 4, 8, 1, 1 };

/* x[N,4,H,W] -> Conv 1x1 (8) -> Relu -> Conv 1x1 (4) -> Add x -> Sigmoid. */
static void *cnn_model(size_t *size)
{
	static const int64_t dyn[] = { -1, 4, -1, -1 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < 32; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 8.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	for (i = 0; i < 8; i++)
		b1[i] = (float)(i - 4) / 16.0f;
	tb_init(&m, 13);
	tb_input(&m, "x", 4, dyn);
	tb_output(&m, "y", 4, dyn);
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = 32;
	t->float_data = w1;
	t = tb_init_tensor(&m, "b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, b1_dims);
	t->n_float_data = 8;
	t->float_data = b1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = 32;
	t->float_data = w2;
	tb_node(&m, "Conv", "conv1", "c1", 3, "x", "w1")->input[2] = "b1";
	tb_node(&m, "Relu", "relu", "r", 1, "c1", NULL);
	tb_node(&m, "Conv", "conv2", "c2", 2, "r", "w2");
	tb_node(&m, "Add", "add", "s", 2, "c2", "x");
	tb_node(&m, "Sigmoid", "sig", "y", 1, "s", NULL);
	return tb_pack(&m, size);
}

static size_t numel(const int64_t *d)
{
	return (size_t)(d[0] * d[1] * d[2] * d[3]);
}

static float *input_for(int shape, unsigned seed)
{
	size_t n = numel(shapes[shape]), i;
	float *x = malloc(n * sizeof(float));

	for (i = 0; x && i < n; i++)
		x[i] = (float)((i * 2654435761u + seed * 40503u) % 1000) / 500.0f - 1.0f;
	return x;
}

static struct npu_host_tensor host(int shape, float *x)
{
	struct npu_host_tensor h = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 };

	memcpy(h.dims, shapes[shape], sizeof(shapes[shape]));
	h.data = x;
	h.nbytes = numel(shapes[shape]) * sizeof(float);
	return h;
}

static struct npu_engine *engine;
static struct npu_model *model;
static float *inputs[NUM_SHAPES], *want[NUM_SHAPES];

static void run_once(struct npu_session *s, int shape, float *out)
{
	struct npu_host_tensor in = host(shape, inputs[shape]), y;

	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_int_equal(y.nbytes, numel(shapes[shape]) * sizeof(float));
	memcpy(out, y.data, y.nbytes);
}

static void load(const char *device)
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	struct npu_session *s;
	size_t size;
	void *buf = cnn_model(&size);
	int k;

	npu_engine_options_init(&eo);
	eo.threads = 2;
	assert_int_equal(npu_engine_create(&eo, &engine), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;	/* arithmetic, not accuracy: noise will do */
	if (npu_model_load_memory(engine, buf, size, "cnn.onnx", &mo, &model) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	/* The serial reference, one shape after another. */
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	for (k = 0; k < NUM_SHAPES; k++) {
		inputs[k] = input_for(k, (unsigned)k + 1);
		want[k] = malloc(numel(shapes[k]) * sizeof(float));
		run_once(s, k, want[k]);
	}
	npu_session_destroy(s);
}

static void unload(void)
{
	int k;

	npu_model_destroy(model);
	npu_engine_destroy(engine);
	for (k = 0; k < NUM_SHAPES; k++) {
		free(inputs[k]);
		free(want[k]);
	}
}

struct worker {
	int id, mismatches, failures;
	char err[512];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct npu_session *s = NULL;
	float *out = malloc(numel(shapes[2]) * sizeof(float) + numel(shapes[1]) * sizeof(float));
	int i;

	if (!out || npu_session_create(model, NULL, &s) != NPU_OK) {
		w->failures++;
		free(out);
		return NULL;
	}
	for (i = 0; i < ITERS; i++) {
		int shape = (w->id + i) % NUM_SHAPES;
		struct npu_host_tensor in = host(shape, inputs[shape]), y;

		if (npu_session_run(s, &in, 1) != NPU_OK ||
		    npu_session_output(s, 0, &y) != NPU_OK) {
			snprintf(w->err, sizeof(w->err), "%s", npu_last_error());
			w->failures++;
			continue;
		}
		if (y.nbytes != numel(shapes[shape]) * sizeof(float) ||
		    memcmp(y.data, want[shape], y.nbytes))
			w->mismatches++;
	}
	npu_session_destroy(s);
	free(out);
	return NULL;
}

/* Eight threads share one model, each with a session, shapes mixed. */
static void threads_agree_with_serial(const char *device)
{
	struct npu_model_stats st;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	int i;

	load(device);
	for (i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		if (w[i].failures)
			fail_msg("thread %d: %d failed runs: %s", i, w[i].failures, w[i].err);
		assert_int_equal(w[i].mismatches, 0);
	}
	npu_model_stats_init(&st);
	assert_int_equal(npu_model_get_stats(model, &st), NPU_OK);
	/* One import, one plan per shape, however many threads ran them. */
	assert_int_equal(st.imports, 1);
	assert_int_equal(st.plans_built, NUM_SHAPES);
	assert_int_equal(st.plan_misses, NUM_SHAPES);
	assert_true(st.plan_hits >= (uint64_t)THREADS * ITERS);
	unload();
}

static void test_threads_share_one_model_on_cpu(void **state)
{
	(void)state;
	threads_agree_with_serial("cpu");
}

static void test_threads_share_one_model_on_sim(void **state)
{
	(void)state;
	threads_agree_with_serial("sim");
}

/* A seen shape plans nothing; a new shape on the NPU does not recalibrate. */
static void test_cached_plans_do_not_import_compile_or_recalibrate(void **state)
{
	struct npu_model_stats st;
	struct npu_session *s;
	float *out = malloc(numel(shapes[1]) * sizeof(float));	/* the largest */

	(void)state;
	load("sim");	/* ran each shape once */
	npu_model_stats_init(&st);
	assert_int_equal(npu_model_get_stats(model, &st), NPU_OK);
	assert_int_equal(st.imports, 1);
	assert_int_equal(st.plans_built, NUM_SHAPES);
	assert_int_equal(st.calibrations, 1);	/* the first shape only */
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	run_once(s, 1, out);
	run_once(s, 0, out);
	assert_int_equal(npu_model_get_stats(model, &st), NPU_OK);
	assert_int_equal(st.plans_built, NUM_SHAPES);
	assert_int_equal(st.calibrations, 1);
	assert_int_equal(st.plan_hits, 2);
	npu_session_destroy(s);
	free(out);
	unload();
}

/* Two requests stacked along the batch dim give each request's output. */
static void test_batch_of_two_equals_two_single_runs(void **state)
{
	struct npu_session *s;
	size_t half = numel(shapes[0]);
	float *stacked = malloc(2 * half * sizeof(float)), *single = malloc(half * sizeof(float));
	struct npu_host_tensor in, y;
	int r;

	(void)state;
	load("cpu");
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	memcpy(stacked, inputs[0], half * sizeof(float));
	memcpy(stacked + half, inputs[2] + half, half * sizeof(float));
	in = host(2, stacked);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_OK);
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	memcpy(stacked, y.data, y.nbytes);
	for (r = 0; r < 2; r++) {
		in = host(0, r ? inputs[2] + half : inputs[0]);
		assert_int_equal(npu_session_run(s, &in, 1), NPU_OK);
		assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
		assert_memory_equal(y.data, stacked + r * half, half * sizeof(float));
	}
	npu_session_destroy(s);
	free(stacked);
	free(single);
	unload();
}

/* The plan cache keeps at most max_plans, least recently used out. */
static void test_plan_cache_is_bounded(void **state)
{
	struct npu_model_options mo;
	struct npu_model *m;
	struct npu_session *s;
	struct npu_model_stats st;
	struct npu_host_tensor in;
	size_t size;
	void *buf = cnn_model(&size);
	int k;

	(void)state;
	load("cpu");
	npu_model_options_init(&mo);
	mo.max_plans = 2;
	assert_int_equal(npu_model_load_memory(engine, buf, size, "cnn.onnx", &mo, &m), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	for (k = 0; k < NUM_SHAPES; k++) {
		in = host(k, inputs[k]);
		assert_int_equal(npu_session_run(s, &in, 1), NPU_OK);
	}
	npu_model_stats_init(&st);
	assert_int_equal(npu_model_get_stats(m, &st), NPU_OK);
	assert_int_equal(st.plans_cached, 2);
	assert_int_equal(st.plans_evicted, 1);
	/* The evicted shape still runs: it is planned again. */
	in = host(0, inputs[0]);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_OK);
	assert_int_equal(npu_model_get_stats(m, &st), NPU_OK);
	assert_int_equal(st.plans_built, NUM_SHAPES + 1);
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(buf);
	unload();
}

/* Misuse gets an error that says what was wrong, never a crash. */
static void test_misuse_is_an_error(void **state)
{
	struct npu_model *other;
	struct npu_session *s, *s2;
	struct npu_plan *plan = NULL;
	struct npu_host_tensor in;
	size_t size;
	void *buf = cnn_model(&size);
	float bad[3] = { 0 };

	(void)state;
	load("cpu");
	assert_int_equal(npu_model_load_memory(engine, buf, size, "other.onnx", NULL, &other),
			 NPU_OK);
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	/* A plan of another model. */
	in = host(0, inputs[0]);
	assert_int_equal(npu_model_get_plan(other, &in, 1, &plan), NPU_OK);
	assert_int_equal(npu_session_run_plan(s, plan, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "other.onnx"));
	npu_plan_release(plan);
	/* A plan of this model, inputs of another shape. */
	assert_int_equal(npu_model_get_plan(model, &in, 1, &plan), NPU_OK);
	in = host(1, inputs[1]);
	assert_int_equal(npu_session_run_plan(s, plan, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "the plan is for"));
	/* Shapes that do not fit the model; wrong byte count; unknown input. */
	in = host(0, inputs[0]);
	in.dims[1] = 3;
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "dim 1"));
	in = host(0, bad);
	in.nbytes = sizeof(bad);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "bytes"));
	in = host(0, inputs[0]);
	in.name = "nope";
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_NOT_FOUND);
	assert_non_null(strstr(npu_last_error(), "'nope'"));
	/* A destroyed model: its sessions refuse to run, plans stay valid. */
	assert_int_equal(npu_session_create(other, NULL, &s2), NPU_OK);
	npu_model_destroy(other);
	in = host(0, inputs[0]);
	assert_int_equal(npu_session_run(s2, &in, 1), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "destroyed"));
	npu_session_destroy(s2);
	/* A missing file. */
	assert_int_equal(npu_model_load_file(engine, "/nonexistent.onnx", NULL, &other),
			 NPU_ERR_NOT_FOUND);
	assert_null(other);
	assert_non_null(strstr(npu_last_error(), "/nonexistent.onnx"));
	npu_plan_release(plan);
	npu_session_destroy(s);
	free(buf);
	unload();
}

struct busy_probe {
	struct npu_session *s;
	struct npu_host_tensor in;
	npu_status st;
	char msg[512];
	int calls;
};

/* The engine logs a new plan while the session that asked for it runs. */
static void log_while_running(void *arg, enum npu_log_level level, const char *message)
{
	struct busy_probe *p = arg;

	(void)level;
	if (!p->s || !strstr(message, "planned for"))
		return;
	p->calls++;
	p->st = npu_session_run(p->s, &p->in, 1);
	snprintf(p->msg, sizeof(p->msg), "%s", npu_last_error());
}

/* A session entered while it is inside a call gets NPU_ERR_BUSY, not a crash. */
static void test_session_in_use_is_busy(void **state)
{
	static struct busy_probe probe;
	struct npu_engine_options eo;
	struct npu_engine *e;
	struct npu_model *m;
	size_t size;
	void *buf = cnn_model(&size);
	float *x = input_for(0, 3);

	(void)state;
	npu_engine_options_init(&eo);
	eo.threads = 1;
	eo.log_level = NPU_LOG_INFO;
	eo.log = log_while_running;
	eo.log_arg = &probe;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	assert_int_equal(npu_model_load_memory(e, buf, size, "cnn.onnx", NULL, &m), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &probe.s), NPU_OK);
	probe.in = host(0, x);
	assert_int_equal(npu_session_run(probe.s, &probe.in, 1), NPU_OK);
	assert_int_equal(probe.calls, 1);
	assert_int_equal(probe.st, NPU_ERR_BUSY);
	assert_non_null(strstr(probe.msg, "in use by another thread"));
	npu_session_destroy(probe.s);
	probe.s = NULL;
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(buf);
	free(x);
}

/* Input data at any address: kernels get an aligned copy, same results. */
static void test_misaligned_input_data_gives_the_same_output(void **state)
{
	struct npu_session *s;
	size_t bytes = numel(shapes[0]) * sizeof(float);
	char *raw = malloc(bytes + 8);
	struct npu_host_tensor in, y;

	(void)state;
	load("cpu");
	memcpy(raw + 1, inputs[0], bytes);
	in = host(0, (float *)(void *)(raw + 1));
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_OK);
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	assert_memory_equal(y.data, want[0], bytes);
	npu_session_destroy(s);
	free(raw);
	unload();
}

struct spinner {
	atomic_bool stop;
	atomic_int runs, failures;
};

static void *spin_runs(void *arg)
{
	struct spinner *sp = arg;
	struct npu_session *s;
	int i;

	if (npu_session_create(model, NULL, &s) != NPU_OK) {
		atomic_fetch_add(&sp->failures, 1);
		return NULL;
	}
	for (i = 0; i < 2000 && !atomic_load(&sp->stop); i++) {
		struct npu_host_tensor in = host(0, inputs[0]), y;

		if (npu_session_run(s, &in, 1) != NPU_OK || npu_session_output(s, 0, &y) != NPU_OK ||
		    memcmp(y.data, want[0], y.nbytes))
			atomic_fetch_add(&sp->failures, 1);
		atomic_fetch_add(&sp->runs, 1);
	}
	npu_session_destroy(s);
	return NULL;
}

/*
 * A compilation (its calibration runs on the engine's pool) while another
 * model's session runs on the same pool: neither disturbs the other
 * (under ThreadSanitizer: no race on the shared workers).
 */
static void test_compiling_while_another_model_runs(void **state)
{
	static struct spinner sp;
	struct npu_model_options mo;
	struct npu_model *m2;
	struct npu_session *s2;
	struct npu_host_tensor in;
	pthread_t t;
	size_t size;
	void *buf = cnn_model(&size);

	(void)state;
	load("cpu");
	atomic_init(&sp.stop, false);
	atomic_init(&sp.runs, 0);
	atomic_init(&sp.failures, 0);
	assert_int_equal(pthread_create(&t, NULL, spin_runs, &sp), 0);
	/* The other model is running before the compilation starts. */
	while (atomic_load(&sp.runs) == 0 && !atomic_load(&sp.failures))
		sched_yield();
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.calib_samples = 8;
	assert_int_equal(npu_model_load_memory(engine, buf, size, "cnn-sim.onnx", &mo, &m2),
			 NPU_OK);
	assert_int_equal(npu_session_create(m2, NULL, &s2), NPU_OK);
	in = host(1, inputs[1]);
	if (npu_session_run(s2, &in, 1) != NPU_OK)
		fail_msg("%s", npu_last_error());
	atomic_store(&sp.stop, true);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&sp.failures), 0);
	assert_true(atomic_load(&sp.runs) > 0);
	npu_session_destroy(s2);
	npu_model_destroy(m2);
	free(buf);
	unload();
}

/* An application's own device serves the models that name it. */
static void test_attached_device_is_used_and_kept(void **state)
{
	struct npu_device_options dopts;
	struct npu_device *mine, *got = NULL;
	struct npu_model_options mo;
	struct npu_engine *e;
	struct npu_model *m;
	struct npu_session *s;
	struct npu_host_tensor in;
	char msg[256];
	size_t size;
	void *buf = cnn_model(&size);
	float *x = input_for(0, 5);

	(void)state;
	npu_device_options_init(&dopts);
	dopts.backend = NPU_BACKEND_SIM;
	dopts.flags = NPU_DEVICE_NO_ENV;
	assert_int_equal(npu_device_open(&dopts, &mine, msg, sizeof(msg)), NPU_OK);
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	assert_int_equal(npu_engine_attach_device(e, "sim", mine), NPU_OK);
	assert_int_equal(npu_engine_attach_device(e, "sim", mine), NPU_ERR_BUSY);
	assert_int_equal(npu_engine_attach_device(e, "gpu", mine), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "'gpu'"));
	assert_int_equal(npu_engine_get_device(e, "sim", &got), NPU_OK);
	assert_ptr_equal(got, mine);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	assert_int_equal(npu_model_load_memory(e, buf, size, "cnn.onnx", &mo, &m), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	in = host(0, x);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_OK);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	/* The application still owns its device after the engine is gone. */
	npu_device_close(mine);
	free(buf);
	free(x);
}

/*
 * Per-op accounting on the NPU: every lowered op reports the DRAM bytes
 * its DMA moves, at least its int8 input and output tensors, and the ops
 * add up to their segment. conv1 -> conv2 may run fused (codegen_fusion.c,
 * cross-layer fusion): then c1 stays in SRAM, conv1 reports the pair's
 * bytes and conv2 none.
 */
static void test_npu_ops_report_the_dram_bytes_they_move(void **state)
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	struct npu_session *s;
	struct npu_host_tensor in, y;
	uint64_t ops_bytes = 0, seg_bytes = 0;
	size_t size, i, nops;
	void *buf = cnn_model(&size);
	float *x = input_for(0, 7);
	int seen_conv = 0;

	(void)state;
	npu_engine_options_init(&eo);
	eo.threads = 1;
	assert_int_equal(npu_engine_create(&eo, &engine), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	mo.profile = 1;
	mo.keep_small_segments = 1;	/* a model this small would stay on the CPU */
	if (npu_model_load_memory(engine, buf, size, "cnn.onnx", &mo, &model) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(model, NULL, &s), NPU_OK);
	in = host(0, x);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
	nops = npu_session_npu_num_ops(s);
	assert_true(nops >= 2);
	for (i = 0; i < nops; i++) {
		struct npu_op_stats os = { .struct_size = sizeof(os) };

		assert_int_equal(npu_session_npu_op(s, i, &os), NPU_OK);
		if (os.fused) {
			assert_int_equal(os.dram_bytes, 0);
			continue;
		}
		assert_true(os.dram_bytes > 0);
		if (!strcmp(os.kind, "conv") && !strcmp(os.node, "conv1")) {
			struct npu_op_stats next = { .struct_size = sizeof(next) };

			if (i + 1 < nops)
				assert_int_equal(npu_session_npu_op(s, i + 1, &next), NPU_OK);
			if (next.fused)	/* x in, c2 (1x4x8x8) out, 8x4 + 4x8 weights */
				assert_true(os.dram_bytes >= 4 * 64 + 4 * 64 + 64);
			else		/* x: 1x4x8x8 int8 in, 1x8x8x8 int8 out, 8x4 weights */
				assert_true(os.dram_bytes >= 4 * 64 + 8 * 64 + 32);
			seen_conv = 1;
		}
		ops_bytes += os.dram_bytes;
	}
	assert_true(seen_conv);
	for (i = 0;; i++) {
		struct npu_segment_stats ss = { .struct_size = sizeof(ss) };

		if (npu_session_npu_segment(s, i, &ss) != NPU_OK)
			break;
		seg_bytes += ss.dram_bytes;
	}
	assert_true(i >= 1);
	assert_true(seg_bytes == ops_bytes);
	npu_session_destroy(s);
	npu_model_destroy(model);
	npu_engine_destroy(engine);
	model = NULL;
	engine = NULL;
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_share_one_model_on_cpu),
		cmocka_unit_test(test_threads_share_one_model_on_sim),
		cmocka_unit_test(test_cached_plans_do_not_import_compile_or_recalibrate),
		cmocka_unit_test(test_batch_of_two_equals_two_single_runs),
		cmocka_unit_test(test_plan_cache_is_bounded),
		cmocka_unit_test(test_misuse_is_an_error),
		cmocka_unit_test(test_session_in_use_is_busy),
		cmocka_unit_test(test_attached_device_is_used_and_kept),
		cmocka_unit_test(test_misaligned_input_data_gives_the_same_output),
		cmocka_unit_test(test_compiling_while_another_model_runs),
		cmocka_unit_test(test_npu_ops_report_the_dram_bytes_they_move),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
