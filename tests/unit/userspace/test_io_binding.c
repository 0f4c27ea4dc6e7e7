// SPDX-License-Identifier: MIT
/*
 * IO binding (issue 31) through the public API: outputs written into
 * caller memory by their producers (a CPU node, an NPU segment's
 * dequantization on sim), outputs chosen by name with the nodes no chosen
 * output needs skipped, an input read in place from an npu_buffer of the
 * model's device, and the copy counts of npu_session_io_stats() asserted
 * for each. Bad bindings: unknown, repeated or unnamed outputs, caller
 * memory of the wrong size, type, shape or alignment, device buffers that
 * are too small, misaligned, of another device or given to a CPU-only
 * model, and a session run after its model was destroyed.
 */
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

#define C_IN 4
#define C_MID 8
#define HW 8
#define N_X (C_IN * HW * HW)

enum { FLOAT = 1, INT64 = 7 };

static float w1[C_MID * C_IN], w2[C_IN * C_MID];
static int64_t w1_dims[] = { C_MID, C_IN, 1, 1 }, w2_dims[] = { C_IN, C_MID, 1, 1 };
static const int64_t x_dims[] = { 1, C_IN, HW, HW };

/*
 * x -> Conv 1x1 (8) -> Relu -> Conv 1x1 (4) -> y   (an NPU segment on sim)
 * x -> Sin -> Cos -> z                              (CPU: no NPU form)
 * Outputs y, z.
 */
static void *model(size_t *size)
{
	static struct tb_model m;
	Onnx__TensorProto *t;
	int i;

	for (i = 0; i < C_MID * C_IN; i++) {
		w1[i] = (float)((i * 7) % 11 - 5) / 6.0f;
		w2[i] = (float)((i * 5) % 13 - 6) / 9.0f;
	}
	tb_init(&m, 13);
	tb_input(&m, "x", 4, x_dims);
	tb_output(&m, "y", 4, x_dims);
	tb_output(&m, "z", 4, x_dims);
	t = tb_init_tensor(&m, "w1", FLOAT, 4, w1_dims);
	t->n_float_data = C_MID * C_IN;
	t->float_data = w1;
	t = tb_init_tensor(&m, "w2", FLOAT, 4, w2_dims);
	t->n_float_data = C_IN * C_MID;
	t->float_data = w2;
	tb_node(&m, "Conv", "conv1", "c1", 2, "x", "w1");
	tb_node(&m, "Relu", "relu", "r", 1, "c1", NULL);
	tb_node(&m, "Conv", "conv2", "y", 2, "r", "w2");
	tb_node(&m, "Sin", "sin", "n", 1, "x", NULL);
	tb_node(&m, "Cos", "cos", "z", 1, "n", NULL);
	return tb_pack(&m, size);
}

static struct npu_engine *engine_new(void)
{
	struct npu_engine_options eo;
	struct npu_engine *e;

	npu_engine_options_init(&eo);
	eo.threads = 1;
	assert_int_equal(npu_engine_create(&eo, &e), NPU_OK);
	return e;
}

static struct npu_model *load(struct npu_engine *e, const char *device)
{
	struct npu_model_options mo;
	struct npu_model *m;
	size_t size;
	void *buf = model(&size);

	npu_model_options_init(&mo);
	mo.device = device;
	mo.calib_random = 1;		/* arithmetic, not accuracy */
	mo.keep_small_segments = 1;	/* 1x1 convolutions this small would stay on the CPU */
	if (npu_model_load_memory(e, buf, size, "io.onnx", &mo, &m) != NPU_OK)
		fail_msg("load on %s: %s", device, npu_last_error());
	free(buf);
	return m;
}

