// SPDX-License-Identifier: MIT
/*
 * Data types across the ops (issue 17): for each common op family, every
 * element type the ONNX spec allows (fp16, bf16, double, float, int8 ..
 * uint64, bool) runs a one-node model through the public API on the CPU
 * and must equal a reference computed here. Inputs are graph inputs (no
 * constant folding); values are small integers every type holds exactly,
 * so the reference is exact in every type. Every (op, type) result is
 * printed as a matrix; any mismatch or refusal fails the family.
 *
 * Also: an op version the library does not implement is an error naming
 * the op, the version and the node.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npu/npu.h"
#include "onnx/onnx.pb-c.h"

enum {
	T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_UINT16 = 4, T_INT16 = 5, T_INT32 = 6,
	T_INT64 = 7, T_BOOL = 9, T_FLOAT16 = 10, T_DOUBLE = 11, T_UINT32 = 12,
	T_UINT64 = 13, T_BFLOAT16 = 16,
};

/* Every numeric type, then bool; lists end with 0. */
static const int NUMERIC[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT8, T_UINT8,
			       T_INT16, T_UINT16, T_INT32, T_UINT32, T_INT64, T_UINT64, 0 };
static const int ALL[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT8, T_UINT8,
			   T_INT16, T_UINT16, T_INT32, T_UINT32, T_INT64, T_UINT64, T_BOOL, 0 };
static const int SIGNED[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT8, T_INT16,
			      T_INT32, T_INT64, 0 };
/* ReduceSum / ReduceMean / ReduceProd (13), CumSum (14). */
static const int REDUCE[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT32, T_UINT32,
			      T_INT64, T_UINT64, 0 };
/* ReduceMax / ReduceMin (13): those and the 8-bit ones. */
static const int REDUCE_MM[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT8, T_UINT8,
				 T_INT32, T_UINT32, T_INT64, T_UINT64, 0 };

static const char *tname(int t)
{
	switch (t) {
	case T_FLOAT: return "float";
	case T_UINT8: return "uint8";
	case T_INT8: return "int8";
	case T_UINT16: return "uint16";
	case T_INT16: return "int16";
	case T_INT32: return "int32";
	case T_INT64: return "int64";
	case T_BOOL: return "bool";
	case T_FLOAT16: return "fp16";
	case T_DOUBLE: return "double";
	case T_UINT32: return "uint32";
	case T_UINT64: return "uint64";
	case T_BFLOAT16: return "bf16";
	}
	return "?";
}

static bool is_unsigned(int t)
{
	return t == T_UINT8 || t == T_UINT16 || t == T_UINT32 || t == T_UINT64;
}

static size_t tsize(int t)
{
	switch (t) {
	case T_UINT8: case T_INT8: case T_BOOL: return 1;
	case T_UINT16: case T_INT16: case T_FLOAT16: case T_BFLOAT16: return 2;
	case T_FLOAT: case T_INT32: case T_UINT32: return 4;
	default: return 8;
	}
}

/* ---- Encoding values (all small integers or halves: exact everywhere) ---- */

static uint16_t to_half(float f)
{
	uint32_t x;
	uint32_t sign, mant;
	int exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (int)((x >> 23) & 0xff) - 127 + 15;
	mant = x & 0x7fffff;
	if (f == 0)
		return (uint16_t)sign;
	if (isnan(f))
		return 0x7e00;
	if (isinf(f))
		return (uint16_t)(sign | 0x7c00);
	/* Only normal, exactly representable values are used here. */
	return (uint16_t)(sign | (uint32_t)exp << 10 | mant >> 13);
}

static float from_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	uint32_t x;
	float f;

	if (!exp && !mant)
		x = sign;
	else if (!exp)	/* subnormal */
		return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
	else if (exp == 31)
		x = sign | 0x7f800000 | mant << 13;
	else
		x = sign | (exp - 15 + 127) << 23 | mant << 13;
	memcpy(&f, &x, 4);
	return f;
}

static void put_value(void *data, int t, size_t i, double v)
{
	switch (t) {
	case T_FLOAT: ((float *)data)[i] = (float)v; break;
	case T_DOUBLE: ((double *)data)[i] = v; break;
	case T_FLOAT16: ((uint16_t *)data)[i] = to_half((float)v); break;
	case T_BFLOAT16: {
		float f = (float)v;
		uint32_t x;

		memcpy(&x, &f, 4);
		((uint16_t *)data)[i] = (uint16_t)(x >> 16);	/* exact for these values */
		break;
	}
	case T_INT8: ((int8_t *)data)[i] = (int8_t)v; break;
	case T_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
	case T_INT16: ((int16_t *)data)[i] = (int16_t)v; break;
	case T_UINT16: ((uint16_t *)data)[i] = (uint16_t)v; break;
	case T_INT32: ((int32_t *)data)[i] = (int32_t)v; break;
	case T_UINT32: ((uint32_t *)data)[i] = (uint32_t)v; break;
	case T_INT64: ((int64_t *)data)[i] = (int64_t)v; break;
	case T_UINT64: ((uint64_t *)data)[i] = (uint64_t)v; break;
	case T_BOOL: ((uint8_t *)data)[i] = v != 0; break;
	}
}

static double get_value(const void *data, int t, size_t i)
{
	switch (t) {
	case T_FLOAT: return ((const float *)data)[i];
	case T_DOUBLE: return ((const double *)data)[i];
	case T_FLOAT16: return from_half(((const uint16_t *)data)[i]);
	case T_BFLOAT16: {
		uint32_t x = (uint32_t)((const uint16_t *)data)[i] << 16;
		float f;

		memcpy(&f, &x, 4);
		return f;
	}
	case T_INT8: return ((const int8_t *)data)[i];
	case T_UINT8: return ((const uint8_t *)data)[i];
	case T_INT16: return ((const int16_t *)data)[i];
	case T_UINT16: return ((const uint16_t *)data)[i];
	case T_INT32: return ((const int32_t *)data)[i];
	case T_UINT32: return ((const uint32_t *)data)[i];
	case T_INT64: return (double)((const int64_t *)data)[i];
	case T_UINT64: return (double)((const uint64_t *)data)[i];
	case T_BOOL: return ((const uint8_t *)data)[i];
	}
	return NAN;
}

/* ---- One-node models ---- */

#define MAX_IO 4
#define MAX_EL 16

struct tval {
	const char *name;
	int dtype;
	int rank;
	int64_t dims[5];
	double v[MAX_EL];
};

struct tattr {
	const char *name;
	const char *s;	/* a string attribute when set */
	bool list;
	int64_t i;
	int64_t ints[4];
	size_t n;
};

struct tcase {
	const char *op;
	int opset;
	struct tval in[MAX_IO], out[2];
	size_t n_in, n_out;
	struct tattr at[4];
	size_t n_at;
	double tol;	/* > 0: relative tolerance (inexact math), else exact */
};

static size_t numel(const struct tval *t)
{
	size_t n = 1;
	int d;

	for (d = 0; d < t->rank; d++)
		n *= (size_t)t->dims[d];
	return n;
}

struct model {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto os, *osp[1];
	Onnx__NodeProto node, *nodep[1];
	char *node_in[MAX_IO], *node_out[2];
	Onnx__AttributeProto at[4], *atp[4];
	Onnx__ValueInfoProto vi[MAX_IO + 2], *in_p[MAX_IO], *out_p[2];
	Onnx__TypeProto ty[MAX_IO + 2];
	Onnx__TypeProto__Tensor tt[MAX_IO + 2];
	Onnx__TensorShapeProto sh[MAX_IO + 2];
	Onnx__TensorShapeProto__Dimension d[MAX_IO + 2][5], *dp[MAX_IO + 2][5];
};

