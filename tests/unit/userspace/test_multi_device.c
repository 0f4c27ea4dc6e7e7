// SPDX-License-Identifier: MIT
/*
 * A model on several NPUs (issue 33): device specs ("sim:N", "sim#K",
 * "accel:K", "accel:*", lists) and their errors; a model on "sim:3" whose
 * runs go to the device with the least modeled work outstanding, with
 * outputs bit-identical to one device's on every device; per-device
 * counters; sessions limited to devices by mask; device inputs pinning a
 * run to their device; pipeline mode (a chain the compiler cuts into one
 * stage per device, and two segments around a CPU op), bit-identical
 * too, with runs at once from several sessions.
 *
 *	x[1,4,8,8] -> Conv 1x1 (8) -> Relu -> test.Gate -> Conv 1x1 (4) -> z
 *
 * test.Gate is a custom op (identity) that can hold a run in flight until
 * the test lets it go: the run's device is then busy, which is what makes
 * the dispatch observable without timing.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "npu/npu.h"
#include "onnx_builder.h"

#define C_IN 4
#define C_MID 8
#define HW 8
#define N_X (C_IN * HW * HW)
#define DOMAIN "test.multi"

static float w1[C_MID * C_IN], w2[C_IN * C_MID];
static int64_t w1_dims[] = { C_MID, C_IN, 1, 1 }, w2_dims[] = { C_IN, C_MID, 1, 1 };

#define assert_contains(s, sub)                                                    \
	do {                                                                       \
		if (!strstr((s), (sub)))                                           \
			fail_msg("'%s' does not contain '%s'", (s), (sub));        \
	} while (0)

/* ---- The gate: identity, optionally held until released ---------------- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_closed;	/* the next run through waits */
static int gate_waiting;	/* runs held */

static npu_status gate_infer(void *user, struct npu_infer_context *ctx)
{
	struct npu_tensor_info x;

	(void)user;
	if (npu_infer_input(ctx, 0, &x) != NPU_OK)
		return NPU_ERR_INVALID_ARG;
	return npu_infer_set_output(ctx, 0, x.dtype, x.rank, x.dims);
}

static npu_status gate_compute(void *user, void *state, struct npu_kernel_context *ctx)
{
	struct npu_host_tensor x;
	void *y;
	npu_status st;

	(void)user;
	(void)state;
	pthread_mutex_lock(&gate_lock);
	if (gate_closed) {
		gate_waiting++;
		pthread_cond_broadcast(&gate_cond);
		while (gate_closed)
			pthread_cond_wait(&gate_cond, &gate_lock);
		gate_waiting--;
	}
	pthread_mutex_unlock(&gate_lock);
	st = npu_kernel_input(ctx, 0, &x);
	if (!st)
		st = npu_kernel_output(ctx, 0, x.dtype, x.rank, x.dims, &y);
	if (!st)
		memcpy(y, x.data, x.nbytes);
	return st;
}

static void gate_close(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_closed = true;
	pthread_mutex_unlock(&gate_lock);
}

/* Wait (bounded: 60 s) until 'n' runs are held. */
static void gate_wait_held(int n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 60;
	pthread_mutex_lock(&gate_lock);
	while (gate_waiting < n)
		if (pthread_cond_timedwait(&gate_cond, &gate_lock, &ts)) {
			pthread_mutex_unlock(&gate_lock);
			fail_msg("no run reached the gate in 60 s");
		}
	pthread_mutex_unlock(&gate_lock);
}

