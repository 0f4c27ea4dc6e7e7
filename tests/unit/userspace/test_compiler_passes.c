// SPDX-License-Identifier: MIT
/* The compiler's graph passes, each on a small hand-built graph. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compiler/passes/passes.h"
#include "cpu/kernels/cpu_kernels.h"
#include "runtime/npu_runtime.h"

/* The fusion tests count ops of the plain layout; the blocked ones ask for it. */
static const struct npu_cpu_options plain_layout = { .nchwc = NPU_CPU_OFF };
static const struct npu_cpu_options blocked_layout = { .nchwc = NPU_CPU_ON };

static struct npu_value *input(struct npu_graph *g, const char *name, int rank,
			       const int64_t *dims)
{
	struct npu_value *v = npu_graph_add_value(g, name, NULL);

	assert_non_null(v);
	v->dtype = NPU_DTYPE_FLOAT;
	v->shape.rank = rank;
	memcpy(v->shape.dims, dims, rank * sizeof(*dims));
	v->is_graph_input = true;
	return v;
}

static struct npu_value *constant(struct npu_graph *g, const char *name, int rank,
				  const int64_t *dims, const float *data)
{
	struct npu_shape s = { .rank = rank };
	struct npu_tensor *t;
	struct npu_value *v;

	memcpy(s.dims, dims, rank * sizeof(*dims));
	t = npu_tensor_create(NPU_DTYPE_FLOAT, &s);
	assert_non_null(t);
	memcpy(t->data, data, t->nbytes);
	v = npu_graph_add_constant(g, name, t, NULL);
	assert_non_null(v);
	return v;
}

static struct npu_value *value_like(struct npu_graph *g, const char *name,
				    const struct npu_value *like)
{
	struct npu_value *v = npu_graph_add_value(g, name, NULL);

	assert_non_null(v);
	v->dtype = like->dtype;
	v->shape = like->shape;
	return v;
}

static struct npu_node *node(struct npu_graph *g, const char *op, const char *name,
			     struct npu_value **in, size_t nin, struct npu_value *out)
{
	struct npu_node *n = npu_graph_add_node(g, op, "", name, nin, 1, NULL);

	assert_non_null(n);
	memcpy(n->inputs, in, nin * sizeof(*in));
	n->outputs[0] = out;
	out->producer = n;
	return n;
}

static void mark_output(struct npu_graph *g, struct npu_value *v)
{
	struct npu_value **outs = realloc(g->outputs, (g->num_outputs + 1) * sizeof(*outs));

	assert_non_null(outs);
	outs[g->num_outputs++] = v;
	g->outputs = outs;
	v->is_graph_output = true;
}

static size_t count_op(const struct npu_graph *g, const char *op)
{
	size_t i, n = 0;

	for (i = 0; i < g->num_nodes; i++)
		n += !strcmp(g->nodes[i]->op_type, op);
	return n;
}

static void test_dead_nodes_keep_only_what_reaches_outputs(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t d[2] = { 1, 4 };
	struct npu_value *x = input(g, "x", 2, d);
	struct npu_value *a = value_like(g, "a", x), *b = value_like(g, "b", x);
	struct npu_value *c = value_like(g, "c", x);
	struct npu_error err = { 0 };

	(void)state;
	node(g, "Relu", "used", &x, 1, a);
	node(g, "Sigmoid", "unused", &x, 1, b);
	node(g, "Tanh", "unused_chain", &b, 1, c);
	mark_output(g, a);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_dead_nodes(g, NULL, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 1);
	assert_string_equal(g->nodes[0]->name, "used");
	npu_graph_destroy(g);
}

static void test_batchnorm_folds_into_conv(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t xd[4] = { 1, 1, 3, 3 }, wd[4] = { 2, 1, 1, 1 }, cd[1] = { 2 };
	const float w[2] = { 2.0f, -1.0f }, b[2] = { 0.5f, 1.0f };
	const float gamma[2] = { 3.0f, 0.5f }, beta[2] = { 0.1f, -0.2f };
	const float mean[2] = { 1.0f, -1.0f }, var[2] = { 4.0f, 0.25f };
	struct npu_value *x = input(g, "x", 4, xd);
	struct npu_value *in[5];
	struct npu_value *y = npu_graph_add_value(g, "y", NULL);
	struct npu_value *z = npu_graph_add_value(g, "z", NULL);
	struct npu_error err = { 0 };
	struct npu_node *conv;
	const float *nw, *nb;
	int64_t n;
	int c;

	(void)state;
	in[0] = x;
	in[1] = constant(g, "w", 4, wd, w);
	in[2] = constant(g, "b", 1, cd, b);
	conv = node(g, "Conv", "conv", in, 3, y);
	in[0] = y;
	in[1] = constant(g, "gamma", 1, cd, gamma);
	in[2] = constant(g, "beta", 1, cd, beta);
	in[3] = constant(g, "mean", 1, cd, mean);
	in[4] = constant(g, "var", 1, cd, var);
	node(g, "BatchNormalization", "bn", in, 5, z);
	mark_output(g, z);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_fold_batchnorm(g, NULL, &err), NPU_OK);

	assert_int_equal(count_op(g, "BatchNormalization"), 0);
	assert_int_equal(g->num_nodes, 1);
	assert_ptr_equal(conv->outputs[0], z);
	assert_ptr_equal(z->producer, conv);
	nw = npu_const_floats(conv->inputs[1], &n);
	nb = npu_const_floats(conv->inputs[2], &n);
	for (c = 0; c < 2; c++) {
		double f = gamma[c] / sqrt(var[c] + 1e-5);

		assert_true(fabs(nw[c] - w[c] * f) < 1e-6);
		assert_true(fabs(nb[c] - ((b[c] - mean[c]) * f + beta[c])) < 1e-6);
	}
	npu_graph_destroy(g);
}

/* Conv -> Mul [1,C,1,1] -> Add [C,1,1] folds into the Conv; a constant
 * that broadcasts along W is not per channel and stays. */
