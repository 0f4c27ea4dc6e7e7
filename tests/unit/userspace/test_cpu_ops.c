// SPDX-License-Identifier: MIT
/*
 * Unit tests of the CPU ops' tricky semantics: broadcasting, Reshape 0/-1,
 * Slice with negative steps, Resize modes, QuantizeLinear rounding and
 * saturation, Softmax axis across opsets, pooling ceil_mode, ConvTranspose,
 * the index / loss / layout / selection ops (GatherElements ... TopK)
 * including their run-time range errors, and the messages infer() gives
 * for what is not supported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "cpu/kernels/cpu_kernels.h"
#include "cpu/ops/cpu_ops.h"

/* ---- a one-node graph ---- */

#define T_MAX 10

struct t_node {
	struct npu_node node;
	struct npu_value vals[2 * T_MAX];
	struct npu_value *ins[T_MAX], *outs[T_MAX];
	struct npu_attr attrs[T_MAX];
	struct npu_tensor in_t[T_MAX], out_t[T_MAX];
	const struct npu_tensor *in_p[T_MAX];
	struct npu_tensor *out_p[T_MAX];
	struct npu_error err;
	const struct npu_op_schema *schema;
	const struct npu_op_def *def;
};

static struct t_node *t_new_in(const char *domain, const char *op, int opset,
			       size_t n_out)
{
	struct t_node *t = calloc(1, sizeof(*t));
	size_t i;

	assert_non_null(t);
	t->node.name = (char *)"n0";
	t->node.op_type = (char *)op;
	t->node.domain = (char *)domain;
	t->node.opset = opset;
	t->node.inputs = t->ins;
	t->node.outputs = t->outs;
	t->node.attrs = t->attrs;
	t->node.num_outputs = n_out;
	for (i = 0; i < n_out; i++) {
		t->outs[i] = &t->vals[T_MAX + i];
		t->outs[i]->name = (char *)"out";
	}
	t->schema = npu_op_schema_find(domain, op, opset);
	assert_non_null(t->schema);
	t->def = npu_cpu_op_find(domain, op, opset);
	assert_non_null(t->def);
	return t;
}

static struct t_node *t_new(const char *op, int opset, size_t n_out)
{
	return t_new_in("", op, opset, n_out);
}

static void t_free(struct t_node *t)
{
	size_t i;

	for (i = 0; i < t->node.num_outputs; i++)
		free(t->out_t[i].data);
	free(t);
}

/* Adds an input tensor; constant inputs are visible to infer(). */
static void t_input(struct t_node *t, enum npu_dtype dt, const void *data,
		    bool constant, int rank, ...)
{
	size_t i = t->node.num_inputs++;
	struct npu_tensor *x = &t->in_t[i];
	va_list ap;
	int d;

	x->dtype = dt;
	x->shape.rank = rank;
	va_start(ap, rank);
	for (d = 0; d < rank; d++)
		x->shape.dims[d] = va_arg(ap, int64_t);
	va_end(ap);
	x->data = (void *)data;
	x->nbytes = (size_t)npu_shape_numel(&x->shape) * npu_dtype_size(dt);
	t->ins[i] = &t->vals[i];
	t->vals[i].name = (char *)"in";
	t->vals[i].dtype = dt;
	t->vals[i].shape = x->shape;
	t->vals[i].constant = constant ? x : NULL;
	t->in_p[i] = x;
}

static void t_skip_input(struct t_node *t)
{
	size_t i = t->node.num_inputs++;

	t->ins[i] = NULL;
	t->in_p[i] = NULL;
}

static struct npu_attr *t_attr(struct t_node *t, const char *name,
			       enum npu_attr_type type)
{
	struct npu_attr *a = &t->attrs[t->node.num_attrs++];

	a->name = (char *)name;
	a->type = type;
	return a;
}

static void t_attr_int(struct t_node *t, const char *name, int64_t v)
{
	t_attr(t, name, NPU_ATTR_INT)->i = v;
}

static void t_attr_float(struct t_node *t, const char *name, float v)
{
	t_attr(t, name, NPU_ATTR_FLOAT)->f = v;
}

static void t_attr_str(struct t_node *t, const char *name, const char *v)
{
	t_attr(t, name, NPU_ATTR_STRING)->s = (char *)v;
}

static void t_attr_ints(struct t_node *t, const char *name,
			const int64_t *v, size_t n)
{
	struct npu_attr *a = t_attr(t, name, NPU_ATTR_INTS);

	a->ints = (int64_t *)v;
	a->count = n;
}

static npu_status t_infer(struct t_node *t)
{
	enum npu_dtype dts[T_MAX];
	struct npu_shape shapes[T_MAX];
	struct npu_infer_ctx ctx = {
		.schema = t->schema, .node = &t->node, .out_dtypes = dts, .out_shapes = shapes,
		.err = &t->err,
	};
	npu_status st;
	size_t i;

	memset(shapes, 0, sizeof(shapes));
	st = t->schema->infer(&ctx);
	if (st)
		return st;
	for (i = 0; i < t->node.num_outputs; i++) {
		t->outs[i]->dtype = dts[i];
		t->outs[i]->shape = shapes[i];
	}
	return NPU_OK;
}

/* Infers (asserting success), allocates the outputs and computes. */
static npu_status t_try_run(struct t_node *t)
{
	struct npu_op_ctx ctx;
	size_t i;

	assert_int_equal(t_infer(t), NPU_OK);
	for (i = 0; i < t->node.num_outputs; i++) {
		struct npu_tensor *y = &t->out_t[i];
		int64_t n;

		y->dtype = t->outs[i]->dtype;
		y->shape = t->outs[i]->shape;
		n = npu_shape_numel(&y->shape);
		assert_true(n >= 0);
		y->nbytes = (size_t)n * npu_dtype_size(y->dtype);
		y->data = calloc(1, y->nbytes + 8);
		t->out_p[i] = y;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.node = &t->node;
	ctx.inputs = t->in_p;
	ctx.num_inputs = t->node.num_inputs;
	ctx.outputs = t->out_p;
	ctx.num_outputs = t->node.num_outputs;
	ctx.err = &t->err;
	return t->def->compute(&ctx);
}

/* Infers, allocates the outputs and computes; asserts success. */
static void t_run(struct t_node *t)
{
	assert_int_equal(t_try_run(t), NPU_OK);
}

/* t_run with a thread pool (the ops' parallel paths). */
static void t_run_pool(struct t_node *t, struct npu_threadpool *pool)
{
	struct npu_op_ctx ctx;
	size_t i;

	assert_int_equal(t_infer(t), NPU_OK);
	for (i = 0; i < t->node.num_outputs; i++) {
		struct npu_tensor *y = &t->out_t[i];

		y->dtype = t->outs[i]->dtype;
		y->shape = t->outs[i]->shape;
		y->nbytes = (size_t)npu_shape_numel(&y->shape) * npu_dtype_size(y->dtype);
		y->data = calloc(1, y->nbytes + 8);
		t->out_p[i] = y;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.node = &t->node;
	ctx.inputs = t->in_p;
	ctx.num_inputs = t->node.num_inputs;
	ctx.outputs = t->out_p;
	ctx.num_outputs = t->node.num_outputs;
	ctx.pool = pool;
	ctx.err = &t->err;
	assert_int_equal(t->def->compute(&ctx), NPU_OK);
}

static void assert_shape(const struct npu_tensor *y, int rank, ...)
{
	va_list ap;
	int d;

	assert_int_equal(y->shape.rank, rank);
	va_start(ap, rank);
	for (d = 0; d < rank; d++)
		assert_int_equal(y->shape.dims[d], va_arg(ap, int64_t));
	va_end(ap);
}

static void assert_floats(const float *got, const float *want, size_t n,
			  float tol)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fabsf(got[i] - want[i]) > tol)
			fail_msg("element %zu: got %g, want %g", i, got[i], want[i]);
}

#define D(x) ((int64_t)(x))

/* ---- registry ---- */

static void test_registry_matches_domain_and_opset_range(void **state)
{
	(void)state;
	assert_non_null(npu_cpu_op_find("", "Conv", 11));
	assert_non_null(npu_cpu_op_find("ai.onnx", "Conv", 11));
	assert_null(npu_cpu_op_find("com.microsoft", "Conv", 11));
	assert_null(npu_cpu_op_find("", "Softmax", 99));
	assert_null(npu_cpu_op_find("", "Resize", 9));
	assert_null(npu_cpu_op_find("", "NoSuchOp", 13));
	assert_non_null(npu_cpu_op_at(0));
}

/* ---- broadcasting ---- */

static void test_add_broadcasts_numpy_style(void **state)
{
	static const float a[6] = { 1, 2, 3, 4, 5, 6 };	/* 2x3 */
	static const float b[2] = { 10, 20 };		/* 2x1 */
	static const float want[6] = { 11, 12, 13, 24, 25, 26 };
	struct t_node *t = t_new("Add", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(2), D(3));
	t_input(t, NPU_DTYPE_FLOAT, b, false, 2, D(2), D(1));
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(3));
	assert_floats(t->out_t[0].data, want, 6, 0);
	t_free(t);
}

static void test_mul_broadcasts_rank_extension_and_both_sides(void **state)
{
	static const float a[3] = { 1, 2, 3 };		/* 3x1 */
	static const float b[2] = { 10, 100 };		/* 1x1x2 */
	static const float want[6] = { 10, 100, 20, 200, 30, 300 };
	struct t_node *t = t_new("Mul", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(3), D(1));
	t_input(t, NPU_DTYPE_FLOAT, b, false, 3, D(1), D(1), D(2));
	t_run(t);
	assert_shape(&t->out_t[0], 3, D(1), D(3), D(2));
	assert_floats(t->out_t[0].data, want, 6, 0);
	t_free(t);
}

static void test_add_opset6_broadcast_aligns_at_axis(void **state)
{
	static const float a[6] = { 0, 0, 0, 0, 0, 0 };	/* 3x2 */
	static const float b[3] = { 1, 2, 3 };		/* aligned at axis 0 */
	static const float want[6] = { 1, 1, 2, 2, 3, 3 };
	struct t_node *t = t_new("Add", 6, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(3), D(2));
	t_input(t, NPU_DTYPE_FLOAT, b, false, 1, D(3));
	t_attr_int(t, "broadcast", 1);
	t_attr_int(t, "axis", 0);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(3), D(2));
	assert_floats(t->out_t[0].data, want, 6, 0);
	t_free(t);
}

static void test_add_rejects_incompatible_shapes(void **state)
{
	static const float a[6], b[4];
	struct t_node *t = t_new("Add", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(2), D(3));
	t_input(t, NPU_DTYPE_FLOAT, b, false, 1, D(4));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(t->err.msg, "Add node 'n0'"));
	t_free(t);
}

static void test_where_broadcasts_three_inputs(void **state)
{
	static const uint8_t c[2] = { 1, 0 };		/* 2x1 */
	static const int64_t x[3] = { 1, 2, 3 };	/* 3 */
	static const int64_t y[1] = { -1 };
	static const int64_t want[6] = { 1, 2, 3, -1, -1, -1 };
	struct t_node *t = t_new("Where", 16, 1);

	(void)state;
	t_input(t, NPU_DTYPE_BOOL, c, false, 2, D(2), D(1));
	t_input(t, NPU_DTYPE_INT64, x, false, 1, D(3));
	t_input(t, NPU_DTYPE_INT64, y, false, 0);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(3));
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);
}