static void input(float *x)
{
	size_t i;

	for (i = 0; i < N_X; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
}

static struct npu_host_tensor host(const char *name, void *data, size_t nbytes)
{
	struct npu_host_tensor h = { .name = name, .dtype = NPU_TYPE_FLOAT, .rank = 4,
				     .dims = { 1, C_IN, HW, HW }, .data = data,
				     .nbytes = nbytes };
	return h;
}

static void assert_contains(const char *msg, const char *part)
{
	if (!strstr(msg, part))
		fail_msg("message '%s' lacks '%s'", msg, part);
}

static struct npu_io_stats io_stats(struct npu_session *s)
{
	struct npu_io_stats st;

	npu_io_stats_init(&st);
	if (npu_session_io_stats(s, &st) != NPU_OK)
		fail_msg("io stats: %s", npu_last_error());
	return st;
}

/* A plain run's outputs y and z, copied out. */
static void reference(struct npu_session *s, float *x, float *y, float *z)
{
	struct npu_host_tensor in = host("x", x, sizeof(float) * N_X), out;
	struct npu_io_stats st;

	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &out), NPU_OK);
	assert_int_equal(out.nbytes, sizeof(float) * N_X);
	memcpy(y, out.data, out.nbytes);
	assert_int_equal(npu_session_output(s, 1, &out), NPU_OK);
	memcpy(z, out.data, out.nbytes);
	st = io_stats(s);
	assert_int_equal(st.input_copies, 0);
	assert_int_equal(st.inputs_in_place, 1);
	assert_int_equal(st.output_copies + st.outputs_in_place, 0);
	assert_int_equal(st.nodes_skipped, 0);
	assert_true(st.nodes_run >= 2);
}

/* Outputs in caller memory and chosen by name, on 'device'. */
static void caller_outputs(const char *device)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = load(e, device);
	struct npu_session *s;
	struct npu_run_options ro;
	struct npu_host_tensor in, outs[2], got;
	struct npu_io_stats st;
	float x[N_X], y[N_X], z[N_X];
	float *yb = aligned_alloc(64, sizeof(y)), *zb = aligned_alloc(64, sizeof(z));
	uint64_t all_nodes;

	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x);
	reference(s, x, y, z);
	all_nodes = io_stats(s).nodes_run;
	if (!strcmp(device, "sim")) {	/* y comes out of an NPU segment */
		struct npu_npu_stats ns;

		npu_npu_stats_init(&ns);
		assert_int_equal(npu_session_npu_stats(s, &ns), NPU_OK);
		assert_int_equal(ns.segments, 1);
	}
	in = host("x", x, sizeof(x));

	/* Both outputs into caller memory: each producer writes there. */
	memset(yb, 0xff, sizeof(y));
	memset(zb, 0xff, sizeof(z));
	outs[0] = host("y", yb, sizeof(y));
	outs[1] = host("z", zb, sizeof(z));
	npu_run_options_init(&ro);
	ro.outputs = outs;
	ro.num_outputs = 2;
	if (npu_session_run_with(s, NULL, &in, 1, &ro) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_memory_equal(yb, y, sizeof(y));
	assert_memory_equal(zb, z, sizeof(z));
	st = io_stats(s);
	assert_int_equal(st.outputs_in_place, 2);
	assert_int_equal(st.output_copies, 0);
	assert_int_equal(st.output_copy_bytes, 0);
	assert_int_equal(st.input_copies, 0);
	assert_int_equal(st.nodes_run, all_nodes);
	/* npu_session_output() gives the caller's memory. */
	assert_int_equal(npu_session_output(s, 0, &got), NPU_OK);
	assert_ptr_equal(got.data, yb);

	/* Only y, into caller memory: the Sin / Cos branch does not run. */
	memset(yb, 0, sizeof(y));
	ro.num_outputs = 1;
	if (npu_session_run_with(s, NULL, &in, 1, &ro) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_memory_equal(yb, y, sizeof(y));
	st = io_stats(s);
	assert_int_equal(st.outputs_in_place, 1);
	assert_true(st.nodes_skipped >= 1);
	assert_int_equal(st.nodes_run + st.nodes_skipped, all_nodes);
	assert_int_equal(npu_session_output(s, 1, &got), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "output 'z' of io.onnx was not computed");

	/* Only z, in the session's memory (data NULL): the conv branch does not run. */
	outs[0] = (struct npu_host_tensor){ .name = "z" };
	ro.outputs = outs;
	if (npu_session_run_with(s, NULL, &in, 1, &ro) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	st = io_stats(s);
	assert_int_equal(st.outputs_in_place, 0);
	assert_true(st.nodes_skipped >= 1);
	assert_int_equal(npu_session_output(s, 1, &got), NPU_OK);
	assert_memory_equal(got.data, z, sizeof(z));
	assert_int_equal(npu_session_output(s, 0, &got), NPU_ERR_INVALID_ARG);

	/* A plain run afterwards computes everything in the session's memory again. */
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 0, &got), NPU_OK);
	assert_ptr_not_equal(got.data, yb);
	assert_memory_equal(got.data, y, sizeof(y));
	assert_int_equal(io_stats(s).nodes_run, all_nodes);

	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(yb);
	free(zb);
}