static void value_info(struct model *mb, size_t k, const struct tval *t)
{
	int i;

	onnx__value_info_proto__init(&mb->vi[k]);
	onnx__type_proto__init(&mb->ty[k]);
	onnx__type_proto__tensor__init(&mb->tt[k]);
	onnx__tensor_shape_proto__init(&mb->sh[k]);
	mb->vi[k].name = (char *)t->name;
	mb->vi[k].type = &mb->ty[k];
	mb->ty[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	mb->ty[k].tensor_type = &mb->tt[k];
	mb->tt[k].has_elem_type = 1;
	mb->tt[k].elem_type = t->dtype;
	mb->tt[k].shape = &mb->sh[k];
	mb->sh[k].n_dim = (size_t)t->rank;
	mb->sh[k].dim = mb->dp[k];
	for (i = 0; i < t->rank; i++) {
		onnx__tensor_shape_proto__dimension__init(&mb->d[k][i]);
		mb->d[k][i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		mb->d[k][i].dim_value = t->dims[i];
		mb->dp[k][i] = &mb->d[k][i];
	}
}

static void *pack_case(const struct tcase *c, size_t *size)
{
	struct model *mb = calloc(1, sizeof(*mb));
	size_t k;
	void *buf;

	onnx__model_proto__init(&mb->m);
	onnx__graph_proto__init(&mb->g);
	onnx__operator_set_id_proto__init(&mb->os);
	onnx__node_proto__init(&mb->node);
	mb->m.has_ir_version = 1;
	mb->m.ir_version = 8;
	mb->os.domain = "";
	mb->os.has_version = 1;
	mb->os.version = c->opset;
	mb->osp[0] = &mb->os;
	mb->m.n_opset_import = 1;
	mb->m.opset_import = mb->osp;
	mb->m.graph = &mb->g;
	mb->g.name = "g";
	mb->node.op_type = (char *)c->op;
	mb->node.name = "n";
	for (k = 0; k < c->n_in; k++) {
		value_info(mb, k, &c->in[k]);
		mb->in_p[k] = &mb->vi[k];
		mb->node_in[k] = (char *)c->in[k].name;
	}
	for (k = 0; k < c->n_out; k++) {
		value_info(mb, MAX_IO + k, &c->out[k]);
		mb->out_p[k] = &mb->vi[MAX_IO + k];
		mb->node_out[k] = (char *)c->out[k].name;
	}
	for (k = 0; k < c->n_at; k++) {
		onnx__attribute_proto__init(&mb->at[k]);
		mb->at[k].name = (char *)c->at[k].name;
		mb->at[k].has_type = 1;
		if (c->at[k].s) {
			mb->at[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
			mb->at[k].has_s = 1;
			mb->at[k].s.data = (uint8_t *)c->at[k].s;
			mb->at[k].s.len = strlen(c->at[k].s);
		} else if (c->at[k].list) {
			mb->at[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
			mb->at[k].n_ints = c->at[k].n;
			mb->at[k].ints = (int64_t *)c->at[k].ints;
		} else {
			mb->at[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
			mb->at[k].has_i = 1;
			mb->at[k].i = c->at[k].i;
		}
		mb->atp[k] = &mb->at[k];
	}
	mb->node.n_input = c->n_in;
	mb->node.input = mb->node_in;
	mb->node.n_output = c->n_out;
	mb->node.output = mb->node_out;
	mb->node.n_attribute = c->n_at;
	mb->node.attribute = mb->atp;
	mb->nodep[0] = &mb->node;
	mb->g.n_node = 1;
	mb->g.node = mb->nodep;
	mb->g.n_input = c->n_in;
	mb->g.input = mb->in_p;
	mb->g.n_output = c->n_out;
	mb->g.output = mb->out_p;
	*size = onnx__model_proto__get_packed_size(&mb->m);
	buf = malloc(*size);
	onnx__model_proto__pack(&mb->m, buf);
	free(mb);
	return buf;
}

static struct npu_engine *engine;

/* Run c on the CPU: NULL when the outputs equal the reference, else why not. */
static const char *run_case(const struct tcase *c, char *why, size_t why_size)
{
	struct npu_host_tensor in[MAX_IO];
	uint8_t data[MAX_IO][MAX_EL * 8];
	struct npu_model *m = NULL;
	struct npu_session *s = NULL;
	size_t size, k, i;
	void *buf = pack_case(c, &size);

	why[0] = 0;
	if (!engine && npu_engine_create(NULL, &engine) != NPU_OK)
		return "no engine";
	for (k = 0; k < c->n_in; k++) {
		in[k] = (struct npu_host_tensor){ .name = c->in[k].name,
						  .dtype = (enum npu_data_type)c->in[k].dtype,
						  .rank = c->in[k].rank, .data = data[k],
						  .nbytes = numel(&c->in[k]) * tsize(c->in[k].dtype) };
		memcpy(in[k].dims, c->in[k].dims, sizeof(c->in[k].dims));
		for (i = 0; i < numel(&c->in[k]); i++)
			put_value(data[k], c->in[k].dtype, i, c->in[k].v[i]);
	}
	if (npu_model_load_memory(engine, buf, size, "dtype.onnx", NULL, &m) != NPU_OK ||
	    npu_session_create(m, NULL, &s) != NPU_OK ||
	    npu_session_run(s, in, c->n_in) != NPU_OK) {
		snprintf(why, why_size, "%s", npu_last_error());
		goto out;
	}
	for (k = 0; k < c->n_out && !why[0]; k++) {
		const struct tval *want = &c->out[k];
		struct npu_host_tensor y;
		int d;

		if (npu_session_output(s, k, &y) != NPU_OK) {
			snprintf(why, why_size, "output %zu: %s", k, npu_last_error());
			break;
		}
		if ((int)y.dtype != want->dtype || y.rank != want->rank) {
			snprintf(why, why_size, "output %zu is %s rank %d, expected %s rank %d", k,
				 tname((int)y.dtype), y.rank, tname(want->dtype), want->rank);
			break;
		}
		for (d = 0; d < y.rank; d++)
			if (y.dims[d] != want->dims[d])
				snprintf(why, why_size, "output %zu dim %d is %lld, expected %lld", k, d,
					 (long long)y.dims[d], (long long)want->dims[d]);
		for (i = 0; i < numel(want) && !why[0]; i++) {
			double got = get_value(y.data, want->dtype, i);

			if (c->tol > 0 ? !(fabs(got - want->v[i]) <=
					   c->tol * fmax(1, fabs(want->v[i]))) : got != want->v[i])
				snprintf(why, why_size, "output %zu [%zu] = %g, expected %g", k, i, got,
					 want->v[i]);
		}
	}
out:
	npu_session_destroy(s);
	npu_model_destroy(m);
	free(buf);
	return why[0] ? why : NULL;
}

/* ---- The matrix ---- */

struct family {
	size_t ok, failed;
	char line[2048];
};

static void family_begin(struct family *f, const char *name)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->line, sizeof(f->line), "%-16s", name);
}

static void check(struct family *f, const struct tcase *c, const char *label)
{
	char why[512];
	const char *r = run_case(c, why, sizeof(why));
	size_t len = strlen(f->line);

	snprintf(f->line + len, sizeof(f->line) - len, " %s:%s", label, r ? "FAIL" : "ok");
	if (r) {
		f->failed++;
		print_message("# FAIL %s %s: %s\n", c->op, label, r);
	} else {
		f->ok++;
	}
}

static size_t failed_cases, all_cases;

static void family_end(struct family *f)
{
	print_message("# %s\n", f->line);
	failed_cases += f->failed;
	all_cases += f->ok + f->failed;
}

/* The end of a test: every family printed first, then any failure fails it. */
static void families_done(void)
{
	size_t failed = failed_cases, all = all_cases;

	failed_cases = all_cases = 0;
	if (failed)
		fail_msg("%zu of %zu (op, type) cases failed", failed, all);
}

static struct tval tv(const char *name, int dtype, int rank, const int64_t *dims,
		      const double *v)
{
	struct tval t = { .name = name, .dtype = dtype, .rank = rank };
	size_t i, n;

	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	n = numel(&t);
	for (i = 0; v && i < n; i++)
		t.v[i] = v[i];
	return t;
}

static const int64_t D23[] = { 2, 3 }, D3[] = { 3 }, D32[] = { 3, 2 }, D2[] = { 2 },
		     D22[] = { 2, 2 }, D13[] = { 1, 3 }, D21[] = { 2, 1 }, D1[] = { 1 },
		     D26[] = { 2, 6 };

/* Data of type t for the arithmetic: signed types get negatives. */
static const double *arith_a(int t)
{
	static const double s[] = { -6, 12, -20, 9, -4, 15 }, u[] = { 6, 12, 20, 9, 4, 15 };

	return is_unsigned(t) ? u : s;
}

/* Rows without ties, for reductions, ArgMax and TopK. */
static const double *rows(int t)
{
	static const double s[] = { -6, 12, -3, 9, -3, 0 }, u[] = { 6, 12, 3, 9, 3, 0 },
			    b[] = { 1, 0, 1, 0, 0, 1 };

	return t == T_BOOL ? b : is_unsigned(t) ? u : s;
}

static void test_elementwise_arithmetic(void **state)
{
	static const char *const ops[] = { "Add", "Sub", "Mul", "Div" };
	static const double b[] = { 3, 2, 5 };
	size_t o, k, i;

	(void)state;
	for (o = 0; o < 4; o++) {
		struct family f;

		family_begin(&f, ops[o]);
		for (k = 0; NUMERIC[k]; k++) {
			int t = NUMERIC[k];
			const double *a = arith_a(t);
			double y[6];
			struct tcase c = { .op = ops[o], .opset = 14, .n_in = 2, .n_out = 1 };

			for (i = 0; i < 6; i++) {
				double x = a[i], z = b[i % 3];

				y[i] = o == 0 ? x + z : o == 1 ? x - z : o == 2 ? x * z : x / z;
			}
			if (o == 1 && is_unsigned(t))	/* a - b >= 0 */
				for (i = 0; i < 6; i++)
					y[i] = a[i] - b[i % 3];
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("b", t, 1, D3, b);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	families_done();
}

static void test_unary_and_variadic(void **state)
{
	struct family f;
	size_t k, i, o;

	(void)state;
	family_begin(&f, "Abs");
	for (k = 0; NUMERIC[k]; k++) {
		int t = NUMERIC[k];
		const double *a = arith_a(t);
		double y[6];
		struct tcase c = { .op = "Abs", .opset = 14, .n_in = 1, .n_out = 1 };

		for (i = 0; i < 6; i++)
			y[i] = fabs(a[i]);
		c.in[0] = tv("a", t, 2, D23, a);
		c.out[0] = tv("y", t, 2, D23, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "Neg");
	for (k = 0; SIGNED[k]; k++) {
		int t = SIGNED[k];
		const double *a = arith_a(t);
		double y[6];
		struct tcase c = { .op = "Neg", .opset = 14, .n_in = 1, .n_out = 1 };

		for (i = 0; i < 6; i++)
			y[i] = -a[i];
		c.in[0] = tv("a", t, 2, D23, a);
		c.out[0] = tv("y", t, 2, D23, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	for (o = 0; o < 2; o++) {	/* Sum, Mean (13): the float types */
		static const int FLOATS[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, 0 };
		static const double b[] = { 3, 2, 5 };

		family_begin(&f, o ? "Mean" : "Sum");
		for (k = 0; FLOATS[k]; k++) {
			int t = FLOATS[k];
			const double *a = arith_a(t);
			double y[6];
			struct tcase c = { .op = o ? "Mean" : "Sum", .opset = 14, .n_in = 2,
					   .n_out = 1 };

			for (i = 0; i < 6; i++)
				y[i] = o ? (a[i] + b[i % 3]) / 2 : a[i] + b[i % 3];
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("b", t, 1, D3, b);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	for (o = 0; o < 2; o++) {
		static const double b[] = { 3, 2, 5 };

		family_begin(&f, o ? "Min" : "Max");
		for (k = 0; NUMERIC[k]; k++) {
			int t = NUMERIC[k];
			const double *a = arith_a(t);
			double y[6];
			struct tcase c = { .op = o ? "Min" : "Max", .opset = 14, .n_in = 2,
					   .n_out = 1 };

			for (i = 0; i < 6; i++)
				y[i] = o ? fmin(a[i], b[i % 3]) : fmax(a[i], b[i % 3]);
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("b", t, 1, D3, b);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	families_done();
}

/* Float ops with exact results in every float type: the fp16 / bf16 path. */
static void test_float_unary(void **state)
{
	static const int FLOATS[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, 0 };
	static const char *const ops[] = { "Relu", "Floor", "Ceil", "Sqrt", "Reciprocal" };
	static const double v[] = { -2.5, -1, 0, 0.5, 1.5, 3 }, sq[] = { 0, 1, 4, 9, 16, 0.25 },
			    rc[] = { 1, 2, 4, -0.5, 0.25, 8 };
	size_t o, k, i;

	(void)state;
	for (o = 0; o < 5; o++) {
		struct family f;

		family_begin(&f, ops[o]);
		for (k = 0; FLOATS[k]; k++) {
			const double *a = o == 3 ? sq : o == 4 ? rc : v;
			double y[6];
			struct tcase c = { .op = ops[o], .opset = 14, .n_in = 1, .n_out = 1 };

			for (i = 0; i < 6; i++)
				y[i] = o == 0 ? fmax(a[i], 0) : o == 1 ? floor(a[i]) :
				       o == 2 ? ceil(a[i]) : o == 3 ? sqrt(a[i]) : 1 / a[i];
			c.in[0] = tv("a", FLOATS[k], 2, D23, a);
			c.out[0] = tv("y", FLOATS[k], 2, D23, y);
			check(&f, &c, tname(FLOATS[k]));
		}
		family_end(&f);
	}
	/* double in double: the same libm formula here gives the same bits. */
	for (o = 0; o < 4; o++) {
		static const char *const dops[] = { "Exp", "Tanh", "Sigmoid", "Sin" };
		static const double x[] = { -2.5, -1, 0, 0.5, 1.5, 3 };
		double y[6];
		struct tcase c = { .op = dops[o], .opset = 14, .n_in = 1, .n_out = 1 };
		struct family f;

		family_begin(&f, dops[o]);
		for (i = 0; i < 6; i++)
			y[i] = o == 0 ? exp(x[i]) : o == 1 ? tanh(x[i]) :
			       o == 2 ? 1.0 / (1.0 + exp(-x[i])) : sin(x[i]);
		c.in[0] = tv("a", T_DOUBLE, 2, D23, x);
		c.out[0] = tv("y", T_DOUBLE, 2, D23, y);
		check(&f, &c, tname(T_DOUBLE));
		family_end(&f);
	}
	families_done();
}

static void test_compare(void **state)
{
	static const char *const ops[] = { "Equal", "Less", "Greater", "LessOrEqual",
					   "GreaterOrEqual" };
	static const double a[] = { 3, 12, 5, 1, 2, 5 }, b[] = { 3, 2, 5 };
	static const double ab[] = { 1, 0, 1, 0, 0, 1 }, bb[] = { 1, 1, 0 };
	size_t o, k, i;

	(void)state;
	for (o = 0; o < 5; o++) {
		struct family f;

		family_begin(&f, ops[o]);
		for (k = 0; ALL[k]; k++) {
			int t = ALL[k];
			const double *x = t == T_BOOL ? ab : a, *z = t == T_BOOL ? bb : b;
			double y[6];
			struct tcase c = { .op = ops[o], .opset = 14, .n_in = 2, .n_out = 1 };

			if (t == T_BOOL && o)	/* only Equal takes bool */
				continue;
			for (i = 0; i < 6; i++) {
				double p = x[i], q = z[i % 3];

				y[i] = o == 0 ? p == q : o == 1 ? p < q : o == 2 ? p > q :
				       o == 3 ? p <= q : p >= q;
			}
			c.in[0] = tv("a", t, 2, D23, x);
			c.in[1] = tv("b", t, 1, D3, z);
			c.out[0] = tv("y", T_BOOL, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	families_done();
}

static void test_cast_every_pair(void **state)
{
	static const double v[] = { 0, 1, 2, 3, 4, 5 }, vb[] = { 0, 1, 0, 1, 1, 0 };
	size_t k, j, i;

	(void)state;
	for (k = 0; ALL[k]; k++) {
		struct family f;
		char name[32];

		snprintf(name, sizeof(name), "Cast from %s", tname(ALL[k]));
		family_begin(&f, name);
		for (j = 0; ALL[j]; j++) {
			int from = ALL[k], to = ALL[j];
			const double *x = from == T_BOOL ? vb : v;
			double y[6];
			struct tcase c = { .op = "Cast", .opset = 13, .n_in = 1, .n_out = 1,
					   .n_at = 1 };

			for (i = 0; i < 6; i++)
				y[i] = to == T_BOOL ? x[i] != 0 : x[i];
			c.at[0] = (struct tattr){ .name = "to", .i = to };
			c.in[0] = tv("a", from, 2, D23, x);
			c.out[0] = tv("y", to, 2, D23, y);
			check(&f, &c, tname(to));
		}
		family_end(&f);
	}
	families_done();
}

static void test_gather_scatter(void **state)
{
	struct family f;
	size_t k, i, ix;

	(void)state;
	for (ix = 0; ix < 2; ix++) {	/* int64, then int32 indices */
		int it = ix ? T_INT32 : T_INT64;
		char name[32];

		snprintf(name, sizeof(name), "Gather/%s", tname(it));
		family_begin(&f, name);
		for (k = 0; ALL[k]; k++) {
			int t = ALL[k];
			static const double idx[] = { 2, 0 };
			const double *d = rows(t);	/* [3, 2] */
			double y[4] = { d[4], d[5], d[0], d[1] };
			struct tcase c = { .op = "Gather", .opset = 13, .n_in = 2, .n_out = 1 };

			c.in[0] = tv("data", t, 2, D32, d);
			c.in[1] = tv("idx", it, 1, D2, idx);
			c.out[0] = tv("y", t, 2, D22, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	family_begin(&f, "GatherElements");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		static const double idx[] = { 2, 0, 1, 1, 1, 0 };
		const double *d = rows(t);
		double y[6];
		struct tcase c = { .op = "GatherElements", .opset = 13, .n_in = 2, .n_out = 1,
				   .n_at = 1 };

		for (i = 0; i < 6; i++)
			y[i] = d[(i / 3) * 3 + (size_t)idx[i]];
		c.at[0] = (struct tattr){ .name = "axis", .i = 1 };
		c.in[0] = tv("data", t, 2, D23, d);
		c.in[1] = tv("idx", T_INT64, 2, D23, idx);
		c.out[0] = tv("y", t, 2, D23, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "ScatterElements");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		static const double idx[] = { 2, 0, 1 }, u[] = { 7, 8, 9 }, ub[] = { 0, 1, 0 };
		const double *d = rows(t), *upd = t == T_BOOL ? ub : u;
		double y[6];
		struct tcase c = { .op = "ScatterElements", .opset = 13, .n_in = 3, .n_out = 1,
				   .n_at = 1 };

		memcpy(y, d, sizeof(y));
		for (i = 0; i < 3; i++)
			y[(size_t)idx[i]] = upd[i];
		c.at[0] = (struct tattr){ .name = "axis", .i = 1 };
		c.in[0] = tv("data", t, 2, D23, d);
		c.in[1] = tv("idx", T_INT64, 2, D13, idx);
		c.in[2] = tv("upd", t, 2, D13, upd);
		c.out[0] = tv("y", t, 2, D23, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "ScatterND");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		static const double idx[] = { 1, 0 }, u[] = { 7, 8, 9, 10 }, ub[] = { 0, 1, 1, 0 };
		const double *d = rows(t), *upd = t == T_BOOL ? ub : u;	/* data [3, 2] */
		double y[6] = { upd[2], upd[3], upd[0], upd[1], d[4], d[5] };
		struct tcase c = { .op = "ScatterND", .opset = 13, .n_in = 3, .n_out = 1 };

		c.in[0] = tv("data", t, 2, D32, d);
		c.in[1] = tv("idx", T_INT64, 2, D21, idx);
		c.in[2] = tv("upd", t, 2, D22, upd);
		c.out[0] = tv("y", t, 2, D32, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	families_done();
}

static void test_layout_ops(void **state)
{
	struct family f;
	size_t k, i;

	(void)state;
	family_begin(&f, "Concat");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		const double *a = rows(t);
		double b[6] = { a[2], a[1], a[0], a[5], a[4], a[3] }, y[12];
		struct tcase c = { .op = "Concat", .opset = 13, .n_in = 2, .n_out = 1, .n_at = 1 };

		for (i = 0; i < 12; i++)	/* [a | a reversed per row] */
			y[i] = (i % 6) < 3 ? a[(i / 6) * 3 + i % 6] : a[(i / 6) * 3 + 5 - i % 6];

		c.at[0] = (struct tattr){ .name = "axis", .i = 1 };
		c.in[0] = tv("a", t, 2, D23, a);
		c.in[1] = tv("b", t, 2, D23, b);
		c.out[0] = tv("y", t, 2, D26, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "Slice");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		static const double st[] = { 1 }, en[] = { 3 }, ax[] = { 1 };
		const double *a = rows(t);
		double y[4] = { a[1], a[2], a[4], a[5] };
		struct tcase c = { .op = "Slice", .opset = 13, .n_in = 4, .n_out = 1 };

		c.in[0] = tv("a", t, 2, D23, a);
		c.in[1] = tv("starts", T_INT64, 1, D1, st);
		c.in[2] = tv("ends", T_INT64, 1, D1, en);
		c.in[3] = tv("axes", T_INT64, 1, D1, ax);
		c.out[0] = tv("y", t, 2, D22, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "Transpose");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		const double *a = rows(t);
		double y[6] = { a[0], a[3], a[1], a[4], a[2], a[5] };
		struct tcase c = { .op = "Transpose", .opset = 13, .n_in = 1, .n_out = 1,
				   .n_at = 1 };

		c.at[0] = (struct tattr){ .name = "perm", .list = true, .ints = { 1, 0 }, .n = 2 };
		c.in[0] = tv("a", t, 2, D23, a);
		c.out[0] = tv("y", t, 2, D32, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "Reshape");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		static const double shape[] = { 3, 2 };
		const double *a = rows(t);
		struct tcase c = { .op = "Reshape", .opset = 14, .n_in = 2, .n_out = 1 };

		c.in[0] = tv("a", t, 2, D23, a);
		c.in[1] = tv("shape", T_INT64, 1, D2, shape);
		c.out[0] = tv("y", t, 2, D32, a);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	families_done();
}

/* Ops that copy or broadcast elements: every type. */
static void test_more_layout_ops(void **state)
{
	static const int64_t D16[] = { 1, 6 }, D6[] = { 6 }, D123[] = { 1, 2, 3 }, D24[] = { 2, 4 },
			     D43[] = { 4, 3 }, D231[] = { 2, 3, 1 };
	struct family f;
	size_t k, i, o;

	(void)state;
	for (o = 0; o < 7; o++) {
		static const char *const ops[] = { "Identity", "Flatten", "Squeeze", "Unsqueeze",
						   "Expand", "Tile", "Pad" };

		family_begin(&f, ops[o]);
		for (k = 0; ALL[k]; k++) {
			int t = ALL[k];
			const double *a = rows(t);
			double y[16] = { 0 };
			struct tcase c = { .op = ops[o], .opset = 13, .n_in = 1, .n_out = 1 };

			c.in[0] = tv("a", t, 2, D23, a);
			switch (o) {
			case 0:
				c.out[0] = tv("y", t, 2, D23, a);
				break;
			case 1:		/* axis 0: [1, 6] */
				c.n_at = 1;
				c.at[0] = (struct tattr){ .name = "axis", .i = 0 };
				c.out[0] = tv("y", t, 2, D16, a);
				break;
			case 2:		/* [1, 2, 3] -> [2, 3] */
				c.in[0] = tv("a", t, 3, D123, a);
				c.out[0] = tv("y", t, 2, D23, a);
				break;
			case 3:		/* axes input [2]: [2, 3, 1] */
				c.n_in = 2;
				c.in[1] = tv("axes", T_INT64, 1, D1, (const double[]){ 2 });
				c.out[0] = tv("y", t, 3, D231, a);
				break;
			case 4:		/* [3] -> [4, 3] */
				c.n_in = 2;
				c.in[0] = tv("a", t, 1, D3, a);
				c.in[1] = tv("shape", T_INT64, 1, D2, (const double[]){ 4, 3 });
				for (i = 0; i < 12; i++)
					y[i] = a[i % 3];
				c.out[0] = tv("y", t, 2, D43, y);
				break;
			case 5:		/* repeats [1, 2]: [2, 6] */
				c.n_in = 2;
				c.in[1] = tv("repeats", T_INT64, 1, D2, (const double[]){ 1, 2 });
				for (i = 0; i < 12; i++)
					y[i] = a[(i / 6) * 3 + i % 3];
				c.out[0] = tv("y", t, 2, D26, y);
				break;
			case 6:		/* pads [0, 1, 0, 0]: one zero column first, [2, 4] */
				c.n_in = 2;
				c.in[1] = tv("pads", T_INT64, 1, (const int64_t[]){ 4 },
					     (const double[]){ 0, 1, 0, 0 });
				for (i = 0; i < 8; i++)
					y[i] = i % 4 ? a[(i / 4) * 3 + i % 4 - 1] : 0;
				c.out[0] = tv("y", t, 2, D24, y);
				break;
			}
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	family_begin(&f, "Split");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		const double *a = rows(t);	/* [6] split in 2 + 4 */
		struct tcase c = { .op = "Split", .opset = 13, .n_in = 2, .n_out = 2 };

		c.in[0] = tv("a", t, 1, D6, a);
		c.in[1] = tv("split", T_INT64, 1, D2, (const double[]){ 2, 4 });
		c.out[0] = tv("y0", t, 1, D2, a);
		c.out[1] = tv("y1", t, 1, (const int64_t[]){ 4 }, a + 2);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "Clip");
	for (k = 0; NUMERIC[k]; k++) {
		int t = NUMERIC[k];
		const double *a = rows(t);
		double y[6], lo = is_unsigned(t) ? 3 : -3, hi = 9;
		struct tcase c = { .op = "Clip", .opset = 13, .n_in = 3, .n_out = 1 };

		for (i = 0; i < 6; i++)
			y[i] = fmin(fmax(a[i], lo), hi);
		c.in[0] = tv("a", t, 2, D23, a);
		c.in[1] = tv("lo", t, 0, D1, &lo);
		c.in[2] = tv("hi", t, 0, D1, &hi);
		c.out[0] = tv("y", t, 2, D23, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	families_done();
}

static void test_reductions(void **state)
{
	static const char *const ops[] = { "ReduceSum", "ReduceMean", "ReduceProd", "ReduceMax",
					   "ReduceMin" };
	size_t o, k, r, i;

	(void)state;
	for (o = 0; o < 5; o++) {
		const int *types = o < 3 ? REDUCE : REDUCE_MM;
		struct family f;

		family_begin(&f, ops[o]);
		for (k = 0; types[k]; k++) {
			int t = types[k];
			const double *a = rows(t);
			static const double axes[] = { 1 };
			double y[2];
			struct tcase c = { .op = ops[o], .opset = 13, .n_out = 1, .n_at = 1 };

			for (r = 0; r < 2; r++) {
				double s = 0, p = 1, mx = -1e30, mn = 1e30;

				for (i = 0; i < 3; i++) {
					double x = a[r * 3 + i];

					s += x;
					p *= x;
					mx = fmax(mx, x);
					mn = fmin(mn, x);
				}
				y[r] = o == 0 ? s : o == 1 ? s / 3 : o == 2 ? p : o == 3 ? mx : mn;
			}
			c.at[0] = (struct tattr){ .name = "keepdims", .i = 0 };
			c.in[0] = tv("a", t, 2, D23, a);
			if (o == 0) {	/* ReduceSum-13 takes axes as an input */
				c.in[1] = tv("axes", T_INT64, 1, D1, axes);
				c.n_in = 2;
			} else {
				c.at[1] = (struct tattr){ .name = "axes", .list = true, .ints = { 1 },
							  .n = 1 };
				c.n_at = 2;
				c.n_in = 1;
			}
			c.out[0] = tv("y", t, 1, D2, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	families_done();
}

static void test_argmax_topk_where_cumsum(void **state)
{
	struct family f;
	size_t k, o, i;

	(void)state;
	for (o = 0; o < 2; o++) {
		family_begin(&f, o ? "ArgMin" : "ArgMax");
		for (k = 0; NUMERIC[k]; k++) {
			int t = NUMERIC[k];
			const double *a = rows(t);
			double y[2];
			struct tcase c = { .op = o ? "ArgMin" : "ArgMax", .opset = 13, .n_in = 1,
					   .n_out = 1, .n_at = 2 };
			size_t r, j;

			for (r = 0; r < 2; r++) {
				size_t best = 0;

				for (j = 1; j < 3; j++)
					if (o ? a[r * 3 + j] < a[r * 3 + best] : a[r * 3 + j] > a[r * 3 + best])
						best = j;
				y[r] = (double)best;
			}
			c.at[0] = (struct tattr){ .name = "axis", .i = 1 };
			c.at[1] = (struct tattr){ .name = "keepdims", .i = 0 };
			c.in[0] = tv("a", t, 2, D23, a);
			c.out[0] = tv("y", T_INT64, 1, D2, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	family_begin(&f, "TopK");
	for (k = 0; NUMERIC[k]; k++) {
		int t = NUMERIC[k];
		const double *a = rows(t);
		static const double kk[] = { 2 };
		double v[4], ix[4];
		struct tcase c = { .op = "TopK", .opset = 11, .n_in = 2, .n_out = 2 };
		size_t r, j, m;

		for (r = 0; r < 2; r++) {
			bool used[3] = { false };

			for (m = 0; m < 2; m++) {
				size_t best = 3;

				for (j = 0; j < 3; j++)
					if (!used[j] && (best == 3 || a[r * 3 + j] > a[r * 3 + best]))
						best = j;
				used[best] = true;
				v[r * 2 + m] = a[r * 3 + best];
				ix[r * 2 + m] = (double)best;
			}
		}
		c.in[0] = tv("a", t, 2, D23, a);
		c.in[1] = tv("k", T_INT64, 1, D1, kk);
		c.out[0] = tv("values", t, 2, D22, v);
		c.out[1] = tv("indices", T_INT64, 2, D22, ix);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	family_begin(&f, "Where");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		static const double cond[] = { 1, 0, 1, 0, 0, 1 }, yv[] = { 7, 8, 9 },
				    yb[] = { 1, 1, 0 };
		const double *a = rows(t), *b = t == T_BOOL ? yb : yv;
		double y[6];
		struct tcase c = { .op = "Where", .opset = 16, .n_in = 3, .n_out = 1 };

		for (i = 0; i < 6; i++)
			y[i] = cond[i] ? a[i] : b[i % 3];
		c.in[0] = tv("c", T_BOOL, 2, D23, cond);
		c.in[1] = tv("x", t, 2, D23, a);
		c.in[2] = tv("z", t, 1, D3, b);
		c.out[0] = tv("y", t, 2, D23, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	for (o = 0; o < 2; o++) {	/* axis as int64, then int32 */
		char name[32];

		snprintf(name, sizeof(name), "CumSum/axis %s", o ? "int32" : "int64");
		family_begin(&f, name);
		for (k = 0; REDUCE[k]; k++) {
			int t = REDUCE[k];
			const double *a = rows(t);
			static const double axis[] = { 1 };
			double y[6];
			struct tcase c = { .op = "CumSum", .opset = 14, .n_in = 2, .n_out = 1 };

			for (i = 0; i < 6; i++)
				y[i] = a[i] + (i % 3 ? y[i - 1] : 0);
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("axis", o ? T_INT32 : T_INT64, 0, D1, axis);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	families_done();
}

/* ---- The families issue 17 left untested (spec type lists of the newest opset) ---- */

static const int FLOATS4[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, 0 };

/* Tolerance of a float type for inexact math (libm results rounded to it). */
static double ftol(int t)
{
	return t == T_FLOAT16 ? 2e-3 : t == T_BFLOAT16 ? 1e-2 : t == T_FLOAT ? 1e-6 : 1e-12;
}

static bool is_float(int t)
{
	return t == T_FLOAT16 || t == T_BFLOAT16 || t == T_FLOAT || t == T_DOUBLE;
}

static void test_relu_sign_mod_bitshift_logic(void **state)
{
	/* Relu-14: the float types and the signed integers; Sign-13: every numeric. */
	static const int RELU[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT8, T_INT16,
				    T_INT32, T_INT64, 0 };
	static const int UNS[] = { T_UINT8, T_UINT16, T_UINT32, T_UINT64, 0 };
	struct family f;
	size_t k, i, o;

	(void)state;
	for (o = 0; o < 2; o++) {
		const int *types = o ? NUMERIC : RELU;

		family_begin(&f, o ? "Sign" : "Relu");
		for (k = 0; types[k]; k++) {
			int t = types[k];
			const double *a = rows(t);
			double y[6];
			struct tcase c = { .op = o ? "Sign" : "Relu", .opset = o ? 13 : 14,
					   .n_in = 1, .n_out = 1 };

			for (i = 0; i < 6; i++)
				y[i] = o ? (double)((a[i] > 0) - (a[i] < 0)) : fmax(a[i], 0);
			c.in[0] = tv("a", t, 2, D23, a);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* Mod-13: fmod 0 (the divisor's sign) on integers, fmod 1 on every type. */
	for (o = 0; o < 2; o++) {
		static const double sb[] = { 4, -5, 7 }, ub[] = { 4, 5, 7 };

		family_begin(&f, o ? "Mod fmod=1" : "Mod fmod=0");
		for (k = 0; NUMERIC[k]; k++) {
			int t = NUMERIC[k];
			const double *a = arith_a(t), *b = is_unsigned(t) ? ub : sb;
			double y[6];
			struct tcase c = { .op = "Mod", .opset = 13, .n_in = 2, .n_out = 1,
					   .n_at = 1 };

			if (!o && is_float(t))	/* floats require fmod = 1 */
				continue;
			for (i = 0; i < 6; i++) {
				double r = fmod(a[i], b[i % 3]);

				if (!o && r != 0 && (r < 0) != (b[i % 3] < 0))
					r += b[i % 3];
				y[i] = r;
			}
			c.at[0] = (struct tattr){ .name = "fmod", .i = (int64_t)o };
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("b", t, 1, D3, b);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* BitShift-11: the unsigned integers. */
	for (o = 0; o < 2; o++) {
		static const double a[] = { 1, 6, 20, 9, 4, 15 }, b[] = { 1, 2, 3 };

		family_begin(&f, o ? "BitShift RIGHT" : "BitShift LEFT");
		for (k = 0; UNS[k]; k++) {
			int t = UNS[k];
			double y[6];
			struct tcase c = { .op = "BitShift", .opset = 11, .n_in = 2, .n_out = 1,
					   .n_at = 1 };

			for (i = 0; i < 6; i++)
				y[i] = o ? floor(a[i] / exp2(b[i % 3])) : a[i] * exp2(b[i % 3]);
			c.at[0] = (struct tattr){ .name = "direction", .s = o ? "RIGHT" : "LEFT" };
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("b", t, 1, D3, b);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* And / Or / Xor (7) and Not (1): bool only. */
	family_begin(&f, "And/Or/Xor/Not");
	for (o = 0; o < 4; o++) {
		static const char *const ops[] = { "And", "Or", "Xor", "Not" };
		static const double a[] = { 1, 0, 1, 0, 0, 1 }, b[] = { 1, 1, 0 };
		double y[6];
		struct tcase c = { .op = ops[o], .opset = 7, .n_in = o < 3 ? 2 : 1, .n_out = 1 };

		for (i = 0; i < 6; i++) {
			bool p = a[i] != 0, q = b[i % 3] != 0;

			y[i] = o == 0 ? (p && q) : o == 1 ? (p || q) : o == 2 ? (p != q) : !p;
		}
		c.in[0] = tv("a", T_BOOL, 2, D23, a);
		c.in[1] = tv("b", T_BOOL, 1, D3, b);
		c.out[0] = tv("y", T_BOOL, 2, D23, y);
		check(&f, &c, ops[o]);
	}
	family_end(&f);
	families_done();
}

static void test_pow_every_pair(void **state)
{
	/* Pow-15: base T in these, exponent T1 in every numeric type. */
	static const int BASE[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT32, T_INT64, 0 };
	static const double a[] = { 2, -3, 4, 1, -2, 5 }, e[] = { 2, 3, 1 };
	size_t k, j, i;

	(void)state;
	for (k = 0; BASE[k]; k++) {
		struct family f;
		char name[32];

		snprintf(name, sizeof(name), "Pow base %s", tname(BASE[k]));
		family_begin(&f, name);
		for (j = 0; NUMERIC[j]; j++) {
			int t = BASE[k], t1 = NUMERIC[j];
			double y[6];
			struct tcase c = { .op = "Pow", .opset = 15, .n_in = 2, .n_out = 1 };

			for (i = 0; i < 6; i++)
				y[i] = pow(a[i], e[i % 3]);
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("e", t1, 1, D3, e);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t1));
		}
		family_end(&f);
	}
	families_done();
}

static void test_more_reductions(void **state)
{
	/* ReduceL2 / ReduceLogSum / ReduceLogSumExp (18): axes is an input. */
	static const int RED18[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT32, T_UINT32,
				     T_INT64, T_UINT64, 0 };
	static const char *const ops[] = { "ReduceL2", "ReduceLogSum", "ReduceLogSumExp" };
	/* Rows whose results are exact in integers: |(3,4,0)| = 5, |(0,6,8)| = 10, and log 1. */
	static const double l2[] = { 3, 4, 0, 0, 6, 8 }, one[] = { 1, 0, 0, 0, 0, 1 },
			    fl[] = { 1, 2, 3, 0.5, 1, 2 }, zero[6] = { 0 };
	static const double axes[] = { 1 };
	struct family f;
	size_t o, k, i, r;

	(void)state;
	for (o = 0; o < 3; o++) {
		family_begin(&f, ops[o]);
		for (k = 0; RED18[k]; k++) {
			int t = RED18[k];
			const double *a = o == 0 ? l2 : is_float(t) ? fl : one;
			double y[2];
			struct tcase c = { .op = ops[o], .opset = 18, .n_in = 2, .n_out = 1,
					   .n_at = 1, .tol = is_float(t) ? ftol(t) : 0 };

			if (o == 2 && !is_float(t))	/* exp(0) * 3: log 3 */
				a = zero;
			for (r = 0; r < 2; r++) {
				double s = 0, se = 0, s2 = 0;

				for (i = 0; i < 3; i++) {
					s += a[r * 3 + i];
					s2 += a[r * 3 + i] * a[r * 3 + i];
					se += exp(a[r * 3 + i]);
				}
				y[r] = o == 0 ? sqrt(s2) : o == 1 ? log(s) : log(se);
			}
			if (o == 2 && !is_float(t))	/* log 3, truncated as a C conversion */
				y[0] = y[1] = 1;
			c.at[0] = (struct tattr){ .name = "keepdims", .i = 0 };
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("axes", T_INT64, 1, D1, axes);
			c.out[0] = tv("y", t, 1, D2, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* ReduceMax / ReduceMin-20 take bool: any / all. */
	for (o = 0; o < 2; o++) {
		static const double b[] = { 1, 0, 1, 1, 1, 1 };
		struct tcase c = { .op = o ? "ReduceMin" : "ReduceMax", .opset = 20, .n_in = 2,
				   .n_out = 1, .n_at = 1 };
		double y[2] = { o ? 0 : 1, 1 };

		family_begin(&f, o ? "ReduceMin-20" : "ReduceMax-20");
		c.at[0] = (struct tattr){ .name = "keepdims", .i = 0 };
		c.in[0] = tv("a", T_BOOL, 2, D23, b);
		c.in[1] = tv("axes", T_INT64, 1, D1, axes);
		c.out[0] = tv("y", T_BOOL, 1, D2, y);
		check(&f, &c, tname(T_BOOL));
		family_end(&f);
	}
	families_done();
}

static void test_softmax_matmul_conv(void **state)
{
	static const int MM[] = { T_FLOAT16, T_BFLOAT16, T_FLOAT, T_DOUBLE, T_INT32, T_UINT32,
				  T_INT64, T_UINT64, 0 };
	static const int MAXPOOL[] = { T_FLOAT16, T_FLOAT, T_DOUBLE, T_INT8, T_UINT8, 0 };
	static const int CONV[] = { T_FLOAT16, T_FLOAT, T_DOUBLE, 0 };
	static const int64_t D1133[] = { 1, 1, 3, 3 }, D1122[] = { 1, 1, 2, 2 };
	static const double x9[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, w4[] = { 1, 0, 2, 1 };
	struct family f;
	size_t o, k, i, r, j;

	(void)state;
	/* Softmax / LogSoftmax / Hardmax (13): the float types, axis -1. */
	for (o = 0; o < 3; o++) {
		static const char *const ops[] = { "Softmax", "LogSoftmax", "Hardmax" };
		static const double a[] = { 1, 2, 0.5, -1, 3, 0 };

		family_begin(&f, ops[o]);
		for (k = 0; FLOATS4[k]; k++) {
			int t = FLOATS4[k];
			double y[6];
			struct tcase c = { .op = ops[o], .opset = 13, .n_in = 1, .n_out = 1,
					   .tol = o < 2 ? ftol(t) : 0 };

			for (r = 0; r < 2; r++) {
				double s = 0;
				size_t best = 0;

				for (j = 0; j < 3; j++) {
					s += exp(a[r * 3 + j]);
					if (a[r * 3 + j] > a[r * 3 + best])
						best = j;
				}
				for (j = 0; j < 3; j++)
					y[r * 3 + j] = o == 0 ? exp(a[r * 3 + j]) / s :
						       o == 1 ? a[r * 3 + j] - log(s) : j == best;
			}
			c.in[0] = tv("a", t, 2, D23, a);
			c.out[0] = tv("y", t, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* MatMul / Gemm (13): [2, 3] x [3, 2]. */
	for (o = 0; o < 2; o++) {
		family_begin(&f, o ? "Gemm" : "MatMul");
		for (k = 0; MM[k]; k++) {
			int t = MM[k];
			static const double ub[] = { 1, 2, 0, 3, 2, 1 };
			const double *a = rows(t), *b = arith_a(t);
			double y[4];
			struct tcase c = { .op = o ? "Gemm" : "MatMul", .opset = 13, .n_in = 2,
					   .n_out = 1 };

			if (is_unsigned(t))	/* keep products small: the u rows */
				b = ub;
			for (r = 0; r < 2; r++)
				for (j = 0; j < 2; j++) {
					y[r * 2 + j] = 0;
					for (i = 0; i < 3; i++)
						y[r * 2 + j] += a[r * 3 + i] * b[i * 2 + j];
				}
			c.in[0] = tv("a", t, 2, D23, a);
			c.in[1] = tv("b", t, 2, D32, b);
			c.out[0] = tv("y", t, 2, D22, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* Gemm with transA and a broadcast C: y = A^T B + C. */
	family_begin(&f, "Gemm transA+C");
	for (k = 0; MM[k]; k++) {
		int t = MM[k];
		static const double cv[] = { 1, 2 };
		const double *a = rows(t);	/* A and B both this [3, 2] */
		double y[4];
		struct tcase c = { .op = "Gemm", .opset = 13, .n_in = 3, .n_out = 1, .n_at = 1 };

		for (r = 0; r < 2; r++)
			for (j = 0; j < 2; j++) {
				y[r * 2 + j] = cv[j];
				for (i = 0; i < 3; i++)	/* A^T[r][i] = A[i][r], B[i][j] */
					y[r * 2 + j] += a[i * 2 + r] * a[i * 2 + j];
			}
		c.at[0] = (struct tattr){ .name = "transA", .i = 1 };
		c.in[0] = tv("a", t, 2, D32, a);
		c.in[1] = tv("b", t, 2, D32, a);
		c.in[2] = tv("c", t, 1, D2, cv);
		c.out[0] = tv("y", t, 2, D22, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/* Conv with 2 groups, pads 1, stride 2: [1, 2, 2, 2] * [2, 1, 2, 2] -> [1, 2, 2, 2]. */
	family_begin(&f, "Conv grp/pad/str");
	for (k = 0; CONV[k]; k++) {
		static const int64_t D1222[] = { 1, 2, 2, 2 }, D2122[] = { 2, 1, 2, 2 };
		static const double xv[] = { 1, 2, 3, 4, 5, 6, 7, 8 },
				    wv[] = { 1, -1, 2, 0, 0, 3, 1, 1 }, bv[] = { 1, -2 };
		int t = CONV[k];
		double y[8];
		struct tcase c = { .op = "Conv", .opset = 11, .n_in = 3, .n_out = 1, .n_at = 4 };
		size_t oc, o0, o1, k0, k1;

		for (oc = 0; oc < 2; oc++)
			for (o0 = 0; o0 < 2; o0++)
				for (o1 = 0; o1 < 2; o1++) {
					double sum = bv[oc];

					for (k0 = 0; k0 < 2; k0++)
						for (k1 = 0; k1 < 2; k1++) {
							long i0 = (long)(o0 * 2 + k0) - 1, i1 = (long)(o1 * 2 + k1) - 1;

							if (i0 < 0 || i0 > 1 || i1 < 0 || i1 > 1)
								continue;
							sum += xv[oc * 4 + (size_t)(i0 * 2 + i1)] *
							       wv[oc * 4 + k0 * 2 + k1];
						}
					y[oc * 4 + o0 * 2 + o1] = sum;
				}
		c.at[0] = (struct tattr){ .name = "kernel_shape", .list = true, .ints = { 2, 2 }, .n = 2 };
		c.at[1] = (struct tattr){ .name = "group", .i = 2 };
		c.at[2] = (struct tattr){ .name = "pads", .list = true, .ints = { 1, 1, 1, 1 }, .n = 4 };
		c.at[3] = (struct tattr){ .name = "strides", .list = true, .ints = { 2, 2 }, .n = 2 };
		c.in[0] = tv("x", t, 4, D1222, xv);
		c.in[1] = tv("w", t, 4, D2122, wv);
		c.in[2] = tv("b", t, 1, D2, bv);
		c.out[0] = tv("y", t, 4, D1222, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/* GlobalAveragePool / GlobalMaxPool (1): the float types. */
	for (o = 0; o < 2; o++) {
		static const int64_t D1211[] = { 1, 2, 1, 1 }, D1222[] = { 1, 2, 2, 2 };
		static const double xv[] = { 1, 2, 3, 6, -4, 0, 8, 4 };

		family_begin(&f, o ? "GlobalMaxPool" : "GlobalAveragePool");
		for (k = 0; FLOATS4[k]; k++) {
			int t = FLOATS4[k];
			double y[2] = { o ? 6 : 3, o ? 8 : 2 };
			struct tcase c = { .op = o ? "GlobalMaxPool" : "GlobalAveragePool",
					   .opset = 1, .n_in = 1, .n_out = 1 };

			c.in[0] = tv("x", t, 4, D1222, xv);
			c.out[0] = tv("y", t, 4, D1211, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* Conv (11), MaxPool (12), AveragePool (19): 3x3 image, 2x2 window, stride 1. */
	for (o = 0; o < 3; o++) {
		static const char *const ops[] = { "Conv", "MaxPool", "AveragePool" };
		const int *types = o == 1 ? MAXPOOL : CONV;

		family_begin(&f, ops[o]);
		for (k = 0; types[k]; k++) {
			int t = types[k];
			double y[4];
			struct tcase c = { .op = ops[o], .opset = o == 0 ? 11 : o == 1 ? 12 : 19,
					   .n_in = o ? 1 : 2, .n_out = 1, .n_at = o ? 1 : 0 };

			for (r = 0; r < 2; r++)
				for (j = 0; j < 2; j++) {
					double s = 0, mx = -1e30;

					for (i = 0; i < 4; i++) {
						double v = x9[(r + i / 2) * 3 + j + i % 2];

						s += o ? v : v * w4[i];
						mx = fmax(mx, v);
					}
					y[r * 2 + j] = o == 1 ? mx : o == 2 ? s / 4 : s;
				}
			c.at[0] = (struct tattr){ .name = "kernel_shape", .list = true,
						  .ints = { 2, 2 }, .n = 2 };
			c.in[0] = tv("x", t, 4, D1133, x9);
			c.in[1] = tv("w", t, 4, D1122, w4);
			c.out[0] = tv("y", t, 4, D1122, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	families_done();
}

static void test_resize_isnan_nonzero_range(void **state)
{
	static const int RANGE[] = { T_FLOAT, T_DOUBLE, T_INT16, T_INT32, T_INT64, 0 };
	static const int64_t D0[] = { 0 }, D4[] = { 4 }, D1112[] = { 1, 1, 1, 2 },
			     D1114[] = { 1, 1, 1, 4 };
	struct family f;
	size_t o, k, i, j;

	(void)state;
	/* Resize-19, nearest: X may be any type. [1, 1, 1, 2] -> [1, 1, 1, 4]. */
	family_begin(&f, "Resize nearest");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		const double *a = rows(t) + 1;	/* two different values */
		double y[4] = { a[0], a[0], a[1], a[1] };
		struct tcase c = { .op = "Resize", .opset = 19, .n_in = 3, .n_out = 1 };

		c.in[0] = tv("x", t, 4, D1112, a);
		c.in[1] = tv("roi", T_FLOAT, 1, D0, NULL);
		c.in[2] = tv("scales", T_FLOAT, 1, D4, (const double[]){ 1, 1, 1, 2 });
		c.out[0] = tv("y", t, 4, D1114, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/* IsNaN / IsInf (20): the float types. */
	for (o = 0; o < 2; o++) {
		static const double v[] = { 1, NAN, INFINITY, -INFINITY, 0, -2 };

		family_begin(&f, o ? "IsInf" : "IsNaN");
		for (k = 0; FLOATS4[k]; k++) {
			int t = FLOATS4[k];
			double y[6];
			struct tcase c = { .op = o ? "IsInf" : "IsNaN", .opset = 20, .n_in = 1,
					   .n_out = 1 };

			for (i = 0; i < 6; i++)
				y[i] = o ? isinf(v[i]) != 0 : isnan(v[i]) != 0;
			c.in[0] = tv("a", t, 2, D23, v);
			c.out[0] = tv("y", T_BOOL, 2, D23, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	/* NonZero (13): every type; [2, nnz] int64 coordinates in C order. */
	family_begin(&f, "NonZero");
	for (k = 0; ALL[k]; k++) {
		int t = ALL[k];
		const double *a = rows(t);
		double y[12];
		size_t nnz = 0;
		struct tcase c = { .op = "NonZero", .opset = 13, .n_in = 1, .n_out = 1 };

		for (i = 0; i < 6; i++)
			nnz += a[i] != 0;
		for (i = 0, j = 0; i < 6; i++)
			if (a[i] != 0) {
				y[j] = (double)(i / 3);
				y[nnz + j] = (double)(i % 3);
				j++;
			}
		c.in[0] = tv("a", t, 2, D23, a);
		c.out[0] = tv("y", T_INT64, 2, (const int64_t[]){ 2, (int64_t)nnz }, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/* Range (11): 1, 3, 5 from (1, 7, 2). */
	family_begin(&f, "Range");
	for (k = 0; RANGE[k]; k++) {
		int t = RANGE[k];
		struct tcase c = { .op = "Range", .opset = 11, .n_in = 3, .n_out = 1 };

		c.in[0] = tv("start", t, 0, D1, (const double[]){ 1 });
		c.in[1] = tv("limit", t, 0, D1, (const double[]){ 7 });
		c.in[2] = tv("delta", t, 0, D1, (const double[]){ 2 });
		c.out[0] = tv("y", t, 1, D3, (const double[]){ 1, 3, 5 });
		check(&f, &c, tname(t));
	}
	family_end(&f);
	families_done();
}

/* ---- ConvTranspose and interpolating Resize on the float types ---- */

/*
 * ConvTranspose reference, up to 3-D (depth 'id' 0: none), as a gather:
 * y[m][o] sums x[c][i] * W[c][m][k] over the c of m's group and the (i, k)
 * with i * s - pad + k * d == o on every axis.
 */
struct convt_ref {
	int c, mg, group, ih, iw, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow;
	int id, kd, od;		/* 3-D: depth (stride and dilation 1, no pads) */
};

static void convt_reference(const struct convt_ref *p, const double *x, const double *w,
			    const double *b, double *y)
{
	int m, oz, oy, ox, c, kz, ky, kx, cg = p->c / p->group;
	int id = p->id ? p->id : 1, kd = p->id ? p->kd : 1, od = p->id ? p->od : 1;

	for (m = 0; m < p->mg * p->group; m++)
		for (oz = 0; oz < od; oz++)
		for (oy = 0; oy < p->oh; oy++)
			for (ox = 0; ox < p->ow; ox++) {
				double sum = b ? b[m] : 0;

				for (c = m / p->mg * cg; c < (m / p->mg + 1) * cg; c++)
					for (kz = 0; kz < kd; kz++)
					for (ky = 0; ky < p->kh; ky++)
						for (kx = 0; kx < p->kw; kx++) {
							int nz = oz - kz;
							int ny = oy + p->pt - ky * p->dh;
							int nx = ox + p->pl - kx * p->dw;

							if (nz < 0 || nz >= id || ny < 0 || nx < 0 ||
							    ny % p->sh || nx % p->sw ||
							    ny / p->sh >= p->ih || nx / p->sw >= p->iw)
								continue;
							sum += x[((c * id + nz) * p->ih + ny / p->sh) * p->iw +
								 nx / p->sw] *
							       w[(((c * p->mg + m % p->mg) * kd + kz) * p->kh +
								  ky) * p->kw + kx];
						}
				y[((m * od + oz) * p->oh + oy) * p->ow + ox] = sum;
			}
}

/* Keys' cubic kernel, a = -0.75 (Resize's default cubic_coeff_a). */
static double cubic_kernel(double d)
{
	const double a = -0.75;

	d = fabs(d);
	if (d <= 1)
		return ((a + 2) * d - (a + 3)) * d * d + 1;
	if (d < 2)
		return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
	return 0;
}

/*
 * One axis of Resize, half_pixel, edge-clamped taps: y[outer][out][inner]
 * from x[outer][in][inner].
 */
static void resize_axis_reference(const double *x, double *y, int outer, int in, int out,
				  int inner, double scale, bool cubic)
{
	int a, o, i, j;

	for (a = 0; a < outer; a++)
		for (o = 0; o < out; o++) {
			double src = (o + 0.5) / scale - 0.5, base = floor(src), r = src - base;
			double wt[4];
			int first = (int)base - (cubic ? 1 : 0), n = cubic ? 4 : 2;

			if (cubic) {
				wt[0] = cubic_kernel(r + 1);
				wt[1] = cubic_kernel(r);
				wt[2] = cubic_kernel(1 - r);
				wt[3] = cubic_kernel(2 - r);
			} else {
				wt[0] = 1 - r;
				wt[1] = r;
			}
			for (i = 0; i < inner; i++) {
				double sum = 0;

				for (j = 0; j < n; j++) {
					int at = first + j < 0 ? 0 : first + j >= in ? in - 1 : first + j;

					sum += wt[j] * x[(a * in + at) * inner + i];
				}
				y[(a * out + o) * inner + i] = sum;
			}
		}
}

static void test_convtranspose_and_resize_float_types(void **state)
{
	/* ConvTranspose-11: float16, float, double (bfloat16 only from opset 22). */
	static const int CONVT[] = { T_FLOAT16, T_FLOAT, T_DOUBLE, 0 };
	static const int64_t D1222[] = { 1, 2, 2, 2 }, D2122[] = { 2, 1, 2, 2 },
			     D1224[] = { 1, 2, 2, 4 }, D1122[] = { 1, 1, 2, 2 },
			     D1144[] = { 1, 1, 4, 4 }, D1135[] = { 1, 1, 3, 5 }, D4[] = { 4 };
	static const double xv[] = { 1, 2, 3, 4, 5, 6, 7, 8 },
			    wv[] = { 1, -1, 2, 0, 0, 3, 1, 1 }, bv[] = { 1, -2 };
	struct family f;
	size_t k, o;

	(void)state;
	/*
	 * 2 groups, strides 2, pads (1, 1) begin (1, 0) end, dilations (1, 2):
	 * [1, 2, 2, 2] -> [1, 2, 2, 4], the GEMM + col2im path.
	 */
	family_begin(&f, "ConvT grp/pad/dil");
	for (k = 0; CONVT[k]; k++) {
		const struct convt_ref p = { .c = 2, .mg = 1, .group = 2, .ih = 2, .iw = 2,
					     .kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, .dw = 2,
					     .pt = 1, .pl = 1, .oh = 2, .ow = 4 };
		int t = CONVT[k];
		double y[16];
		struct tcase c = { .op = "ConvTranspose", .opset = 11, .n_in = 3, .n_out = 1,
				   .n_at = 4 };

		convt_reference(&p, xv, wv, bv, y);
		c.at[0] = (struct tattr){ .name = "group", .i = 2 };
		c.at[1] = (struct tattr){ .name = "strides", .list = true, .ints = { 2, 2 }, .n = 2 };
		c.at[2] = (struct tattr){ .name = "pads", .list = true, .ints = { 1, 1, 1, 0 }, .n = 4 };
		c.at[3] = (struct tattr){ .name = "dilations", .list = true, .ints = { 1, 2 }, .n = 2 };
		c.in[0] = tv("x", t, 4, D1222, xv);
		c.in[1] = tv("w", t, 4, D2122, wv);
		c.in[2] = tv("b", t, 1, D2, bv);
		c.out[0] = tv("y", t, 4, D1224, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/* stride == kernel, no pads: [1, 1, 2, 2] -> [1, 1, 4, 4], the tiled path. */
	family_begin(&f, "ConvTranspose");
	for (k = 0; CONVT[k]; k++) {
		const struct convt_ref p = { .c = 1, .mg = 1, .group = 1, .ih = 2, .iw = 2,
					     .kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, .dw = 1,
					     .oh = 4, .ow = 4 };
		int t = CONVT[k];
		double y[16];
		struct tcase c = { .op = "ConvTranspose", .opset = 11, .n_in = 3, .n_out = 1,
				   .n_at = 1 };

		convt_reference(&p, xv, wv + 4, bv + 1, y);
		c.at[0] = (struct tattr){ .name = "strides", .list = true, .ints = { 2, 2 }, .n = 2 };
		c.in[0] = tv("x", t, 4, D1122, xv);
		c.in[1] = tv("w", t, 4, D1122, wv + 4);
		c.in[2] = tv("b", t, 1, D1, bv + 1);
		c.out[0] = tv("y", t, 4, D1144, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/* 1-D, 2 output channels, strides 2, output_padding 1: [1, 1, 3] -> [1, 2, 8]. */
	family_begin(&f, "ConvT 1-D opad");
	for (k = 0; CONVT[k]; k++) {
		const struct convt_ref p = { .c = 1, .mg = 2, .group = 1, .ih = 1, .iw = 3,
					     .kh = 1, .kw = 3, .sh = 1, .sw = 2, .dh = 1, .dw = 1,
					     .oh = 1, .ow = 8 };
		static const int64_t D113[] = { 1, 1, 3 }, D123[] = { 1, 2, 3 }, D128[] = { 1, 2, 8 };
		static const double w6[] = { 1, -2, 3, 2, 0, -1 };
		int t = CONVT[k];
		double y[16];
		struct tcase c = { .op = "ConvTranspose", .opset = 11, .n_in = 3, .n_out = 1,
				   .n_at = 2 };

		convt_reference(&p, xv, w6, bv, y);
		c.at[0] = (struct tattr){ .name = "strides", .list = true, .ints = { 2 }, .n = 1 };
		c.at[1] = (struct tattr){ .name = "output_padding", .list = true, .ints = { 1 },
					  .n = 1 };
		c.in[0] = tv("x", t, 3, D113, xv);
		c.in[1] = tv("w", t, 3, D123, w6);
		c.in[2] = tv("b", t, 1, D2, bv);
		c.out[0] = tv("y", t, 3, D128, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/* 3-D, strides (1, 2, 1): [1, 1, 2, 2, 1] -> [1, 1, 3, 3, 1] (op_convt3d.c in float). */
	family_begin(&f, "ConvT 3-D");
	for (k = 0; CONVT[k]; k++) {
		const struct convt_ref p = { .c = 1, .mg = 1, .group = 1, .ih = 2, .iw = 1,
					     .kh = 1, .kw = 1, .sh = 2, .sw = 1, .dh = 1, .dw = 1,
					     .oh = 3, .ow = 1, .id = 2, .kd = 2, .od = 3 };
		static const int64_t D11221[] = { 1, 1, 2, 2, 1 }, D11211[] = { 1, 1, 2, 1, 1 },
				     D11331[] = { 1, 1, 3, 3, 1 };
		int t = CONVT[k];
		double y[16];
		struct tcase c = { .op = "ConvTranspose", .opset = 11, .n_in = 2, .n_out = 1,
				   .n_at = 1 };

		convt_reference(&p, xv, wv + 1, NULL, y);
		c.at[0] = (struct tattr){ .name = "strides", .list = true, .ints = { 1, 2, 1 },
					  .n = 3 };
		c.in[0] = tv("x", t, 5, D11221, xv);
		c.in[1] = tv("w", t, 5, D11211, wv + 1);
		c.out[0] = tv("y", t, 5, D11331, y);
		check(&f, &c, tname(t));
	}
	family_end(&f);
	/*
	 * Resize-19 linear / cubic, half_pixel, scales (1, 1, 1.5, 2.5):
	 * [1, 1, 2, 2] -> [1, 1, 3, 5]. The source coordinates are not
	 * dyadic, so double must be interpolated in double to hold 1e-12.
	 */
	for (o = 0; o < 2; o++) {
		static const double rx[] = { 1, 4, -2, 7 };

		family_begin(&f, o ? "Resize cubic" : "Resize linear");
		for (k = 0; FLOATS4[k]; k++) {
			int t = FLOATS4[k];
			double mid[10], y[15];
			struct tcase c = { .op = "Resize", .opset = 19, .n_in = 3, .n_out = 1,
					   .n_at = 1, .tol = ftol(t) };

			resize_axis_reference(rx, mid, 2, 2, 5, 1, 2.5, o);	/* last axis */
			resize_axis_reference(mid, y, 1, 2, 3, 5, 1.5, o);
			c.at[0] = (struct tattr){ .name = "mode", .s = o ? "cubic" : "linear" };
			c.in[0] = tv("x", t, 4, D1122, rx);
			c.in[1] = tv("roi", T_FLOAT, 1, (const int64_t[]){ 0 }, NULL);
			c.in[2] = tv("scales", T_FLOAT, 1, D4, (const double[]){ 1, 1, 1.5, 2.5 });
			c.out[0] = tv("y", t, 4, D1135, y);
			check(&f, &c, tname(t));
		}
		family_end(&f);
	}
	families_done();
}

/* ---- Op versions ---- */

static void expect_error(const struct tcase *c, const char *n1, const char *n2,
			 const char *n3)
{
	char why[512];
	const char *r = run_case(c, why, sizeof(why));

	print_message("# %s\n", r ? r : "(ran)");
	assert_non_null(r);
	assert_non_null(strstr(r, n1));
	assert_non_null(strstr(r, n2));
	assert_non_null(strstr(r, n3));
}

static void test_unimplemented_op_version_is_named(void **state)
{
	static const double a[] = { -1, 2, -3, 4, -5, 6 };
	struct tcase c = { .op = "Relu", .opset = 99, .n_in = 1, .n_out = 1 };

	(void)state;
	/* A newer opset than the library implements. */
	c.in[0] = tv("a", T_FLOAT, 2, D23, a);
	c.out[0] = tv("y", T_FLOAT, 2, D23, a);
	expect_error(&c, "node 'n' (Relu)", "op 'Relu' version 99",
			     "this library implements it for opsets");
	/* An op older than its first version (CumSum is opset 11+). */
	c.op = "CumSum";
	c.opset = 10;
	c.n_in = 2;
	c.in[1] = tv("axis", T_INT64, 0, D1, (const double[]){ 1 });
	expect_error(&c, "node 'n' (CumSum)", "op 'CumSum' version 10",
			     "implements it for opsets 11 to");
}

/* What stays unsupported is refused with the node, the input and its type. */
static void test_refusals_name_the_type(void **state)
{
	static const int64_t D1112[] = { 1, 1, 1, 2 }, D1114[] = { 1, 1, 1, 4 }, D4[] = { 4 },
			     D1133[] = { 1, 1, 3, 3 }, D1122[] = { 1, 1, 2, 2 };
	static const double a[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct tcase c = { .op = "Resize", .opset = 19, .n_in = 3, .n_out = 1, .n_at = 1 };

	(void)state;
	/* Linear Resize of an integer type: rounding rules differ, not guessed. */
	c.at[0] = (struct tattr){ .name = "mode", .s = "linear" };
	c.in[0] = tv("x", T_INT8, 4, D1112, a);
	c.in[1] = tv("roi", T_FLOAT, 1, (const int64_t[]){ 0 }, NULL);
	c.in[2] = tv("scales", T_FLOAT, 1, D4, (const double[]){ 1, 1, 1, 2 });
	c.out[0] = tv("y", T_INT8, 4, D1114, a);
	expect_error(&c, "node 'n' (Resize)", "input 0 'x'", "type int8, not supported");
	/* MatMul of two different types. */
	c = (struct tcase){ .op = "MatMul", .opset = 13, .n_in = 2, .n_out = 1 };
	c.in[0] = tv("a", T_FLOAT, 2, D23, a);
	c.in[1] = tv("b", T_DOUBLE, 2, D32, a);
	c.out[0] = tv("y", T_FLOAT, 2, D22, a);
	expect_error(&c, "node 'n' (MatMul)", "input 1 'b' has type double", "input 0 float");
	/* Conv on integers: not in the spec's list. */
	c = (struct tcase){ .op = "Conv", .opset = 11, .n_in = 2, .n_out = 1 };
	c.in[0] = tv("x", T_INT32, 4, D1133, a);
	c.in[1] = tv("w", T_INT32, 4, D1122, a);
	c.out[0] = tv("y", T_INT32, 4, D1122, a);
	expect_error(&c, "node 'n' (Conv)", "input 0 'x'", "type int32, not supported");
	/* ConvTranspose on bfloat16: the spec adds it only in opset 22. */
	c = (struct tcase){ .op = "ConvTranspose", .opset = 11, .n_in = 2, .n_out = 1 };
	c.in[0] = tv("x", T_BFLOAT16, 4, D1122, a);
	c.in[1] = tv("w", T_BFLOAT16, 4, D1122, a);
	c.out[0] = tv("y", T_BFLOAT16, 4, D1133, a);
	expect_error(&c, "node 'n' (ConvTranspose)", "input 0 'x'",
		     "type bfloat16, not supported");
}

static int teardown(void **state)
{
	(void)state;
	npu_engine_destroy(engine);
	engine = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elementwise_arithmetic),
		cmocka_unit_test(test_unary_and_variadic),
		cmocka_unit_test(test_float_unary),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_cast_every_pair),
		cmocka_unit_test(test_gather_scatter),
		cmocka_unit_test(test_layout_ops),
		cmocka_unit_test(test_more_layout_ops),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_argmax_topk_where_cumsum),
		cmocka_unit_test(test_relu_sign_mod_bitshift_logic),
		cmocka_unit_test(test_pow_every_pair),
		cmocka_unit_test(test_more_reductions),
		cmocka_unit_test(test_softmax_matmul_conv),
		cmocka_unit_test(test_resize_isnan_nonzero_range),
		cmocka_unit_test(test_convtranspose_and_resize_float_types),
		cmocka_unit_test(test_unimplemented_op_version_is_named),
		cmocka_unit_test(test_refusals_name_the_type),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