static void test_leaky_relu_and_clip_attributes(void **state)
{
	static const float x[4] = { -2, -1, 1, 8 };
	static const float want_leaky[4] = { -0.2f, -0.1f, 1, 8 };
	static const float want_clip[4] = { -1, -1, 1, 6 };
	struct t_node *t = t_new("LeakyRelu", 16, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_attr_float(t, "alpha", 0.1f);
	t_run(t);
	assert_floats(t->out_t[0].data, want_leaky, 4, 1e-6f);
	t_free(t);

	t = t_new("Clip", 6, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_attr_float(t, "min", -1);
	t_attr_float(t, "max", 6);
	t_run(t);
	assert_floats(t->out_t[0].data, want_clip, 4, 0);
	t_free(t);
}

/* ---- Reshape ---- */

static void test_reshape_zero_copies_and_minus_one_infers(void **state)
{
	static const float x[24];
	static const int64_t shape[3] = { 0, -1, 2 };
	struct t_node *t = t_new("Reshape", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(2), D(3), D(4));
	t_input(t, NPU_DTYPE_INT64, shape, true, 1, D(3));
	t_run(t);
	assert_shape(&t->out_t[0], 3, D(2), D(6), D(2));
	t_free(t);
}

static void test_reshape_allowzero_keeps_zero_dims(void **state)
{
	static const float x[1];
	static const int64_t shape[2] = { 0, 4 };
	struct t_node *t = t_new("Reshape", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(0), D(4));
	t_input(t, NPU_DTYPE_INT64, shape, true, 1, D(2));
	t_attr_int(t, "allowzero", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(0), D(4));
	t_free(t);
}

static void test_reshape_rejects_two_minus_ones(void **state)
{
	static const float x[6];
	static const int64_t shape[2] = { -1, -1 };
	struct t_node *t = t_new("Reshape", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(6));
	t_input(t, NPU_DTYPE_INT64, shape, true, 1, D(2));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	t_free(t);
}

static void test_reshape_unknown_shape_input_gives_unknown_dims(void **state)
{
	static const float x[6];
	static const int64_t shape[2] = { 3, 2 };
	struct t_node *t = t_new("Reshape", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(6));
	t_input(t, NPU_DTYPE_INT64, shape, false, 1, D(2));
	assert_int_equal(t_infer(t), NPU_OK);
	assert_int_equal(t->outs[0]->shape.rank, 2);
	assert_int_equal(t->outs[0]->shape.dims[0], -1);
	t_free(t);
}

/* ---- Slice ---- */

static void test_slice_negative_step_walks_backwards(void **state)
{
	static const float x[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	static const int64_t starts[1] = { -1 }, ends[1] = { INT64_MIN };
	static const int64_t axes[1] = { 0 }, steps[1] = { -3 };
	static const float want[4] = { 9, 6, 3, 0 };
	struct t_node *t = t_new("Slice", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(10));
	t_input(t, NPU_DTYPE_INT64, starts, true, 1, D(1));
	t_input(t, NPU_DTYPE_INT64, ends, true, 1, D(1));
	t_input(t, NPU_DTYPE_INT64, axes, true, 1, D(1));
	t_input(t, NPU_DTYPE_INT64, steps, true, 1, D(1));
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(4));
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

static void test_slice_clamps_out_of_range_bounds(void **state)
{
	static const float x[2 * 5] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	static const int64_t starts[1] = { 3 }, ends[1] = { 1000 };
	static const int64_t axes[1] = { -1 };
	static const float want[4] = { 3, 4, 8, 9 };
	struct t_node *t = t_new("Slice", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(5));
	t_input(t, NPU_DTYPE_INT64, starts, true, 1, D(1));
	t_input(t, NPU_DTYPE_INT64, ends, true, 1, D(1));
	t_input(t, NPU_DTYPE_INT64, axes, true, 1, D(1));
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

static void test_slice_opset9_reads_attributes(void **state)
{
	static const float x[6] = { 0, 1, 2, 3, 4, 5 };
	static const int64_t starts[1] = { 1 }, ends[1] = { -1 };
	static const float want[4] = { 1, 2, 3, 4 };
	struct t_node *t = t_new("Slice", 9, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(6));
	t_attr_ints(t, "starts", starts, 1);
	t_attr_ints(t, "ends", ends, 1);
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(4));
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

/* ---- Softmax ---- */

static void test_softmax_opset11_coerces_to_2d(void **state)
{
	static const float x[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };	/* 2x2x2 */
	struct t_node *t = t_new("Softmax", 11, 1);
	const float *y;

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(2), D(2), D(2));
	t_run(t);
	y = t->out_t[0].data;
	/* axis 1 (default) flattens [2, 2] into one row of 4. */
	assert_float_equal(y[0], 0.25, 1e-6);
	assert_float_equal(y[7], 0.25, 1e-6);
	t_free(t);
}

static void test_softmax_opset13_normalizes_one_axis(void **state)
{
	static const float x[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	struct t_node *t = t_new("Softmax", 13, 1);
	const float *y;

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(2), D(2), D(2));
	t_attr_int(t, "axis", 1);
	t_run(t);
	y = t->out_t[0].data;
	assert_float_equal(y[0], 0.5, 1e-6);
	assert_float_equal(y[7], 0.5, 1e-6);
	t_free(t);
}

static void test_softmax_is_stable_for_large_inputs(void **state)
{
	static const float x[3] = { 10000, 10001, 10002 };
	static const float want[3] = { 0.09003057f, 0.24472848f, 0.66524094f };
	struct t_node *t = t_new("Softmax", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(3));
	t_run(t);
	assert_floats(t->out_t[0].data, want, 3, 1e-6f);
	t_free(t);
}

/* ---- pooling ---- */

static void test_maxpool_ceil_mode_adds_partial_window(void **state)
{
	static const float x[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				     13, 14, 15, 16 };
	static const int64_t k[2] = { 3, 3 }, s[2] = { 2, 2 };
	static const float want[4] = { 11, 12, 15, 16 };
	struct t_node *t = t_new("MaxPool", 12, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(4), D(4));
	t_attr_ints(t, "kernel_shape", k, 2);
	t_attr_ints(t, "strides", s, 2);
	t_attr_int(t, "ceil_mode", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(2), D(2));
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

static void test_maxpool_floor_mode_drops_partial_window(void **state)
{
	static const float x[16];
	static const int64_t k[2] = { 3, 3 }, s[2] = { 2, 2 };
	struct t_node *t = t_new("MaxPool", 12, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(4), D(4));
	t_attr_ints(t, "kernel_shape", k, 2);
	t_attr_ints(t, "strides", s, 2);
	assert_int_equal(t_infer(t), NPU_OK);
	assert_int_equal(t->outs[0]->shape.dims[2], 1);
	t_free(t);
}

static void test_avgpool_same_upper_excludes_pad(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };	/* 1x1x1x4 */
	static const int64_t k[2] = { 1, 2 };
	static const float want[4] = { 1.5f, 2.5f, 3.5f, 4 };
	struct t_node *t = t_new("AveragePool", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(1), D(4));
	t_attr_ints(t, "kernel_shape", k, 2);
	t_attr_str(t, "auto_pad", "SAME_UPPER");
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(1), D(4));
	assert_floats(t->out_t[0].data, want, 4, 1e-6f);
	t_free(t);
}

/* ---- Resize ---- */

static void test_resize_linear_half_pixel_upsample(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };
	static const float scales[4] = { 1, 1, 2, 2 };
	/* From the ONNX Resize example (resize_upsample_scales_linear). */
	static const float want[16] = {
		1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
		2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4,
	};
	struct t_node *t = t_new("Resize", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_skip_input(t);
	t_input(t, NPU_DTYPE_FLOAT, scales, true, 1, D(4));
	t_attr_str(t, "mode", "linear");
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(4), D(4));
	assert_floats(t->out_t[0].data, want, 16, 1e-6f);
	t_free(t);
}

static void test_resize_linear_align_corners(void **state)
{
	static const float x[2] = { 0, 3 };
	static const int64_t sizes[3] = { 1, 1, 4 };
	static const float want[4] = { 0, 1, 2, 3 };
	struct t_node *t = t_new("Resize", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(1), D(2));
	t_skip_input(t);
	t_skip_input(t);
	t_input(t, NPU_DTYPE_INT64, sizes, true, 1, D(3));
	t_attr_str(t, "mode", "linear");
	t_attr_str(t, "coordinate_transformation_mode", "align_corners");
	t_run(t);
	assert_floats(t->out_t[0].data, want, 4, 1e-6f);
	t_free(t);
}

static void test_resize_nearest_modes(void **state)
{
	static const float x[4] = { 10, 20, 30, 40 };
	static const int64_t sizes[1] = { 8 };
	/* asymmetric, x_orig = o / 2: round_prefer_ceil takes 0.5 up. */
	static const float ceil_want[8] = { 10, 20, 20, 30, 30, 40, 40, 40 };
	static const float floor_want[8] = { 10, 10, 20, 20, 30, 30, 40, 40 };
	struct t_node *t = t_new("Resize", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_skip_input(t);
	t_skip_input(t);
	t_input(t, NPU_DTYPE_INT64, sizes, true, 1, D(1));
	t_attr_str(t, "coordinate_transformation_mode", "asymmetric");
	t_attr_str(t, "nearest_mode", "round_prefer_ceil");
	t_run(t);
	assert_floats(t->out_t[0].data, ceil_want, 8, 0);
	t_free(t);

	t = t_new("Resize", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_skip_input(t);
	t_skip_input(t);
	t_input(t, NPU_DTYPE_INT64, sizes, true, 1, D(1));
	t_attr_str(t, "coordinate_transformation_mode", "asymmetric");
	t_attr_str(t, "nearest_mode", "round_prefer_floor");
	t_run(t);
	assert_floats(t->out_t[0].data, floor_want, 8, 0);
	t_free(t);
}

/*
 * Nearest 2-D upsampling against a direct reference (asymmetric, floor:
 * source index o * in / out): 2x (each column twice, rows repeated),
 * 3x, mixed, and a downsample, on the calling thread and on 2 threads.
 */
static void test_resize_nearest2d_matches_reference(void **state)
{
	static const int64_t cases[][4] = {	/* in_h, in_w, out_h, out_w */
		{ 5, 7, 10, 14 }, { 4, 5, 12, 15 }, { 3, 9, 6, 27 },
		{ 7, 3, 21, 6 }, { 40, 33, 80, 66 }, { 9, 8, 4, 4 },
	};
	struct npu_threadpool *pool = npu_threadpool_create(2);
	size_t c, p, i;

	(void)state;
	assert_non_null(pool);
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const int64_t ih = cases[c][0], iw = cases[c][1];
		const int64_t oh = cases[c][2], ow = cases[c][3], planes = 6;
		int64_t sizes[4] = { 2, 3, oh, ow }, n, o;
		float *x = malloc((size_t)(planes * ih * iw) * sizeof(float));
		float *want = malloc((size_t)(planes * oh * ow) * sizeof(float));

		assert_non_null(x);
		assert_non_null(want);
		for (i = 0; i < (size_t)(planes * ih * iw); i++)
			x[i] = (float)((i * 37) % 101) - 50.0f;
		for (n = 0; n < planes; n++)
			for (o = 0; o < oh * ow; o++)
				want[n * oh * ow + o] =
					x[(n * ih + o / ow * ih / oh) * iw + o % ow * iw / ow];
		for (p = 0; p < 2; p++) {
			struct t_node *t = t_new("Resize", 13, 1);

			t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(2), D(3), D(ih), D(iw));
			t_skip_input(t);
			t_skip_input(t);
			t_input(t, NPU_DTYPE_INT64, sizes, true, 1, D(4));
			t_attr_str(t, "coordinate_transformation_mode", "asymmetric");
			t_attr_str(t, "nearest_mode", "floor");
			t_run_pool(t, p ? pool : NULL);
			assert_shape(&t->out_t[0], 4, D(2), D(3), oh, ow);
			assert_floats(t->out_t[0].data, want, (size_t)(planes * oh * ow), 0);
			t_free(t);
		}
		free(x);
		free(want);
	}
	npu_threadpool_destroy(pool);
}

/*
 * Concat large enough for the parallel path, along each axis (so with one
 * and with many rows per input), uneven inputs and an empty one, against
 * a direct reference; the calling thread and 2 threads.
 */
static void test_concat_parallel_matches_reference(void **state)
{
	static const int64_t dims[3][3] = {	/* per input: a, b, c */
		{ 3, 70, 65 }, { 3, 70, 65 }, { 3, 70, 65 },
	};
	struct npu_threadpool *pool = npu_threadpool_create(2);
	int axis;
	size_t p, i;

	(void)state;
	assert_non_null(pool);
	for (axis = 0; axis < 3; axis++) {
		int64_t d[4][3], out[3], k;
		float *x[4], *want;
		size_t ns[4], total = 1;
		int j, a;

		/* Inputs differ along the axis: 1x, 2x, 0 (empty), 3x wide. */
		for (j = 0; j < 4; j++) {
			static const int64_t mul[4] = { 1, 2, 0, 3 };

			for (a = 0; a < 3; a++)
				d[j][a] = a == axis ? dims[0][a] * mul[j] : dims[0][a];
			ns[j] = (size_t)(d[j][0] * d[j][1] * d[j][2]);
			x[j] = malloc(ns[j] * sizeof(float) + 4);
			assert_non_null(x[j]);
			for (i = 0; i < ns[j]; i++)
				x[j][i] = (float)(j * 1000000 + (int)i);
		}
		for (a = 0; a < 3; a++) {
			out[a] = d[0][a];
			if (a == axis)
				out[a] = d[0][a] + d[1][a] + d[2][a] + d[3][a];
			total *= (size_t)out[a];
		}
		want = malloc(total * sizeof(float));
		assert_non_null(want);
		for (k = 0; k < (int64_t)total; k++) {
			int64_t idx[3] = { k / (out[1] * out[2]), k / out[2] % out[1], k % out[2] };

			for (j = 0; j < 4; j++) {
				if (idx[axis] < d[j][axis])
					break;
				idx[axis] -= d[j][axis];
			}
			want[k] = x[j][(idx[0] * d[j][1] + idx[1]) * d[j][2] + idx[2]];
		}
		for (p = 0; p < 2; p++) {
			struct t_node *t = t_new("Concat", 13, 1);

			for (j = 0; j < 4; j++)
				t_input(t, NPU_DTYPE_FLOAT, x[j], false, 3, d[j][0],
					d[j][1], d[j][2]);
			t_attr_int(t, "axis", axis);
			t_run_pool(t, p ? pool : NULL);
			assert_shape(&t->out_t[0], 3, out[0], out[1], out[2]);
			assert_floats(t->out_t[0].data, want, total, 0);
			t_free(t);
		}
		for (j = 0; j < 4; j++)
			free(x[j]);
		free(want);
	}
	npu_threadpool_destroy(pool);
}

static void test_resize_rejects_antialias(void **state)
{
	static const float x[4], scales[1] = { 0.5f };
	struct t_node *t = t_new("Resize", 18, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_skip_input(t);
	t_input(t, NPU_DTYPE_FLOAT, scales, true, 1, D(1));
	t_attr_str(t, "mode", "linear");
	t_attr_int(t, "antialias", 1);
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "antialias"));
	t_free(t);
}

/* ---- quantization ---- */