static void test_outputs_in_caller_memory_on_cpu(void **state)
{
	(void)state;
	caller_outputs("cpu");
}

static void test_outputs_in_caller_memory_from_npu_segments_on_sim(void **state)
{
	(void)state;
	caller_outputs("sim");
}

/* Outputs: x itself, and the initializer c: values no node of the model computes. */
static int64_t c_data[4] = { 7, -1, 3, 5 };

static void *passthrough_model(size_t *size)
{
	static int64_t c_dims[] = { 4 };
	static struct tb_model m;
	Onnx__TensorProto *t;

	tb_init(&m, 13);
	tb_input(&m, "x", 4, x_dims);
	tb_output(&m, "x", 4, x_dims);
	tb_output(&m, "c", 1, c_dims);
	m.ttypes[m.n_vi - 1].elem_type = INT64;
	t = tb_init_tensor(&m, "c", INT64, 1, c_dims);
	t->n_int64_data = 4;
	t->int64_data = c_data;
	return tb_pack(&m, size);
}

/*
 * Outputs that are the model's input or a constant have no producer to
 * write caller memory: each is copied there once, and counted.
 */
static void test_outputs_without_producer_are_copied_once(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m;
	struct npu_session *s;
	struct npu_run_options ro;
	struct npu_host_tensor in, outs[2];
	struct npu_io_stats st;
	float x[N_X], xi[N_X];
	int64_t sh[4];
	size_t size;
	void *buf = passthrough_model(&size);

	(void)state;
	if (npu_model_load_memory(e, buf, size, "pass.onnx", NULL, &m) != NPU_OK)
		fail_msg("load: %s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x);
	in = host("x", x, sizeof(x));
	outs[0] = host("x", xi, sizeof(xi));
	outs[1] = (struct npu_host_tensor){ .name = "c", .dtype = NPU_TYPE_INT64, .rank = 1,
					    .dims = { 4 }, .data = sh, .nbytes = sizeof(sh) };
	npu_run_options_init(&ro);
	ro.outputs = outs;
	ro.num_outputs = 2;
	if (npu_session_run_with(s, NULL, &in, 1, &ro) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_memory_equal(xi, x, sizeof(x));
	assert_memory_equal(sh, c_data, sizeof(sh));
	{	/* npu_session_output() gives the caller's memory, copied or not */
		struct npu_host_tensor got;

		assert_int_equal(npu_session_output(s, 1, &got), NPU_OK);
		assert_ptr_equal(got.data, sh);
	}
	st = io_stats(s);
	assert_int_equal(st.nodes_run, 0);
	assert_int_equal(st.outputs_in_place, 0);
	assert_int_equal(st.output_copies, 2);
	assert_int_equal(st.output_copy_bytes, sizeof(x) + sizeof(sh));
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

static void async_done(npu_status st, struct npu_session *s, void *arg)
{
	(void)s;
	*(npu_status *)arg = st;
}

/* An async run takes the same binding: caller memory borrowed until its callback. */
static void test_async_run_writes_caller_memory(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = load(e, "cpu");
	struct npu_session *s;
	struct npu_run_options ro;
	struct npu_host_tensor in, out;
	struct npu_io_stats st;
	float x[N_X], y[N_X], z[N_X];
	float *zb = aligned_alloc(64, sizeof(z));
	npu_status done = NPU_ERR_INTERNAL;

	(void)state;
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x);
	reference(s, x, y, z);
	in = host("x", x, sizeof(x));
	out = host("z", zb, sizeof(z));
	npu_run_options_init(&ro);
	ro.outputs = &out;
	ro.num_outputs = 1;
	memset(zb, 0, sizeof(z));
	if (npu_session_run_async(s, NULL, &in, 1, &ro, async_done, &done) != NPU_OK)
		fail_msg("run_async: %s", npu_last_error());
	assert_int_equal(npu_session_wait(s), NPU_OK);
	assert_int_equal(done, NPU_OK);
	assert_memory_equal(zb, z, sizeof(z));
	st = io_stats(s);
	assert_int_equal(st.outputs_in_place, 1);
	assert_true(st.nodes_skipped >= 1);
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(zb);
}

/* A misaligned input is copied once, and counted. */
static void test_misaligned_input_copy_is_counted(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = load(e, "cpu");
	struct npu_session *s;
	struct npu_host_tensor in, got;
	float x[N_X], y[N_X], z[N_X];
	char *raw = malloc(sizeof(x) + 8);
	struct npu_io_stats st;

	(void)state;
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x);
	reference(s, x, y, z);
	memcpy(raw + 1, x, sizeof(x));
	in = host("x", raw + 1, sizeof(x));
	if (npu_session_run(s, &in, 1) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	st = io_stats(s);
	assert_int_equal(st.input_copies, 1);
	assert_int_equal(st.input_copy_bytes, sizeof(x));
	assert_int_equal(st.inputs_in_place, 0);
	assert_int_equal(npu_session_output(s, 0, &got), NPU_OK);
	assert_memory_equal(got.data, y, sizeof(y));
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(raw);
}

/* One bad output binding: the run fails naming it, and the session runs on. */
static void bad_output(struct npu_session *s, const struct npu_host_tensor *x,
		       const struct npu_host_tensor *outs, size_t n, const char *part)
{
	struct npu_run_options ro;
	struct npu_host_tensor got;

	npu_run_options_init(&ro);
	ro.outputs = outs;
	ro.num_outputs = n;
	assert_int_equal(npu_session_run_with(s, NULL, x, 1, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), part);
	if (npu_session_run(s, x, 1) != NPU_OK)
		fail_msg("run after a bad binding: %s", npu_last_error());
	assert_int_equal(npu_session_output(s, 1, &got), NPU_OK);
}

static void test_bad_output_bindings_are_refused(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = load(e, "cpu");
	struct npu_session *s;
	struct npu_host_tensor in, o[2];
	float x[N_X];
	float *buf = aligned_alloc(64, sizeof(x) + 64);
	struct npu_run_options ro;

	(void)state;
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x);
	in = host("x", x, sizeof(x));

	o[0] = host("nope", buf, sizeof(x));
	bad_output(s, &in, o, 1, "the model has no output 'nope' (its outputs: 'y', 'z')");
	o[0] = host(NULL, buf, sizeof(x));
	bad_output(s, &in, o, 1, "outputs[0]: name is NULL");
	o[0] = host("y", NULL, 0);
	o[1] = host("y", NULL, 0);
	bad_output(s, &in, o, 2, "output 'y' is chosen twice");
	o[0] = host("y", buf, sizeof(x) - 4);
	bad_output(s, &in, o, 1,
		   "output 'y': the caller's memory is for float 1x4x8x8 (1020 bytes), the output is float 1x4x8x8 (1024 bytes)");
	o[0] = host("y", buf, sizeof(x));
	o[0].dtype = NPU_TYPE_INT32;
	bad_output(s, &in, o, 1, "the caller's memory is for int32");
	o[0] = host("z", buf, sizeof(x));
	o[0].dims[2] = 16;
	o[0].dims[3] = 4;
	bad_output(s, &in, o, 1, "output 'z': the caller's memory is for float 1x4x16x4");
	o[0] = host("y", (char *)buf + 2, sizeof(x));
	bad_output(s, &in, o, 1, "output 'y': caller memory");
	assert_contains(npu_last_error(), "is not aligned to its float elements (4 bytes)");
	o[0] = host("y", NULL, 16);
	bad_output(s, &in, o, 1, "output 'y': 16 bytes of caller memory at NULL");

	npu_run_options_init(&ro);
	ro.num_outputs = 1;
	assert_int_equal(npu_session_run_with(s, NULL, &in, 1, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "npu_run_options.outputs is NULL with num_outputs 1");
	assert_int_equal(npu_session_io_stats(s, NULL), NPU_ERR_INVALID_ARG);

	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(buf);
}

/* An input from an npu_buffer of the model's device, read in place. */
static void test_device_buffer_input_on_sim(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = load(e, "sim");
	struct npu_session *s;
	struct npu_device *dev;
	struct npu_buffer *buf;
	struct npu_run_options ro;
	struct npu_device_tensor di = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
					.dims = { 1, C_IN, HW, HW }, .offset = 256,
					.nbytes = N_X * sizeof(float) };
	struct npu_host_tensor outs[2];
	struct npu_io_stats st;
	float x[N_X], y[N_X], z[N_X];
	float *yb = aligned_alloc(64, sizeof(y)), *zb = aligned_alloc(64, sizeof(z));
	void *map;

	(void)state;
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x);
	reference(s, x, y, z);
	assert_int_equal(npu_engine_get_device(e, "sim", &dev), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, 256 + sizeof(x), 0, &buf), NPU_OK);
	assert_ptr_equal(npu_buffer_device(buf), dev);
	assert_int_equal(npu_buffer_map(buf, &map), NPU_OK);
	memcpy((char *)map + 256, x, sizeof(x));
	di.buffer = buf;
	outs[0] = host("y", yb, sizeof(y));
	outs[1] = host("z", zb, sizeof(z));
	npu_run_options_init(&ro);
	ro.device_inputs = &di;
	ro.num_device_inputs = 1;
	ro.outputs = outs;
	ro.num_outputs = 2;
	if (npu_session_run_with(s, NULL, NULL, 0, &ro) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	/* The same quantization of the same data: bit-identical to the host input's run. */
	assert_memory_equal(yb, y, sizeof(y));
	assert_memory_equal(zb, z, sizeof(z));
	st = io_stats(s);
	assert_int_equal(st.device_inputs, 1);
	assert_int_equal(st.inputs_in_place, 1);
	assert_int_equal(st.input_copies, 0);
	assert_int_equal(st.input_copy_bytes, 0);
	assert_int_equal(st.outputs_in_place, 2);
	assert_int_equal(st.output_copies, 0);

	/* Bad device inputs. */
	di.offset = 2;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(),
			"device input 'x': offset 2 is not aligned to its float elements");
	di.offset = npu_buffer_size(buf) - 64;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "device input 'x': 1024 bytes at offset");
	assert_contains(npu_last_error(), "do not fit in its");
	di.offset = 0;
	di.nbytes = 12;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "input 'x': 12 bytes of data for float 1x4x8x8");
	di.nbytes = sizeof(x);
	di.dtype = NPU_TYPE_INT8;
	di.nbytes = N_X;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "input 'x' must be float, got int8");
	di.dtype = NPU_TYPE_FLOAT;
	di.nbytes = sizeof(x);
	di.buffer = NULL;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "device input 'x': buffer is NULL");
	di.buffer = buf;
	di.name = NULL;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "device_inputs[0]: name is NULL");
	di.name = "x";
	{	/* the same input twice: as a host and as a device tensor */
		struct npu_host_tensor in = host("x", x, sizeof(x));

		assert_int_equal(npu_session_run_with(s, NULL, &in, 1, &ro), NPU_ERR_INVALID_ARG);
		assert_contains(npu_last_error(), "1 host and 1 device inputs given, the model has 1");
	}
	{	/* a buffer of another device */
		struct npu_device *other;
		struct npu_buffer *ob;
		char msg[256];

		assert_int_equal(npu_device_open(NULL, &other, msg, sizeof(msg)), NPU_OK);
		assert_int_equal(npu_buffer_alloc(other, sizeof(x), 0, &ob), NPU_OK);
		di.buffer = ob;
		di.offset = 0;
		assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
		assert_contains(npu_last_error(),
				"device input 'x': the buffer belongs to another device than the model's (\"sim\")");
		npu_buffer_free(ob);
		npu_device_close(other);
	}
	/* The session runs normally afterwards. */
	di.buffer = buf;
	di.offset = 256;
	if (npu_session_run_with(s, NULL, NULL, 0, &ro) != NPU_OK)
		fail_msg("run: %s", npu_last_error());
	assert_memory_equal(yb, y, sizeof(y));

	npu_session_destroy(s);
	npu_buffer_free(buf);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(yb);
	free(zb);
}

