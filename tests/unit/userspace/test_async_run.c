// SPDX-License-Identifier: MIT
/*
 * Async runs, cancellation and model metadata (issue 31) through the
 * public API: npu_session_run_async() from 8 threads, each output checked
 * against a sync run of the same input; a Loop of 1e9 iterations cancelled
 * from another thread once it is inside, and the session running normally
 * afterwards; a cancel triggered before the run; a busy session; a session,
 * model and engine destroyed with a run in flight; and the ModelProto's
 * metadata with and without metadata_props, bad ones, and from a .npub.
 * Runs in the tsan suite too (suite 'engine'). Nothing is timed: every
 * wait is on a condition, bounded generously, and the bound fails the test.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"
#include "runtime/npu_runtime.h"	/* struct npu_cancel: its poll count */

#define THREADS 8
#define RUNS 4
/* Seconds any wait may take before the test fails: far beyond a run here. */
#define BOUND_S 300

enum { FLOAT = 1, INT64 = 7, BOOL = 9 };

/* ---- Models ---------------------------------------------------------------------- */

static float w1[8 * 4], b1[8], w2[4 * 8];
static int64_t w1_dims[] = { 8, 4, 1, 1 }, b1_dims[] = { 8 }, w2_dims[] = { 4, 8, 1, 1 };
static const int64_t x_dims[] = { 1, 4, 8, 8 };
#define X_NUMEL (4 * 8 * 8)

/* x[1,4,8,8] -> Conv 1x1 (8) -> Relu -> Conv 1x1 (4) -> Add x -> Sigmoid. */
static void cnn_build(struct tb_model *m)
{
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < 32; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 8.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	for (i = 0; i < 8; i++)
		b1[i] = (float)(i - 4) / 16.0f;
	tb_init(m, 13);
	tb_input(m, "x", 4, x_dims);
	tb_output(m, "y", 4, x_dims);
	t = tb_init_tensor(m, "w1", FLOAT, 4, w1_dims);
	t->n_float_data = 32;
	t->float_data = w1;
	t = tb_init_tensor(m, "b1", FLOAT, 1, b1_dims);
	t->n_float_data = 8;
	t->float_data = b1;
	t = tb_init_tensor(m, "w2", FLOAT, 4, w2_dims);
	t->n_float_data = 32;
	t->float_data = w2;
	tb_node(m, "Conv", "conv1", "c1", 3, "x", "w1")->input[2] = "b1";
	tb_node(m, "Relu", "relu", "r", 1, "c1", NULL);
	tb_node(m, "Conv", "conv2", "c2", 2, "r", "w2");
	tb_node(m, "Add", "add", "s", 2, "c2", "x");
	tb_node(m, "Sigmoid", "sig", "y", 1, "s", NULL);
}

static void *cnn_model(size_t *size)
{
	static struct tb_model m;

	cnn_build(&m);
	return tb_pack(&m, size);
}

static void fill_input(float *x, unsigned seed)
{
	size_t i;

	for (i = 0; i < X_NUMEL; i++)
		x[i] = (float)((i * 2654435761u + seed * 40503u) % 1000) / 500.0f - 1.0f;
}

static struct npu_host_tensor x_tensor(float *x)
{
	struct npu_host_tensor t = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
				     .data = x, .nbytes = X_NUMEL * sizeof(float) };

	memcpy(t.dims, x_dims, sizeof(x_dims));
	return t;
}

/*
 * acc = Loop(M, true, x) with body acc' = acc + 1: M (an input) bounds it,
 * so one model runs both 1e9 iterations (cancelled) and a few.
 */
static struct tb_model loop_top, loop_body;
static int64_t scalar_dims[1];
static int32_t true_value[1] = { 1 };
static float one_value[1] = { 1.0f };
static int64_t one_dims[] = { 1 };

static void untyped(struct tb_model *m, const char *name, bool input)
{
	Onnx__ValueInfoProto *vi = &m->vi[m->n_vi++];

	onnx__value_info_proto__init(vi);
	vi->name = (char *)name;
	if (input)
		m->in_ptr[m->graph.n_input++] = vi;
	else
		m->out_ptr[m->graph.n_output++] = vi;
}