static void test_quantize_rounds_half_to_even_and_saturates(void **state)
{
	static const float x[8] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300, -300, 3.49f };
	static const float scale[1] = { 1 };
	static const uint8_t zp_u[1] = { 0 };
	static const int8_t zp_s[1] = { 0 };
	static const uint8_t want_u[8] = { 0, 2, 2, 0, 0, 255, 0, 3 };
	static const int8_t want_s[8] = { 0, 2, 2, 0, -2, 127, -128, 3 };
	struct t_node *t = t_new("QuantizeLinear", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(8));
	t_input(t, NPU_DTYPE_FLOAT, scale, true, 0);
	t_input(t, NPU_DTYPE_UINT8, zp_u, true, 0);
	t_run(t);
	assert_int_equal(t->out_t[0].dtype, NPU_DTYPE_UINT8);
	assert_memory_equal(t->out_t[0].data, want_u, 8);
	t_free(t);

	t = t_new("QuantizeLinear", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(8));
	t_input(t, NPU_DTYPE_FLOAT, scale, true, 0);
	t_input(t, NPU_DTYPE_INT8, zp_s, true, 0);
	t_run(t);
	assert_int_equal(t->out_t[0].dtype, NPU_DTYPE_INT8);
	assert_memory_equal(t->out_t[0].data, want_s, 8);
	t_free(t);
}

static void test_dequantize_per_axis(void **state)
{
	static const uint8_t x[4] = { 10, 10, 20, 20 };	/* 2x2, axis 0 */
	static const float scale[2] = { 1, 0.5f };
	static const uint8_t zp[2] = { 0, 10 };
	static const float want[4] = { 10, 10, 5, 5 };
	struct t_node *t = t_new("DequantizeLinear", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_UINT8, x, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, scale, true, 1, D(2));
	t_input(t, NPU_DTYPE_UINT8, zp, true, 1, D(2));
	t_attr_int(t, "axis", 0);
	t_run(t);
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

/* ---- ConvTranspose ---- */

static void test_convtranspose_1d_scatters_kernel(void **state)
{
	static const float x[3] = { 0, 1, 2 };
	static const float w[6] = { 1, 1, 1, 1, 1, 1 };	/* 1x2x3 */
	/* From the ONNX ConvTranspose 1-D example. */
	static const float want[10] = { 0, 1, 3, 3, 2, 0, 1, 3, 3, 2 };
	struct t_node *t = t_new("ConvTranspose", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(1), D(3));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 3, D(1), D(2), D(3));
	t_run(t);
	assert_shape(&t->out_t[0], 3, D(1), D(2), D(5));
	assert_floats(t->out_t[0].data, want, 10, 1e-6f);
	t_free(t);
}

/* Runs t's compute() again into NaN-filled outputs; its status. */
static npu_status t_compute_again(struct t_node *t, size_t n)
{
	struct npu_op_ctx ctx;

	memset(t->out_t[0].data, 0xff, n * sizeof(float));	/* NaNs */
	memset(&ctx, 0, sizeof(ctx));
	ctx.node = &t->node;
	ctx.inputs = t->in_p;
	ctx.num_inputs = t->node.num_inputs;
	ctx.outputs = t->out_p;
	ctx.num_outputs = 1;
	ctx.err = &t->err;
	return t->def->compute(&ctx);
}

/*
 * Conv with constant weights: prepare() packs them once (op_state), and
 * compute() then gives bitwise the same output as packing per call;
 * release() frees them. Non-constant weights are left to compute().
 */
static void test_conv_prepared_weights_match_per_call_packing(void **state)
{
	enum { C = 5, M = 7, H = 9, W = 40 };
	static float x[C * H * W], w[M * C * 3 * 3], b[M];
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	struct t_node *t = t_new("Conv", 11, 1);
	float *y0;
	size_t i, n = (size_t)M * H * W;
	uint32_t s = 12345;

	(void)state;
	for (i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		w[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
	for (i = 0; i < M; i++)
		b[i] = (float)i * 0.25f - 1.0f;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(C), D(H), D(W));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(M), D(C), D(3), D(3));
	t_input(t, NPU_DTYPE_FLOAT, b, true, 1, D(M));
	t_attr_ints(t, "pads", pads, 4);
	t_run(t);
	y0 = malloc(n * sizeof(float));
	assert_non_null(y0);
	memcpy(y0, t->out_t[0].data, n * sizeof(float));
	assert_non_null(t->def->prepare);
	assert_int_equal(t->def->prepare(t->def, &t->node, NULL, &t->err), NPU_OK);
	assert_non_null(t->node.op_state);
	assert_int_equal(t_compute_again(t, n), NPU_OK);
	assert_memory_equal(t->out_t[0].data, y0, n * sizeof(float));
	t->def->release(&t->node);
	assert_null(t->node.op_state);
	/* Weights computed at run time: nothing to pack at plan time. */
	t->vals[1].constant = NULL;
	assert_int_equal(t->def->prepare(t->def, &t->node, NULL, &t->err), NPU_OK);
	assert_null(t->node.op_state);
	free(y0);
	t_free(t);
}

/*
 * MatMul (A's batches folded into M) and Gemm (transB, C) with a
 * constant B: prepare() packs B once, compute() then gives bitwise the
 * output of packing per call, and release() frees it.
 */
static void test_gemm_prepared_b_matches_per_call_packing(void **state)
{
	enum { BA = 2, M = 5, K = 13, N = 70 };
	static float a[BA * M * K], b[K * N], c[N];
	uint32_t s = 777;
	int op;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		a[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
	for (i = 0; i < sizeof(b) / sizeof(b[0]); i++)
		b[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
	for (i = 0; i < N; i++)
		c[i] = (float)i * 0.125f;
	for (op = 0; op < 2; op++) {
		struct t_node *t = t_new(op ? "Gemm" : "MatMul", 13, 1);
		size_t n = (size_t)BA * M * N;
		float *y0;

		if (op) {
			t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(BA * M), D(K));
			t_input(t, NPU_DTYPE_FLOAT, b, true, 2, D(N), D(K));
			t_input(t, NPU_DTYPE_FLOAT, c, true, 1, D(N));
			t_attr_int(t, "transB", 1);
			t_attr_float(t, "alpha", 0.5f);
		} else {
			t_input(t, NPU_DTYPE_FLOAT, a, false, 3, D(BA), D(M), D(K));
			t_input(t, NPU_DTYPE_FLOAT, b, true, 2, D(K), D(N));
		}
		t_run(t);
		y0 = malloc(n * sizeof(float));
		assert_non_null(y0);
		memcpy(y0, t->out_t[0].data, n * sizeof(float));
		assert_non_null(t->def->prepare);
		assert_int_equal(t->def->prepare(t->def, &t->node, NULL, &t->err), NPU_OK);
		assert_non_null(t->node.op_state);
		assert_int_equal(t_compute_again(t, n), NPU_OK);
		assert_memory_equal(t->out_t[0].data, y0, n * sizeof(float));
		t->def->release(&t->node);
		assert_null(t->node.op_state);
		/* B computed at run time: nothing to pack at plan time. */
		t->vals[1].constant = NULL;
		assert_int_equal(t->def->prepare(t->def, &t->node, NULL, &t->err), NPU_OK);
		assert_null(t->node.op_state);
		free(y0);
		t_free(t);
	}
}

/* ---- misc data movement ---- */

static void test_pad_reflect_mirrors_without_edge(void **state)
{
	static const float x[3] = { 1, 2, 3 };
	static const int64_t pads[2] = { 2, 2 };
	static const float want[7] = { 3, 2, 1, 2, 3, 2, 1 };
	struct t_node *t = t_new("Pad", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(3));
	t_input(t, NPU_DTYPE_INT64, pads, true, 1, D(2));
	t_attr_str(t, "mode", "reflect");
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(7));
	assert_floats(t->out_t[0].data, want, 7, 0);
	t_free(t);
}

static void test_gather_takes_negative_indices(void **state)
{
	static const float x[6] = { 1, 2, 3, 4, 5, 6 };	/* 3x2 */
	static const int64_t idx[2] = { -1, 0 };
	static const float want[4] = { 5, 6, 1, 2 };
	struct t_node *t = t_new("Gather", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(3), D(2));
	t_input(t, NPU_DTYPE_INT64, idx, false, 1, D(2));
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

static void test_transpose_permutes_axes(void **state)
{
	static const int32_t x[6] = { 1, 2, 3, 4, 5, 6 };	/* 2x3 */
	static const int32_t want[6] = { 1, 4, 2, 5, 3, 6 };
	struct t_node *t = t_new("Transpose", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, x, false, 2, D(2), D(3));
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(3), D(2));
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);
}

static void test_split_opset18_num_outputs_uneven(void **state)
{
	static const float x[5] = { 1, 2, 3, 4, 5 };
	struct t_node *t = t_new("Split", 18, 2);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(5));
	t_attr_int(t, "num_outputs", 2);
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(3));
	assert_shape(&t->out_t[1], 1, D(2));
	assert_float_equal(((float *)t->out_t[1].data)[0], 4, 0);
	t_free(t);
}

static void test_unsqueeze_attr_before_13_input_after(void **state)
{
	static const float x[2];
	static const int64_t axes[2] = { 0, -1 };
	struct t_node *t = t_new("Unsqueeze", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(2));
	t_attr_ints(t, "axes", axes, 2);
	t_run(t);
	assert_shape(&t->out_t[0], 3, D(1), D(2), D(1));
	t_free(t);

	t = t_new("Unsqueeze", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(2));
	t_input(t, NPU_DTYPE_INT64, axes, true, 1, D(2));
	t_run(t);
	assert_shape(&t->out_t[0], 3, D(1), D(2), D(1));
	t_free(t);
}

static void test_reduce_sum_noop_with_empty_axes(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };
	struct t_node *t = t_new("ReduceSum", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(2));
	t_attr_int(t, "noop_with_empty_axes", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_floats(t->out_t[0].data, x, 4, 0);
	t_free(t);

	t = t_new("ReduceSum", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(2));
	t_attr_int(t, "keepdims", 0);
	t_run(t);
	assert_shape(&t->out_t[0], 0);
	assert_float_equal(((float *)t->out_t[0].data)[0], 10, 0);
	t_free(t);
}

static void test_reduce_mean_axes_attribute_before_18(void **state)
{
	static const float x[6] = { 1, 2, 3, 4, 5, 6 };	/* 2x3 */
	static const int64_t axes[1] = { 0 };
	static const float want[3] = { 2.5f, 3.5f, 4.5f };
	struct t_node *t = t_new("ReduceMean", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_attr_ints(t, "axes", axes, 1);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(1), D(3));
	assert_floats(t->out_t[0].data, want, 3, 1e-6f);
	t_free(t);
}

static void test_cast_float_to_half_and_int(void **state)
{
	static const float x[4] = { 1.5f, -2.7f, 65504, 1e-8f };
	static const uint16_t want_h[4] = { 0x3e00, 0xc166, 0x7bff, 0x0000 };
	static const int64_t want_i[4] = { 1, -2, 65504, 0 };
	struct t_node *t = t_new("Cast", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_attr_int(t, "to", NPU_DTYPE_FLOAT16);
	t_run(t);
	assert_memory_equal(t->out_t[0].data, want_h, sizeof(want_h));
	t_free(t);

	t = t_new("Cast", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_attr_int(t, "to", NPU_DTYPE_INT64);
	t_run(t);
	assert_memory_equal(t->out_t[0].data, want_i, sizeof(want_i));
	t_free(t);
}

/*
 * Out-of-range values saturate instead of overflowing the C conversion
 * (undefined behaviour, found by fuzz_onnx through constant folding):
 * integers clamp to the type's range, NaN becomes 0, and doubles beyond
 * float's range become +-inf.
 */
static void test_cast_out_of_range_saturates(void **state)
{
	static const float x[7] = { 1e30f, -1e30f, INFINITY, -INFINITY, NAN, 300.7f, -300.7f };
	static const int8_t want8[7] = { 127, -128, 127, -128, 0, 127, -128 };
	static const int32_t want32[7] = { INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, 300, -300 };
	static const uint64_t wantu[7] = { UINT64_MAX - 2047, 0, UINT64_MAX - 2047, 0, 0, 300, 0 };
	static const double xd[3] = { 1e300, -1e300, 3.5 };
	const struct {
		enum npu_dtype to;
		const void *want;
		size_t size;
	} cases[] = {
		{ NPU_DTYPE_INT8, want8, sizeof(want8) },
		{ NPU_DTYPE_INT32, want32, sizeof(want32) },
		{ NPU_DTYPE_UINT64, wantu, sizeof(wantu) },
	};
	const float *yf;
	struct t_node *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = t_new("Cast", 13, 1);
		t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(7));
		t_attr_int(t, "to", cases[i].to);
		t_run(t);
		assert_memory_equal(t->out_t[0].data, cases[i].want, cases[i].size);
		t_free(t);
	}

	t = t_new("Cast", 13, 1);
	t_input(t, NPU_DTYPE_DOUBLE, xd, false, 1, D(3));
	t_attr_int(t, "to", NPU_DTYPE_FLOAT);
	t_run(t);
	yf = t->out_t[0].data;
	assert_true(isinf(yf[0]) && yf[0] > 0);
	assert_true(isinf(yf[1]) && yf[1] < 0);
	assert_true(yf[2] == 3.5f);
	t_free(t);
}

/* ---- honest rejections ---- */