/* A device buffer for a model that runs on the CPU only is an error. */
static void test_device_buffer_on_cpu_model_is_refused(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = load(e, "cpu");
	struct npu_session *s;
	struct npu_device *dev;
	struct npu_buffer *buf;
	struct npu_run_options ro;
	struct npu_device_tensor di = { .name = "x", .dtype = NPU_TYPE_FLOAT, .rank = 4,
					.dims = { 1, C_IN, HW, HW },
					.nbytes = N_X * sizeof(float) };

	(void)state;
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	assert_int_equal(npu_engine_get_device(e, "sim", &dev), NPU_OK);
	assert_int_equal(npu_buffer_alloc(dev, di.nbytes, 0, &buf), NPU_OK);
	di.buffer = buf;
	npu_run_options_init(&ro);
	ro.device_inputs = &di;
	ro.num_device_inputs = 1;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(),
			"io.onnx: input 'x' is in a device buffer, but the model runs on the CPU (device \"cpu\")");
	ro.device_inputs = NULL;
	assert_int_equal(npu_session_run_with(s, NULL, NULL, 0, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "device_inputs is NULL with num_device_inputs 1");
	npu_session_destroy(s);
	npu_buffer_free(buf);
	npu_model_destroy(m);
	npu_engine_destroy(e);
}