static void test_channel_mul_add_fold_into_conv(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t xd[4] = { 1, 1, 3, 3 }, wd[4] = { 2, 1, 1, 1 }, cd[1] = { 2 };
	int64_t kd[4] = { 1, 2, 1, 1 }, ad[3] = { 2, 1, 1 }, wrow[4] = { 1, 1, 1, 3 };
	const float w[2] = { 2.0f, -1.0f }, b[2] = { 0.5f, 1.0f };
	const float k[2] = { 1000.0f, -0.5f }, a[2] = { 3.0f, -4.0f }, row[3] = { 1, 2, 3 };
	struct npu_value *x = input(g, "x", 4, xd), *in[3];
	struct npu_value *y = npu_graph_add_value(g, "y", NULL);
	struct npu_value *m = npu_graph_add_value(g, "m", NULL);
	struct npu_value *z = npu_graph_add_value(g, "z", NULL);
	struct npu_value *u = npu_graph_add_value(g, "u", NULL);
	struct npu_error err = { 0 };
	struct npu_node *conv;
	const float *nw, *nb;
	int64_t n;
	int c;

	(void)state;
	in[0] = x;
	in[1] = constant(g, "w", 4, wd, w);
	in[2] = constant(g, "b", 1, cd, b);
	conv = node(g, "Conv", "conv", in, 3, y);
	in[0] = constant(g, "k", 4, kd, k);	/* constant first: k * y */
	in[1] = y;
	node(g, "Mul", "mul", in, 2, m);
	in[0] = m;
	in[1] = constant(g, "a", 3, ad, a);
	node(g, "Add", "add", in, 2, z);
	in[0] = z;
	in[1] = constant(g, "row", 4, wrow, row);	/* along W: not per channel */
	node(g, "Mul", "row_mul", in, 2, u);
	mark_output(g, u);
	for (c = 0; c < (int)g->num_values; c++)	/* y, m, z, u: 1x2x3x3 */
		if (!g->values[c]->constant && !g->values[c]->is_graph_input) {
			g->values[c]->dtype = NPU_DTYPE_FLOAT;
			g->values[c]->shape = (struct npu_shape){ .rank = 4, .dims = { 1, 2, 3, 3 } };
		}
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_fold_channel_affine(g, NULL, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 2);
	assert_int_equal(count_op(g, "Add"), 0);
	assert_int_equal(count_op(g, "Mul"), 1);	/* row_mul */
	assert_ptr_equal(conv->outputs[0], z);
	assert_ptr_equal(z->producer, conv);
	nw = npu_const_floats(conv->inputs[1], &n);
	nb = npu_const_floats(conv->inputs[2], &n);
	for (c = 0; c < 2; c++) {
		assert_true(fabsf(nw[c] - w[c] * k[c]) < 1e-6f * fabsf(w[c] * k[c]));
		assert_true(fabsf(nb[c] - (b[c] * k[c] + a[c])) < 1e-4f);
	}
	npu_graph_destroy(g);
}

static void test_batchnorm_with_shared_conv_output_is_left_alone(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t xd[4] = { 1, 1, 2, 2 }, wd[4] = { 1, 1, 1, 1 }, cd[1] = { 1 };
	const float one = 1.0f;
	struct npu_value *x = input(g, "x", 4, xd), *in[5];
	struct npu_value *y = value_like(g, "y", x), *z = value_like(g, "z", x);
	struct npu_error err = { 0 };

	(void)state;
	in[0] = x;
	in[1] = constant(g, "w", 4, wd, &one);
	node(g, "Conv", "conv", in, 2, y);
	in[0] = y;
	in[1] = constant(g, "g", 1, cd, &one);
	in[2] = constant(g, "b", 1, cd, &one);
	in[3] = constant(g, "m", 1, cd, &one);
	in[4] = constant(g, "v", 1, cd, &one);
	node(g, "BatchNormalization", "bn", in, 5, z);
	mark_output(g, z);
	mark_output(g, y);	/* the conv output is needed too: no fold */
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_fold_batchnorm(g, NULL, &err), NPU_OK);
	assert_int_equal(count_op(g, "BatchNormalization"), 1);
	npu_graph_destroy(g);
}

static void test_relu_and_clip_fuse_into_producers(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t d[2] = { 2, 2 }, sd[1] = { 1 };
	const float lo = -1.0f, hi = 6.0f;
	struct npu_value *x = input(g, "x", 2, d), *y = input(g, "y", 2, d);
	struct npu_value *s = value_like(g, "s", x), *r = value_like(g, "r", x);
	struct npu_value *m = value_like(g, "m", x), *c = value_like(g, "c", x);
	struct npu_value *in[3];
	struct npu_error err = { 0 };
	struct npu_node *add, *mm;

	(void)state;
	in[0] = x;
	in[1] = y;
	add = node(g, "Add", "add", in, 2, s);
	node(g, "Relu", "relu", &s, 1, r);
	in[0] = r;
	in[1] = y;
	mm = node(g, "MatMul", "mm", in, 2, m);
	in[0] = m;
	in[1] = constant(g, "lo", 0, sd, &lo);
	in[2] = constant(g, "hi", 0, sd, &hi);
	node(g, "Clip", "clip", in, 3, c)->opset = 13;
	mark_output(g, c);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_fuse_activation(g, NULL, &err), NPU_OK);

	assert_int_equal(g->num_nodes, 2);
	assert_string_equal(npu_node_attr_string_or(add, "npu_activation", ""), "Relu");
	assert_string_equal(npu_node_attr_string_or(add, "npu_pre_activation", ""), "s");
	assert_ptr_equal(add->outputs[0], r);
	assert_string_equal(npu_node_attr_string_or(mm, "npu_activation", ""), "Clip");
	assert_true(npu_node_attr_float_or(mm, "npu_activation_min", 0) == -1.0f);
	assert_true(npu_node_attr_float_or(mm, "npu_activation_max", 0) == 6.0f);
	assert_ptr_equal(c->producer, mm);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	npu_graph_destroy(g);
}

static void run_outputs(struct npu_graph *g, const struct npu_tensor *x, int threads,
			float **out, size_t *count);

/*
 * Max / Min of x and one constant value become a Clip (TF exports a clamp
 * as tf.math.maximum): the same outputs; a constant that would broadcast
 * x wider, or holds several values, is left alone.
 */
