// SPDX-License-Identifier: MIT
/*
 * Measured steps of a run (npu_session_run_with() with timings): every CPU
 * node and NPU segment of the run in the order it started, with host times
 * that lie inside the run and never overlap within a kind, NPU jobs with
 * their device-layer submit / completion times and modeled cycles that
 * agree with the session's NPU statistics; nothing recorded when not
 * asked; many threads timing their own runs of one model at once (the
 * TSan suite runs this); and the misuse that must give an error.
 */
#include <pthread.h>
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

#define THREADS 4
#define ITERS 6

static const int64_t dims[4] = { 1, 4, 8, 8 };
static float w1[8 * 4], b1[8], w2[4 * 8];
static int64_t w1_dims[] = { 8, 4, 1, 1 }, b1_dims[] = { 8 }, w2_dims[] = { 4, 8, 1, 1 };

/*
 * x -> Conv 1x1 (8) -> Relu -> Floor -> Conv 1x1 (4) -> Sigmoid -> y. Floor
 * is not in the NPU ISA: on "sim" the run is NPU segment, CPU node, NPU
 * segment.
 */
static void *model_bytes(size_t *size)
{
	static const int64_t dyn[] = { -1, 4, -1, -1 };
	static struct tb_model m;
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < 32; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 4.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	for (i = 0; i < 8; i++)
		b1[i] = (float)(i - 4) / 2.0f;
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
	tb_node(&m, "Floor", "floor", "f", 1, "r", NULL);
	tb_node(&m, "Conv", "conv2", "c2", 2, "f", "w2");
	tb_node(&m, "Sigmoid", "sig", "y", 1, "c2", NULL);
	return tb_pack(&m, size);
}

static float x_data[1 * 4 * 8 * 8];

static struct npu_host_tensor input(void)
{
	struct npu_host_tensor h = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 };
	size_t i;

	for (i = 0; i < sizeof(x_data) / sizeof(x_data[0]); i++)
		x_data[i] = (float)((i * 2654435761u) % 1000) / 250.0f - 2.0f;
	memcpy(h.dims, dims, sizeof(dims));
	h.data = x_data;
	h.nbytes = sizeof(x_data);
	return h;
}