static void *loop_model(size_t *size)
{
	static Onnx__AttributeProto attr, *attr_ptr[1];
	static const int64_t d1[] = { 1 };
	Onnx__TensorProto *t;
	Onnx__NodeProto *loop;

	tb_init(&loop_top, 13);
	tb_input(&loop_top, "M", 0, NULL);
	loop_top.ttypes[loop_top.n_vi - 1].elem_type = INT64;
	tb_input(&loop_top, "x", 1, d1);
	tb_output(&loop_top, "acc", 1, d1);
	t = tb_init_tensor(&loop_top, "cond", BOOL, 0, scalar_dims);
	t->n_int32_data = 1;
	t->int32_data = true_value;
	loop = tb_node(&loop_top, "Loop", "loop", "acc", 3, "M", "cond");
	loop->input[2] = "x";

	tb_init(&loop_body, 13);
	untyped(&loop_body, "iter", true);
	untyped(&loop_body, "cond_in", true);
	untyped(&loop_body, "acc_in", true);
	untyped(&loop_body, "cond_out", false);
	untyped(&loop_body, "acc_out", false);
	t = tb_init_tensor(&loop_body, "one", FLOAT, 1, one_dims);
	t->n_float_data = 1;
	t->float_data = one_value;
	tb_node(&loop_body, "Identity", "keep_going", "cond_out", 1, "cond_in", NULL);
	tb_node(&loop_body, "Add", "inc", "acc_out", 2, "acc_in", "one");

	onnx__attribute_proto__init(&attr);
	attr.name = "body";
	attr.has_type = 1;
	attr.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	attr.g = &loop_body.graph;
	attr_ptr[0] = &attr;
	loop->attribute = attr_ptr;
	loop->n_attribute = 1;
	return tb_pack(&loop_top, size);
}

/* The Loop model's inputs: trip count *trip, x = *x. */
static void loop_inputs(struct npu_host_tensor in[2], int64_t *trip, float *x)
{
	memset(in, 0, 2 * sizeof(*in));
	in[0] = (struct npu_host_tensor){ .name = "M", .dtype = NPU_TYPE_INT64, .rank = 0,
					  .data = trip, .nbytes = sizeof(*trip) };
	in[1] = (struct npu_host_tensor){ .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 1,
					  .dims = { 1 }, .data = x, .nbytes = sizeof(*x) };
}

/* ---- Completion: a flag and a condition variable, waited on with a bound ---------- */

struct done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int calls;
	npu_status status;
	char msg[512];
	pthread_t thread;		/* the one that ran the callback */
	struct npu_session *session;
	/* Checked inside the callback: */
	npu_status rerun, wait;
	bool destroy_in_callback;
	float acc;			/* the Loop model's output, read in the callback */
};

static void done_init(struct done *d)
{
	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
}

static void done_fini(struct done *d)
{
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
}

static void on_done(npu_status st, struct npu_session *s, void *arg)
{
	struct done *d = arg;
	struct npu_host_tensor out;
	int64_t trip = 1;
	float x = 0;
	struct npu_host_tensor in[2];

	snprintf(d->msg, sizeof(d->msg), "%s", npu_last_error());
	if (st == NPU_OK && npu_session_output(s, 0, &out) == NPU_OK && out.nbytes == sizeof(float))
		d->acc = *(const float *)out.data;
	loop_inputs(in, &trip, &x);
	/* The session is still running its run: neither a new one nor a wait. */
	d->rerun = npu_session_run(s, in, 2);
	d->wait = npu_session_wait(s);
	if (d->destroy_in_callback)
		npu_session_destroy(s);
	pthread_mutex_lock(&d->lock);
	d->status = st;
	d->session = s;
	d->thread = pthread_self();
	d->calls++;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* Wait until the callback ran 'calls' times; the bound fails the test. */
static void done_wait(struct done *d, int calls)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += BOUND_S;
	pthread_mutex_lock(&d->lock);
	while (d->calls < calls)
		if (pthread_cond_timedwait(&d->cond, &d->lock, &until)) {
			pthread_mutex_unlock(&d->lock);
			fail_msg("no completion callback within %d s", BOUND_S);
		}
	pthread_mutex_unlock(&d->lock);
}

/* Wait until a run borrowing c has polled it more than 'n' times: it is inside. */
static void wait_polls(const struct npu_cancel *c, uint64_t n)
{
	time_t until = time(NULL) + BOUND_S;

	while (atomic_load(&c->polls) <= n) {
		if (time(NULL) > until)
			fail_msg("the run never reached %llu checks of its cancel object",
				 (unsigned long long)n);
		sched_yield();
	}
}