static void test_max_min_by_a_constant_become_clip(void **state)
{
	struct npu_graph *g = npu_graph_create("test"), *f;
	int64_t d[2] = { 3, 5 }, d11[2] = { 1, 1 }, d111[3] = { 1, 1, 1 }, d5[1] = { 5 };
	const float lo = -0.4f, hi = 0.5f, five[5] = { 0, 1, 2, 3, 4 };
	struct npu_value *x = input(g, "x", 2, d), *in[2];
	struct npu_value *a = value_like(g, "a", x), *b = value_like(g, "b", x);
	struct npu_value *c = value_like(g, "c", x), *e = value_like(g, "e", x);
	struct npu_error err = { 0 };
	float xin[15], *ref[4], *got[4];
	struct npu_tensor xt = { .dtype = NPU_DTYPE_FLOAT, .shape = { 2, { 3, 5 } },
				 .data = xin, .nbytes = sizeof(xin) };
	size_t i, o, nref[4], ngot[4];
	int k;

	(void)state;
	for (k = 0; k < 15; k++)
		xin[k] = (float)(k - 7) / 7.0f;
	in[0] = x;
	in[1] = constant(g, "lo", 2, d11, &lo);
	node(g, "Max", "clamp_low", in, 2, a)->opset = 13;
	in[0] = constant(g, "hi", 0, d11, &hi);	/* the constant first */
	in[1] = a;
	node(g, "Min", "clamp_high", in, 2, b)->opset = 13;
	in[0] = b;
	in[1] = constant(g, "wide", 3, d111, &lo);	/* [1,1,1]: the result is rank 3 */
	node(g, "Max", "widens", in, 2, c)->opset = 13;
	in[0] = b;
	in[1] = constant(g, "five", 1, d5, five);
	node(g, "Max", "per_column", in, 2, e)->opset = 13;
	mark_output(g, a);
	mark_output(g, b);
	mark_output(g, c);
	mark_output(g, e);
	g->inputs = calloc(1, sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	if (npu_graph_infer(g, false, &err))
		fail_msg("%s", err.msg);
	f = npu_graph_clone(g, &err);
	assert_non_null(f);
	assert_int_equal(npu_pass_arith_canon(f, NULL, &err), NPU_OK);
	assert_int_equal(npu_graph_sort(f, &err), NPU_OK);
	assert_int_equal(count_op(f, "Clip"), 2);
	assert_int_equal(count_op(f, "Max"), 2);
	assert_int_equal(count_op(f, "Min"), 0);
	for (i = 0; i < f->num_nodes; i++) {
		const struct npu_node *n = f->nodes[i];

		if (!strcmp(n->name, "clamp_high")) {
			assert_string_equal(n->op_type, "Clip");
			assert_int_equal(n->num_inputs, 3);
			assert_null(n->inputs[1]);
			assert_true(*(const float *)n->inputs[2]->constant->data == hi);
		}
	}
	if (npu_graph_infer(f, false, &err))
		fail_msg("%s", err.msg);
	run_outputs(g, &xt, 1, ref, nref);
	run_outputs(f, &xt, 1, got, ngot);
	for (o = 0; o < 4; o++) {
		assert_int_equal(ngot[o], nref[o]);
		for (i = 0; i < nref[o]; i++)
			if (got[o][i] != ref[o][i])
				fail_msg("output %zu [%zu]: %g, before the pass %g", o, i, got[o][i],
					 ref[o][i]);
		free(ref[o]);
		free(got[o]);
	}
	npu_graph_destroy(f);
	npu_graph_destroy(g);
}

static void test_activation_with_two_users_is_not_fused(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t d[2] = { 2, 2 };
	struct npu_value *x = input(g, "x", 2, d), *in[2] = { x, x };
	struct npu_value *s = value_like(g, "s", x), *r = value_like(g, "r", x);
	struct npu_error err = { 0 };

	(void)state;
	node(g, "Add", "add", in, 2, s);
	node(g, "Relu", "relu", &s, 1, r);
	mark_output(g, r);
	mark_output(g, s);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_fuse_activation(g, NULL, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 2);
	npu_graph_destroy(g);
}

static struct npu_node *transpose(struct npu_graph *g, const char *name,
				  struct npu_value *x, struct npu_value *y,
				  const int64_t *perm)
{
	struct npu_node *t = node(g, "Transpose", name, &x, 1, y);

	t->attrs = calloc(1, sizeof(*t->attrs));
	t->attrs[0].name = strdup("perm");
	t->attrs[0].type = NPU_ATTR_INTS;
	t->attrs[0].ints = malloc(4 * sizeof(*perm));
	memcpy(t->attrs[0].ints, perm, 4 * sizeof(*perm));
	t->attrs[0].count = 4;
	t->num_attrs = 1;
	return t;
}

static void test_inverse_transposes_cancel(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t d[4] = { 1, 2, 3, 4 };
	const int64_t to_nhwc[4] = { 0, 2, 3, 1 }, to_nchw[4] = { 0, 3, 1, 2 };
	const int64_t again[4] = { 0, 2, 3, 1 };
	struct npu_value *x = input(g, "x", 4, d);
	struct npu_value *a = value_like(g, "a", x), *b = value_like(g, "b", x);
	struct npu_value *c = value_like(g, "c", x), *e = value_like(g, "e", x);
	struct npu_error err = { 0 };

	(void)state;
	transpose(g, "t1", x, a, to_nhwc);
	transpose(g, "t2", a, b, to_nchw);
	node(g, "Relu", "relu", &b, 1, c);
	transpose(g, "t3", c, e, again);
	mark_output(g, e);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_cancel_transposes(g, NULL, &err), NPU_OK);
	assert_int_equal(npu_pass_dead_nodes(g, NULL, &err), NPU_OK);
	assert_int_equal(count_op(g, "Transpose"), 1);	/* t3 is no inverse */
	assert_ptr_equal(g->nodes[0]->inputs[0], x);	/* relu reads x now */
	npu_graph_destroy(g);
}

/*
 * What tf2onnx writes for an NHWC model: Transposes to NCHW around each
 * pool / conv, the activations and Max between them in NHWC. The
 * Transposes move below LeakyRelu, Relu and Max and cancel; the one
 * that makes the graph output keeps it (and its name).
 */
static void test_transposes_move_below_elementwise_ops_and_cancel(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t d[4] = { 1, 4, 6, 3 }, dc[4] = { 1, 3, 4, 6 }, one[1] = { 1 };
	const int64_t to_nchw[4] = { 0, 3, 1, 2 }, to_nhwc[4] = { 0, 2, 3, 1 };
	const float two = 2.0f;
	struct npu_value *x = input(g, "x", 4, d), *v[16], *in[2];
	struct npu_shape nchw = { .rank = 4, .dims = { 1, 3, 4, 6 } };
	struct npu_error err = { 0 };
	struct npu_node *mx;
	int i;

	(void)state;
	(void)dc;
	for (i = 0; i < 16; i++) {
		char name[8];

		snprintf(name, sizeof(name), "v%d", i);
		v[i] = value_like(g, name, x);
	}
	transpose(g, "ta", x, v[0], to_nchw);
	node(g, "MaxPool", "pa", &v[0], 1, v[1]);
	transpose(g, "tb", v[1], v[2], to_nhwc);
	node(g, "LeakyRelu", "la", &v[2], 1, v[3]);
	transpose(g, "tc", x, v[4], to_nchw);
	node(g, "MaxPool", "pb", &v[4], 1, v[5]);
	transpose(g, "td", v[5], v[6], to_nhwc);
	node(g, "Relu", "rb", &v[6], 1, v[7]);
	in[0] = v[3];
	in[1] = v[7];
	mx = node(g, "Max", "mx", in, 2, v[8]);
	in[0] = v[8];
	in[1] = constant(g, "two", 1, one, &two);
	node(g, "Mul", "mul", in, 2, v[9]);
	transpose(g, "te", v[9], v[10], to_nchw);
	node(g, "MaxPool", "pc", &v[10], 1, v[11]);
	transpose(g, "tf", v[11], v[12], to_nhwc);
	mark_output(g, v[12]);
	for (i = 0; i < 2; i++)
		v[i]->shape = nchw, v[4 + i]->shape = nchw, v[10 + i]->shape = nchw;
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_cancel_transposes(g, NULL, &err), NPU_OK);
	assert_int_equal(npu_pass_dead_nodes(g, NULL, &err), NPU_OK);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	/* ta and tc (x is NHWC) and tf (the output) are left. */
	assert_int_equal(count_op(g, "Transpose"), 3);
	/* Max now reads the pools' NCHW outputs through the activations. */
	assert_ptr_equal(mx->inputs[0]->producer->inputs[0], v[1]);
	assert_ptr_equal(mx->inputs[1]->producer->inputs[0], v[5]);
	assert_int_equal(mx->outputs[0]->shape.dims[1], 3);	/* NCHW now */
	assert_int_equal(mx->outputs[0]->shape.dims[3], 6);
	/* The last pool reads Mul's output directly; the output keeps its name. */
	assert_string_equal(g->outputs[0]->name, "v12");
	assert_string_equal(g->outputs[0]->producer->op_type, "Transpose");
	assert_string_equal(g->outputs[0]->producer->inputs[0]->producer->name, "pc");
	assert_string_equal(g->outputs[0]->producer->inputs[0]->producer->inputs[0]->producer->name,
			    "mul");
	npu_graph_destroy(g);
}