/* A session whose model was destroyed reports it, with or without a binding. */
static void test_run_after_model_destroyed_is_an_error(void **state)
{
	struct npu_engine *e = engine_new();
	struct npu_model *m = load(e, "cpu");
	struct npu_session *s;
	struct npu_run_options ro;
	struct npu_host_tensor in, o;
	float x[N_X], y[N_X];

	(void)state;
	assert_int_equal(npu_session_create(m, NULL, &s), NPU_OK);
	input(x);
	in = host("x", x, sizeof(x));
	o = host("y", y, sizeof(y));
	npu_model_destroy(m);
	npu_run_options_init(&ro);
	ro.outputs = &o;
	ro.num_outputs = 1;
	assert_int_equal(npu_session_run_with(s, NULL, &in, 1, &ro), NPU_ERR_INVALID_ARG);
	assert_contains(npu_last_error(), "the session's model (io.onnx) was destroyed");
	assert_int_equal(npu_session_run(s, &in, 1), NPU_ERR_INVALID_ARG);
	assert_int_equal(npu_session_io_stats(s, &(struct npu_io_stats){ .struct_size =
									  sizeof(struct npu_io_stats) }),
			 NPU_ERR_INVALID_ARG);
	npu_session_destroy(s);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outputs_in_caller_memory_on_cpu),
		cmocka_unit_test(test_outputs_in_caller_memory_from_npu_segments_on_sim),
		cmocka_unit_test(test_async_run_writes_caller_memory),
		cmocka_unit_test(test_outputs_without_producer_are_copied_once),
		cmocka_unit_test(test_misaligned_input_copy_is_counted),
		cmocka_unit_test(test_bad_output_bindings_are_refused),
		cmocka_unit_test(test_device_buffer_input_on_sim),
		cmocka_unit_test(test_device_buffer_on_cpu_model_is_refused),
		cmocka_unit_test(test_run_after_model_destroyed_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
