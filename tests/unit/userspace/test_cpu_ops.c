// SPDX-License-Identifier: MIT
/*
 * Unit tests of the CPU ops' tricky semantics: broadcasting, Reshape 0/-1,
 * Slice with negative steps, Resize modes, QuantizeLinear rounding and
 * saturation, Softmax axis across opsets, pooling ceil_mode, ConvTranspose,
 * and the messages infer() gives for what is not supported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

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
	const struct npu_op_def *def;
};

static struct t_node *t_new(const char *op, int opset, size_t n_out)
{
	struct t_node *t = calloc(1, sizeof(*t));
	size_t i;

	assert_non_null(t);
	t->node.name = (char *)"n0";
	t->node.op_type = (char *)op;
	t->node.domain = (char *)"";
	t->node.opset = opset;
	t->node.inputs = t->ins;
	t->node.outputs = t->outs;
	t->node.attrs = t->attrs;
	t->node.num_outputs = n_out;
	for (i = 0; i < n_out; i++) {
		t->outs[i] = &t->vals[T_MAX + i];
		t->outs[i]->name = (char *)"out";
	}
	t->def = npu_cpu_op_find("", op, opset);
	assert_non_null(t->def);
	return t;
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
		.node = &t->node, .out_dtypes = dts, .out_shapes = shapes,
		.err = &t->err,
	};
	npu_status st;
	size_t i;

	memset(shapes, 0, sizeof(shapes));
	st = t->def->infer(&ctx);
	if (st)
		return st;
	for (i = 0; i < t->node.num_outputs; i++) {
		t->outs[i]->dtype = dts[i];
		t->outs[i]->shape = shapes[i];
	}
	return NPU_OK;
}

/* Infers, allocates the outputs and computes; asserts success. */
static void t_run(struct t_node *t)
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

static void test_maxpool_indices_output_is_unsupported(void **state)
{
	static const float x[16];
	static const int64_t k[2] = { 2, 2 };
	struct t_node *t = t_new("MaxPool", 12, 2);

	(void)state;
	t_input(t, NPU_DTYPE_FLOAT, x, false, 4, D(1), D(1), D(4), D(4));
	t_attr_ints(t, "kernel_shape", k, 2);
	assert_int_equal(t_infer(t), NPU_ERR_UNSUPPORTED);
	assert_non_null(strstr(t->err.msg, "Indices"));
	t_free(t);
}

static void test_batchnorm_training_mode_is_unsupported(void **state)
{
	static const float x[4], p[1];
	struct t_node *t = t_new("BatchNormalization", 15, 1);

	(void)state;
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
		cmocka_unit_test(test_quantize_rounds_half_to_even_and_saturates),
		cmocka_unit_test(test_dequantize_per_axis),
		cmocka_unit_test(test_convtranspose_1d_scatters_kernel),
		cmocka_unit_test(test_pad_reflect_mirrors_without_edge),
		cmocka_unit_test(test_gather_takes_negative_indices),
		cmocka_unit_test(test_transpose_permutes_axes),
		cmocka_unit_test(test_split_opset18_num_outputs_uneven),
		cmocka_unit_test(test_unsqueeze_attr_before_13_input_after),
		cmocka_unit_test(test_reduce_sum_noop_with_empty_axes),
		cmocka_unit_test(test_reduce_mean_axes_attribute_before_18),
		cmocka_unit_test(test_cast_float_to_half_and_int),
		cmocka_unit_test(test_conv_rejects_int8_naming_node_and_type),
		cmocka_unit_test(test_unknown_attribute_is_unsupported),
		cmocka_unit_test(test_maxpool_indices_output_is_unsupported),
		cmocka_unit_test(test_batchnorm_training_mode_is_unsupported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
