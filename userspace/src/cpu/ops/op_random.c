// SPDX-License-Identifier: MIT
/*
 * Random draws (op_random.h): numpy's MT19937 stream, and the random side
 * of Dropout. Seeded nodes are reproducible run after run and match the
 * ONNX reference; nodes without a seed draw a fresh one per run.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/ops/op_common.h"
#include "graph/schemas/random.h"
#include "cpu/ops/op_random.h"

#define MT_N 624
#define MT_M 397

void npu_mt19937_seed(struct npu_mt19937 *mt, uint32_t seed)
{
	int i;

	mt->state[0] = seed;
	for (i = 1; i < MT_N; i++)
		mt->state[i] = 1812433253u * (mt->state[i - 1] ^ (mt->state[i - 1] >> 30)) +
			       (uint32_t)i;
	mt->pos = MT_N;
}

uint32_t npu_random_seed(void)
{
	static _Atomic uint32_t counter;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u ^
	       atomic_fetch_add(&counter, 0x9e3779b9u);
}

uint32_t npu_mt19937_next(struct npu_mt19937 *mt)
{
	uint32_t y;

	if (mt->pos >= MT_N) {
		int k;

		for (k = 0; k < MT_N; k++) {
			y = (mt->state[k] & 0x80000000u) | (mt->state[(k + 1) % MT_N] & 0x7fffffffu);
			mt->state[k] = mt->state[(k + MT_M) % MT_N] ^ (y >> 1) ^
				       (y & 1 ? 0x9908b0dfu : 0);
		}
		mt->pos = 0;
	}
	y = mt->state[mt->pos++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

double npu_mt19937_double(struct npu_mt19937 *mt)
{
	uint32_t a = npu_mt19937_next(mt) >> 5, b = npu_mt19937_next(mt) >> 6;

	return (a * 67108864.0 + b) / 9007199254740992.0;
}

npu_status npu_op_dropout_train(struct npu_op_ctx *ctx, double r)
{
	const struct npu_tensor *x = ctx->inputs[0];
	struct npu_tensor *y = ctx->outputs[0], *mask = npu_op_out(ctx, 1);
	const struct npu_attr *seed = npu_node_attr(ctx->node, "seed");
	int64_t n = npu_op_numel(x), i;
	struct npu_mt19937 *mt;
	double scale;

	if (!(r > 0 && r < 1))
		return npu_op_invalid(ctx->err, ctx->node,
				      "ratio %g is outside [0, 1) with training_mode = true", r);
	if (x->dtype != NPU_DTYPE_FLOAT && x->dtype != NPU_DTYPE_DOUBLE)
		return npu_op_unsupported(ctx->err, ctx->node,
					  "training_mode = true on %s data (float and double are supported)",
					  npu_dtype_name(x->dtype));
	if (seed && seed->type == NPU_ATTR_INT && (seed->i < 0 || seed->i > UINT32_MAX))
		return npu_op_invalid(ctx->err, ctx->node,
				      "attribute 'seed' = %lld is outside [0, 2^32)",
				      (long long)seed->i);
	mt = malloc(sizeof(*mt));
	if (!mt)
		return npu_op_error(ctx->err, ctx->node, NPU_ERR_NO_MEMORY, "out of memory");
	npu_mt19937_seed(mt, seed && seed->type == NPU_ATTR_INT ? (uint32_t)seed->i
								 : npu_random_seed());
	scale = 1.0 / (1.0 - r);
	for (i = 0; i < n; i++) {
		bool keep = npu_mt19937_double(mt) >= r;

		if (x->dtype == NPU_DTYPE_FLOAT)
			((float *)y->data)[i] = keep ? (float)(((const float *)x->data)[i] * scale)
						     : 0.0f;
		else
			((double *)y->data)[i] = keep ? ((const double *)x->data)[i] * scale : 0.0;
		if (mask)
			((uint8_t *)mask->data)[i] = keep;
	}
	free(mt);
	return NPU_OK;
}

/* ---- RandomUniform(Like), RandomNormal(Like), Bernoulli ---- */

/*
 * numpy's legacy normal draw (Marsaglia's polar method, the second value
 * kept for the next call), so seeded nodes match RandomState.normal.
 */
struct gauss_state {
	struct npu_mt19937 mt;
	bool has;
	double next;
};