static struct npu_engine *new_engine(int threads)
{
	struct npu_engine_options eo;
	struct npu_engine *e = NULL;

	npu_engine_options_init(&eo);
	eo.threads = threads;
	eo.async_threads = 3;
	if (npu_engine_create(&eo, &e) != NPU_OK)
		fail_msg("engine: %s", npu_last_error());
	return e;
}

static struct npu_model *load_model(struct npu_engine *e, void *buf, size_t size,
				    const char *name)
{
	struct npu_model *m = NULL;

	if (npu_model_load_memory(e, buf, size, name, NULL, &m) != NPU_OK)
		fail_msg("load %s: %s", name, npu_last_error());
	return m;
}

/* ---- 8 threads, each its own session, async runs checked against sync ones ------- */

struct worker_arg {
	struct npu_model *model;
	int index;
	atomic_int *matched;
	char error[256];
};

struct check {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	const float *expect;
	int matched, status;
	pthread_t thread;
};

static void on_check(npu_status st, struct npu_session *s, void *arg)
{
	struct check *c = arg;
	struct npu_host_tensor out;
	int same = 0;

	if (st == NPU_OK && npu_session_output(s, 0, &out) == NPU_OK &&
	    out.nbytes == X_NUMEL * sizeof(float))
		same = !memcmp(out.data, c->expect, out.nbytes);
	pthread_mutex_lock(&c->lock);
	c->status = st;
	c->matched = same;
	c->thread = pthread_self();
	c->finished = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void *submitter(void *p)
{
	struct worker_arg *a = p;
	struct npu_session *s = NULL;
	float x[X_NUMEL], expect[X_NUMEL];
	struct npu_host_tensor in, out;
	struct check c;
	int r;

	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	if (npu_session_create(a->model, NULL, &s) != NPU_OK) {
		snprintf(a->error, sizeof(a->error), "session: %s", npu_last_error());
		goto out;
	}
	for (r = 0; r < RUNS; r++) {
		struct timespec until;

		fill_input(x, (unsigned)(a->index * RUNS + r));
		in = x_tensor(x);
		if (npu_session_run(s, &in, 1) != NPU_OK || npu_session_output(s, 0, &out) != NPU_OK) {
			snprintf(a->error, sizeof(a->error), "sync run: %s", npu_last_error());
			goto out;
		}
		memcpy(expect, out.data, sizeof(expect));
		c.expect = expect;
		c.finished = false;
		if (npu_session_run_async(s, NULL, &in, 1, NULL, on_check, &c) != NPU_OK) {
			snprintf(a->error, sizeof(a->error), "run_async: %s", npu_last_error());
			goto out;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += BOUND_S;
		pthread_mutex_lock(&c.lock);
		while (!c.finished)
			if (pthread_cond_timedwait(&c.cond, &c.lock, &until))
				break;
		pthread_mutex_unlock(&c.lock);
		if (!c.finished || c.status != NPU_OK || !c.matched ||
		    pthread_equal(c.thread, pthread_self())) {
			snprintf(a->error, sizeof(a->error),
				 "async run %d: %s, status %d, %s", r,
				 c.finished ? "ended" : "never ended", c.status,
				 c.matched ? "same output" : "different output");
			npu_session_wait(s);
			goto out;
		}
		atomic_fetch_add(a->matched, 1);
		/* The callback returned before the run counts as ended. */
		npu_session_wait(s);
	}
out:
	npu_session_destroy(s);
	pthread_mutex_destroy(&c.lock);
	pthread_cond_destroy(&c.cond);
	return NULL;
}

static void test_async_runs_from_8_threads_match_sync_runs(void **state)
{
	struct npu_engine *e = new_engine(2);
	pthread_t th[THREADS];
	struct worker_arg args[THREADS];
	atomic_int matched = 0;
	size_t size;
	void *buf = cnn_model(&size);
	struct npu_model *m = load_model(e, buf, size, "cnn.onnx");
	int i;

	(void)state;
	for (i = 0; i < THREADS; i++) {
		args[i] = (struct worker_arg){ .model = m, .index = i, .matched = &matched };
		assert_int_equal(pthread_create(&th[i], NULL, submitter, &args[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < THREADS; i++)
		if (args[i].error[0])
			fail_msg("thread %d: %s", i, args[i].error);
	assert_int_equal(atomic_load(&matched), THREADS * RUNS);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(buf);
}

/* ---- Cancellation ------------------------------------------------------------------ */

static void test_long_loop_cancelled_from_another_thread(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_run_options ro;
	struct npu_host_tensor in[2], out;
	struct npu_cancel *c = NULL;
	struct npu_session *s = NULL;
	struct done d;
	int64_t trip = 1000000000;
	float x = 2.0f;
	size_t size;
	void *buf = loop_model(&size);
	struct npu_model *m = load_model(e, buf, size, "loop.onnx");

	(void)state;
	done_init(&d);
	assert_int_equal(npu_cancel_create(&c), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	npu_run_options_init(&ro);
	ro.cancel = c;
	loop_inputs(in, &trip, &x);
	if (npu_session_run_async(s, NULL, in, 2, &ro, on_done, &d) != NPU_OK)
		fail_msg("run_async: %s", npu_last_error());
	/* Inside the Loop: hundreds of iterations ran (two nodes each). */
	wait_polls(c, 1000);
	assert_int_equal(d.calls, 0);
	/* A busy session: no other run, sync or async, until this one ended. */
	assert_int_equal(npu_session_run(s, in, 2), NPU_ERR_BUSY);
	assert_non_null(strstr(npu_last_error(), "by an async run not yet ended"));
	assert_int_equal(npu_session_run_with(s, NULL, in, 2, NULL), NPU_ERR_BUSY);
	assert_int_equal(npu_session_run_async(s, NULL, in, 2, NULL, on_done, &d), NPU_ERR_BUSY);
	npu_cancel_trigger(c);
	assert_int_equal(npu_cancel_is_triggered(c), 1);
	done_wait(&d, 1);
	assert_int_equal(npu_session_wait(s), NPU_OK);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.status, NPU_ERR_CANCELLED);
	assert_true(!pthread_equal(d.thread, pthread_self()));
	assert_ptr_equal(d.session, s);
	print_message("cancelled: %s\n", d.msg);
	if (!strstr(d.msg, "run cancelled (npu_cancel_trigger) before ") ||
	    !strstr(d.msg, "node 'loop' (Loop)"))
		fail_msg("message: %s", d.msg);
	assert_int_equal(d.rerun, NPU_ERR_BUSY);
	assert_int_equal(d.wait, NPU_ERR_BUSY);
	assert_string_equal(npu_status_str(NPU_ERR_CANCELLED), "cancelled");

	/* The same session and cancel object, reset: a short Loop runs to the end. */
	npu_cancel_reset(c);
	assert_int_equal(npu_cancel_is_triggered(c), 0);
	trip = 5;
	if (npu_session_run_with(s, NULL, in, 2, &ro) != NPU_OK)
		fail_msg("run after the cancel: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	assert_true(*(const float *)out.data == 7.0f);
	/* And async once more, its output read in the callback. */
	if (npu_session_run_async(s, NULL, in, 2, &ro, on_done, &d) != NPU_OK)
		fail_msg("run_async: %s", npu_last_error());
	done_wait(&d, 2);
	assert_int_equal(npu_session_wait(s), NPU_OK);
	assert_int_equal(d.status, NPU_OK);
	assert_true(d.acc == 7.0f);

	npu_session_destroy(s);
	npu_cancel_destroy(c);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	done_fini(&d);
	free(buf);
}

/* A sync run on one thread, cancelled from this one. */
struct sync_run {
	struct npu_session *s;
	struct npu_host_tensor *in;
	struct npu_run_options *ro;
	npu_status st;
	char msg[512];
};

static void *sync_runner(void *p)
{
	struct sync_run *r = p;

	r->st = npu_session_run_with(r->s, NULL, r->in, 2, r->ro);
	snprintf(r->msg, sizeof(r->msg), "%s", npu_last_error());
	return NULL;
}

static void test_sync_run_cancelled_from_another_thread(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_run_options ro;
	struct npu_host_tensor in[2];
	struct npu_cancel *c = NULL;
	struct sync_run r = { 0 };
	int64_t trip = 1000000000;
	float x = 0;
	pthread_t th;
	size_t size;
	void *buf = loop_model(&size);
	struct npu_model *m = load_model(e, buf, size, "loop.onnx");

	(void)state;
	assert_int_equal(npu_cancel_create(&c), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &r.s), NPU_OK);
	npu_run_options_init(&ro);
	ro.cancel = c;
	loop_inputs(in, &trip, &x);
	r.in = in;
	r.ro = &ro;
	assert_int_equal(pthread_create(&th, NULL, sync_runner, &r), 0);
	wait_polls(c, 1000);
	npu_cancel_trigger(c);
	pthread_join(th, NULL);
	assert_int_equal(r.st, NPU_ERR_CANCELLED);
	assert_non_null(strstr(r.msg, "run cancelled"));
	npu_session_destroy(r.s);
	npu_cancel_destroy(c);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(buf);
}

static void test_cancel_before_the_run_starts(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_run_options ro;
	struct npu_host_tensor in[2], out;
	struct npu_cancel *c = NULL;
	struct npu_session *s = NULL;
	struct npu_model_stats ms;
	struct done d;
	int64_t trip = 3;
	float x = 1.0f;
	size_t size;
	void *buf = loop_model(&size);
	struct npu_model *m = load_model(e, buf, size, "loop.onnx");

	(void)state;
	done_init(&d);
	assert_int_equal(npu_cancel_create(&c), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	npu_cancel_trigger(c);
	npu_cancel_trigger(c);	/* twice is once */
	npu_run_options_init(&ro);
	ro.cancel = c;
	loop_inputs(in, &trip, &x);
	assert_int_equal(npu_session_run_with(s, NULL, in, 2, &ro), NPU_ERR_CANCELLED);
	assert_non_null(strstr(npu_last_error(), "before it started"));
	/* Nothing ran: no node checked the flag, no plan was made, no output. */
	assert_int_equal(atomic_load(&c->polls), 0);
	npu_model_stats_init(&ms);
	assert_int_equal(npu_model_get_stats(m, &ms), NPU_OK);
	assert_int_equal(ms.plans_built, 0);
	assert_int_equal(npu_session_output(s, 0, &out), NPU_ERR_INVALID_ARG);
	/* Async: refused by the callback, exactly once. */
	assert_int_equal(npu_session_run_async(s, NULL, in, 2, &ro, on_done, &d), NPU_OK);
	assert_int_equal(npu_session_wait(s), NPU_OK);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.status, NPU_ERR_CANCELLED);
	assert_non_null(strstr(d.msg, "before it started"));
	/* Reset: the session runs. */
	npu_cancel_reset(c);
	assert_int_equal(npu_session_run_with(s, NULL, in, 2, &ro), NPU_OK);
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	assert_true(*(const float *)out.data == 4.0f);
	assert_true(atomic_load(&c->polls) > 0);
	npu_session_destroy(s);
	npu_cancel_destroy(c);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	done_fini(&d);
	free(buf);
}

/* The session, its model and the engine go while a run is in flight. */
static void test_destroy_with_a_run_in_flight(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_run_options ro, ro2;
	struct npu_host_tensor in[2];
	struct npu_cancel *c = NULL, *c2 = NULL;
	struct npu_session *s = NULL, *s2 = NULL;
	struct done d, d2;
	int64_t trip = 1000000000;
	float x = 0;
	size_t size;
	void *buf = loop_model(&size);
	struct npu_model *m = load_model(e, buf, size, "loop.onnx");

	(void)state;
	done_init(&d);
	done_init(&d2);
	assert_int_equal(npu_cancel_create(&c), NPU_OK);
	assert_int_equal(npu_cancel_create(&c2), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s2), NPU_OK);
	npu_run_options_init(&ro);
	ro.cancel = c;
	ro2 = ro;
	ro2.cancel = c2;
	loop_inputs(in, &trip, &x);
	assert_int_equal(npu_session_run_async(s, NULL, in, 2, &ro, on_done, &d), NPU_OK);
	/* s2's callback destroys s2: the last reference to the engine goes there. */
	d2.destroy_in_callback = true;
	assert_int_equal(npu_session_run_async(s2, NULL, in, 2, &ro2, on_done, &d2), NPU_OK);
	/* Both runs are inside their Loop (3 run workers). */
	wait_polls(c, 1000);
	wait_polls(c2, 1000);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	/* The model is gone for new runs, not for the ones in flight. */
	npu_cancel_trigger(c);
	npu_cancel_trigger(c2);
	/* Waits for the run (and its callback) before it frees the session. */
	npu_session_destroy(s);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.status, NPU_ERR_CANCELLED);
	done_wait(&d2, 1);
	assert_int_equal(d2.status, NPU_ERR_CANCELLED);
	npu_cancel_destroy(c);
	npu_cancel_destroy(c2);
	done_fini(&d);
	done_fini(&d2);
	free(buf);
}

static void test_async_misuse(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_engine_options eo;
	struct npu_engine *bad = NULL;
	struct npu_run_options ro;
	struct npu_host_tensor in[2];
	struct npu_session *s = NULL;
	struct done d;
	int64_t trip = 1;
	float x = 0;
	size_t size;
	void *buf = loop_model(&size);
	struct npu_model *m = load_model(e, buf, size, "loop.onnx");
	struct {
		size_t struct_size;
		int timings;
	} old = { sizeof(old), 0 };	/* npu_run_options before 'cancel' */

	(void)state;
	done_init(&d);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	loop_inputs(in, &trip, &x);
	assert_int_equal(npu_session_run_async(NULL, NULL, in, 2, NULL, on_done, &d),
			 NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_session_run_async(s, NULL, in, 2, NULL, NULL, &d),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "callback"));
	assert_int_equal(npu_session_run_async(s, NULL, NULL, 2, NULL, on_done, &d),
			 NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_session_run_async(s, NULL, in, 3, NULL, on_done, &d),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "3 inputs given"));
	npu_run_options_init(&ro);
	ro.timings = 2;
	assert_int_equal(npu_session_run_async(s, NULL, in, 2, &ro, on_done, &d),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "timings"));
	/* Refused runs never call back, and leave the session free. */
	assert_int_equal(npu_session_wait(s), NPU_OK);
	assert_int_equal(d.calls, 0);
	/* A bad input is the run's error, through the callback. */
	in[0].dtype = NPU_TYPE_FLOAT;
	assert_int_equal(npu_session_run_async(s, NULL, in, 2, NULL, on_done, &d), NPU_OK);
	assert_int_equal(npu_session_wait(s), NPU_OK);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.status, NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(d.msg, "M"));
	in[0].dtype = NPU_TYPE_INT64;
	/* An application built before 'cancel' existed. */
	assert_int_equal(npu_session_run_with(s, NULL, in, 2, (const struct npu_run_options *)&old),
			 NPU_OK);
	assert_int_equal(npu_session_wait(NULL), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_cancel_create(NULL), NPU_ERR_INVALID_ARG);
	npu_cancel_trigger(NULL);
	npu_cancel_reset(NULL);
	assert_int_equal(npu_cancel_is_triggered(NULL), 0);
	npu_cancel_destroy(NULL);
	npu_engine_options_init(&eo);
	eo.async_threads = -1;
	assert_int_equal(npu_engine_create(&eo, &bad), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "async_threads"));
	assert_null(bad);
	npu_session_destroy(s);
	/* A destroyed model runs nothing, async either. */
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	npu_model_destroy(m);
	assert_int_equal(npu_session_run_async(s, NULL, in, 2, NULL, on_done, &d),
			 NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "destroyed"));
	npu_session_destroy(s);
	npu_engine_destroy(e);
	done_fini(&d);
	free(buf);
}