static void gate_open(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_closed = false;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

/* ---- Model, engine, runs -------------------------------------------------- */

static char *gate_outs[1] = { "g" };

static void *model(size_t *size)
{
	static const int64_t xd[] = { 1, C_IN, HW, HW };
	static struct tb_model m;
	Onnx__NodeProto *n;
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < C_MID * C_IN; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 6.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	tb_init(&m, 13);
	onnx__operator_set_id_proto__init(&m.opset[1]);
	m.opset[1].domain = DOMAIN;
	m.opset[1].has_version = 1;
	m.opset[1].version = 1;
	m.opset_ptr[1] = &m.opset[1];
	m.model.n_opset_import = 2;
	tb_input(&m, "x", 4, xd);
	tb_output(&m, "z", 4, xd);
	t = tb_init_tensor(&m, "w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w1_dims);
	t->n_float_data = C_MID * C_IN;
	t->float_data = w1;
	t = tb_init_tensor(&m, "w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, w2_dims);
	t->n_float_data = C_IN * C_MID;
	t->float_data = w2;
	tb_node(&m, "Conv", "conv1", "c1", 2, "x", "w1");
	tb_node(&m, "Relu", "r1", "r", 1, "c1", NULL);
	n = tb_node(&m, "Gate", "gate", "g", 1, "r", NULL);
	n->domain = DOMAIN;
	n->output = gate_outs;
	tb_node(&m, "Conv", "conv2", "z", 2, "g", "w2");
	return tb_pack(&m, size);
}

static struct npu_engine *engine_new(void)
{
	struct npu_engine_options eo;
	struct npu_custom_op op;
	struct npu_engine *e;

	npu_engine_options_init(&eo);
	eo.threads = 1;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	npu_custom_op_init(&op);
	op.domain = DOMAIN;
	op.op_type = "Gate";
	op.since_version = 1;
	op.min_inputs = op.max_inputs = 1;
	op.min_outputs = op.max_outputs = 1;
	op.infer = gate_infer;
	op.compute = gate_compute;
	if (npu_engine_register_custom_op(e, &op) != NPU_OK)
		fail_msg("register: %s", npu_last_error());
	return e;
}

static npu_status load(struct npu_engine *e, const char *device, struct npu_model **m)
{
	struct npu_model_options mo;
	size_t size;
	void *buf = model(&size);
	npu_status st;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;
	mo.keep_small_segments = 1;
	st = npu_model_load_memory(e, buf, size, "multi-device-test.onnx", &mo, m);
	free(buf);
	return st;
}

static void input(float *x, int seed)
{
	size_t i;

	for (i = 0; i < N_X; i++)
		x[i] = (float)(((i + (size_t)seed * 131) * 2654435761u) % 1000) / 500.0f - 1.0f;
}

static struct npu_host_tensor host_x(float *x)
{
	return (struct npu_host_tensor){ .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
					 .dims = { 1, C_IN, HW, HW }, .data = x,
					 .nbytes = N_X * sizeof(float) };
}

/* One run of input 'seed'; z copied out. */
static void run_one(struct npu_session *s, int seed, float *z)
{
	float x[N_X];
	struct npu_host_tensor in, out;

	input(x, seed);
	in = host_x(x);
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	assert_int_equal(out.nbytes, N_X * sizeof(float));
	memcpy(z, out.data, out.nbytes);
}

static uint64_t device_runs(const struct npu_model *m, size_t k)
{
	struct npu_model_device_stats ds;

	npu_model_device_stats_init(&ds);
	assert_int_equal(npu_model_device_stats(m, k, &ds), NPU_OK);
	return ds.runs;
}

/* ---- Specs ---------------------------------------------------------------- */

static void test_specs(void **state)
{
	struct npu_device_spec_entry e[NPU_DEVICE_SET_MAX];
	char msg[256];
	size_t n = 99;
	size_t accels = npu_device_list_accel(NULL, 0);

	(void)state;
	assert_int_equal(npu_device_spec_resolve("sim", e, NPU_DEVICE_SET_MAX, &n, msg,
						 sizeof(msg)), NPU_OK);
	assert_int_equal(n, 1);
	assert_string_equal(e[0].name, "sim");
	assert_int_equal(npu_device_spec_resolve("sim:3", e, NPU_DEVICE_SET_MAX, &n, msg,
						 sizeof(msg)), NPU_OK);
	assert_int_equal(n, 3);
	assert_string_equal(e[0].name, "sim");
	assert_string_equal(e[2].name, "sim#2");
	assert_int_equal(e[2].options.backend, NPU_BACKEND_SIM);
	assert_int_equal(npu_device_spec_resolve("sim#2", e, NPU_DEVICE_SET_MAX, &n, msg,
						 sizeof(msg)), NPU_OK);
	assert_int_equal(n, 1);
	assert_string_equal(e[0].name, "sim#2");
	assert_int_equal(npu_device_spec_resolve("sim:2:threads=3", e, NPU_DEVICE_SET_MAX, &n,
						 msg, sizeof(msg)), NPU_OK);
	assert_int_equal(n, 2);
	assert_string_equal(e[1].name, "sim#1:threads=3");
	assert_int_equal(e[1].options.sim_threads, 3);
	assert_true(e[1].options.flags & NPU_DEVICE_SIM_THREADS);
	/* Only 'max' are written; count says how many there are. */
	assert_int_equal(npu_device_spec_resolve("sim:5", e, 2, &n, msg, sizeof(msg)), NPU_OK);
	assert_int_equal(n, 5);

	/* Malformed: each names what is wrong. */
	assert_int_equal(npu_device_spec_resolve("sim:0", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_contains(msg, "1..16");
	assert_int_equal(npu_device_spec_resolve("sim:17", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_device_spec_resolve("sim:2x", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_device_spec_resolve("sim:threads=0", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_contains(msg, "threads=");
	assert_int_equal(npu_device_spec_resolve("sim#16", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_device_spec_resolve("simx", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_device_spec_resolve("gpu", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_contains(msg, "'gpu' is not a device");
	assert_int_equal(npu_device_spec_resolve("accel:x", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_device_spec_resolve("accel:0,", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_contains(msg, "empty name");
	assert_int_equal(npu_device_spec_resolve("/dev/accel/accel0,/dev/accel/accel0", e, 16,
						 &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
	assert_contains(msg, "named twice");
	assert_int_equal(npu_device_spec_resolve("/dev/accel/accel0,/dev/accel/accel1", e, 16,
						 &n, msg, sizeof(msg)), NPU_OK);
	assert_int_equal(n, 2);
	assert_int_equal(e[1].options.backend, NPU_BACKEND_ACCEL);
	assert_string_equal(e[1].name, "/dev/accel/accel1");

	/* Accel devices: what this machine has. */
	assert_int_equal(npu_device_spec_resolve("accel:40", e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_NOT_FOUND);
	assert_contains(msg, "no npu accel device 40");
	if (!accels) {
		assert_int_equal(npu_device_spec_resolve("accel:*", e, 16, &n, msg, sizeof(msg)),
				 NPU_ERR_NOT_FOUND);
		assert_int_equal(npu_device_spec_resolve("accel", e, 16, &n, msg, sizeof(msg)),
				 NPU_ERR_NOT_FOUND);
	} else {
		assert_int_equal(npu_device_spec_resolve("accel:*", e, 16, &n, msg, sizeof(msg)),
				 NPU_OK);
		assert_int_equal(n, accels > 16 ? 16 : accels);
		assert_int_equal(npu_device_spec_resolve("accel,accel:0", e, 16, &n, msg,
							 sizeof(msg)), NPU_ERR_INVALID_ARG);
		assert_contains(msg, "named twice");
	}
	assert_int_equal(npu_device_spec_resolve(NULL, e, 16, &n, msg, sizeof(msg)),
			 NPU_ERR_INVALID_ARG);
}

static void test_engine_devices(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_device *devs[4], *one, *again;
	size_t n;

	(void)state;
	assert_int_equal(npu_engine_get_devices(e, "sim:3", devs, 4, &n), NPU_OK);
	assert_int_equal(n, 3);
	assert_ptr_not_equal(devs[0], devs[1]);
	assert_ptr_not_equal(devs[1], devs[2]);
	/* "sim" is the set's first, "sim#2" its third: the same devices. */
	assert_int_equal(npu_engine_get_device(e, "sim", &one), NPU_OK);
	assert_ptr_equal(one, devs[0]);
	assert_int_equal(npu_engine_get_device(e, "sim#2", &again), NPU_OK);
	assert_ptr_equal(again, devs[2]);
	/* One device asked for, a set named. */
	assert_int_equal(npu_engine_get_device(e, "sim:2", &one), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "names 2 devices");
	assert_int_equal(npu_engine_get_devices(e, "sim:3", devs, 2, &n), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_engine_get_devices(e, "cpu", devs, 4, &n), NPU_ERR_INVALID_ARG);
	npu_engine_destroy(e);
}

/* ---- A model on three devices --------------------------------------------- */

struct held_run {
	struct npu_session *s;
	int seed;
	float z[N_X];
	pthread_t thread;
};

static void *held_run_main(void *arg)
{
	struct held_run *h = arg;

	run_one(h->s, h->seed, h->z);
	return NULL;
}

static void test_data_parallel(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *one, *set;
	struct npu_session *ref, *s[3];
	struct held_run held[2];
	struct npu_model_device_stats ds;
	float want[4][N_X], got[N_X];
	size_t k;
	int seed;

	(void)state;
	assert_int_equal(load(e, "sim", &one), NPU_OK);
	assert_int_equal(npu_model_num_devices(one), 1);
	if (load(e, "sim:3", &set) != NPU_OK)
		fail_msg("load on sim:3: %s", npu_last_error());
	assert_int_equal(npu_model_num_devices(set), 3);
	assert_int_equal(npu_session_create(one, NULL, &ref), NPU_OK);
	for (seed = 0; seed < 4; seed++)
		run_one(ref, seed, want[seed]);

	/* Runs one after another stay on the first device. */
	assert_int_equal(npu_session_create(set, NULL, &s[0]), NPU_OK);
	for (seed = 0; seed < 4; seed++) {
		run_one(s[0], seed, got);
		assert_memory_equal(got, want[seed], sizeof(got));
		assert_int_equal(npu_session_last_device(s[0]), 0);
	}
	assert_int_equal(device_runs(set, 0), 4);
	assert_int_equal(device_runs(set, 1), 0);

	/* A run held in flight on device 0: the next goes to device 1, the
	 * one after to device 2, bit-identical to one device's outputs. */
	assert_int_equal(npu_session_create(set, NULL, &s[1]), NPU_OK);
	assert_int_equal(npu_session_create(set, NULL, &s[2]), NPU_OK);
	gate_close();
	held[0].s = s[0], held[0].seed = 1;
	assert_int_equal(pthread_create(&held[0].thread, NULL, held_run_main, &held[0]), 0);
	gate_wait_held(1);
	held[1].s = s[1], held[1].seed = 2;
	assert_int_equal(pthread_create(&held[1].thread, NULL, held_run_main, &held[1]), 0);
	gate_wait_held(2);
	gate_open();
	run_one(s[2], 3, got);	/* devices 0 and 1 may still be busy: either is fine */
	assert_memory_equal(got, want[3], sizeof(got));
	pthread_join(held[0].thread, NULL);
	pthread_join(held[1].thread, NULL);
	assert_memory_equal(held[0].z, want[1], sizeof(got));
	assert_memory_equal(held[1].z, want[2], sizeof(got));
	assert_int_equal(npu_session_last_device(s[0]), 0);
	assert_int_equal(npu_session_last_device(s[1]), 1);
	assert_int_equal(device_runs(set, 1), 1);

	/* Both held at once, and a third run while they are: device 2. */
	gate_close();
	held[0].s = s[0], held[0].seed = 0;
	held[1].s = s[1], held[1].seed = 1;
	assert_int_equal(pthread_create(&held[0].thread, NULL, held_run_main, &held[0]), 0);
	gate_wait_held(1);
	assert_int_equal(pthread_create(&held[1].thread, NULL, held_run_main, &held[1]), 0);
	gate_wait_held(2);
	{
		struct held_run third = { .s = s[2], .seed = 2 };

		assert_int_equal(pthread_create(&third.thread, NULL, held_run_main, &third), 0);
		gate_wait_held(3);
		npu_model_device_stats_init(&ds);
		for (k = 0; k < 3; k++) {
			assert_int_equal(npu_model_device_stats(set, k, &ds), NPU_OK);
			assert_int_equal(ds.inflight, 1);
		}
		gate_open();
		pthread_join(third.thread, NULL);
		assert_memory_equal(third.z, want[2], sizeof(got));
		assert_int_equal(npu_session_last_device(s[2]), 2);
	}
	pthread_join(held[0].thread, NULL);
	pthread_join(held[1].thread, NULL);
	assert_memory_equal(held[0].z, want[0], sizeof(got));
	assert_memory_equal(held[1].z, want[1], sizeof(got));

	/* Every device ran and modeled its NPU cycles; names are the engine's. */
	for (k = 0; k < 3; k++) {
		npu_model_device_stats_init(&ds);
		assert_int_equal(npu_model_device_stats(set, k, &ds), NPU_OK);
		assert_true(ds.runs >= 1);
		assert_true(ds.modeled_cycles > 0);
		assert_int_equal(ds.inflight, 0);
		assert_true(ds.clock_mhz > 0);
		/* Each device holds the plan's constants and a session's arena. */
		assert_true(ds.memory_peak_bytes >= ds.memory_bytes && ds.memory_bytes > 0);
	}
	assert_string_equal(ds.name, "sim#2");
	assert_int_equal(npu_model_device_stats(set, 3, &ds), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "no device 3");
	ds.struct_size = 0;
	assert_int_equal(npu_model_device_stats(set, 0, &ds), NPU_ERR_INVALID_ARG);

	for (k = 0; k < 3; k++)
		npu_session_destroy(s[k]);
	npu_session_destroy(ref);
	npu_model_destroy(set);
	npu_model_destroy(one);
	npu_engine_destroy(e);
}

static void test_device_mask(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_session_options so;
	struct npu_model *one, *set;
	struct npu_session *ref, *s;
	float want[N_X], got[N_X];

	(void)state;
	assert_int_equal(load(e, "sim", &one), NPU_OK);
	assert_int_equal(load(e, "sim:3", &set), NPU_OK);
	assert_int_equal(npu_session_create(one, NULL, &ref), NPU_OK);
	run_one(ref, 5, want);

	npu_session_options_init(&so);
	so.device_mask = 1u << 2;
	assert_int_equal(npu_session_create(set, &so, &s), NPU_OK);
	run_one(s, 5, got);
	assert_memory_equal(got, want, sizeof(got));
	assert_int_equal(npu_session_last_device(s), 2);
	assert_int_equal(device_runs(set, 2), 1);
	assert_int_equal(device_runs(set, 0), 0);
	npu_session_destroy(s);

	/* A mask naming no device of the model is an error. */
	so.device_mask = 1u << 5;
	assert_int_equal(npu_session_create(set, &so, &s), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "device_mask 0x20");
	assert_null(s);

	npu_session_destroy(ref);
	npu_model_destroy(set);
	npu_model_destroy(one);
	npu_engine_destroy(e);
}

/* Device inputs pin a run to their device; inputs on two devices fail. */
static void test_device_inputs(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *set;
	struct npu_session *s;
	struct npu_device *dev1, *dev2;
	struct npu_buffer *b1, *b2;
	struct npu_run_options ro;
	struct npu_device_tensor dt;
	float *map, x[N_X];

	(void)state;
	assert_int_equal(load(e, "sim:3", &set), NPU_OK);
	assert_int_equal(npu_engine_get_device(e, "sim#1", &dev1), NPU_OK);
	assert_int_equal(npu_engine_get_device(e, "sim#2", &dev2), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev1, N_X * sizeof(float), 0, &b1), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev2, N_X * sizeof(float), 0, &b2), NPU_OK);
	assert_int_equal(npu_buffer_map(b1, (void **)&map), NPU_OK);
	input(x, 7);
	memcpy(map, x, sizeof(x));
	assert_int_equal(npu_session_create(set, NULL, &s), NPU_OK);

	memset(&dt, 0, sizeof(dt));
	dt.name = "x";
	dt.dtype = NPU_TYPE_FLOAT;
	dt.rank = 4;
	dt.dims[0] = 1, dt.dims[1] = C_IN, dt.dims[2] = HW, dt.dims[3] = HW;
	dt.buffer = b1;
	dt.nbytes = sizeof(x);
	npu_run_options_init(&ro);
	ro.device_inputs = &dt;
	ro.num_device_inputs = 1;
	if (npu_session_run_with(s, NULL, NULL, 0, &ro) != NPU_OK)
		fail_msg("run with a device input: %s", npu_last_error());
	assert_int_equal(npu_session_last_device(s), 1);

	/* A buffer of a device outside the model's set. */
	{
		struct npu_device *other;
		struct npu_buffer *bo;

		assert_int_equal(npu_engine_get_device(e, "sim#5", &other), NPU_OK);
		assert_int_equal(npu_buffer_alloc(other, sizeof(x), 0, &bo), NPU_OK);
		dt.buffer = bo;
		assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
		assert_contains(npu_last_error(), "another device");
		npu_buffer_free(bo);
	}
	npu_session_destroy(s);
	npu_buffer_free(b1);
	npu_buffer_free(b2);
	npu_model_destroy(set);
	npu_engine_destroy(e);
}

/*
 * A simulated NPU whose watchdog ends every job after 64 cycles, attached
 * to 'e' as "sim#1": the second device of every "sim:N" set fails jobs.
 */
static struct npu_device *attach_failing_sim1(struct npu_engine *e)
{
	struct npu_device_options o;
	struct npu_device *bad;
	char msg[256];

	npu_device_options_init(&o);
	o.backend = NPU_BACKEND_SIM;
	o.sim_watchdog_cycles = 64;
	assert_int_equal(npu_device_open(&o, &bad, msg, sizeof(msg)), NPU_OK);
	assert_int_equal(npu_engine_attach_device(e, "sim#1", bad), NPU_OK);
	return bad;
}

/*
 * A device that fails jobs: a run there is run again on the other device,
 * which succeeds, so the failing one is taken out of rotation; a model on
 * it alone fails.
 */
static void test_failover(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_device *bad;
	struct npu_session_options so;
	struct npu_model *one, *set, *alone;
	struct npu_session *ref, *s;
	struct npu_model_device_stats ds;
	float want[N_X], got[N_X], x[N_X];
	struct npu_host_tensor in;

	(void)state;
	bad = attach_failing_sim1(e);
	assert_int_equal(load(e, "sim", &one), NPU_OK);
	assert_int_equal(load(e, "sim:2", &set), NPU_OK);
	assert_int_equal(npu_session_create(one, NULL, &ref), NPU_OK);
	run_one(ref, 9, want);

	/* The session prefers the failing device; its run ends on device 0. */
	npu_session_options_init(&so);
	so.device_mask = 1u << 1;
	assert_int_equal(npu_session_create(set, &so, &s), NPU_OK);
	run_one(s, 9, got);
	assert_memory_equal(got, want, sizeof(got));
	assert_int_equal(npu_session_last_device(s), 0);
	npu_model_device_stats_init(&ds);
	assert_int_equal(npu_model_device_stats(set, 1, &ds), NPU_OK);
	assert_int_equal(ds.failovers, 1);
	assert_int_equal(ds.out_of_rotation, 1);
	assert_int_equal(ds.runs, 0);
	/* Out of rotation: the next run goes to device 0 at once. */
	run_one(s, 9, got);
	assert_memory_equal(got, want, sizeof(got));
	assert_int_equal(npu_model_device_stats(set, 1, &ds), NPU_OK);
	assert_int_equal(ds.failovers, 1);
	assert_int_equal(npu_model_device_stats(set, 0, &ds), NPU_OK);
	assert_int_equal(ds.runs, 2);
	assert_int_equal(ds.out_of_rotation, 0);
	npu_session_destroy(s);

	/* On the failing device alone there is nowhere to retry. */
	assert_int_equal(load(e, "sim#1", &alone), NPU_OK);
	assert_int_equal(npu_session_create(alone, NULL, &s), NPU_OK);
	input(x, 9);
	in = host_x(x);
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_JOB_FAILED);
	npu_session_destroy(s);

	npu_session_destroy(ref);
	npu_model_destroy(alone);
	npu_model_destroy(set);
	npu_model_destroy(one);
	npu_engine_destroy(e);
	npu_device_close(bad);
}

/* A model's device spec that names nothing that exists fails its load. */
static void test_bad_model_devices(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = NULL;

	(void)state;
	assert_int_equal(load(e, "sim:0", &m), NPU_ERR_INVALID_ARG);
	assert_null(m);
	assert_contains(npu_last_error(), "1..16");
	assert_int_equal(load(e, "accel:12", &m), NPU_ERR_NOT_FOUND);
	assert_contains(npu_last_error(), "accel device 12");
	assert_int_equal(load(e, "npu0", &m), NPU_ERR_INVALID_ARG);
	npu_engine_destroy(e);
}

/* ---- Pipeline mode ----------------------------------------------------------- */

/*
 * A chain the compiler cuts into stages, with a skip across the cuts:
 *	x[1,C,H,H] -> (Conv 1x1 -> Relu) x5 -> Conv 1x1 -> + r3 -> z
 * C x H x H is 8 x 16 x 16, or 512 x 2 x 2 (1.5 MiB of int8 weights: most
 * of its device memory); both have N_CX elements.
 */
#define N_CX 2048
#define CHAIN 6
#define CH_MAX 512

static int chain_ch = 8, chain_hw = 16;
static float cw[CHAIN][CH_MAX * CH_MAX];

static void chain_dims(int64_t *d)
{
	d[0] = 1;
	d[1] = chain_ch;
	d[2] = d[3] = chain_hw;
}

static void *chain_model(size_t *size)
{
	static int64_t xd[4], cw_dims[4];
	static char names[CHAIN][3][8];
	static struct tb_model m;
	Onnx__TensorProto *t;
	const char *prev = "x";
	int i, l;

	chain_dims(xd);
	cw_dims[0] = cw_dims[1] = chain_ch;
	cw_dims[2] = cw_dims[3] = 1;
	tb_init(&m, 13);
	tb_input(&m, "x", 4, xd);
	tb_output(&m, "z", 4, xd);
	for (l = 0; l < CHAIN; l++) {
		for (i = 0; i < chain_ch * chain_ch; i++)
			cw[l][i] = (float)(((i + l * 17) * 7) % 13 - 6) / (float)(6 + l) /
				   (float)(chain_ch / 8);
		snprintf(names[l][0], 8, "w%d", l);
		snprintf(names[l][1], 8, "c%d", l);
		snprintf(names[l][2], 8, "r%d", l);
		t = tb_init_tensor(&m, names[l][0], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4,
				   cw_dims);
		t->n_float_data = (size_t)(chain_ch * chain_ch);
		t->float_data = cw[l];
		tb_node(&m, "Conv", names[l][1], names[l][1], 2, prev, names[l][0]);
		if (l == CHAIN - 1)
			break;
		tb_node(&m, "Relu", names[l][2], names[l][2], 1, names[l][1], NULL);
		prev = names[l][2];
	}
	tb_node(&m, "Add", "skip", "z", 2, names[CHAIN - 1][1], "r3");
	return tb_pack(&m, size);
}

static npu_status load_chain(struct npu_engine *e, const char *device,
			     enum npu_parallel_mode mode, struct npu_model **m)
{
	struct npu_model_options mo;
	size_t size;
	void *buf = chain_model(&size);
	npu_status st;

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;
	mo.keep_small_segments = 1;
	mo.parallel = mode;
	st = npu_model_load_memory(e, buf, size, "chain.onnx", &mo, m);
	free(buf);
	return st;
}

static void chain_run(struct npu_session *s, int seed, float *z)
{
	float x[N_CX];
	struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
				      .data = x, .nbytes = sizeof(x) };
	struct npu_host_tensor out;
	size_t i;

	chain_dims(in.dims);
	for (i = 0; i < N_CX; i++)
		x[i] = (float)(((i + (size_t)seed * 977) * 2654435761u) % 2000) / 1000.0f - 1.0f;
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	assert_int_equal(out.nbytes, N_CX * sizeof(float));
	memcpy(z, out.data, out.nbytes);
}

struct chain_worker {
	struct npu_model *m;
	float (*want)[N_CX];
	int mismatches, runs;
	pthread_t thread;
};

static void *chain_worker_main(void *arg)
{
	struct chain_worker *w = arg;
	struct npu_session *s;
	float mine[N_CX];
	int seed;

	if (npu_session_create(w->m, NULL, &s) != NPU_OK)
		return NULL;
	for (seed = 0; seed < 4; seed++) {
		chain_run(s, seed, mine);
		w->mismatches += memcmp(mine, w->want[seed], sizeof(mine)) != 0;
		w->runs++;
	}
	npu_session_destroy(s);
	return NULL;
}

static void test_pipeline(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *one, *pipe, *autom, *bad;
	struct npu_session *ref, *s;
	struct npu_parallel_info pi;
	struct npu_model_device_stats ds;
	static float want[4][N_CX], got[N_CX];
	struct chain_worker w[3];
	size_t k;
	int seed;

	(void)state;
	assert_int_equal(load_chain(e, "sim", NPU_PARALLEL_AUTO, &one), NPU_OK);
	if (load_chain(e, "sim:3", NPU_PARALLEL_PIPELINE, &pipe) != NPU_OK)
		fail_msg("load on sim:3, pipeline: %s", npu_last_error());
	assert_int_equal(npu_session_create(one, NULL, &ref), NPU_OK);
	for (seed = 0; seed < 4; seed++)
		chain_run(ref, seed, want[seed]);

	/* The compiler cut the chain: three stages, each on its device. */
	assert_int_equal(npu_session_create(pipe, NULL, &s), NPU_OK);
	for (seed = 0; seed < 4; seed++) {
		chain_run(s, seed, got);
		assert_memory_equal(got, want[seed], sizeof(got));
	}
	npu_parallel_info_init(&pi);
	assert_int_equal(npu_plan_parallel_info(npu_session_plan(s), &pi), NPU_OK);
	assert_int_equal(pi.mode, NPU_PARALLEL_PIPELINE);
	assert_int_equal(pi.devices, 3);
	assert_int_equal(pi.stages, 3);
	assert_true(pi.stage_cycles_max < pi.run_cycles);
	assert_true(pi.pipeline_speedup > 1.5);
	assert_true(pi.crossing_bytes > 0);	/* the skip and the chain cross the cuts */
	assert_true(pi.device_bytes_max < pi.model_bytes);
	assert_contains(pi.why, "pipeline (asked for): 3 stages");
	for (k = 0; k < 3; k++) {
		npu_model_device_stats_init(&ds);
		assert_int_equal(npu_model_device_stats(pipe, k, &ds), NPU_OK);
		assert_int_equal(ds.runs, 4);	/* every run passes every stage */
		assert_true(ds.modeled_cycles > 0);
		assert_int_equal(ds.inflight, 0);
	}
	assert_int_equal(npu_session_last_device(s), 0);
	npu_session_destroy(s);

	/* Runs at once from three sessions fill the pipeline, bit-identical. */
	for (k = 0; k < 3; k++) {
		w[k] = (struct chain_worker){ .m = pipe, .want = want };
		assert_int_equal(pthread_create(&w[k].thread, NULL, chain_worker_main, &w[k]), 0);
	}
	for (k = 0; k < 3; k++) {
		pthread_join(w[k].thread, NULL);
		assert_int_equal(w[k].runs, 4);
		assert_int_equal(w[k].mismatches, 0);
	}

	/* auto: the cost model keeps data parallel and says why. */
	assert_int_equal(load_chain(e, "sim:3", NPU_PARALLEL_AUTO, &autom), NPU_OK);
	assert_int_equal(npu_session_create(autom, NULL, &s), NPU_OK);
	chain_run(s, 1, got);
	assert_memory_equal(got, want[1], sizeof(got));
	npu_parallel_info_init(&pi);
	assert_int_equal(npu_plan_parallel_info(npu_session_plan(s), &pi), NPU_OK);
	assert_int_equal(pi.mode, NPU_PARALLEL_DATA);
	assert_int_equal(pi.stages, 1);
	assert_true(pi.data_speedup == 3.0);
	assert_contains(pi.why, "data parallel (auto)");
	npu_session_destroy(s);

	/* Bad mode values and arguments. */
	assert_int_equal(load_chain(e, "sim:2", (enum npu_parallel_mode)7, &bad),
			 NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "npu_model_options.parallel 7");
	assert_int_equal(npu_plan_parallel_info(NULL, &pi), NPU_ERR_INVALID_ARG);

	npu_session_destroy(ref);
	npu_model_destroy(autom);
	npu_model_destroy(pipe);
	npu_model_destroy(one);
	npu_engine_destroy(e);
}

/* The gate model's two segments (a CPU op between them) on two devices. */
static void test_pipeline_around_cpu_op(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model_options mo;
	struct npu_model *one, *pipe;
	struct npu_session *ref, *s;
	struct npu_parallel_info pi;
	float want[N_X], got[N_X];
	size_t size;
	void *buf;
	int seed;

	(void)state;
	assert_int_equal(load(e, "sim", &one), NPU_OK);
	npu_model_options_init(&mo);
	mo.device = "sim:2";
	mo.calib_random = 1;
	mo.keep_small_segments = 1;
	mo.parallel = NPU_PARALLEL_PIPELINE;
	buf = model(&size);
	assert_int_equal(npu_model_load_memory(e, buf, size, "gate.onnx", &mo, &pipe), NPU_OK);
	free(buf);
	assert_int_equal(npu_session_create(one, NULL, &ref), NPU_OK);
	assert_int_equal(npu_session_create(pipe, NULL, &s), NPU_OK);
	for (seed = 0; seed < 3; seed++) {
		run_one(ref, seed, want);
		run_one(s, seed, got);
		assert_memory_equal(got, want, sizeof(got));
	}
	npu_parallel_info_init(&pi);
	assert_int_equal(npu_plan_parallel_info(npu_session_plan(s), &pi), NPU_OK);
	assert_int_equal(pi.mode, NPU_PARALLEL_PIPELINE);
	assert_int_equal(pi.stages, 2);
	assert_int_equal(device_runs(pipe, 0), 3);
	assert_int_equal(device_runs(pipe, 1), 3);
	npu_session_destroy(s);
	npu_session_destroy(ref);
	npu_model_destroy(pipe);
	npu_model_destroy(one);
	npu_engine_destroy(e);
}

/*
 * A pipeline whose second NPU fails every job: the run falls back to one
 * device (device 0, whose other stages' constants come back), same outputs.
 */
static void test_pipeline_failover(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_device *bad;
	struct npu_model *one, *pipe;
	struct npu_session *ref, *s;
	struct npu_parallel_info pi;
	static float want[N_CX], got[N_CX];
	int seed;

	(void)state;
	bad = attach_failing_sim1(e);
	assert_int_equal(load_chain(e, "sim", NPU_PARALLEL_AUTO, &one), NPU_OK);
	assert_int_equal(load_chain(e, "sim:2", NPU_PARALLEL_PIPELINE, &pipe), NPU_OK);
	assert_int_equal(npu_session_create(one, NULL, &ref), NPU_OK);
	assert_int_equal(npu_session_create(pipe, NULL, &s), NPU_OK);
	for (seed = 0; seed < 2; seed++) {
		chain_run(ref, seed, want);
		chain_run(s, seed, got);
		assert_memory_equal(got, want, sizeof(got));
		assert_int_equal(npu_session_last_device(s), 0);
	}
	npu_parallel_info_init(&pi);
	assert_int_equal(npu_plan_parallel_info(npu_session_plan(s), &pi), NPU_OK);
	assert_int_equal(pi.stages, 2);
	assert_true(device_runs(pipe, 0) >= 2);
	npu_session_destroy(s);
	npu_session_destroy(ref);
	npu_model_destroy(pipe);
	npu_model_destroy(one);
	npu_engine_destroy(e);
	npu_device_close(bad);
}

/*
 * auto on three NPUs too small for the whole model: the cost model cuts
 * it in pipeline stages, each NPU holding one; outputs as one large NPU's.
 */
static void test_auto_pipeline_when_the_model_does_not_fit(void **state)
{
	struct npu_engine *big = engine_new(), *small = engine_new();
	struct npu_device *devs[3];
	struct npu_device_options o;
	struct npu_model *one, *set, *m;
	struct npu_session *ref, *s;
	struct npu_parallel_info pi;
	static float want[N_CX], got[N_CX];
	uint64_t model_bytes, stage_bytes;
	char msg[256];
	size_t k;

	(void)state;
	chain_ch = 512;
	chain_hw = 2;
	assert_int_equal(load_chain(big, "sim", NPU_PARALLEL_AUTO, &one), NPU_OK);
	assert_int_equal(load_chain(big, "sim:3", NPU_PARALLEL_PIPELINE, &set), NPU_OK);
	assert_int_equal(npu_session_create(one, NULL, &ref), NPU_OK);
	assert_int_equal(npu_session_create(set, NULL, &s), NPU_OK);
	chain_run(ref, 3, want);
	chain_run(s, 3, got);
	assert_memory_equal(got, want, sizeof(got));
	npu_parallel_info_init(&pi);
	assert_int_equal(npu_plan_parallel_info(npu_session_plan(s), &pi), NPU_OK);
	model_bytes = pi.model_bytes;
	stage_bytes = pi.device_bytes_max;
	npu_session_destroy(s);
	assert_true(stage_bytes < model_bytes / 2);

	/* Three NPUs with memory for a stage, not for the model. */
	for (k = 0; k < 3; k++) {
		npu_device_options_init(&o);
		o.backend = NPU_BACKEND_SIM;
		o.sim_memory_bytes = (model_bytes + stage_bytes) / 2 + (64 << 10);
		if (npu_device_open(&o, &devs[k], msg, sizeof(msg)) != NPU_OK)
			fail_msg("a sim of %llu bytes: %s", (unsigned long long)o.sim_memory_bytes, msg);
		assert_int_equal(npu_engine_attach_device(small, k ? (k == 1 ? "sim#1" : "sim#2") : "sim",
							  devs[k]), NPU_OK);
	}
	if (load_chain(small, "sim:3", NPU_PARALLEL_AUTO, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	chain_run(s, 3, got);
	assert_memory_equal(got, want, sizeof(got));
	npu_parallel_info_init(&pi);
	assert_int_equal(npu_plan_parallel_info(npu_session_plan(s), &pi), NPU_OK);
	assert_int_equal(pi.mode, NPU_PARALLEL_PIPELINE);
	assert_true(pi.stages >= 2);
	assert_contains(pi.why, "pipeline (auto: the model does not fit one device)");
	for (k = 0; k < pi.stages; k++)
		assert_true(device_runs(m, k) == 1);
	npu_session_destroy(s);
	npu_model_destroy(m);

	/* Asked for data parallel, the same model does not load there. */
	assert_int_equal(load_chain(small, "sim:3", NPU_PARALLEL_DATA, &m), NPU_OK);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	{
		float x[N_CX] = { 0 };
		struct npu_host_tensor in = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
					      .data = x, .nbytes = sizeof(x) };

		chain_dims(in.dims);
		assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_NO_MEMORY);
		assert_contains(npu_last_error(), "constants of NPU segment");
	}
	npu_session_destroy(s);
	npu_model_destroy(m);

	npu_session_destroy(ref);
	npu_model_destroy(set);
	npu_model_destroy(one);
	npu_engine_destroy(small);
	npu_engine_destroy(big);
	for (k = 0; k < 3; k++)
		npu_device_close(devs[k]);
	chain_ch = 8;
	chain_hw = 16;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_specs),
		cmocka_unit_test(test_engine_devices),
		cmocka_unit_test(test_data_parallel),
		cmocka_unit_test(test_device_mask),
		cmocka_unit_test(test_device_inputs),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_bad_model_devices),
		cmocka_unit_test(test_pipeline),
		cmocka_unit_test(test_pipeline_around_cpu_op),
		cmocka_unit_test(test_pipeline_failover),
		cmocka_unit_test(test_auto_pipeline_when_the_model_does_not_fit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