static void load(const char *device, struct npu_engine **eng, struct npu_model **m)
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	size_t size;
	void *buf = model_bytes(&size);

	npu_engine_options_init(&eo);
	eo.threads = 2;
	assert_int_equal(npu_engine_create(&eo, eng), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;
	mo.keep_small_segments = 1;	/* a model this small would stay on the CPU */
	if (npu_model_load_memory(*eng, buf, size, "timed.onnx", &mo, m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
}

/* The model's nodes; the optimizer may fuse relu and sig into the convolutions. */
static const char *const node_names[] = { "conv1", "relu", "floor", "conv2", "sig" };

struct checked {
	size_t steps, npu, cpu;
	uint64_t cycles;
	int cpu_nodes_seen;	/* bit k: node_names[k] ran as a CPU step */
};

/*
 * Check the last run's steps; returns a summary. The properties hold for
 * any model: ordered by start, inside the run, no two CPU steps and no two
 * NPU steps overlapping, NPU job times inside their step.
 */
static struct checked check_steps(struct npu_session *s)
{
	struct npu_run_timing rt;
	struct checked c = { 0 };
	uint64_t prev_start = 0, cpu_end = 0, npu_end = 0, sum = 0;
	size_t i;

	npu_run_timing_init(&rt);
	if (npu_session_run_timing(s, &rt) != NPU_OK)
		fail_msg("run timing: %s", npu_last_error());
	assert_true(rt.start_ns > 0);
	assert_true(rt.total_ns > 0);
	/* The steps run inside the session's run. */
	assert_true((double)rt.total_ns <= npu_session_last_run_seconds(s) * 1e9 + 1000.0);
	assert_true(rt.steps > 0);
	c.steps = rt.steps;
	for (i = 0; i < rt.steps; i++) {
		struct npu_step_timing st;

		npu_step_timing_init(&st);
		if (npu_session_step_timing(s, i, &st) != NPU_OK)
			fail_msg("step %zu: %s", i, npu_last_error());
		assert_non_null(st.name);
		assert_non_null(st.op_type);
		assert_true(st.start_ns >= prev_start);
		assert_true(st.end_ns >= st.start_ns);
		assert_true(st.end_ns <= rt.total_ns);
		prev_start = st.start_ns;
		sum += st.end_ns - st.start_ns;
		if (st.kind == NPU_STEP_NPU) {
			assert_string_equal(st.op_type, "NpuSegment");
			assert_true(st.segment >= 0);
			assert_true(st.nodes >= 1);
			assert_non_null(st.first_node);
			assert_non_null(st.last_node);
			assert_true(st.cycles > 0);
			assert_true(st.start_ns <= st.submit_ns);
			assert_true(st.submit_ns <= st.done_ns);
			assert_true(st.done_ns <= st.end_ns);
			assert_true(st.start_ns >= npu_end);
			npu_end = st.end_ns;
			c.npu++;
			c.cycles += st.cycles;
		} else {
			assert_int_equal(st.kind, NPU_STEP_CPU);
			assert_int_equal(st.segment, -1);
			assert_int_equal(st.nodes, 1);
			assert_int_equal(st.cycles, 0);
			assert_int_equal(st.submit_ns, 0);
			assert_true(st.start_ns >= cpu_end);
			cpu_end = st.end_ns;
			c.cpu++;
			{
				int k, bit = 0;

				for (k = 0; k < 5; k++)
					if (!strcmp(st.name, node_names[k]))
						bit = 1 << k;
				if (!bit || (c.cpu_nodes_seen & bit))
					fail_msg("step %zu: node '%s' is not the model's or ran twice",
						 i, st.name);
				c.cpu_nodes_seen |= bit;
			}
		}
	}
	/* In this chain every step waits for the one before: no overlap at all. */
	assert_true(sum <= rt.total_ns);
	if (c.npu)
		assert_true(rt.clock_mhz > 0);
	return c;
}

static void run_timed(struct npu_session *s, int timings)
{
	struct npu_host_tensor in = input(), y;
	struct npu_run_options ro;

	npu_run_options_init(&ro);
	ro.timings = timings;
	if (npu_session_run_with(s, NULL, &in, 1, &ro) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &y), NPU_OK);
}

static void test_cpu_run_reports_each_node(void **state)
{
	struct npu_engine *eng;
	struct npu_model *m;
	struct npu_session *s;
	struct checked c;

	(void)state;
	load("cpu", &eng, &m);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	run_timed(s, 1);
	c = check_steps(s);
	assert_int_equal(c.npu, 0);
	/* Every node that is left runs: conv1, floor and conv2 at least. */
	assert_true(c.cpu >= 3 && c.cpu <= 5);
	assert_int_equal(c.cpu_nodes_seen & (1 | 4 | 8), 1 | 4 | 8);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(eng);
}

static void test_sim_run_reports_segments_with_cycles(void **state)
{
	struct npu_engine *eng;
	struct npu_model *m;
	struct npu_session *s;
	struct npu_npu_stats ns;
	struct checked c;
	size_t i;

	(void)state;
	load("sim", &eng, &m);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	for (i = 0; i < 3; i++) {	/* the first run makes the plan */
		run_timed(s, 1);
		c = check_steps(s);
		npu_npu_stats_init(&ns);
		assert_int_equal(npu_session_npu_stats(s, &ns), NPU_OK);
		/* Every segment is a step, and their cycles are the run's. */
		assert_int_equal(c.npu, ns.segments);
		assert_true(c.npu >= 2);
		assert_int_equal(c.cycles, ns.last_cycles);
		/* Floor stays on the host, between the segments; the convolutions don't. */
		assert_true(c.cpu >= 1);
		assert_true(c.cpu_nodes_seen & 4);
		assert_false(c.cpu_nodes_seen & (1 | 8));
	}
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(eng);
}

static void expect_no_timing(struct npu_session *s)
{
	struct npu_run_timing rt;
	struct npu_step_timing st;

	npu_run_timing_init(&rt);
	npu_step_timing_init(&st);
	assert_int_equal(npu_session_run_timing(s, &rt), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "did not measure"));
	assert_int_equal(npu_session_step_timing(s, 0, &st), NPU_ERR_INVALID_ARG);
}

static void test_untimed_runs_record_nothing(void **state)
{
	struct npu_engine *eng;
	struct npu_model *m;
	struct npu_session *s;
	struct npu_host_tensor in = input();

	(void)state;
	load("sim", &eng, &m);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	expect_no_timing(s);		/* nothing ran yet */
	assert_int_equal(npu_session_run(s, &in, 1), NPU_OK);
	expect_no_timing(s);
	run_timed(s, 1);
	check_steps(s);
	run_timed(s, 0);		/* the last run decides */
	expect_no_timing(s);
	assert_int_equal(npu_session_run_with(s, NULL, &in, 1, NULL), NPU_OK);
	expect_no_timing(s);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(eng);
}