static void test_conv_rejects_int8_naming_node_and_type(void **state)
{
	static const int8_t x[4], w[1];
	struct t_node *t = t_new("Conv", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT8, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_INT8, w, true, 4, D(1), D(1), D(1), D(1));
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "Conv node 'n0'"));
	assert_non_null(strstr(t->err.msg, "int8"));
	t_free(t);
}

static void test_unknown_attribute_is_unsupported(void **state)
{
	static const float x[4];
	struct t_node *t = t_new("Relu", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_attr_int(t, "frobnicate", 1);
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "'frobnicate'"));
	t_free(t);
}

static void test_maxpool_indices_row_and_column_major(void **state)
{
	static const float x[4] = { 1, 4, 3, 2 };		/* 2x2 */
	static const int64_t k[2] = { 2, 2 };
	static const float want[1] = { 4 };
	static const int64_t row[1] = { 1 }, col[1] = { 2 };
	struct t_node *t = t_new("MaxPool", 12, 2);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_attr_ints(t, "kernel_shape", k, 2);
	t_run(t);
	assert_floats(t->out_t[0].data, want, 1, 0);
	assert_memory_equal(t->out_t[1].data, row, sizeof(row));
	t_free(t);

	t = t_new("MaxPool", 12, 2);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_attr_ints(t, "kernel_shape", k, 2);
	t_attr_int(t, "storage_order", 1);
	t_run(t);
	assert_memory_equal(t->out_t[1].data, col, sizeof(col));
	t_free(t);
}

static void test_averagepool_rejects_indices_output(void **state)
{
	static const float x[16];
	static const int64_t k[2] = { 2, 2 };
	struct t_node *t = t_new("AveragePool", 12, 2);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(4), D(4));
	t_attr_ints(t, "kernel_shape", k, 2);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(t->err.msg, "2 outputs"));
	t_free(t);
}

static void test_batchnorm_training_mode_is_unsupported(void **state)
{
	static const float x[4], p[1];
	struct t_node *t = t_new("BatchNormalization", 12, 1);

	(void)state;
	/* Opset 14 defines training_mode; before it, it is rejected. */
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, p, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, p, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, p, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, p, true, 1, D(1));
	t_attr_int(t, "training_mode", 1);
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "training_mode"));
	t_free(t);
}

static void test_batchnorm_training_mode_uses_batch_statistics(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };
	static const float one[1] = { 1 }, zero[1] = { 0 };
	static const float rm[1] = { 0.25f }, rv[1] = { 1.025f };
	float want[4];
	struct t_node *t = t_new("BatchNormalization", 15, 3);
	int i;

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, one, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, zero, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, zero, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, one, true, 1, D(1));
	t_attr_int(t, "training_mode", 1);
	t_run(t);
	for (i = 0; i < 4; i++)	/* batch mean 2.5, variance 1.25 */
		want[i] = (x[i] - 2.5f) / sqrtf(1.25f + 1e-5f);
	assert_floats(t->out_t[0].data, want, 4, 1e-5f);
	assert_floats(t->out_t[1].data, rm, 1, 1e-6f);
	assert_floats(t->out_t[2].data, rv, 1, 1e-6f);
	t_free(t);
}

/* ---- index ops: GatherElements, ScatterElements, GatherND, ScatterND ---- */

static void assert_msg_has(const struct t_node *t, const char *what)
{
	if (!strstr(t->err.msg, what))
		fail_msg("message '%s' does not mention '%s'", t->err.msg, what);
}

static void test_gather_elements_negative_indices_along_axis(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };		/* 2x2 */
	static const int64_t idx[4] = { 0, -2, -1, 0 };
	static const float want[4] = { 1, 1, 4, 3 };
	struct t_node *t = t_new("GatherElements", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_INT64, idx, false, 2, D(2), D(2));
	t_attr_int(t, "axis", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

static void test_gather_elements_index_out_of_range_is_error(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };
	static const int64_t idx[2] = { 0, 2 };
	struct t_node *t = t_new("GatherElements", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_INT64, idx, false, 2, D(2), D(1));
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "n0");
	assert_msg_has(t, "index 2");
	t_free(t);
}

static void test_gather_elements_rejects_axis_out_of_range(void **state)
{
	static const float x[4];
	static const int64_t idx[4];
	struct t_node *t = t_new("GatherElements", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_INT64, idx, false, 2, D(2), D(2));
	t_attr_int(t, "axis", 2);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "axis 2");
	t_free(t);
}

static void test_scatter_elements_add_accumulates_duplicates(void **state)
{
	static const float x[5] = { 1, 2, 3, 4, 5 };		/* 1x5 */
	static const int64_t idx[2] = { 1, 1 };
	static const float upd[2] = { 1.1f, 2.1f };
	static const float want[5] = { 1, 5.2f, 3, 4, 5 };
	struct t_node *t = t_new("ScatterElements", 18, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(1), D(5));
	t_input(t, NPU_DTYPE_INT64, idx, false, 2, D(1), D(2));
	t_input(t, NPU_DTYPE_FLOAT, upd, false, 2, D(1), D(2));
	t_attr_int(t, "axis", 1);
	t_attr_str(t, "reduction", "add");
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(1), D(5));
	assert_floats(t->out_t[0].data, want, 5, 1e-6f);
	t_free(t);
}

static void test_scatter_elements_index_out_of_range_is_error(void **state)
{
	static const int32_t x[3] = { 1, 2, 3 };
	static const int64_t idx[1] = { -4 };
	static const int32_t upd[1] = { 9 };
	struct t_node *t = t_new("ScatterElements", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, x, false, 1, D(3));
	t_input(t, NPU_DTYPE_INT64, idx, false, 1, D(1));
	t_input(t, NPU_DTYPE_INT32, upd, false, 1, D(1));
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "index -4");
	t_free(t);
}

static void test_gather_nd_batch_dims_selects_per_batch(void **state)
{
	static const int32_t x[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };	/* 2x2x2 */
	static const int64_t idx[2] = { 1, 0 };			/* 2x1 */
	static const int32_t want[4] = { 2, 3, 4, 5 };
	struct t_node *t = t_new("GatherND", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, x, false, 3, D(2), D(2), D(2));
	t_input(t, NPU_DTYPE_INT64, idx, false, 2, D(2), D(1));
	t_attr_int(t, "batch_dims", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);
}

static void test_gather_nd_rejects_too_long_index_tuple(void **state)
{
	static const float x[4];
	static const int64_t idx[3];
	struct t_node *t = t_new("GatherND", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_INT64, idx, false, 2, D(1), D(3));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "indices");
	t_free(t);
}

static void test_scatter_nd_writes_slices_and_checks_range(void **state)
{
	static const float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const int64_t idx[4] = { 4, 3, 1, 7 };
	static const int64_t bad_idx[4] = { 4, 3, 1, 8 };
	static const float upd[4] = { 9, 10, 11, 12 };
	static const float want[8] = { 1, 11, 3, 10, 9, 6, 7, 12 };
	struct t_node *t = t_new("ScatterND", 16, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(8));
	t_input(t, NPU_DTYPE_INT64, idx, false, 2, D(4), D(1));
	t_input(t, NPU_DTYPE_FLOAT, upd, false, 1, D(4));
	t_run(t);
	assert_floats(t->out_t[0].data, want, 8, 0);
	t_free(t);

	t = t_new("ScatterND", 16, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(8));
	t_input(t, NPU_DTYPE_INT64, bad_idx, false, 2, D(4), D(1));
	t_input(t, NPU_DTYPE_FLOAT, upd, false, 1, D(4));
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "index 8");
	t_free(t);
}

static void test_compress_keeps_selected_slices(void **state)
{
	static const float x[6] = { 1, 2, 3, 4, 5, 6 };	/* 3x2 */
	static const uint8_t cond[3] = { 0, 1, 1 };
	static const float want[4] = { 3, 4, 5, 6 };
	struct t_node *t = t_new("Compress", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(3), D(2));
	t_input(t, NPU_DTYPE_BOOL, cond, true, 1, D(3));
	t_attr_int(t, "axis", 0);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);
}

static void test_compress_rejects_2d_condition(void **state)
{
	static const float x[4];
	static const uint8_t cond[4];
	struct t_node *t = t_new("Compress", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_BOOL, cond, true, 2, D(2), D(2));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "condition");
	t_free(t);
}

static void test_nonzero_lists_coordinates(void **state)
{
	static const int32_t x[4] = { 1, 0, 0, 2 };		/* 2x2 */
	static const int64_t want[4] = { 0, 1, 0, 1 };
	struct t_node *t = t_new("NonZero", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, x, true, 2, D(2), D(2));
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);

	t = t_new("NonZero", 13, 1);
	t_input(t, NPU_DTYPE_INT32, x, true, 2, D(2), D(2));
	t_attr_int(t, "axis", 0);
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_msg_has(t, "'axis'");
	t_free(t);
}

/* ---- losses ---- */

static void test_nll_loss_mean_divides_by_used_weights(void **state)
{
	static const float x[6] = { -1, -2, -3, -4, -5, -6 };	/* N=2, C=3 */
	static const int64_t target[2] = { 2, 1 };
	static const float w[3] = { 1, 2, 3 };
	static const float want[1] = { 3 };	/* (3 * 3) / 3; n=1 ignored */
	struct t_node *t = t_new("NegativeLogLikelihoodLoss", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_input(t, NPU_DTYPE_INT64, target, false, 1, D(2));
	t_input(t, NPU_DTYPE_FLOAT, w, false, 1, D(3));
	t_attr_int(t, "ignore_index", 1);
	t_run(t);
	assert_int_equal(t->out_t[0].shape.rank, 0);
	assert_floats(t->out_t[0].data, want, 1, 1e-6f);
	t_free(t);
}

static void test_nll_loss_target_out_of_range_is_error(void **state)
{
	static const float x[6];
	static const int64_t target[2] = { 0, 3 };
	struct t_node *t = t_new("NegativeLogLikelihoodLoss", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_input(t, NPU_DTYPE_INT64, target, false, 1, D(2));
	t_attr_str(t, "reduction", "sum");
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "target 3");
	t_free(t);
}

static void test_softmax_cross_entropy_gives_loss_and_log_prob(void **state)
{
	static const double x[2] = { 0, 0 };			/* N=1, C=2 */
	static const int32_t target[1] = { 1 };
	struct t_node *t = t_new("SoftmaxCrossEntropyLoss", 13, 2);
	const double *loss, *lp;

	(void)state;
	t_input(t, NPU_DTYPE_DOUBLE, x, false, 2, D(1), D(2));
	t_input(t, NPU_DTYPE_INT32, target, false, 1, D(1));
	t_attr_str(t, "reduction", "none");
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(1));
	assert_shape(&t->out_t[1], 2, D(1), D(2));
	loss = t->out_t[0].data;
	lp = t->out_t[1].data;
	assert_true(fabs(loss[0] - log(2.0)) < 1e-12);
	assert_true(fabs(lp[0] + log(2.0)) < 1e-12 &&
		    fabs(lp[1] + log(2.0)) < 1e-12);
	t_free(t);
}

static void test_softmax_cross_entropy_rejects_target_rank(void **state)
{
	static const float x[2];
	static const int64_t target[1];
	struct t_node *t = t_new("SoftmaxCrossEntropyLoss", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(1), D(2));
	t_input(t, NPU_DTYPE_INT64, target, false, 2, D(1), D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "target");
	t_free(t);
}

/* ---- layout: Trilu, DepthToSpace, SpaceToDepth, ReverseSequence ---- */

static void test_trilu_lower_and_upper_with_k(void **state)
{
	static const int32_t x[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	static const int64_t km1[1] = { -1 };
	static const int32_t lower[9] = { 0, 0, 0, 4, 0, 0, 7, 8, 0 };
	static const int32_t upper[9] = { 1, 2, 3, 0, 5, 6, 0, 0, 9 };
	struct t_node *t = t_new("Trilu", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, x, false, 2, D(3), D(3));
	t_input(t, NPU_DTYPE_INT64, km1, false, 0);
	t_attr_int(t, "upper", 0);
	t_run(t);
	assert_memory_equal(t->out_t[0].data, lower, sizeof(lower));
	t_free(t);

	t = t_new("Trilu", 14, 1);
	t_input(t, NPU_DTYPE_INT32, x, false, 2, D(3), D(3));
	t_run(t);
	assert_memory_equal(t->out_t[0].data, upper, sizeof(upper));
	t_free(t);
}

static void test_trilu_rejects_rank_1(void **state)
{
	static const float x[3];
	struct t_node *t = t_new("Trilu", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(3));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "rank 1");
	t_free(t);
}

static void test_depth_to_space_dcr_crd_and_space_to_depth(void **state)
{
	static const float x[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const float dcr[8] = { 0, 2, 4, 6, 1, 3, 5, 7 };
	static const float crd[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const float s2d[8] = { 0, 4, 1, 5, 2, 6, 3, 7 };
	struct t_node *t = t_new("DepthToSpace", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(8), D(1), D(1));
	t_attr_int(t, "blocksize", 2);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(2), D(2), D(2));
	assert_floats(t->out_t[0].data, dcr, 8, 0);
	t_free(t);

	t = t_new("DepthToSpace", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(8), D(1), D(1));
	t_attr_int(t, "blocksize", 2);
	t_attr_str(t, "mode", "CRD");
	t_run(t);
	assert_floats(t->out_t[0].data, crd, 8, 0);
	t_free(t);

	t = t_new("SpaceToDepth", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(2), D(2));
	t_attr_int(t, "blocksize", 2);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(8), D(1), D(1));
	assert_floats(t->out_t[0].data, s2d, 8, 0);
	t_free(t);
}