static void test_qdq_pairs_become_fixed_qparams(void **state)
{
	struct npu_graph *g = npu_graph_create("test");
	int64_t d[2] = { 1, 4 }, sd[1] = { 1 };
	const float scale = 0.05f;
	struct npu_value *x = input(g, "x", 2, d), *in[3];
	struct npu_value *q = npu_graph_add_value(g, "q", NULL);
	struct npu_value *dq = value_like(g, "dq", x), *r = value_like(g, "r", x);
	struct npu_shape zs = { .rank = 0 };
	struct npu_tensor *zp = npu_tensor_create(NPU_DTYPE_UINT8, &zs);
	struct npu_qdq_table table = { 0 };
	struct npu_error err = { 0 };
	const struct npu_qparams *qp;

	(void)state;
	*(uint8_t *)zp->data = 130;
	in[0] = x;
	in[1] = constant(g, "scale", 0, sd, &scale);
	in[2] = npu_graph_add_constant(g, "zp", zp, NULL);
	q->dtype = NPU_DTYPE_UINT8;
	q->shape = x->shape;
	node(g, "QuantizeLinear", "q", in, 3, q);
	in[0] = q;
	node(g, "DequantizeLinear", "dq", in, 3, dq);
	node(g, "Relu", "relu", &dq, 1, r);
	mark_output(g, r);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_pass_qdq(g, &table, &err), NPU_OK);
	assert_int_equal(g->num_nodes, 1);
	assert_ptr_equal(g->nodes[0]->inputs[0], x);
	qp = npu_qdq_lookup(&table, "x");
	assert_non_null(qp);
	assert_true(qp->scale == scale);
	assert_int_equal(qp->zero_point, 2);	/* uint8 130 == int8 2 */
	npu_qdq_table_free(&table);
	npu_graph_destroy(g);
}

/* ---- CPU fusion (pass_cpu_fuse.c) ---- */

/* A graph that imports opset 13 of the default domain (ops can run). */
static struct npu_graph *graph13(void)
{
	struct npu_graph *g = npu_graph_create("test");

	assert_non_null(g);
	g->opsets = calloc(1, sizeof(*g->opsets));
	assert_non_null(g->opsets);
	g->opsets[0].domain = strdup("");
	assert_non_null(g->opsets[0].domain);
	g->opsets[0].version = 13;
	g->num_opsets = 1;
	return g;
}

static void set_int(struct npu_node *n, const char *name, int64_t v)
{
	struct npu_attr *a;

	assert_int_equal(npu_node_set_attr_float(n, name, 0.0f), NPU_OK);
	a = (struct npu_attr *)npu_node_attr(n, name);
	a->type = NPU_ATTR_INT;
	a->i = v;
}