static void test_timing_misuse_is_an_error(void **state)
{
	struct npu_engine *eng;
	struct npu_model *m;
	struct npu_session *s;
	struct npu_host_tensor in = input(), bad = in;
	struct npu_run_options ro;
	struct npu_step_timing st;
	struct npu_run_timing rt;

	(void)state;
	load("cpu", &eng, &m);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	npu_run_options_init(&ro);
	ro.timings = 2;
	assert_int_equal(npu_session_run_with(s, NULL, &in, 1, &ro), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "timings is 2"));
	memset(&ro, 0, sizeof(ro));	/* never initialised */
	assert_int_equal(npu_session_run_with(s, NULL, &in, 1, &ro), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "npu_run_options"));
	assert_int_equal(npu_session_run_with(NULL, NULL, &in, 1, NULL), NPU_ERR_INVALID_ARG);
	run_timed(s, 1);
	npu_step_timing_init(&st);
	assert_int_equal(npu_session_step_timing(s, 99, &st), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "not 100"));
	assert_int_equal(npu_session_step_timing(s, 0, NULL), NPU_ERR_INVALID_ARG);
	st.struct_size = 0;
	assert_int_equal(npu_session_step_timing(s, 0, &st), NPU_ERR_INVALID_ARG);
	npu_run_timing_init(&rt);
	assert_int_equal(npu_session_run_timing(NULL, &rt), NPU_ERR_INVALID_ARG);
	/* A failed run leaves no timings of an earlier one behind. */
	npu_run_options_init(&ro);
	ro.timings = 1;
	bad.nbytes -= 4;
	assert_int_not_equal(npu_session_run_with(s, NULL, &bad, 1, &ro), NPU_OK);
	expect_no_timing(s);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(eng);
}

struct worker {
	struct npu_model *m;
	int id, failures;
	char err[256];
};

/* Each thread its own session; odd iterations timed, even ones not. */
static void *work(void *arg)
{
	struct worker *w = arg;
	struct npu_session *s = NULL;
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4 };
	float *x = malloc(sizeof(x_data));
	int i;

	memcpy(in.dims, dims, sizeof(dims));
	in.data = x;
	in.nbytes = sizeof(x_data);
	for (i = 0; x && i < (int)(sizeof(x_data) / sizeof(float)); i++)
		x[i] = (float)((i * 7 + w->id) % 17) / 4.0f - 2.0f;
	if (!x || npu_session_create(w->m, NULL, &s) != NPU_OK) {
		w->failures++;
		goto out;
	}
	for (i = 0; i < ITERS; i++) {
		struct npu_run_options ro;
		struct npu_run_timing rt;
		struct npu_step_timing st;
		uint64_t prev = 0;
		size_t k;

		npu_run_options_init(&ro);
		ro.timings = i & 1;
		if (npu_session_run_with(s, NULL, &in, 1, &ro) != NPU_OK) {
			snprintf(w->err, sizeof(w->err), "run: %s", npu_last_error());
			w->failures++;
			continue;
		}
		npu_run_timing_init(&rt);
		if ((npu_session_run_timing(s, &rt) == NPU_OK) != (i & 1)) {
			snprintf(w->err, sizeof(w->err), "iteration %d: timings %s", i,
				 i & 1 ? "missing" : "recorded untimed");
			w->failures++;
			continue;
		}
		for (k = 0; (i & 1) && k < rt.steps; k++) {
			npu_step_timing_init(&st);
			if (npu_session_step_timing(s, k, &st) != NPU_OK || st.start_ns < prev ||
			    st.end_ns > rt.total_ns ||
			    (st.kind == NPU_STEP_NPU && (!st.cycles || st.done_ns < st.submit_ns))) {
				snprintf(w->err, sizeof(w->err), "iteration %d step %zu is wrong", i, k);
				w->failures++;
			}
			prev = st.start_ns;
		}
	}
out:
	npu_session_destroy(s);
	free(x);
	return NULL;
}

static void test_threads_time_their_own_runs(void **state)
{
	struct npu_engine *eng;
	struct npu_model *m;
	pthread_t th[THREADS];
	struct worker w[THREADS];
	int i;

	(void)state;
	load("sim", &eng, &m);
	for (i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].m = m;
		w[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < THREADS; i++)
		if (w[i].failures)
			fail_msg("thread %d: %d failures, last: %s", i, w[i].failures, w[i].err);
	npu_model_destroy(m);
	npu_engine_destroy(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_run_reports_each_node),
		cmocka_unit_test(test_sim_run_reports_segments_with_cycles),
		cmocka_unit_test(test_untimed_runs_record_nothing),
		cmocka_unit_test(test_timing_misuse_is_an_error),
		cmocka_unit_test(test_threads_time_their_own_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
