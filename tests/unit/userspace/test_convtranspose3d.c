// SPDX-License-Identifier: MIT
/*
 * 3-D ConvTranspose (issue 17): a volume of depth 1 through a kernel of
 * depth 1 must give exactly what the 2-D operator gives on the same planes,
 * with strides, dilations, asymmetric pads, groups and a bias, whatever
 * the depth stride (one input plane has nothing to spread). The depth axis
 * itself is checked by libonnx-testdata's test_convtranspose_3d.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>

#include "npu/npu_model.h"
#include "onnx_builder.h"

/* N=1, C=4 (2 groups), H=5, W=6; W: C x M/group=3 x kh=3 x kw=2. */
#define C 4
#define M_G 3
#define GROUPS 2
#define IH 5
#define IW 6
#define KH 3
#define KW 2

struct ints_attr {
	Onnx__AttributeProto a[4], *p[4];
	int64_t v[4][6];
};

static void attr_ints(struct ints_attr *at, size_t k, const char *name, const int64_t *v,
		      size_t n)
{
	onnx__attribute_proto__init(&at->a[k]);
	at->a[k].name = (char *)name;
	at->a[k].has_type = 1;
	at->a[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	memcpy(at->v[k], v, n * sizeof(*v));
	at->a[k].ints = at->v[k];
	at->a[k].n_ints = n;
	at->p[k] = &at->a[k];
}

/*
 * y = ConvTranspose(x, w, b) in 2-D (three_d = 0) or with a depth axis of
 * 1 in front of H (three_d = 1); depth stride dstride, depth kernel 1.
 */
static void *convt_model(int three_d, int64_t dstride, size_t *size)
{
	static const int64_t x4[] = { 1, C, IH, IW }, w4[] = { C, M_G, KH, KW };
	static const int64_t x5[] = { 1, C, 1, IH, IW }, w5[] = { C, M_G, 1, KH, KW };
	static const int64_t b1[] = { M_G * GROUPS }, y4[] = { -1, -1, -1, -1 };
	static const int64_t y5[] = { -1, -1, -1, -1, -1 };
	static struct tb_model m;
	static struct ints_attr at;
	Onnx__AttributeProto *grp;
	Onnx__NodeProto *n;

	/* tb_vi keeps 4 dims: rank-5 shapes are written by hand below. */
	tb_init(&m, 13);
	tb_input(&m, "x", 4, three_d ? x5 : x4);
	tb_input(&m, "w", 4, three_d ? w5 : w4);
	tb_input(&m, "b", 1, b1);
	tb_output(&m, "y", 4, three_d ? y5 : y4);
	n = tb_node(&m, "ConvTranspose", "up", "y", 3, "x", "w");
	m.node_in[0][2] = "b";
	if (three_d) {
		static Onnx__TensorShapeProto__Dimension extra[3], *dims[3][5];
		static const int64_t *src[3] = { x5, w5, y5 };
		int v, d;

		for (v = 0; v < 3; v++) {
			Onnx__TensorShapeProto *s = m.vi[v == 2 ? 3 : v].type->tensor_type->shape;

			for (d = 0; d < 4; d++)
				dims[v][d] = s->dim[d];
			onnx__tensor_shape_proto__dimension__init(&extra[v]);
			if (src[v][4] >= 0) {
				extra[v].value_case =
					ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
				extra[v].dim_value = src[v][4];
			}
			dims[v][4] = &extra[v];
			s->dim = dims[v];
			s->n_dim = 5;
		}
	}
	{
		int64_t strides[3] = { dstride, 2, 3 }, dil[3] = { 1, 2, 1 };
		int64_t pads[6] = { 0, 1, 0, 0, 2, 1 };	/* begin d h w, end d h w */
		int64_t p2[4] = { 1, 0, 2, 1 };

		if (three_d) {
			attr_ints(&at, 0, "strides", strides, 3);
			attr_ints(&at, 1, "dilations", dil, 3);
			attr_ints(&at, 2, "pads", pads, 6);
		} else {
			attr_ints(&at, 0, "strides", strides + 1, 2);
			attr_ints(&at, 1, "dilations", dil + 1, 2);
			attr_ints(&at, 2, "pads", p2, 4);
		}
	}
	grp = &at.a[3];
	onnx__attribute_proto__init(grp);
	grp->name = "group";
	grp->has_type = 1;
	grp->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	grp->has_i = 1;
	grp->i = GROUPS;
	at.p[3] = grp;
	n->n_attribute = 4;
	n->attribute = at.p;
	return tb_pack(&m, size);
}

static void run(int three_d, int64_t dstride, const float *x, const float *w, const float *b,
		struct npu_engine *e, struct npu_model **m, struct npu_session **s,
		struct npu_host_tensor *y)
{
	struct npu_host_tensor in[3] = {
		{ .name = "x", .dtype = NPU_TYPE_FLOAT, .data = (void *)x,
		  .nbytes = C * IH * IW * sizeof(float) },
		{ .name = "w", .dtype = NPU_TYPE_FLOAT, .data = (void *)w,
		  .nbytes = C * M_G * KH * KW * sizeof(float) },
		{ .name = "b", .dtype = NPU_TYPE_FLOAT, .rank = 1, .dims = { M_G * GROUPS },
		  .data = (void *)b, .nbytes = M_G * GROUPS * sizeof(float) },
	};
	const int64_t x5[] = { 1, C, 1, IH, IW }, w5[] = { C, M_G, 1, KH, KW };
	size_t size;
	void *buf = convt_model(three_d, dstride, &size);

	in[0].rank = in[1].rank = three_d ? 5 : 4;
	if (three_d) {
		memcpy(in[0].dims, x5, sizeof(x5));
		memcpy(in[1].dims, w5, sizeof(w5));
	} else {
		const int64_t x4[] = { 1, C, IH, IW }, w4[] = { C, M_G, KH, KW };

		memcpy(in[0].dims, x4, sizeof(x4));
		memcpy(in[1].dims, w4, sizeof(w4));
	}
	if (npu_model_load_memory(e, buf, size, "convt.onnx", NULL, m) != NPU_OK)
		fail_msg("%s", npu_last_error());
	free(buf);
	assert_int_equal(npu_session_create(*m, NULL, s), NPU_OK);
	if (npu_session_run(*s, in, 3) != NPU_OK)
		fail_msg("%s", npu_last_error());
	assert_int_equal(npu_session_output(*s, 0, y), NPU_OK);
}

static void test_depth_one_volume_matches_the_2d_operator(void **state)
{
	float x[C * IH * IW], w[C * M_G * KH * KW], b[M_G * GROUPS];
	struct npu_host_tensor y2, y3, y3s;
	struct npu_engine *e;
	struct npu_model *m2, *m3, *m3s;
	struct npu_session *s2, *s3, *s3s;
	size_t i, n, plane, o;
	int d;

	(void)state;
	for (i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		x[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		w[i] = (float)((i * 13) % 17) / 8.0f - 1.0f;
	for (i = 0; i < M_G * GROUPS; i++)
		b[i] = 0.25f * (float)i;
	assert_int_equal(npu_engine_create(NULL, &e), NPU_OK);
	run(0, 1, x, w, b, e, &m2, &s2, &y2);
	run(1, 1, x, w, b, e, &m3, &s3, &y3);
	assert_int_equal(y2.rank, 4);
	assert_int_equal(y3.rank, 5);
	assert_int_equal(y3.dims[2], 1);
	for (d = 0; d < 2; d++)
		assert_int_equal(y3.dims[3 + d], y2.dims[2 + d]);
	assert_int_equal(y3.dims[1], y2.dims[1]);
	n = y2.nbytes / sizeof(float);
	assert_int_equal(y3.nbytes, y2.nbytes);
	for (i = 0; i < n; i++)
		if (fabsf(((float *)y3.data)[i] - ((float *)y2.data)[i]) > 1e-5f)
			fail_msg("element %zu: 3-D %g, 2-D %g", i, ((float *)y3.data)[i],
				 ((float *)y2.data)[i]);
	/* Depth stride 3 on depth 1: still one plane (stride spreads inputs only). */
	run(1, 3, x, w, b, e, &m3s, &s3s, &y3s);
	assert_int_equal(y3s.dims[2], 1);
	plane = (size_t)(y2.dims[2] * y2.dims[3]);
	for (o = 0; o < (size_t)y2.dims[1]; o++)
		for (i = 0; i < plane; i++)
			assert_true(fabsf(((float *)y3s.data)[o * plane + i] -
					  ((float *)y2.data)[o * plane + i]) <= 1e-5f);
	npu_session_destroy(s2);
	npu_session_destroy(s3);
	npu_session_destroy(s3s);
	npu_model_destroy(m2);
	npu_model_destroy(m3);
	npu_model_destroy(m3s);
	npu_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_depth_one_volume_matches_the_2d_operator),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