/* A full queue refuses the run (NPU_ERR_BUSY) and calls nothing back. */
static void test_full_queue_refuses(void **state)
{
	struct npu_engine_options eo;
	struct npu_engine *e = NULL;
	struct npu_run_options ro;
	struct npu_host_tensor in[2];
	struct npu_cancel *c = NULL;
	struct npu_session *s[3] = { NULL };
	struct done d[3];
	int64_t trip = 1000000000;
	float x = 0;
	size_t size;
	void *buf = loop_model(&size);
	struct npu_model *m;
	int i;

	(void)state;
	npu_engine_options_init(&eo);
	eo.threads = 1;
	eo.async_threads = 1;
	eo.async_queue = 1;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	m = load_model(e, buf, size, "loop.onnx");
	assert_int_equal(npu_cancel_create(&c), NPU_OK);
	npu_run_options_init(&ro);
	ro.cancel = c;
	loop_inputs(in, &trip, &x);
	for (i = 0; i < 3; i++) {
		done_init(&d[i]);
		assert_int_equal(npu_session_create(m, NULL, &s[i]), NPU_OK);
	}
	/* One worker: the first runs, the second waits in the queue of one. */
	assert_int_equal(npu_session_run_async(s[0], NULL, in, 2, &ro, on_done, &d[0]), NPU_OK);
	wait_polls(c, 100);
	assert_int_equal(npu_session_run_async(s[1], NULL, in, 2, &ro, on_done, &d[1]), NPU_OK);
	assert_int_equal(npu_session_run_async(s[2], NULL, in, 2, &ro, on_done, &d[2]),
			 NPU_ERR_BUSY);
	assert_non_null(strstr(npu_last_error(), "async_queue"));
	/* The refused session is free again. */
	npu_cancel_trigger(c);
	for (i = 0; i < 3; i++)
		assert_int_equal(npu_session_wait(s[i]), NPU_OK);
	assert_int_equal(d[0].calls, 1);
	assert_int_equal(d[1].calls, 1);
	assert_int_equal(d[2].calls, 0);
	assert_int_equal(d[1].status, NPU_ERR_CANCELLED);
	npu_cancel_reset(c);
	trip = 2;
	assert_int_equal(npu_session_run_with(s[2], NULL, in, 2, &ro), NPU_OK);
	for (i = 0; i < 3; i++) {
		npu_session_destroy(s[i]);
		done_fini(&d[i]);
	}
	npu_cancel_destroy(c);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(buf);
}