static float frand(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (float)(*s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

static struct npu_value *rconst(struct npu_graph *g, const char *name, int rank,
				const int64_t *dims, uint32_t *seed, float scale)
{
	float data[512];
	int64_t n = 1;
	int i;

	for (i = 0; i < rank; i++)
		n *= dims[i];
	assert_true(n <= 512);
	for (i = 0; i < n; i++)
		data[i] = scale * frand(seed);
	return constant(g, name, rank, dims, data);
}

static struct npu_value *scalar(struct npu_graph *g, const char *name, float f)
{
	int64_t d1[1] = { 1 };

	return constant(g, name, 0, d1, &f);
}

static struct npu_node *binop(struct npu_graph *g, const char *op, const char *name,
			      struct npu_value *a, struct npu_value *b, struct npu_value *out)
{
	struct npu_value *in[2] = { a, b };

	return node(g, op, name, in, 2, out);
}

/*
 * x -> conv(3x3 SAME) -> hard-swish as Add/Clip/Mul/Div -> * s + b = y1;
 * y1 -> conv 1x1 -> + y1 (residual) -> Relu = out;
 * y1 -> depthwise conv -> Sigmoid = out2 (a second output);
 * x -> conv whose output has two readers (Mul by itself): left alone;
 * y1 + y1 * HardSigmoid(conv(GlobalAveragePool(y1))) = out4;
 * ConvTranspose(y1) -> Relu -> * 0.5 = out5.
 */
static struct npu_graph *fusable_graph(void)
{
	struct npu_graph *g = graph13();
	uint32_t seed = 7;
	int64_t dx[4] = { 1, 3, 9, 11 }, dw[4] = { 8, 3, 3, 3 }, db[1] = { 8 };
	int64_t dw2[4] = { 8, 8, 1, 1 }, dwd[4] = { 8, 1, 3, 3 };
	int64_t dy[4] = { 1, 8, 9, 11 };
	struct npu_value *x = input(g, "x", 4, dx);
	struct npu_value *w = rconst(g, "w", 4, dw, &seed, 1.0f);
	struct npu_value *b = rconst(g, "b", 1, db, &seed, 0.5f);
	struct npu_value *c = input(g, "c", 4, dy), *v[12];
	struct npu_node *n;
	char name[8];
	int i;

	/* Intermediate values: shaped as the conv output. */
	c->is_graph_input = false;
	g->inputs = calloc(1, sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	for (i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "v%d", i);
		v[i] = value_like(g, name, c);
	}
	{
		struct npu_value *in[3] = { x, w, b };

		n = node(g, "Conv", "conv0", in, 3, c);
		assert_int_equal(npu_node_set_attr_string(n, "auto_pad", "SAME_UPPER"), NPU_OK);
	}
	binop(g, "Add", "hs_add", c, scalar(g, "three", 3.0f), v[0]);
	{
		struct npu_value *in[3] = { v[0], scalar(g, "zero", 0.0f), scalar(g, "six", 6.0f) };

		node(g, "Clip", "hs_clip", in, 3, v[1]);
	}
	binop(g, "Mul", "hs_mul", v[1], c, v[2]);
	binop(g, "Div", "hs_div", v[2], scalar(g, "six2", 6.0f), v[3]);
	binop(g, "Mul", "lab_mul", v[3], scalar(g, "s", 0.7f), v[4]);
	binop(g, "Add", "lab_add", scalar(g, "t", -0.2f), v[4], v[5]);	/* y1 */
	{
		struct npu_value *in[2] = { v[5], rconst(g, "w2", 4, dw2, &seed, 0.5f) };

		node(g, "Conv", "conv1", in, 2, v[6]);
	}
	binop(g, "Add", "res_add", v[5], v[6], v[7]);
	node(g, "Relu", "relu", &v[7], 1, v[8]);
	mark_output(g, v[8]);
	{
		struct npu_value *in[2] = { v[5], rconst(g, "wd", 4, dwd, &seed, 1.0f) };

		n = node(g, "Conv", "dw", in, 2, v[9]);
		set_int(n, "group", 8);
		assert_int_equal(npu_node_set_attr_string(n, "auto_pad", "SAME_LOWER"), NPU_OK);
	}
	node(g, "Sigmoid", "sig", &v[9], 1, v[10]);
	mark_output(g, v[10]);
	{
		struct npu_value *in[3] = { x, w, b };

		n = node(g, "Conv", "shared", in, 3, v[11]);
		assert_int_equal(npu_node_set_attr_string(n, "auto_pad", "SAME_UPPER"), NPU_OK);
	}
	{
		struct npu_value *sq = value_like(g, "sq", c);

		binop(g, "Mul", "square", v[11], v[11], sq);
		mark_output(g, sq);
	}
	{
		/* Squeeze-excitation with a shortcut: y1 + y1 * hsig(conv(gap(y1))). */
		int64_t d1[4] = { 1, 8, 1, 1 }, dse[4] = { 8, 8, 1, 1 };
		struct npu_value *gap = input(g, "gap", 4, d1), *pre = value_like(g, "pre", gap);
		struct npu_value *sc = value_like(g, "sc", gap), *mul = value_like(g, "semul", c);
		struct npu_value *se = value_like(g, "se", c);
		struct npu_value *in[2] = { gap, rconst(g, "wse", 4, dse, &seed, 1.0f) };

		gap->is_graph_input = false;
		node(g, "GlobalAveragePool", "gap", &v[5], 1, gap);
		node(g, "Conv", "se_conv", in, 2, pre);
		node(g, "HardSigmoid", "hsig", &pre, 1, sc);
		binop(g, "Mul", "se_mul", v[5], sc, mul);
		binop(g, "Add", "se_add", mul, v[5], se);
		mark_output(g, se);
	}
	{
		/* ConvTranspose (1x1, its tiled kernel) -> Relu -> * 0.5 */
		int64_t dt[4] = { 8, 8, 1, 1 };
		struct npu_value *in[2] = { v[5], rconst(g, "wt", 4, dt, &seed, 1.0f) };
		struct npu_value *t0 = value_like(g, "t0", c), *t1 = value_like(g, "t1", c);
		struct npu_value *t2 = value_like(g, "t2", c);

		node(g, "ConvTranspose", "convt", in, 2, t0);
		node(g, "Relu", "relu_t", &t0, 1, t1);
		binop(g, "Mul", "half", t1, scalar(g, "h", 0.5f), t2);
		mark_output(g, t2);
	}
	return g;
}

static size_t count_domain_op(const struct npu_graph *g, const char *domain, const char *op)
{
	size_t i, n = 0;

	for (i = 0; i < g->num_nodes; i++)
		n += !strcmp(g->nodes[i]->op_type, op) && !strcmp(g->nodes[i]->domain, domain);
	return n;
}

/* Runs g on x with 'threads' threads; out[o] (malloc'd) gets output o. */
static void run_outputs(struct npu_graph *g, const struct npu_tensor *x, int threads,
			float **out, size_t *count)
{
	struct npu_exec_options so = { .threads = threads };
	const struct npu_tensor *ins[] = { x };
	struct npu_error err = { 0 };
	struct npu_exec *s = NULL;
	size_t o;

	assert_int_equal(npu_exec_create(g, &so, &s, &err), NPU_OK);
	if (npu_exec_run(s, ins, &err))
		fail_msg("%s", err.msg);
	for (o = 0; o < g->num_outputs; o++) {
		const struct npu_tensor *t = npu_exec_output(s, o);

		assert_non_null(t);
		count[o] = t->nbytes / sizeof(float);
		out[o] = malloc(t->nbytes);
		assert_non_null(out[o]);
		memcpy(out[o], t->data, t->nbytes);
	}
	npu_exec_destroy(s);
}

static void test_cpu_fuse_matches_unfused_graph(void **state)
{
	struct npu_graph *g = fusable_graph(), *f;
	struct npu_error err = { 0 };
	float xin[3 * 9 * 11], *ref[5], *got[5];
	struct npu_tensor x = { .dtype = NPU_DTYPE_FLOAT,
				.shape = { 4, { 1, 3, 9, 11 } },
				.data = xin, .nbytes = sizeof(xin) };
	uint32_t seed = 99;
	size_t i, o, nref[5], ngot[5];

	(void)state;
	for (i = 0; i < sizeof(xin) / sizeof(xin[0]); i++)
		xin[i] = 4.0f * frand(&seed);	/* across the hard-swish knees */
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	if (npu_graph_infer(g, true, &err))
		fail_msg("%s", err.msg);
	f = npu_graph_clone(g, &err);
	assert_non_null(f);
	assert_int_equal(npu_cpu_passes(f, &plain_layout, &err), NPU_OK);

	/*
	 * conv0 + hard-swish + affine; conv1 + residual + Relu; dw + Sigmoid;
	 * se_conv + HardSigmoid + 1 (the shortcut Add).
	 */
	assert_int_equal(count_domain_op(f, "ai.npu.cpu", "FusedConv"), 4);
	assert_int_equal(count_op(f, "Clip"), 0);
	assert_int_equal(count_op(f, "Div"), 0);
	assert_int_equal(count_op(f, "Relu"), 0);
	assert_int_equal(count_op(f, "Sigmoid"), 0);
	assert_int_equal(count_op(f, "Add"), 0);
	/* The conv read twice keeps its own op and its reader. */
	assert_int_equal(count_domain_op(f, "", "Conv"), 1);
	assert_int_equal(count_op(f, "Mul"), 2);	/* square, se_mul */
	assert_int_equal(count_op(f, "HardSigmoid"), 0);
	assert_int_equal(count_domain_op(f, "ai.npu.cpu", "FusedConvTranspose"), 1);
	assert_int_equal(f->num_nodes, 9);

	assert_int_equal(g->num_outputs, 5);
	run_outputs(g, &x, 2, ref, nref);
	run_outputs(f, &x, 2, got, ngot);
	for (o = 0; o < 5; o++) {
		assert_int_equal(nref[o], 8 * 9 * 11);
		assert_int_equal(ngot[o], nref[o]);
		for (i = 0; i < nref[o]; i++)
			if (!(fabsf(got[o][i] - ref[o][i]) <= 1e-5f + 1e-5f * fabsf(ref[o][i])))
				fail_msg("output %zu [%zu]: fused %.9g, unfused %.9g", o, i,
					 got[o][i], ref[o][i]);
		free(ref[o]);
		free(got[o]);
	}
	npu_graph_destroy(f);
	npu_graph_destroy(g);
}

/* Lookalikes that are not hard-swish, or whose values are read twice. */
static void test_cpu_fuse_leaves_lookalikes(void **state)
{
	struct npu_graph *g = graph13();
	int64_t d[4] = { 1, 2, 3, 3 };
	struct npu_value *x = input(g, "x", 4, d), *v[8];
	struct npu_error err = { 0 };
	char name[8];
	int i;

	(void)state;
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "v%d", i);
		v[i] = value_like(g, name, x);
	}
	/* + 2 instead of + 3 */
	binop(g, "Add", "a", x, scalar(g, "two", 2.0f), v[0]);
	{
		struct npu_value *in[3] = { v[0], scalar(g, "zero", 0.0f), scalar(g, "six", 6.0f) };

		node(g, "Clip", "clip", in, 3, v[1]);
	}
	binop(g, "Mul", "m", v[1], x, v[2]);
	binop(g, "Div", "d", v[2], scalar(g, "six2", 6.0f), v[3]);
	mark_output(g, v[3]);
	/* the right constants, but the Clip's output is also a graph output */
	binop(g, "Add", "a2", x, scalar(g, "three", 3.0f), v[4]);
	{
		struct npu_value *in[3] = { v[4], scalar(g, "zero2", 0.0f), scalar(g, "six3", 6.0f) };

		node(g, "Clip", "clip2", in, 3, v[5]);
	}
	mark_output(g, v[5]);
	binop(g, "Mul", "m2", v[5], x, v[6]);
	binop(g, "Div", "d2", v[6], scalar(g, "six4", 6.0f), v[7]);
	mark_output(g, v[7]);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	assert_int_equal(npu_graph_infer(g, true, &err), NPU_OK);
	assert_int_equal(npu_cpu_passes(g, &plain_layout, &err), NPU_OK);
	assert_int_equal(count_op(g, "HardSwish"), 0);
	assert_int_equal(count_op(g, "Clip"), 2);
	assert_int_equal(g->num_nodes, 8);
	npu_graph_destroy(g);
}