static double draw_gauss(struct gauss_state *g)
{
	double x1, x2, r2, f;

	if (g->has) {
		g->has = false;
		return g->next;
	}
	do {
		x1 = 2.0 * npu_mt19937_double(&g->mt) - 1.0;
		x2 = 2.0 * npu_mt19937_double(&g->mt) - 1.0;
		r2 = x1 * x1 + x2 * x2;
	} while (r2 >= 1.0 || r2 == 0.0);
	f = sqrt(-2.0 * log(r2) / r2);
	g->next = f * x1;
	g->has = true;
	return f * x2;
}

static void set_elem(struct npu_tensor *y, int64_t i, double v)
{
	switch (y->dtype) {
	case NPU_DTYPE_FLOAT: ((float *)y->data)[i] = (float)v; break;
	case NPU_DTYPE_DOUBLE: ((double *)y->data)[i] = v; break;
	case NPU_DTYPE_BOOL: case NPU_DTYPE_UINT8: ((uint8_t *)y->data)[i] = (uint8_t)v; break;
	case NPU_DTYPE_INT8: ((int8_t *)y->data)[i] = (int8_t)v; break;
	case NPU_DTYPE_INT16: ((int16_t *)y->data)[i] = (int16_t)v; break;
	case NPU_DTYPE_UINT16: ((uint16_t *)y->data)[i] = (uint16_t)v; break;
	case NPU_DTYPE_INT32: ((int32_t *)y->data)[i] = (int32_t)v; break;
	case NPU_DTYPE_UINT32: ((uint32_t *)y->data)[i] = (uint32_t)v; break;
	case NPU_DTYPE_INT64: ((int64_t *)y->data)[i] = (int64_t)v; break;
	case NPU_DTYPE_UINT64: ((uint64_t *)y->data)[i] = (uint64_t)v; break;
	default: break;
	}
}

static npu_status rand_compute(struct npu_op_ctx *ctx, enum rand_kind k)
{
	const struct npu_node *node = ctx->node;
	const struct npu_attr *seed = npu_node_attr(node, "seed");
	struct npu_tensor *y = ctx->outputs[0];
	int64_t n = npu_op_numel(y), i;
	struct gauss_state *g;
	double a, b;

	if (seed && (seed->type != NPU_ATTR_FLOAT || !(seed->f >= 0 && seed->f < 4294967296.0)))
		return npu_op_invalid(ctx->err, node,
				      "attribute 'seed' is not a float in [0, 2^32)");
	g = calloc(1, sizeof(*g));
	if (!g)
		return npu_op_error(ctx->err, node, NPU_ERR_NO_MEMORY, "out of memory");
	/* numpy seeds with the integer part, as the reference does. */
	npu_mt19937_seed(&g->mt, seed ? (uint32_t)seed->f : npu_random_seed());
	if (k == RAND_UNIFORM) {
		a = npu_node_attr_float_or(node, "low", 0.0f);
		b = npu_node_attr_float_or(node, "high", 1.0f);
		for (i = 0; i < n; i++)
			set_elem(y, i, a + (b - a) * npu_mt19937_double(&g->mt));
	} else if (k == RAND_NORMAL) {
		a = npu_node_attr_float_or(node, "mean", 0.0f);
		b = npu_node_attr_float_or(node, "scale", 1.0f);
		for (i = 0; i < n; i++)
			set_elem(y, i, a + b * draw_gauss(g));
	} else {
		const struct npu_tensor *p = ctx->inputs[0];

		for (i = 0; i < n; i++) {
			double pi = p->dtype == NPU_DTYPE_DOUBLE ? ((const double *)p->data)[i]
								 : ((const float *)p->data)[i];

			if (!(pi >= 0 && pi <= 1)) {
				free(g);
				return npu_op_invalid(ctx->err, node,
						      "probability %g at element %lld is outside [0, 1]",
						      pi, (long long)i);
			}
			set_elem(y, i, npu_mt19937_double(&g->mt) < pi ? 1 : 0);
		}
	}
	free(g);
	return NPU_OK;
}

#define RAND_DEF(sym, name, kind)					\
static npu_status sym##_compute(struct npu_op_ctx *ctx)			\
{									\
	return rand_compute(ctx, kind);					\
}									\
NPU_CPU_OP_DEF(sym) = {							\
	.op_type = name, .domain = "",					\
	.compute = sym##_compute,					\
};

RAND_DEF(random_uniform, "RandomUniform", RAND_UNIFORM)
RAND_DEF(random_uniform_like, "RandomUniformLike", RAND_UNIFORM)
RAND_DEF(random_normal, "RandomNormal", RAND_NORMAL)
RAND_DEF(random_normal_like, "RandomNormalLike", RAND_NORMAL)
RAND_DEF(bernoulli, "Bernoulli", RAND_BERNOULLI)