/* ---- Model metadata ------------------------------------------------------------- */

static Onnx__StringStringEntryProto props[3], *prop_ptr[3];

static void *meta_model(size_t *size, size_t nprops, const char *key2)
{
	static struct tb_model m;
	static const char *const keys[] = { "author", "license", NULL };
	static const char *const values[] = { "npu tests", "MIT", "x" };
	size_t i;

	cnn_build(&m);
	m.model.producer_name = "onnx-builder";
	m.model.producer_version = "1.0";
	m.model.domain = "org.example.npu";
	m.model.has_model_version = 1;
	m.model.model_version = 42;
	m.model.doc_string = "A 1x1 conv pair.";
	m.graph.name = "cnn";
	m.graph.doc_string = "x -> conv -> relu -> conv -> add -> sigmoid";
	for (i = 0; i < nprops; i++) {
		onnx__string_string_entry_proto__init(&props[i]);
		props[i].key = (char *)(i == 2 ? key2 : keys[i]);
		props[i].value = (char *)values[i];
		prop_ptr[i] = &props[i];
	}
	m.model.n_metadata_props = nprops;
	m.model.metadata_props = prop_ptr;
	return tb_pack(&m, size);
}

static void check_metadata(const struct npu_model *m)
{
	struct npu_model_metadata md;
	const char *key, *value;

	npu_model_metadata_init(&md);
	assert_int_equal(npu_model_get_metadata(m, &md), NPU_OK);
	assert_string_equal(md.producer_name, "onnx-builder");
	assert_string_equal(md.producer_version, "1.0");
	assert_string_equal(md.domain, "org.example.npu");
	assert_int_equal(md.model_version, 42);
	assert_string_equal(md.doc_string, "A 1x1 conv pair.");
	assert_string_equal(md.graph_name, "cnn");
	assert_string_equal(md.graph_doc_string, "x -> conv -> relu -> conv -> add -> sigmoid");
	assert_int_equal(md.num_props, 2);
	assert_int_equal(npu_model_metadata_prop(m, 0, &key, &value), NPU_OK);
	assert_string_equal(key, "author");
	assert_string_equal(value, "npu tests");
	assert_int_equal(npu_model_metadata_prop(m, 1, &key, NULL), NPU_OK);
	assert_string_equal(key, "license");
	assert_int_equal(npu_model_metadata_prop(m, 2, &key, &value), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(npu_last_error(), "2 metadata_props entries"));
	assert_int_equal(npu_model_metadata_find(m, "license", &value), NPU_OK);
	assert_string_equal(value, "MIT");
	assert_int_equal(npu_model_metadata_find(m, "nope", &value), NPU_ERR_NOT_FOUND);
	assert_null(value);
	assert_non_null(strstr(npu_last_error(), "no metadata_props key 'nope'"));
}