static void test_depth_to_space_rejects_channels_not_multiple(void **state)
{
	static const float x[6];
	struct t_node *t = t_new("DepthToSpace", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(6), D(1), D(1));
	t_attr_int(t, "blocksize", 2);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "blocksize");
	t_free(t);
}

static void test_reverse_sequence_reverses_each_prefix(void **state)
{
	static const int64_t x[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };	/* T=4, B=2 */
	static const int64_t lens[2] = { 4, 2 };
	static const int64_t bad_lens[2] = { 5, 1 };
	static const int64_t want[8] = { 6, 3, 4, 1, 2, 5, 0, 7 };
	struct t_node *t = t_new("ReverseSequence", 10, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT64, x, false, 2, D(4), D(2));
	t_input(t, NPU_DTYPE_INT64, lens, false, 1, D(2));
	t_attr_int(t, "time_axis", 0);
	t_attr_int(t, "batch_axis", 1);
	t_run(t);
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);

	t = t_new("ReverseSequence", 10, 1);
	t_input(t, NPU_DTYPE_INT64, x, false, 2, D(4), D(2));
	t_input(t, NPU_DTYPE_INT64, bad_lens, false, 1, D(2));
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "sequence_lens[0] = 5");
	t_free(t);
}

/* ---- generators: Range, EyeLike, OneHot, windows ---- */

static void test_range_counts_with_negative_delta(void **state)
{
	static const int64_t start[1] = { 10 }, limit[1] = { 4 };
	static const int64_t delta[1] = { -3 }, zero[1] = { 0 };
	static const int64_t want[2] = { 10, 7 };
	struct t_node *t = t_new("Range", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT64, start, true, 0);
	t_input(t, NPU_DTYPE_INT64, limit, true, 0);
	t_input(t, NPU_DTYPE_INT64, delta, true, 0);
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(2));
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);

	t = t_new("Range", 11, 1);
	t_input(t, NPU_DTYPE_INT64, start, true, 0);
	t_input(t, NPU_DTYPE_INT64, limit, true, 0);
	t_input(t, NPU_DTYPE_INT64, zero, true, 0);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "delta");
	t_free(t);
}

static void test_eye_like_offsets_diagonal_and_casts(void **state)
{
	static const float x[6];
	static const int32_t want[6] = { 0, 1, 0, 0, 0, 1 };
	struct t_node *t = t_new("EyeLike", 9, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_attr_int(t, "k", 1);
	t_attr_int(t, "dtype", NPU_DTYPE_INT32);
	t_run(t);
	assert_int_equal(t->out_t[0].dtype, NPU_DTYPE_INT32);
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);

	t = t_new("EyeLike", 9, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(6));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "rank 1");
	t_free(t);
}

static void test_one_hot_negative_and_out_of_range_indices(void **state)
{
	static const int64_t idx[3] = { 0, -1, 5 };
	static const float depth[1] = { 3 };
	static const float vals[2] = { 0, 1 }, vals3[3];
	static const float want[9] = { 1, 0, 0, 0, 0, 1, 0, 0, 0 };
	struct t_node *t = t_new("OneHot", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT64, idx, false, 1, D(3));
	t_input(t, NPU_DTYPE_FLOAT, depth, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, vals, false, 1, D(2));
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(3), D(3));
	assert_floats(t->out_t[0].data, want, 9, 0);
	t_free(t);

	t = t_new("OneHot", 11, 1);
	t_input(t, NPU_DTYPE_INT64, idx, false, 1, D(3));
	t_input(t, NPU_DTYPE_FLOAT, depth, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, vals3, false, 1, D(3));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "values");
	t_free(t);
}

static void test_hann_window_periodic_and_negative_size(void **state)
{
	static const int32_t size[1] = { 4 }, neg[1] = { -1 };
	static const float want[4] = { 0, 0.5f, 1, 0.5f };
	struct t_node *t = t_new("HannWindow", 17, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, size, true, 0);
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(4));
	assert_floats(t->out_t[0].data, want, 4, 1e-6f);
	t_free(t);

	t = t_new("HannWindow", 17, 1);
	t_input(t, NPU_DTYPE_INT32, neg, true, 0);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "negative");
	t_free(t);
}

/* ---- selection: ArgMax / ArgMin, Hardmax, TopK, CumSum ---- */

static void test_argmax_select_last_index_and_argmin(void **state)
{
	static const float x[6] = { 2, 2, 1, 1, 3, 3 };	/* 2x3 */
	static const int64_t first[2] = { 0, 1 }, last[2] = { 1, 2 };
	static const int32_t xi[6] = { 5, -1, -1, 0, 0, 7 };
	static const int64_t amin[2] = { 1, 0 };
	struct t_node *t = t_new("ArgMax", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_attr_int(t, "axis", 1);
	t_attr_int(t, "keepdims", 0);
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(2));
	assert_memory_equal(t->out_t[0].data, first, sizeof(first));
	t_free(t);

	t = t_new("ArgMax", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_attr_int(t, "axis", -1);
	t_attr_int(t, "select_last_index", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(1));
	assert_memory_equal(t->out_t[0].data, last, sizeof(last));
	t_free(t);

	t = t_new("ArgMin", 13, 1);
	t_input(t, NPU_DTYPE_INT32, xi, false, 2, D(2), D(3));
	t_attr_int(t, "axis", 1);
	t_run(t);
	assert_memory_equal(t->out_t[0].data, amin, sizeof(amin));
	t_free(t);
}

static void test_argmax_rejects_axis_out_of_range(void **state)
{
	static const float x[6];
	struct t_node *t = t_new("ArgMax", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_attr_int(t, "axis", 2);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "axis 2 out of range");
	t_free(t);
}

static void test_hardmax_marks_first_max(void **state)
{
	static const float x[6] = { 1, 3, 3, 0, -1, -2 };
	static const float want[6] = { 0, 1, 0, 1, 0, 0 };
	struct t_node *t = t_new("Hardmax", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_run(t);
	assert_floats(t->out_t[0].data, want, 6, 0);
	t_free(t);

	t = t_new("Hardmax", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	t_attr_int(t, "axis", -3);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	t_free(t);
}

static void test_top_k_largest_smallest_ties_by_index(void **state)
{
	static const float x[4] = { 3, 1, 3, 2 };
	static const int64_t k[1] = { 2 }, k5[1] = { 5 };
	static const float big[2] = { 3, 3 }, small[2] = { 1, 2 };
	static const int64_t big_i[2] = { 0, 2 }, small_i[2] = { 1, 3 };
	struct t_node *t = t_new("TopK", 11, 2);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_input(t, NPU_DTYPE_INT64, k, true, 1, D(1));
	t_run(t);
	assert_floats(t->out_t[0].data, big, 2, 0);
	assert_memory_equal(t->out_t[1].data, big_i, sizeof(big_i));
	t_free(t);

	t = t_new("TopK", 11, 2);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_input(t, NPU_DTYPE_INT64, k, true, 1, D(1));
	t_attr_int(t, "largest", 0);
	t_run(t);
	assert_floats(t->out_t[0].data, small, 2, 0);
	assert_memory_equal(t->out_t[1].data, small_i, sizeof(small_i));
	t_free(t);

	t = t_new("TopK", 11, 2);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_input(t, NPU_DTYPE_INT64, k5, true, 1, D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "K = 5");
	t_free(t);
}

static void test_cumsum_exclusive_reverse_and_bad_axis(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };
	static const int32_t axis0[1] = { 0 }, axis1[1] = { 1 };
	static const float want[4] = { 9, 7, 4, 0 };
	struct t_node *t = t_new("CumSum", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_input(t, NPU_DTYPE_INT32, axis0, true, 0);
	t_attr_int(t, "exclusive", 1);
	t_attr_int(t, "reverse", 1);
	t_run(t);
	assert_floats(t->out_t[0].data, want, 4, 0);
	t_free(t);

	t = t_new("CumSum", 14, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(4));
	t_input(t, NPU_DTYPE_INT32, axis1, true, 0);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "axis 1 out of range");
	t_free(t);
}

/* ---- integer elementwise: Mod, BitShift; CastLike; double reduce ---- */

static void test_mod_takes_divisor_sign_and_fmod_dividend_sign(void **state)
{
	static const int32_t a[5] = { -4, 7, 5, -3, INT32_MIN };
	static const int32_t b[5] = { 3, -3, 0, -3, -1 };
	static const int32_t mod[5] = { 2, -2, 0, 0, 0 };
	static const int32_t fmod_[5] = { -1, 1, 0, 0, 0 };
	struct t_node *t = t_new("Mod", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, a, false, 1, D(5));
	t_input(t, NPU_DTYPE_INT32, b, false, 1, D(5));
	t_run(t);
	assert_memory_equal(t->out_t[0].data, mod, sizeof(mod));
	t_free(t);

	t = t_new("Mod", 13, 1);
	t_input(t, NPU_DTYPE_INT32, a, false, 1, D(5));
	t_input(t, NPU_DTYPE_INT32, b, false, 1, D(5));
	t_attr_int(t, "fmod", 1);
	t_run(t);
	assert_memory_equal(t->out_t[0].data, fmod_, sizeof(fmod_));
	t_free(t);
}

static void test_mod_float_requires_fmod(void **state)
{
	static const float a[1], b[1];
	struct t_node *t = t_new("Mod", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, a, false, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, b, false, 1, D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "'fmod'");
	t_free(t);
}

static void test_bitshift_both_directions_and_wide_shifts(void **state)
{
	static const uint8_t x[3] = { 1, 255, 16 };
	static const uint8_t sl[3] = { 3, 1, 8 }, sr[3] = { 0, 4, 9 };
	static const uint8_t left[3] = { 8, 254, 0 }, right[3] = { 1, 15, 0 };
	struct t_node *t = t_new("BitShift", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_UINT8, x, false, 1, D(3));
	t_input(t, NPU_DTYPE_UINT8, sl, false, 1, D(3));
	t_attr_str(t, "direction", "LEFT");
	t_run(t);
	assert_memory_equal(t->out_t[0].data, left, sizeof(left));
	t_free(t);

	t = t_new("BitShift", 11, 1);
	t_input(t, NPU_DTYPE_UINT8, x, false, 1, D(3));
	t_input(t, NPU_DTYPE_UINT8, sr, false, 1, D(3));
	t_attr_str(t, "direction", "RIGHT");
	t_run(t);
	assert_memory_equal(t->out_t[0].data, right, sizeof(right));
	t_free(t);

	t = t_new("BitShift", 11, 1);
	t_input(t, NPU_DTYPE_UINT8, x, false, 1, D(3));
	t_input(t, NPU_DTYPE_UINT8, sr, false, 1, D(3));
	t_attr_str(t, "direction", "UP");
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "'direction'");
	t_free(t);
}

static void test_cast_like_takes_type_of_second_input(void **state)
{
	static const float x[2] = { 1.5f, -2.7f };
	static const int32_t like[1];
	static const int32_t want[2] = { 1, -2 };
	struct t_node *t = t_new("CastLike", 15, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(2));
	t_input(t, NPU_DTYPE_INT32, like, false, 1, D(1));
	t_run(t);
	assert_int_equal(t->out_t[0].dtype, NPU_DTYPE_INT32);
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);

	t = t_new("CastLike", 15, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(2));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	t_free(t);
}

static void test_reduce_log_sum_exp_double(void **state)
{
	static const double x[2] = { 0, 0 };
	struct t_node *t = t_new("ReduceLogSumExp", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_DOUBLE, x, false, 1, D(2));
	t_attr_int(t, "keepdims", 0);
	t_run(t);
	assert_int_equal(t->out_t[0].dtype, NPU_DTYPE_DOUBLE);
	assert_int_equal(t->out_t[0].shape.rank, 0);
	assert_true(fabs(((double *)t->out_t[0].data)[0] - log(2.0)) < 1e-12);
	t_free(t);
}

/* ---- NonMaxSuppression, GridSample, Einsum, Unique ---- */

static void test_nms_suppresses_overlap_and_counts_at_infer(void **state)
{
	static const float boxes[12] = {
		0, 0, 1, 1,   0, 0.1f, 1, 1.1f,   0, 2, 1, 3,
	};
	static const float scores[3] = { 0.9f, 0.8f, 0.7f };
	static const int64_t max_out[1] = { 3 };
	static const float iou[1] = { 0.5f }, bad_iou[1] = { 1.5f };
	static const int64_t want[6] = { 0, 0, 0, 0, 0, 2 };
	struct t_node *t = t_new("NonMaxSuppression", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, boxes, true, 3, D(1), D(3), D(4));
	t_input(t, NPU_DTYPE_FLOAT, scores, true, 3, D(1), D(1), D(3));
	t_input(t, NPU_DTYPE_INT64, max_out, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, iou, true, 1, D(1));
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(3));
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);

	t = t_new("NonMaxSuppression", 11, 1);
	t_input(t, NPU_DTYPE_FLOAT, boxes, true, 3, D(1), D(3), D(4));
	t_input(t, NPU_DTYPE_FLOAT, scores, true, 3, D(1), D(1), D(3));
	t_input(t, NPU_DTYPE_INT64, max_out, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, bad_iou, true, 1, D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "iou_threshold");
	t_free(t);
}

static void test_nms_rejects_boxes_not_4_wide(void **state)
{
	static const float boxes[9], scores[3];
	struct t_node *t = t_new("NonMaxSuppression", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, boxes, false, 3, D(1), D(3), D(3));
	t_input(t, NPU_DTYPE_FLOAT, scores, false, 3, D(1), D(1), D(3));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "boxes");
	t_free(t);
}