/* ---- The blocked layout (pass_cpu_nchwc.c) ---- */

/* A constant of any size drawn from frand() * scale. */
static struct npu_value *rconst_any(struct npu_graph *g, const char *name, int rank,
				    const int64_t *dims, uint32_t *seed, float scale)
{
	struct npu_shape sh = { .rank = rank };
	struct npu_tensor *t;
	struct npu_value *v;
	int64_t i;

	memcpy(sh.dims, dims, rank * sizeof(*dims));
	t = npu_tensor_create(NPU_DTYPE_FLOAT, &sh);
	assert_non_null(t);
	for (i = 0; i < npu_shape_numel(&sh); i++)
		((float *)t->data)[i] = scale * frand(seed);
	v = npu_graph_add_constant(g, name, t, NULL);
	assert_non_null(v);
	return v;
}

static struct npu_value *shaped(struct npu_graph *g, const char *name, int64_t n,
				int64_t c, int64_t h, int64_t w)
{
	int64_t d[4] = { n, c, h, w };
	struct npu_value *v = input(g, name, 4, d);

	v->is_graph_input = false;
	return v;
}

static struct npu_node *conv_node(struct npu_graph *g, const char *name, struct npu_value *x,
				  int64_t oc, int64_t k, int64_t group, int64_t stride,
				  uint32_t *seed, struct npu_value *y)
{
	int64_t dw[4] = { oc, x->shape.dims[1] / group, k, k }, db[1] = { oc };
	int64_t pads[4] = { k / 2, k / 2, k / 2, k / 2 }, st[2] = { stride, stride };
	char wn[32], bn[32];
	struct npu_value *in[3];
	struct npu_node *n;

	snprintf(wn, sizeof(wn), "%s_w", name);
	snprintf(bn, sizeof(bn), "%s_b", name);
	in[0] = x;
	in[1] = rconst_any(g, wn, 4, dw, seed, 1.0f / sqrtf((float)(dw[1] * k * k)));
	in[2] = rconst_any(g, bn, 1, db, seed, 0.2f);
	n = node(g, "Conv", name, in, 3, y);
	set_int(n, "group", group);
	assert_int_equal(npu_node_set_attr_ints(n, "pads", pads, 4), NPU_OK);
	assert_int_equal(npu_node_set_attr_ints(n, "strides", st, 2), NPU_OK);
	return n;
}

static struct npu_node *resize_node(struct npu_graph *g, const char *name, struct npu_value *x,
				    const char *ctm, const char *nearest, struct npu_value *y)
{
	int64_t d4[1] = { 4 };
	float sc[4] = { 1.0f, 1.0f, (float)(y->shape.dims[2] / x->shape.dims[2]),
			(float)(y->shape.dims[3] / x->shape.dims[3]) };
	char sn[32];
	struct npu_value *in[3];
	struct npu_node *n;

	snprintf(sn, sizeof(sn), "%s_scales", name);
	in[0] = x;
	in[1] = NULL;
	in[2] = constant(g, sn, 1, d4, sc);
	n = node(g, "Resize", name, in, 3, y);
	n->opset = 13;
	assert_int_equal(npu_node_set_attr_string(n, "mode", "nearest"), NPU_OK);
	assert_int_equal(npu_node_set_attr_string(n, "coordinate_transformation_mode", ctm),
			 NPU_OK);
	assert_int_equal(npu_node_set_attr_string(n, "nearest_mode", nearest), NPU_OK);
	return n;
}

/*
 * x [2,3,13,17] -> conv 3x3/2 (24) -> HardSwish = a; a -> depthwise 3x3
 * -> Relu = r (an output too); r * Sigmoid(GAP(r)) -> conv 1x1 (40) + 0.5
 * = p; p -> Resize x2 x3 (half_pixel, blocked) = u; Concat(conv1x1(u) (32),
 * u) -> conv 3x3 (5) = out1; Resize of p that is not i / f (asymmetric,
 * round_prefer_floor): plain; Concat(a (24), conv(a) (16)): plain, its
 * first input does not fill whole blocks; x -> depthwise on the graph
 * input (reordered in) / Div by a blocked value = out3.
 */
static struct npu_graph *nchwc_graph(void)
{
	struct npu_graph *g = graph13();
	uint32_t seed = 11;
	int64_t dx[4] = { 2, 3, 13, 17 };
	struct npu_value *x = input(g, "x", 4, dx);
	struct npu_value *c0 = shaped(g, "c0", 2, 24, 7, 9), *a = shaped(g, "a", 2, 24, 7, 9);
	struct npu_value *dw = shaped(g, "dw", 2, 24, 7, 9), *r = shaped(g, "r", 2, 24, 7, 9);
	struct npu_value *gp = shaped(g, "gp", 2, 24, 1, 1), *sg = shaped(g, "sg", 2, 24, 1, 1);
	struct npu_value *m = shaped(g, "m", 2, 24, 7, 9), *pw = shaped(g, "pw", 2, 40, 7, 9);
	struct npu_value *p = shaped(g, "p", 2, 40, 7, 9), *u = shaped(g, "u", 2, 40, 14, 27);
	struct npu_value *q = shaped(g, "q", 2, 32, 14, 27), *cat = shaped(g, "cat", 2, 72, 14, 27);
	struct npu_value *out1 = shaped(g, "out1", 2, 5, 14, 27);
	struct npu_value *ua = shaped(g, "ua", 2, 40, 14, 18);
	struct npu_value *a16 = shaped(g, "a16", 2, 16, 7, 9);
	struct npu_value *cat2 = shaped(g, "cat2", 2, 40, 7, 9);
	struct npu_value *xd = shaped(g, "xd", 2, 3, 13, 17), *xs = shaped(g, "xs", 2, 3, 13, 17);
	struct npu_value *xq = shaped(g, "xq", 2, 3, 13, 17);
	struct npu_node *n;