static void test_model_metadata(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_model_metadata md;
	struct npu_model *m;
	const char *value;
	size_t size;
	void *buf;

	(void)state;
	buf = meta_model(&size, 2, NULL);
	m = load_model(e, buf, size, "meta.onnx");
	check_metadata(m);
	assert_int_equal(npu_model_get_metadata(NULL, &md), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_model_get_metadata(m, NULL), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_model_metadata_find(m, NULL, &value), NPU_ERR_INVALID_ARG);
	npu_model_destroy(m);
	free(buf);

	/* Without any: empty strings, version 0, no entries. */
	buf = cnn_model(&size);
	m = load_model(e, buf, size, "plain.onnx");
	npu_model_metadata_init(&md);
	assert_int_equal(npu_model_get_metadata(m, &md), NPU_OK);
	assert_string_equal(md.producer_name, "");
	assert_string_equal(md.producer_version, "");
	assert_string_equal(md.domain, "");
	assert_int_equal(md.model_version, 0);
	assert_string_equal(md.doc_string, "");
	assert_string_equal(md.graph_name, "g");	/* the builder's */
	assert_string_equal(md.graph_doc_string, "");
	assert_int_equal(md.num_props, 0);
	assert_int_equal(npu_model_metadata_find(m, "author", &value), NPU_ERR_NOT_FOUND);
	npu_model_destroy(m);
	free(buf);
	npu_engine_destroy(e);
}