static void test_grid_sample_bilinear_and_nearest_at_center(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };
	static const float grid[2] = { 0, 0 };
	static const float bilinear[1] = { 2.5f }, nearest[1] = { 1 };
	struct t_node *t = t_new("GridSample", 16, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, grid, false, 4, D(1), D(1), D(1), D(2));
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(1), D(1));
	assert_floats(t->out_t[0].data, bilinear, 1, 1e-6f);
	t_free(t);

	t = t_new("GridSample", 16, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, grid, false, 4, D(1), D(1), D(1), D(2));
	t_attr_str(t, "mode", "nearest");
	t_run(t);
	assert_floats(t->out_t[0].data, nearest, 1, 0);
	t_free(t);
}

static void test_grid_sample_rejects_bad_mode_and_volumes(void **state)
{
	static const float x[8], grid[6];
	struct t_node *t = t_new("GridSample", 16, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, grid, false, 4, D(1), D(1), D(1), D(2));
	t_attr_str(t, "mode", "linear");	/* the opset 20 name */
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "'mode'");
	t_free(t);

	t = t_new("GridSample", 16, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(1), D(2), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, grid, false, 5, D(1), D(1), D(1), D(2), D(3));
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	t_free(t);
}

static void test_einsum_matmul_and_diagonal(void **state)
{
	static const float a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 };
	static const float mm[4] = { 19, 22, 43, 50 }, diag[2] = { 1, 4 };
	struct t_node *t = t_new("Einsum", 12, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, b, false, 2, D(2), D(2));
	t_attr_str(t, "equation", "ij, jk -> ik");
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(2), D(2));
	assert_floats(t->out_t[0].data, mm, 4, 0);
	t_free(t);

	t = t_new("Einsum", 12, 1);
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(2), D(2));
	t_attr_str(t, "equation", "ii->i");
	t_run(t);
	assert_floats(t->out_t[0].data, diag, 2, 0);
	t_free(t);
}

static void test_einsum_rejects_term_count_and_size_mismatch(void **state)
{
	static const float a[6];
	struct t_node *t = t_new("Einsum", 12, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(2), D(3));
	t_attr_str(t, "equation", "ij,jk->ik");
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "2 terms for 1 inputs");
	t_free(t);

	t = t_new("Einsum", 12, 1);
	t_input(t, NPU_DTYPE_FLOAT, a, false, 2, D(2), D(3));
	t_attr_str(t, "equation", "ii->i");
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "label 'i'");
	t_free(t);
}

static void test_unique_unsorted_outputs_all_four(void **state)
{
	static const float x[6] = { 2, 1, 1, 3, 4, 3 };
	static const float y[4] = { 2, 1, 3, 4 };
	static const int64_t idx[4] = { 0, 1, 3, 4 }, inv[6] = { 0, 1, 1, 2, 3, 2 };
	static const int64_t cnt[4] = { 1, 2, 2, 1 };
	struct t_node *t = t_new("Unique", 11, 4);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, true, 1, D(6));
	t_attr_int(t, "sorted", 0);
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(4));
	assert_floats(t->out_t[0].data, y, 4, 0);
	assert_memory_equal(t->out_t[1].data, idx, sizeof(idx));
	assert_memory_equal(t->out_t[2].data, inv, sizeof(inv));
	assert_memory_equal(t->out_t[3].data, cnt, sizeof(cnt));
	t_free(t);

	t = t_new("Unique", 11, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, true, 1, D(6));
	t_attr_int(t, "axis", 1);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "axis 1 out of range");
	t_free(t);
}

/* ---- recurrent layers ---- */

static void test_rnn_gru_lstm_single_step(void **state)
{
	static const float x[1] = { 1 }, one[1] = { 1 }, zero[1] = { 0 };
	static const float zeros3[3], zeros4[4];
	float want;
	struct t_node *t = t_new("RNN", 14, 2);

	(void)state;
	/* RNN: h = tanh(W x) with W = 1, R = 0. */
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, one, false, 3, D(1), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, zero, false, 3, D(1), D(1), D(1));
	t_attr_int(t, "hidden_size", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(1), D(1));
	want = tanhf(1.0f);
	assert_floats(t->out_t[1].data, &want, 1, 1e-6f);
	t_free(t);

	/* GRU with zero weights: z = 0.5, candidate 0: h = h0 / 2. */
	t = t_new("GRU", 14, 2);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, zeros3, false, 3, D(1), D(3), D(1));
	t_input(t, NPU_DTYPE_FLOAT, zeros3, false, 3, D(1), D(3), D(1));
	t_skip_input(t);
	t_skip_input(t);
	t_input(t, NPU_DTYPE_FLOAT, one, false, 3, D(1), D(1), D(1));
	t_attr_int(t, "hidden_size", 1);
	t_run(t);
	want = 0.5f;
	assert_floats(t->out_t[1].data, &want, 1, 1e-6f);
	t_free(t);

	/* LSTM with zero weights, c0 = 1: c = 0.5, h = 0.5 tanh(0.5). */
	t = t_new("LSTM", 14, 3);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, zeros4, false, 3, D(1), D(4), D(1));
	t_input(t, NPU_DTYPE_FLOAT, zeros4, false, 3, D(1), D(4), D(1));
	t_skip_input(t);
	t_skip_input(t);
	t_skip_input(t);
	t_input(t, NPU_DTYPE_FLOAT, one, false, 3, D(1), D(1), D(1));
	t_attr_int(t, "hidden_size", 1);
	t_run(t);
	want = 0.5f * tanhf(0.5f);
	assert_floats(t->out_t[1].data, &want, 1, 1e-6f);
	want = 0.5f;
	assert_floats(t->out_t[2].data, &want, 1, 1e-6f);
	t_free(t);
}

static void test_lstm_rejects_w_shape_and_long_sequence_lens(void **state)
{
	static const float x[1] = { 1 }, w4[4], w3[3];
	static const int32_t lens[1] = { 2 };
	struct t_node *t = t_new("LSTM", 14, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, w3, false, 3, D(1), D(3), D(1));
	t_input(t, NPU_DTYPE_FLOAT, w4, false, 3, D(1), D(4), D(1));
	t_attr_int(t, "hidden_size", 1);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "(W)");
	t_free(t);

	t = t_new("LSTM", 14, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, w4, false, 3, D(1), D(4), D(1));
	t_input(t, NPU_DTYPE_FLOAT, w4, false, 3, D(1), D(4), D(1));
	t_skip_input(t);
	t_input(t, NPU_DTYPE_INT32, lens, false, 1, D(1));
	t_attr_int(t, "hidden_size", 1);
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "sequence_lens[0] = 2");
	t_free(t);
}

/* ---- integer quantized ops ---- */

static void test_conv_and_matmul_integer_subtract_zero_points(void **state)
{
	static const uint8_t x[4] = { 2, 3, 4, 5 }, w[1] = { 2 }, xzp[1] = { 1 };
	static const int32_t conv_want[4] = { 2, 4, 6, 8 };
	static const uint8_t a[4] = { 1, 2, 3, 4 }, b[2] = { 1, 1 };
	static const int32_t mm_want[2] = { 1, 5 };
	struct t_node *t = t_new("ConvInteger", 10, 1);

	(void)state;
	t_input(t, NPU_DTYPE_UINT8, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_UINT8, w, false, 4, D(1), D(1), D(1), D(1));
	t_input(t, NPU_DTYPE_UINT8, xzp, false, 0);
	t_run(t);
	assert_int_equal(t->out_t[0].dtype, NPU_DTYPE_INT32);
	assert_memory_equal(t->out_t[0].data, conv_want, sizeof(conv_want));
	t_free(t);

	t = t_new("MatMulInteger", 10, 1);
	t_input(t, NPU_DTYPE_UINT8, a, false, 2, D(2), D(2));
	t_input(t, NPU_DTYPE_UINT8, b, false, 2, D(2), D(1));
	t_input(t, NPU_DTYPE_UINT8, xzp, false, 0);
	t_run(t);
	assert_memory_equal(t->out_t[0].data, mm_want, sizeof(mm_want));
	t_free(t);
}

static void test_integer_ops_reject_float_and_inner_mismatch(void **state)
{
	static const float xf[4], wf[1];
	static const uint8_t a[6], b[2];
	struct t_node *t = t_new("ConvInteger", 10, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, xf, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, wf, false, 4, D(1), D(1), D(1), D(1));
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_msg_has(t, "float");
	t_free(t);

	t = t_new("MatMulInteger", 10, 1);
	t_input(t, NPU_DTYPE_UINT8, a, false, 2, D(2), D(3));
	t_input(t, NPU_DTYPE_UINT8, b, false, 2, D(2), D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "inner");
	t_free(t);
}

static void test_dynamic_quantize_linear_scale_and_zero_point(void **state)
{
	static const float x[3] = { 0, 1, 2.55f };
	static const uint8_t want[3] = { 0, 100, 255 };
	static const int32_t xi[1];
	struct t_node *t = t_new("DynamicQuantizeLinear", 11, 3);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(3));
	t_run(t);
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	assert_true(fabsf(((float *)t->out_t[1].data)[0] - 0.01f) < 1e-6f);
	assert_int_equal(((uint8_t *)t->out_t[2].data)[0], 0);
	t_free(t);

	t = t_new("DynamicQuantizeLinear", 11, 3);
	t_input(t, NPU_DTYPE_INT32, xi, false, 1, D(1));
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	t_free(t);
}

/* ---- LRN, MeanVarianceNormalization, Det, MaxUnpool ---- */

static void test_lrn_window_and_missing_size(void **state)
{
	static const float x[2] = { 1, 1 };
	static const float want[2] = { 0.5f, 1.0f / 1.5f };
	struct t_node *t = t_new("LRN", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(1));
	t_attr_int(t, "size", 2);
	t_attr_float(t, "alpha", 1);
	t_attr_float(t, "beta", 1);
	t_run(t);
	assert_floats(t->out_t[0].data, want, 2, 1e-6f);
	t_free(t);

	t = t_new("LRN", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "'size'");
	t_free(t);
}

static void test_mvn_normalizes_per_channel(void **state)
{
	static const float x[4] = { 1, 3, 2, 2 };	/* 1x2x1x2 */
	static const float want[4] = { -1, 1, 0, 0 };
	static const int64_t bad_axes[1] = { 4 };
	struct t_node *t = t_new("MeanVarianceNormalization", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(2));
	t_run(t);
	assert_floats(t->out_t[0].data, want, 4, 1e-6f);
	t_free(t);

	t = t_new("MeanVarianceNormalization", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(2));
	t_attr_ints(t, "axes", bad_axes, 1);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "axes 4 out of range");
	t_free(t);
}

static void test_det_batches_and_rejects_non_square(void **state)
{
	static const float x[8] = { 1, 2, 3, 4,  2, 0, 0, 3 };
	static const float want[2] = { -2, 6 };
	struct t_node *t = t_new("Det", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(2), D(2), D(2));
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(2));
	assert_floats(t->out_t[0].data, want, 2, 1e-5f);
	t_free(t);

	t = t_new("Det", 11, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 2, D(2), D(3));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "square");
	t_free(t);
}

static void test_max_unpool_scatters_and_checks_indices(void **state)
{
	static const float x[2] = { 5, 6 };
	static const int64_t idx[2] = { 1, 2 }, bad_idx[2] = { 1, 8 };
	static const int64_t k[2] = { 2, 2 };
	static const float want[8] = { 0, 5, 6, 0, 0, 0, 0, 0 };
	struct t_node *t = t_new("MaxUnpool", 11, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(1), D(2));
	t_input(t, NPU_DTYPE_INT64, idx, false, 4, D(1), D(1), D(1), D(2));
	t_attr_ints(t, "kernel_shape", k, 2);
	t_attr_ints(t, "strides", k, 2);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(2), D(4));
	assert_floats(t->out_t[0].data, want, 8, 0);
	t_free(t);

	t = t_new("MaxUnpool", 11, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(1), D(2));
	t_input(t, NPU_DTYPE_INT64, bad_idx, false, 4, D(1), D(1), D(1), D(2));
	t_attr_ints(t, "kernel_shape", k, 2);
	t_attr_ints(t, "strides", k, 2);
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "index 8");
	t_free(t);
}

static void test_dropout_training_keeps_all_at_ratio_0_else_scales_kept(void **state)
{
	static const float x[2] = { 1, 2 };
	static const float zero[1] = { 0 }, half[1] = { 0.5f }, yes_ratio[1] = { 1.0f };
	static const uint8_t yes[1] = { 1 }, mask[2] = { 1, 1 };
	struct t_node *t = t_new("Dropout", 13, 2);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(2));
	t_input(t, NPU_DTYPE_FLOAT, zero, true, 0);
	t_input(t, NPU_DTYPE_BOOL, yes, true, 0);
	t_run(t);
	assert_floats(t->out_t[0].data, x, 2, 0);
	assert_memory_equal(t->out_t[1].data, mask, sizeof(mask));
	t_free(t);

	/* Random dropout (test_random_ops.c checks the draws): each kept
	 * element is scaled by 1 / (1 - ratio), each dropped one is 0. */
	t = t_new("Dropout", 13, 2);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(2));
	t_input(t, NPU_DTYPE_FLOAT, half, false, 0);
	t_input(t, NPU_DTYPE_BOOL, yes, false, 0);
	t_run(t);
	for (int i = 0; i < 2; i++) {
		float y = ((float *)t->out_t[0].data)[i];
		bool kept = ((uint8_t *)t->out_t[1].data)[i] != 0;

		assert_true(y == (kept ? 2 * x[i] : 0.0f));
	}
	t_free(t);

	/* A ratio outside [0, 1) is refused as soon as it is known. */
	t = t_new("Dropout", 13, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(2));
	t_input(t, NPU_DTYPE_FLOAT, yes_ratio, true, 0);
	t_input(t, NPU_DTYPE_BOOL, yes, true, 0);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "ratio 1 is outside [0, 1)");
	t_free(t);
}