	g->inputs = calloc(1, sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	conv_node(g, "c0", x, 24, 3, 1, 2, &seed, c0);
	node(g, "HardSwish", "hs", &c0, 1, a)->opset = 14;
	conv_node(g, "dw", a, 24, 3, 24, 1, &seed, dw);
	node(g, "Relu", "relu", &dw, 1, r);
	mark_output(g, r);
	node(g, "GlobalAveragePool", "gap", &r, 1, gp);
	node(g, "Sigmoid", "sig", &gp, 1, sg);
	binop(g, "Mul", "gate", r, sg, m);
	conv_node(g, "pw", m, 40, 1, 1, 1, &seed, pw);
	binop(g, "Add", "bias", pw, scalar(g, "half", 0.5f), p);
	resize_node(g, "up", p, "half_pixel", "round_prefer_floor", u);
	conv_node(g, "q", u, 32, 1, 1, 1, &seed, q);
	{
		struct npu_value *in[2] = { q, u };

		n = node(g, "Concat", "cat", in, 2, cat);
		set_int(n, "axis", -3);
	}
	conv_node(g, "out1", cat, 5, 3, 1, 1, &seed, out1);
	mark_output(g, out1);
	{
		int64_t d4[1] = { 4 };
		float sc[4] = { 1.0f, 1.0f, 2.0f, 2.0f };
		struct npu_value *in[3] = { p, NULL, constant(g, "ua_scales", 1, d4, sc) };

		/* 14 x 18 from 7 x 9: i / 2 rounded to nearest, not floor(i / 2) */
		n = node(g, "Resize", "up_asym", in, 3, ua);
		n->opset = 13;
		assert_int_equal(npu_node_set_attr_string(n, "mode", "nearest"), NPU_OK);
		assert_int_equal(npu_node_set_attr_string(n, "coordinate_transformation_mode",
							  "asymmetric"), NPU_OK);
		mark_output(g, ua);
	}
	conv_node(g, "a16", a, 16, 1, 1, 1, &seed, a16);
	{
		struct npu_value *in[2] = { a, a16 };

		n = node(g, "Concat", "cat2", in, 2, cat2);
		set_int(n, "axis", 1);
		mark_output(g, cat2);
	}
	conv_node(g, "xd", x, 3, 3, 3, 1, &seed, xd);
	node(g, "Sigmoid", "xsig", &xd, 1, xs);
	binop(g, "Div", "xdiv", x, xs, xq);
	mark_output(g, xq);
	return g;
}

/* g planned plainly and blocked (option nchwc=1) gives the same outputs. */
static struct npu_graph *check_blocked_matches_plain(struct npu_graph *g,
						     const int64_t *xdims, float xscale)
{
	struct npu_shape xs = { .rank = 4 };
	struct npu_tensor *x;
	struct npu_graph *plain, *blocked;
	struct npu_error err = { 0 };
	float *ref[8], *got[8];
	size_t nref[8], ngot[8], o, i;
	uint32_t seed = 5;
	int threads;

	memcpy(xs.dims, xdims, sizeof(xs.dims[0]) * 4);
	x = npu_tensor_create(NPU_DTYPE_FLOAT, &xs);
	assert_non_null(x);
	for (i = 0; i < (size_t)npu_shape_numel(&xs); i++)
		((float *)x->data)[i] = xscale * frand(&seed);
	assert_true(g->num_outputs <= 8);
	assert_int_equal(npu_graph_sort(g, &err), NPU_OK);
	if (npu_graph_infer(g, true, &err))
		fail_msg("%s", err.msg);
	plain = npu_graph_clone(g, &err);
	blocked = npu_graph_clone(g, &err);
	assert_non_null(plain);
	assert_non_null(blocked);
	assert_int_equal(npu_cpu_passes(plain, &plain_layout, &err), NPU_OK);
	if (npu_cpu_passes(blocked, &blocked_layout, &err))
		fail_msg("%s", err.msg);
	/* The pass's rank-5 values must infer as it set them. */
	if (npu_graph_infer(blocked, false, &err))
		fail_msg("%s", err.msg);
	for (threads = 1; threads <= 2; threads++) {
		run_outputs(plain, x, threads, ref, nref);
		run_outputs(blocked, x, threads, got, ngot);
		for (o = 0; o < g->num_outputs; o++) {
			assert_int_equal(ngot[o], nref[o]);
			for (i = 0; i < nref[o]; i++)
				if (!(fabsf(got[o][i] - ref[o][i]) <= 1e-4f + 1e-4f * fabsf(ref[o][i])))
					fail_msg("%d threads, output %zu '%s' [%zu]: blocked %.9g, plain %.9g",
						 threads, o, g->outputs[o]->name, i, got[o][i],
						 ref[o][i]);
			free(ref[o]);
			free(got[o]);
		}
	}
	npu_tensor_destroy(x);
	npu_graph_destroy(plain);
	npu_graph_destroy(g);
	return blocked;
}

static void test_cpu_nchwc_matches_plain_graph(void **state)
{
	int64_t dx[4] = { 2, 3, 13, 17 };
	struct npu_graph *b = check_blocked_matches_plain(nchwc_graph(), dx, 2.0f);

	(void)state;
	/*
	 * c0, dw, pw, q, a16 and xd; out1 (3x3 stride 1 on 14 x 27) stays an
	 * NCHW Conv, which runs as Winograd.
	 */
	assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcConv"), 6);
	assert_int_equal(count_domain_op(b, "", "Conv"), 1);
	assert_int_equal(count_domain_op(b, "ai.npu.cpu", "FusedConv"), 0);
	assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcGlobalAveragePool"), 1);
	assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcUpsample"), 1);
	/* The asymmetric Resize and the 24 + 16 Concat stay plain. */
	assert_int_equal(count_domain_op(b, "", "Resize"), 1);
	assert_int_equal(count_domain_op(b, "", "Concat"), 2);
	/*
	 * Reordered in: x for the depthwise xd (c0 reads x as it is) and x
	 * again for the Div by the blocked Sigmoid: one reorder serves both.
	 */
	assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcReorderInput"), 1);
	/*
	 * Out: r (an output), p (the asymmetric Resize), a and a16 (the plain
	 * Concat), cat (for out1) and xq (an output).
	 */
	assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcReorderOutput"), 6);
	npu_graph_destroy(b);
}

/* A 1x1 conv between plain ops gains nothing blocked: it stays as it is. */
static void test_cpu_nchwc_leaves_isolated_conv(void **state)
{
	struct npu_graph *g = graph13();
	uint32_t seed = 3;
	int64_t dx[4] = { 1, 16, 5, 6 };
	struct npu_value *x = input(g, "x", 4, dx), *c = shaped(g, "c", 1, 32, 5, 6);
	struct npu_value *f = shaped(g, "f", 1, 32, 5, 6);

	(void)state;
	g->inputs = calloc(1, sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	conv_node(g, "conv", x, 32, 1, 1, 1, &seed, c);
	node(g, "Floor", "floor", &c, 1, f);
	mark_output(g, f);
	{
		struct npu_graph *blocked = check_blocked_matches_plain(g, dx, 1.0f);

		assert_int_equal(count_domain_op(blocked, "ai.npu.cpu", "NchwcConv"), 0);
		assert_int_equal(count_domain_op(blocked, "ai.npu.cpu", "NchwcReorderOutput"), 0);
		npu_graph_destroy(blocked);
	}
}

/*
 * A group-1 conv on a plain value: reordered in when it has 24 channels
 * (blocking pads 24 to 32, while reading NCHW costs 1.4-2.3x), read as
 * NCHW with 8 (blocking would double the work). x [1,24,7,9]: Floor(x)
 * -> conv 1x1 (32) -> conv 1x1 (16) = o1; Floor(conv 1x1 (8) of x) ->
 * conv 3x3 (16) -> conv 1x1 (16) = o2.
 */
static void test_cpu_nchwc_reorders_wide_plain_inputs(void **state)
{
	struct npu_graph *g = graph13();
	uint32_t seed = 4;
	int64_t dx[4] = { 1, 24, 7, 9 };
	struct npu_value *x = input(g, "x", 4, dx), *f = shaped(g, "f", 1, 24, 7, 9);
	struct npu_value *c1 = shaped(g, "c1", 1, 32, 7, 9), *o1 = shaped(g, "o1", 1, 16, 7, 9);
	struct npu_value *e = shaped(g, "e", 1, 8, 7, 9), *ef = shaped(g, "ef", 1, 8, 7, 9);
	struct npu_value *c4 = shaped(g, "c4", 1, 16, 7, 9), *o2 = shaped(g, "o2", 1, 16, 7, 9);

	(void)state;
	g->inputs = calloc(1, sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	node(g, "Floor", "floor", &x, 1, f);
	conv_node(g, "c1", f, 32, 1, 1, 1, &seed, c1);
	conv_node(g, "c2", c1, 16, 1, 1, 1, &seed, o1);
	mark_output(g, o1);
	conv_node(g, "e", x, 8, 1, 1, 1, &seed, e);
	node(g, "Floor", "efloor", &e, 1, ef);
	conv_node(g, "c4", ef, 16, 3, 1, 1, &seed, c4);
	conv_node(g, "c5", c4, 16, 1, 1, 1, &seed, o2);
	mark_output(g, o2);
	{
		struct npu_graph *b = check_blocked_matches_plain(g, dx, 3.0f);

		/* c1, c2, c4, c5; e (read only by Floor) stays plain */
		assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcConv"), 4);
		assert_int_equal(count_domain_op(b, "", "Conv"), 1);
		/* f reordered for c1; ef (8 channels) read as it is by c4 */
		assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcReorderInput"), 1);
		npu_graph_destroy(b);
	}
}

/* Max and Min of two blocked values run blocked, lane by lane: x
 * [2,16,6,6] -> Max(conv 3x3, conv 1x1) -> Min(., conv 1x1) -> conv. */
static void test_cpu_nchwc_max_min_lanewise(void **state)
{
	struct npu_graph *g = graph13();
	uint32_t seed = 6;
	int64_t dx[4] = { 2, 16, 6, 6 };
	struct npu_value *x = input(g, "x", 4, dx), *a = shaped(g, "a", 2, 16, 6, 6);
	struct npu_value *b = shaped(g, "b", 2, 16, 6, 6), *m = shaped(g, "m", 2, 16, 6, 6);
	struct npu_value *d = shaped(g, "d", 2, 16, 6, 6), *n = shaped(g, "n", 2, 16, 6, 6);
	struct npu_value *o = shaped(g, "o", 2, 24, 6, 6);

	(void)state;
	g->inputs = calloc(1, sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	conv_node(g, "ca", x, 16, 3, 1, 1, &seed, a);
	conv_node(g, "cb", x, 16, 1, 1, 1, &seed, b);
	binop(g, "Max", "max", a, b, m);
	conv_node(g, "cd", x, 16, 1, 1, 1, &seed, d);
	binop(g, "Min", "min", m, d, n);
	conv_node(g, "co", n, 24, 1, 1, 1, &seed, o);
	mark_output(g, o);
	{
		struct npu_graph *bl = check_blocked_matches_plain(g, dx, 2.0f);

		assert_int_equal(count_domain_op(bl, "ai.npu.cpu", "NchwcConv"), 4);
		/* x in once (16 channels), o out; Max and Min on rank 5 */
		assert_int_equal(count_domain_op(bl, "ai.npu.cpu", "NchwcReorderInput"), 1);
		assert_int_equal(count_domain_op(bl, "ai.npu.cpu", "NchwcReorderOutput"), 1);
		npu_graph_destroy(bl);
	}
}

/*
 * A 3x3 conv between plain ops that the NCHW kernels would run by im2col
 * (a plane of 8 x 10: rows too short for the row tiles) goes blocked with
 * its reorders, since the blocked kernel is faster on such planes;
 * whether it is im2col depends on the ISA's tiles, so the count follows
 * npu_conv2d_f32_takes_im2col. x [2,32,8,10] -> Floor -> conv 3x3 (64)
 * -> Floor.
 */
static void test_cpu_nchwc_blocks_isolated_im2col_conv(void **state)
{
	struct npu_graph *g = graph13();
	uint32_t seed = 8;
	int64_t dx[4] = { 2, 32, 8, 10 };
	struct npu_value *x = input(g, "x", 4, dx), *f = shaped(g, "f", 2, 32, 8, 10);
	struct npu_value *c = shaped(g, "c", 2, 64, 8, 10), *o = shaped(g, "o", 2, 64, 8, 10);
	struct npu_conv2d_params p = {
		.batch = 2, .in_c = 32, .in_h = 8, .in_w = 10, .out_c = 64, .out_h = 8,
		.out_w = 10, .k_h = 3, .k_w = 3, .stride_h = 1, .stride_w = 1,
		.dil_h = 1, .dil_w = 1, .pad_top = 1, .pad_left = 1, .groups = 1,
	};
	int want = npu_conv2d_f32_takes_im2col(&p);

	(void)state;
	g->inputs = calloc(1, sizeof(*g->inputs));
	assert_non_null(g->inputs);
	g->inputs[0] = x;
	g->num_inputs = 1;
	node(g, "Floor", "floor", &x, 1, f);
	conv_node(g, "conv", f, 64, 3, 1, 1, &seed, c);
	node(g, "Floor", "floor2", &c, 1, o);
	mark_output(g, o);
	print_message("im2col on this ISA: %d\n", want);
	{
		struct npu_graph *b = check_blocked_matches_plain(g, dx, 3.0f);

		assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcConv"), want);
		assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcReorderInput"), want);
		assert_int_equal(count_domain_op(b, "ai.npu.cpu", "NchwcReorderOutput"), want);
		npu_graph_destroy(b);
	}
}

/* The fusion test's graph: SAME pads, residuals, SE, ConvTranspose. */
static void test_cpu_nchwc_keeps_fused_graph_outputs(void **state)
{
	int64_t dx[4] = { 1, 3, 9, 11 };
	struct npu_graph *b = check_blocked_matches_plain(fusable_graph(), dx, 4.0f);

	(void)state;
	assert_int_equal(count_domain_op(b, "ai.npu.cpu", "FusedConv"), 0);
	assert_true(count_domain_op(b, "ai.npu.cpu", "NchwcConv") >= 4);
	npu_graph_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dead_nodes_keep_only_what_reaches_outputs),
		cmocka_unit_test(test_batchnorm_folds_into_conv),
		cmocka_unit_test(test_channel_mul_add_fold_into_conv),
		cmocka_unit_test(test_batchnorm_with_shared_conv_output_is_left_alone),
		cmocka_unit_test(test_relu_and_clip_fuse_into_producers),
		cmocka_unit_test(test_max_min_by_a_constant_become_clip),
		cmocka_unit_test(test_activation_with_two_users_is_not_fused),
		cmocka_unit_test(test_inverse_transposes_cancel),
		cmocka_unit_test(test_transposes_move_below_elementwise_ops_and_cancel),
		cmocka_unit_test(test_qdq_pairs_become_fixed_qparams),
		cmocka_unit_test(test_cpu_fuse_matches_unfused_graph),
		cmocka_unit_test(test_cpu_fuse_leaves_lookalikes),
		cmocka_unit_test(test_cpu_nchwc_matches_plain_graph),
		cmocka_unit_test(test_cpu_nchwc_leaves_isolated_conv),
		cmocka_unit_test(test_cpu_nchwc_reorders_wide_plain_inputs),
		cmocka_unit_test(test_cpu_nchwc_max_min_lanewise),
		cmocka_unit_test(test_cpu_nchwc_blocks_isolated_im2col_conv),
		cmocka_unit_test(test_cpu_nchwc_keeps_fused_graph_outputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