static void test_bad_metadata_props_fail_the_load(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_model *m = NULL;
	size_t size;
	void *buf;

	(void)state;
	buf = meta_model(&size, 3, "author");
	assert_int_equal(npu_model_load_memory(e, buf, size, "dup.onnx", NULL, &m), NPU_ERR_MODEL);
	assert_null(m);
	assert_non_null(strstr(npu_last_error(), "dup.onnx: metadata_props key 'author' appears twice"));
	free(buf);
	buf = meta_model(&size, 3, "");
	assert_int_equal(npu_model_load_memory(e, buf, size, "nokey.onnx", NULL, &m), NPU_ERR_MODEL);
	assert_non_null(strstr(npu_last_error(), "nokey.onnx: metadata_props entry 2 has no key"));
	free(buf);
	npu_engine_destroy(e);
}

/* A .npub gives the same answers as the model it was compiled from. */
static void test_metadata_of_a_compiled_model(void **state)
{
	struct npu_engine *e = new_engine(1);
	struct npu_model_options mo;
	struct npu_model *m = NULL, *back;
	struct npu_plan *plan = NULL;
	struct npu_host_tensor shape = { .name = "x", .rank = 4 };
	char path[] = "/tmp/npu-meta-XXXXXX.npub";
	size_t size;
	void *buf;
	int fd;

	(void)state;
	memcpy(shape.dims, x_dims, sizeof(x_dims));
	buf = meta_model(&size, 2, NULL);
	npu_model_options_init(&mo);
	mo.device = "sim";
	mo.calib_random = 1;
	if (npu_model_load_memory(e, buf, size, "meta.onnx", &mo, &m) != NPU_OK)
		fail_msg("load for sim: %s", npu_last_error());
	if (npu_model_get_plan(m, &shape, 1, &plan) != NPU_OK)
		fail_msg("plan: %s", npu_last_error());
	fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	close(fd);
	if (npu_plan_save_compiled(plan, path) != NPU_OK)
		fail_msg("save: %s", npu_last_error());
	npu_plan_release(plan);
	npu_model_destroy(m);
	if (npu_model_load_file(e, path, &mo, &back) != NPU_OK)
		fail_msg("load .npub: %s", npu_last_error());
	check_metadata(back);
	npu_model_destroy(back);
	unlink(path);
	free(buf);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_async_runs_from_8_threads_match_sync_runs),
		cmocka_unit_test(test_long_loop_cancelled_from_another_thread),
		cmocka_unit_test(test_sync_run_cancelled_from_another_thread),
		cmocka_unit_test(test_cancel_before_the_run_starts),
		cmocka_unit_test(test_destroy_with_a_run_in_flight),
		cmocka_unit_test(test_async_misuse),
		cmocka_unit_test(test_full_queue_refuses),
		cmocka_unit_test(test_model_metadata),
		cmocka_unit_test(test_bad_metadata_props_fail_the_load),
		cmocka_unit_test(test_metadata_of_a_compiled_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