/* ---- TfIdfVectorizer, optimizers, DFT / STFT, RoiAlign, float16 ---- */

static void test_tfidf_counts_unigrams_once_and_bigrams(void **state)
{
	static const int32_t x[4] = { 1, 2, 1, 3 };
	static const int64_t pool[4] = { 1, 2, 1, 3 };	/* 1, 2 | (1, 3) */
	static const int64_t counts[2] = { 0, 2 }, idx[3] = { 0, 1, 2 };
	static const float want[3] = { 2, 1, 1 };
	struct t_node *t = t_new("TfIdfVectorizer", 9, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT32, x, false, 1, D(4));
	t_attr_int(t, "min_gram_length", 1);
	t_attr_int(t, "max_gram_length", 2);
	t_attr_int(t, "max_skip_count", 0);
	t_attr_str(t, "mode", "TF");
	t_attr_ints(t, "pool_int64s", pool, 4);
	t_attr_ints(t, "ngram_counts", counts, 2);
	t_attr_ints(t, "ngram_indexes", idx, 3);
	t_run(t);
	assert_shape(&t->out_t[0], 1, D(3));
	assert_floats(t->out_t[0].data, want, 3, 0);
	t_free(t);

	t = t_new("TfIdfVectorizer", 9, 1);
	t_input(t, NPU_DTYPE_INT32, x, false, 1, D(4));
	t_attr_int(t, "min_gram_length", 1);
	t_attr_int(t, "max_gram_length", 2);
	t_attr_str(t, "mode", "BM25");
	t_attr_ints(t, "pool_int64s", pool, 4);
	t_attr_ints(t, "ngram_counts", counts, 2);
	t_attr_ints(t, "ngram_indexes", idx, 3);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "'mode'");
	t_free(t);
}

#define TRAINING "ai.onnx.preview.training"

static void test_adagrad_and_momentum_updates(void **state)
{
	static const float r[1] = { 0.1f }, x[1] = { 1 }, g[1] = { -1 };
	static const float h[1] = { 2 }, g2[1] = { 2 }, v[1] = { 1 };
	static const int64_t t0[1] = { 0 };
	static const float tf[1] = { 0 };
	double gr = 0.001 * 1 - 1, hn = 2 + gr * gr;
	float want_x = (float)(1 - 0.1 * gr / (sqrt(hn) + 1e-5));
	float want_h = (float)hn, want;
	struct t_node *t = t_new_in(TRAINING, "Adagrad", 1, 2);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, r, false, 0);
	t_input(t, NPU_DTYPE_INT64, t0, false, 0);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, g, false, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, h, false, 1, D(1));
	t_attr_float(t, "epsilon", 1e-5f);
	t_attr_float(t, "norm_coefficient", 0.001f);
	t_run(t);
	assert_floats(t->out_t[0].data, &want_x, 1, 1e-6f);
	assert_floats(t->out_t[1].data, &want_h, 1, 1e-6f);
	t_free(t);

	/* Momentum, first step (T = 0: beta taken as 1): v = 0.9 + 2. */
	t = t_new_in(TRAINING, "Momentum", 1, 2);
	t_input(t, NPU_DTYPE_FLOAT, r, false, 0);
	t_input(t, NPU_DTYPE_INT64, t0, false, 0);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, g2, false, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, v, false, 1, D(1));
	t_attr_float(t, "alpha", 0.9f);
	t_attr_float(t, "beta", 0.5f);
	t_attr_float(t, "norm_coefficient", 0);
	t_attr_str(t, "mode", "nesterov");
	t_run(t);
	want = 1 - 0.1f * (2 + 0.9f * 2.9f);
	assert_floats(t->out_t[0].data, &want, 1, 1e-6f);
	want = 2.9f;
	assert_floats(t->out_t[1].data, &want, 1, 1e-6f);
	t_free(t);

	/* T must be an int64 scalar. */
	t = t_new_in(TRAINING, "Adagrad", 1, 2);
	t_input(t, NPU_DTYPE_FLOAT, r, false, 0);
	t_input(t, NPU_DTYPE_FLOAT, tf, false, 0);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, g, false, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, h, false, 1, D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "(T)");
	t_free(t);
}

static void test_dft_onesided_impulse_and_bad_axis(void **state)
{
	static const float x[4] = { 0, 1, 0, 0 };	/* [1, 4, 1] real */
	static const float want[6] = { 1, 0, 0, -1, -1, 0 };
	struct t_node *t = t_new("DFT", 17, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(4), D(1));
	t_attr_int(t, "onesided", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 3, D(1), D(3), D(2));
	assert_floats(t->out_t[0].data, want, 6, 1e-6f);
	t_free(t);

	t = t_new("DFT", 17, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(4), D(1));
	t_attr_int(t, "axis", 2);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "'axis'");
	t_free(t);
}

static void test_stft_frames_and_zero_step(void **state)
{
	static const float x[4] = { 0, 1, 0, 0 };
	static const int64_t two[1] = { 2 }, zero[1] = { 0 };
	static const float want[8] = { 1, 0, -1, 0,  0, 0, 0, 0 };
	struct t_node *t = t_new("STFT", 17, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(4), D(1));
	t_input(t, NPU_DTYPE_INT64, two, true, 0);
	t_skip_input(t);
	t_input(t, NPU_DTYPE_INT64, two, true, 0);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(2), D(2), D(2));
	assert_floats(t->out_t[0].data, want, 8, 1e-6f);
	t_free(t);

	t = t_new("STFT", 17, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 3, D(1), D(4), D(1));
	t_input(t, NPU_DTYPE_INT64, zero, true, 0);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "frame_step");
	t_free(t);
}

static void test_roi_align_averages_and_checks_batch_index(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };
	static const float rois[4] = { 0, 0, 1, 1 };
	static const int64_t b0[1] = { 0 }, b1[1] = { 1 };
	static const float want[1] = { 2.5f };
	struct t_node *t = t_new("RoiAlign", 16, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, rois, false, 2, D(1), D(4));
	t_input(t, NPU_DTYPE_INT64, b0, false, 1, D(1));
	t_attr_str(t, "coordinate_transformation_mode", "output_half_pixel");
	t_attr_int(t, "sampling_ratio", 1);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(1), D(1));
	assert_floats(t->out_t[0].data, want, 1, 1e-6f);
	t_free(t);

	t = t_new("RoiAlign", 16, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, rois, false, 2, D(1), D(4));
	t_input(t, NPU_DTYPE_INT64, b1, false, 1, D(1));
	assert_int_equal(t_try_run(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "batch index 1");
	t_free(t);
}

static void test_max_float16_through_fp32(void **state)
{
	static const uint16_t a[2] = { 0x3c00, 0x4000 };	/* 1, 2 */
	static const uint16_t b[2] = { 0x3e00, 0x3800 };	/* 1.5, 0.5 */
	static const uint16_t want[2] = { 0x3e00, 0x4000 };
	struct t_node *t = t_new("Max", 13, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT16, a, false, 1, D(2));
	t_input(t, NPU_DTYPE_FLOAT16, b, false, 1, D(2));
	t_run(t);
	assert_int_equal(t->out_t[0].dtype, NPU_DTYPE_FLOAT16);
	assert_memory_equal(t->out_t[0].data, want, sizeof(want));
	t_free(t);
}

/* fp32 Max / Min of same-shape inputs (the 8-lane loop, then the tail):
 * the larger / smaller, and a NaN in either input wins. */
static void test_max_min_f32_same_shape_nan_wins(void **state)
{
	float a[19], b[19];
	int k, i;

	(void)state;
	for (i = 0; i < 19; i++) {
		a[i] = (float)((i * 7) % 5) - 2.0f;
		b[i] = (float)((i * 3) % 4) - 1.5f;
	}
	a[2] = NAN;
	b[5] = NAN;
	a[17] = NAN;
	b[18] = NAN;
	for (k = 0; k < 2; k++) {
		struct t_node *t = t_new(k ? "Min" : "Max", 13, 1);
		const float *y;

		t_input(t, NPU_DTYPE_FLOAT, a, false, 1, D(19));
		t_input(t, NPU_DTYPE_FLOAT, b, false, 1, D(19));
		t_run(t);
		y = t->out_t[0].data;
		for (i = 0; i < 19; i++) {
			if (isnan(a[i]) || isnan(b[i]))
				assert_true(isnan(y[i]));
			else
				assert_true(y[i] == (k ? fminf(a[i], b[i]) : fmaxf(a[i], b[i])));
		}
		t_free(t);
	}
}

static void test_mel_weight_matrix_triangle_and_bad_edges(void **state)
{
	static const int64_t bins[1] = { 1 }, len[1] = { 8 }, rate[1] = { 8 };
	static const float lo[1] = { 0 }, hi[1] = { 4 };
	static const float want[5] = { 0, 1, 0, 0, 0 };
	struct t_node *t = t_new("MelWeightMatrix", 17, 1);

	(void)state;
	t_input(t, NPU_DTYPE_INT64, bins, true, 0);
	t_input(t, NPU_DTYPE_INT64, len, true, 0);
	t_input(t, NPU_DTYPE_INT64, rate, true, 0);
	t_input(t, NPU_DTYPE_FLOAT, lo, true, 0);
	t_input(t, NPU_DTYPE_FLOAT, hi, true, 0);
	t_run(t);
	assert_shape(&t->out_t[0], 2, D(5), D(1));
	assert_floats(t->out_t[0].data, want, 5, 0);
	t_free(t);

	t = t_new("MelWeightMatrix", 17, 1);
	t_input(t, NPU_DTYPE_INT64, bins, true, 0);
	t_input(t, NPU_DTYPE_INT64, len, true, 0);
	t_input(t, NPU_DTYPE_INT64, rate, true, 0);
	t_input(t, NPU_DTYPE_FLOAT, hi, true, 0);
	t_input(t, NPU_DTYPE_FLOAT, lo, true, 0);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_msg_has(t, "edge frequencies");
	t_free(t);
}

/* ---- FusedConv (made by the CPU fusion pass) ---- */

static void t_attr_floats(struct t_node *t, const char *name, float *v, size_t n)
{
	struct npu_attr *a = t_attr(t, name, NPU_ATTR_FLOATS);

	a->floats = v;
	a->count = n;
}

/* 1x1 conv, 2 channels to 1: y = post(clip(w . x + b + z)). */
static void test_fused_conv_epilogue_order(void **state)
{
	static const float x[4] = { 1, 2, 3, 4 };	/* 1x2x1x2 */
	static const float w[2] = { 1, 10 }, b[1] = { 0.5f };
	static const float z[2] = { -20, 100 };
	static float clip[2] = { -2, 8 };
	/* conv + b: 31.5, 42.5; + z: 11.5, 142.5; clip: 8, 8; * -2 + 1 */
	static const float want[2] = { -15, -15 };
	struct t_node *t = t_new_in(NPU_CPU_FUSED_DOMAIN, "FusedConv", 1, 1);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(2));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(1), D(2), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, b, true, 1, D(1));
	t_input(t, NPU_DTYPE_FLOAT, z, false, 4, D(1), D(1), D(1), D(2));
	t_attr_str(t, "activation", "Clip");
	t_attr_floats(t, "activation_params", clip, 2);
	t_attr_float(t, "post_scale", -2.0f);
	t_attr_float(t, "post_shift", 1.0f);
	t_run(t);
	assert_shape(&t->out_t[0], 4, D(1), D(1), D(1), D(2));
	assert_floats(t->out_t[0].data, want, 2, 0);
	t_free(t);
}

static void test_fused_conv_rejects_bad_epilogues(void **state)
{
	static const float x[4] = { 0 }, w[2] = { 0 }, z[3] = { 0 };
	static float one[1] = { 0.1f };
	struct t_node *t;

	(void)state;
	/* An activation with no fused form. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "FusedConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(2));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(1), D(2), D(1), D(1));
	t_attr_str(t, "activation", "Tanh");
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "activation 'Tanh'"));
	t_free(t);
	/* Clip with one parameter. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "FusedConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(2));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(1), D(2), D(1), D(1));
	t_attr_str(t, "activation", "Clip");
	t_attr_floats(t, "activation_params", one, 1);
	assert_int_not_equal(t_infer(t), NPU_OK);
	assert_non_null(strstr(t->err.msg, "takes 2 activation_params, not 1"));
	t_free(t);
	/* A residual not shaped as the output. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "FusedConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(2));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(1), D(2), D(1), D(1));
	t_skip_input(t);
	t_input(t, NPU_DTYPE_FLOAT, z, false, 4, D(1), D(1), D(1), D(3));
	assert_int_not_equal(t_infer(t), NPU_OK);
	assert_non_null(strstr(t->err.msg, "residual Z"));
	t_free(t);
	/* Not an attribute of FusedConv. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "FusedConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(2), D(1), D(2));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(1), D(2), D(1), D(1));
	t_attr_float(t, "alpha", 1.0f);
	assert_int_not_equal(t_infer(t), NPU_OK);
	assert_non_null(strstr(t->err.msg, "alpha"));
	t_free(t);
	/* The default domain has no FusedConv. */
	assert_null(npu_cpu_op_find("", "FusedConv", 13));
}


/* The layout pass's ops name what does not fit. */
static void test_nchwc_ops_reject_bad_inputs(void **state)
{
	static const float x[2 * 16 * 4] = { 0 }, w[8 * 24] = { 0 };
	static const int32_t xi[12] = { 0 };
	static int64_t bad_factors[2] = { 0, 2 };
	struct t_node *t;

	(void)state;
	/* More channels than the blocks hold. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcReorderOutput", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(2), D(2), D(2), D(16));
	t_attr_int(t, "channels", 40);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(t->err.msg, "channels 40 do not fit 2 blocks"));
	t_free(t);
	/* Not blocked by 16. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcReorderOutput", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(2), D(2), D(2), D(8));
	t_attr_int(t, "channels", 8);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(t->err.msg, "not blocked by 16"));
	t_free(t);
	/* An int tensor to block. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcReorderInput", 1, 1);
	t_input(t, NPU_DTYPE_INT32, xi, false, 4, D(1), D(3), D(2), D(2));
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "int32, not float"));
	t_free(t);
	/* 24 channels need 2 blocks. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(1), D(2), D(2), D(16));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(8), D(24), D(1), D(1));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(t->err.msg, "X has 1 blocks, W and group give 24 channels"));
	t_free(t);
	/* Weights that are not constants cannot be packed once. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(2), D(2), D(2), D(16));
	t_input(t, NPU_DTYPE_FLOAT, w, false, 4, D(8), D(24), D(1), D(1));
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "must be constants"));
	t_free(t);
	/* Two groups of 2 channels: neither one group nor depthwise. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(1), D(2), D(2), D(16));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(4), D(2), D(1), D(1));
	t_attr_int(t, "group", 2);
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "neither 1 nor depthwise"));
	t_free(t);
	/* Depthwise on a plain NCHW X. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(4), D(2), D(2));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(4), D(1), D(1), D(1));
	t_attr_int(t, "group", 4);
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "needs a blocked X"));
	t_free(t);
	/* A residual that is not blocked as the output. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(2), D(2), D(2), D(16));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(8), D(24), D(1), D(1));
	t_skip_input(t);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(8), D(2), D(2));
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(t->err.msg, "residual Z"));
	t_free(t);
	/* Upsampling by 0. */
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcUpsample", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 5, D(1), D(2), D(2), D(2), D(16));
	t_attr_ints(t, "factors", bad_factors, 2);
	assert_int_equal(t_infer(t), NPU_ERR_INVALID_ARG);
	assert_non_null(strstr(t->err.msg, "'factors' must be two ints in [1, 4096]"));
	t_free(t);
}

/* Blocked in, a 1x1 conv of 24 channels to 2 with Relu, plain out. */
static void test_nchwc_conv_computes_through_reorders(void **state)
{
	float x[24 * 3], w[2 * 24], b[2] = { 0.5f, -100.0f }, xb[2 * 16 * 3];
	float want[2 * 3];
	struct t_node *t;
	int c, p, o;

	(void)state;
	for (c = 0; c < 24; c++) {
		for (p = 0; p < 3; p++)
			x[c * 3 + p] = (float)(c - p);
		w[c] = 0.25f;
		w[24 + c] = (float)c;
	}
	for (o = 0; o < 2; o++)
		for (p = 0; p < 3; p++) {
			float acc = b[o];

			for (c = 0; c < 24; c++)
				acc += w[o * 24 + c] * x[c * 3 + p];
			want[o * 3 + p] = acc > 0 ? acc : 0;
		}
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcReorderInput", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(24), D(1), D(3));
	t_run(t);
	assert_shape(&t->out_t[0], 5, D(1), D(2), D(1), D(3), D(16));
	memcpy(xb, t->out_t[0].data, sizeof(xb));
	t_free(t);
	for (p = 0; p < 3; p++)	/* the second block's pad lanes are zero */
		for (c = 8; c < 16; c++)
			assert_true(xb[3 * 16 + p * 16 + c] == 0.0f);
	t = t_new_in(NPU_CPU_FUSED_DOMAIN, "NchwcConv", 1, 1);
	t_input(t, NPU_DTYPE_FLOAT, xb, false, 5, D(1), D(2), D(1), D(3), D(16));
	t_input(t, NPU_DTYPE_FLOAT, w, true, 4, D(2), D(24), D(1), D(1));
	t_input(t, NPU_DTYPE_FLOAT, b, true, 1, D(2));
	t_attr_str(t, "activation", "Relu");
	t_run(t);
	assert_shape(&t->out_t[0], 5, D(1), D(1), D(1), D(3), D(16));
	for (o = 0; o < 2; o++)
		for (p = 0; p < 3; p++)
			assert_float_equal(((float *)t->out_t[0].data)[p * 16 + o],
					   want[o * 3 + p], 1e-4);
	t_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_matches_domain_and_opset_range),
		cmocka_unit_test(test_add_broadcasts_numpy_style),
		cmocka_unit_test(test_mul_broadcasts_rank_extension_and_both_sides),
		cmocka_unit_test(test_add_opset6_broadcast_aligns_at_axis),
		cmocka_unit_test(test_add_rejects_incompatible_shapes),
		cmocka_unit_test(test_where_broadcasts_three_inputs),
		cmocka_unit_test(test_leaky_relu_and_clip_attributes),
		cmocka_unit_test(test_reshape_zero_copies_and_minus_one_infers),
		cmocka_unit_test(test_reshape_allowzero_keeps_zero_dims),
		cmocka_unit_test(test_reshape_rejects_two_minus_ones),
		cmocka_unit_test(test_reshape_unknown_shape_input_gives_unknown_dims),
		cmocka_unit_test(test_slice_negative_step_walks_backwards),
		cmocka_unit_test(test_slice_clamps_out_of_range_bounds),
		cmocka_unit_test(test_slice_opset9_reads_attributes),
		cmocka_unit_test(test_softmax_opset11_coerces_to_2d),
		cmocka_unit_test(test_softmax_opset13_normalizes_one_axis),
		cmocka_unit_test(test_softmax_is_stable_for_large_inputs),
		cmocka_unit_test(test_maxpool_ceil_mode_adds_partial_window),
		cmocka_unit_test(test_maxpool_floor_mode_drops_partial_window),
		cmocka_unit_test(test_avgpool_same_upper_excludes_pad),
		cmocka_unit_test(test_resize_linear_half_pixel_upsample),
		cmocka_unit_test(test_resize_linear_align_corners),
		cmocka_unit_test(test_resize_nearest_modes),
		cmocka_unit_test(test_resize_rejects_antialias),
		cmocka_unit_test(test_resize_nearest2d_matches_reference),
		cmocka_unit_test(test_concat_parallel_matches_reference),
		cmocka_unit_test(test_quantize_rounds_half_to_even_and_saturates),
		cmocka_unit_test(test_dequantize_per_axis),
		cmocka_unit_test(test_convtranspose_1d_scatters_kernel),
		cmocka_unit_test(test_conv_prepared_weights_match_per_call_packing),
		cmocka_unit_test(test_gemm_prepared_b_matches_per_call_packing),
		cmocka_unit_test(test_pad_reflect_mirrors_without_edge),
		cmocka_unit_test(test_gather_takes_negative_indices),
		cmocka_unit_test(test_transpose_permutes_axes),
		cmocka_unit_test(test_split_opset18_num_outputs_uneven),
		cmocka_unit_test(test_unsqueeze_attr_before_13_input_after),
		cmocka_unit_test(test_reduce_sum_noop_with_empty_axes),
		cmocka_unit_test(test_reduce_mean_axes_attribute_before_18),
		cmocka_unit_test(test_cast_float_to_half_and_int),
		cmocka_unit_test(test_cast_out_of_range_saturates),
		cmocka_unit_test(test_conv_rejects_int8_naming_node_and_type),
		cmocka_unit_test(test_unknown_attribute_is_unsupported),
		cmocka_unit_test(test_maxpool_indices_row_and_column_major),
		cmocka_unit_test(test_averagepool_rejects_indices_output),
		cmocka_unit_test(test_batchnorm_training_mode_is_unsupported),
		cmocka_unit_test(test_batchnorm_training_mode_uses_batch_statistics),
		cmocka_unit_test(test_gather_elements_negative_indices_along_axis),
		cmocka_unit_test(test_gather_elements_index_out_of_range_is_error),
		cmocka_unit_test(test_gather_elements_rejects_axis_out_of_range),
		cmocka_unit_test(test_scatter_elements_add_accumulates_duplicates),
		cmocka_unit_test(test_scatter_elements_index_out_of_range_is_error),
		cmocka_unit_test(test_gather_nd_batch_dims_selects_per_batch),
		cmocka_unit_test(test_gather_nd_rejects_too_long_index_tuple),
		cmocka_unit_test(test_scatter_nd_writes_slices_and_checks_range),
		cmocka_unit_test(test_compress_keeps_selected_slices),
		cmocka_unit_test(test_compress_rejects_2d_condition),
		cmocka_unit_test(test_nonzero_lists_coordinates),
		cmocka_unit_test(test_nll_loss_mean_divides_by_used_weights),
		cmocka_unit_test(test_nll_loss_target_out_of_range_is_error),
		cmocka_unit_test(test_softmax_cross_entropy_gives_loss_and_log_prob),
		cmocka_unit_test(test_softmax_cross_entropy_rejects_target_rank),
		cmocka_unit_test(test_trilu_lower_and_upper_with_k),
		cmocka_unit_test(test_trilu_rejects_rank_1),
		cmocka_unit_test(test_depth_to_space_dcr_crd_and_space_to_depth),
		cmocka_unit_test(test_depth_to_space_rejects_channels_not_multiple),
		cmocka_unit_test(test_reverse_sequence_reverses_each_prefix),
		cmocka_unit_test(test_range_counts_with_negative_delta),
		cmocka_unit_test(test_eye_like_offsets_diagonal_and_casts),
		cmocka_unit_test(test_one_hot_negative_and_out_of_range_indices),
		cmocka_unit_test(test_hann_window_periodic_and_negative_size),
		cmocka_unit_test(test_argmax_select_last_index_and_argmin),
		cmocka_unit_test(test_argmax_rejects_axis_out_of_range),
		cmocka_unit_test(test_hardmax_marks_first_max),
		cmocka_unit_test(test_top_k_largest_smallest_ties_by_index),
		cmocka_unit_test(test_cumsum_exclusive_reverse_and_bad_axis),
		cmocka_unit_test(test_mod_takes_divisor_sign_and_fmod_dividend_sign),
		cmocka_unit_test(test_mod_float_requires_fmod),
		cmocka_unit_test(test_bitshift_both_directions_and_wide_shifts),
		cmocka_unit_test(test_cast_like_takes_type_of_second_input),
		cmocka_unit_test(test_reduce_log_sum_exp_double),
		cmocka_unit_test(test_nms_suppresses_overlap_and_counts_at_infer),
		cmocka_unit_test(test_nms_rejects_boxes_not_4_wide),
		cmocka_unit_test(test_grid_sample_bilinear_and_nearest_at_center),
		cmocka_unit_test(test_grid_sample_rejects_bad_mode_and_volumes),
		cmocka_unit_test(test_einsum_matmul_and_diagonal),
		cmocka_unit_test(test_einsum_rejects_term_count_and_size_mismatch),
		cmocka_unit_test(test_unique_unsorted_outputs_all_four),
		cmocka_unit_test(test_rnn_gru_lstm_single_step),
		cmocka_unit_test(test_lstm_rejects_w_shape_and_long_sequence_lens),
		cmocka_unit_test(test_conv_and_matmul_integer_subtract_zero_points),
		cmocka_unit_test(test_integer_ops_reject_float_and_inner_mismatch),
		cmocka_unit_test(test_dynamic_quantize_linear_scale_and_zero_point),
		cmocka_unit_test(test_lrn_window_and_missing_size),
		cmocka_unit_test(test_mvn_normalizes_per_channel),
		cmocka_unit_test(test_det_batches_and_rejects_non_square),
		cmocka_unit_test(test_max_unpool_scatters_and_checks_indices),
		cmocka_unit_test(test_dropout_training_keeps_all_at_ratio_0_else_scales_kept),
		cmocka_unit_test(test_tfidf_counts_unigrams_once_and_bigrams),
		cmocka_unit_test(test_adagrad_and_momentum_updates),
		cmocka_unit_test(test_dft_onesided_impulse_and_bad_axis),
		cmocka_unit_test(test_stft_frames_and_zero_step),
		cmocka_unit_test(test_roi_align_averages_and_checks_batch_index),
		cmocka_unit_test(test_max_float16_through_fp32),
		cmocka_unit_test(test_max_min_f32_same_shape_nan_wins),
		cmocka_unit_test(test_mel_weight_matrix_triangle_and_bad_edges),
		cmocka_unit_test(test_fused_conv_epilogue_order),
		cmocka_unit_test(test_fused_conv_rejects_bad_epilogues),
		cmocka_unit_test(test_nchwc_ops_reject_bad_inputs),
		cmocka_unit_test(test_nchwc_conv_computes_through_reorders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
