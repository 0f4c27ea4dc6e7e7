// SPDX-License-Identifier: MIT
/*
 * libnpu_serve_test.so: backend steps for the serve suite's ensemble tests
 * (tests/serve/test_ext_ensemble.py), each simple enough that the test
 * knows its answer:
 *   scale   X (FP32, any rank) -> Y = X * factor (parameter, default 2)
 *   check   X (FP32 [n]) -> Y = X; a negative element is the request's
 *           fault (NPU_SERVE_STEP_BAD_INPUT) naming its index
 *   lengths S (BYTES [n]) -> L (INT32 [n]): each element's length
 *   needs   X (FP32 [1]) -> Y; its create() fails without parameter 'must'
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include <npu/npu_serve_backend.h>

struct scale_state {
	float factor;
};

static int scale_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
			void **state)
{
	struct scale_state *s = malloc(sizeof(*s));
	const char *f = h->param(ctx, "factor");

	if (!s) {
		h->error(ctx, "out of memory");
		return -1;
	}
	s->factor = f ? strtof(f, NULL) : 2.0f;
	*state = s;
	return 0;
}

static int scale_execute(void *state, const struct npu_serve_host *h,
			 struct npu_serve_context *ctx)
{
	const struct npu_serve_tensor *x = h->input(ctx, 0);
	const struct scale_state *s = state;
	const float *in = x->data;
	size_t i, n = x->nbytes / sizeof(float);
	float *y = h->output(ctx, 0, x->rank, x->dims, x->nbytes);

	if (!y)
		return NPU_SERVE_STEP_FAILED;
	for (i = 0; i < n; i++)
		y[i] = in[i] * s->factor;
	return 0;
}

static int plain_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
			void **state)
{
	(void)h;
	(void)ctx;
	*state = NULL;
	return 0;
}

static int check_execute(void *state, const struct npu_serve_host *h,
			 struct npu_serve_context *ctx)
{
	const struct npu_serve_tensor *x = h->input(ctx, 0);
	const float *in = x->data;
	size_t i, n = x->nbytes / sizeof(float);
	float *y;

	(void)state;
	for (i = 0; i < n; i++)
		if (in[i] < 0) {
			h->error(ctx, "X[%zu] is negative", i);
			return NPU_SERVE_STEP_BAD_INPUT;
		}
	y = h->output(ctx, 0, x->rank, x->dims, x->nbytes);
	if (!y)
		return NPU_SERVE_STEP_FAILED;
	memcpy(y, in, x->nbytes);
	return 0;
}

static int lengths_execute(void *state, const struct npu_serve_host *h,
			   struct npu_serve_context *ctx)
{
	const struct npu_serve_tensor *s = h->input(ctx, 0);
	const unsigned char *p = s->data, *end = p + s->nbytes;
	int64_t n = s->dims[0], i;
	int32_t *len;

	(void)state;
	len = h->output(ctx, 0, 1, s->dims, sizeof(int32_t) * (size_t)n);
	if (!len)
		return NPU_SERVE_STEP_FAILED;
	for (i = 0; i < n; i++) {
		uint32_t l;

		if (end - p < 4) {
			h->error(ctx, "S: element %lld is cut off", (long long)i);
			return NPU_SERVE_STEP_BAD_INPUT;
		}
		memcpy(&l, p, 4);
		l = le32toh(l);
		if ((size_t)(end - p - 4) < l) {
			h->error(ctx, "S: element %lld is cut off", (long long)i);
			return NPU_SERVE_STEP_BAD_INPUT;
		}
		len[i] = (int32_t)l;
		p += 4 + l;
	}
	return 0;
}

static int needs_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
			void **state)
{
	*state = NULL;
	if (!h->param(ctx, "must")) {
		h->error(ctx, "parameter 'must' is missing");
		return -1;
	}
	return 0;
}

static void free_state(void *state)
{
	free(state);
}

static const struct npu_serve_io any_x[] = { { "X", NPU_TYPE_FLOAT, -1 } };
static const struct npu_serve_io any_y[] = { { "Y", NPU_TYPE_FLOAT, -1 } };
static const struct npu_serve_io vec_x[] = { { "X", NPU_TYPE_FLOAT, 1 } };
static const struct npu_serve_io vec_y[] = { { "Y", NPU_TYPE_FLOAT, 1 } };
static const struct npu_serve_io str_s[] = { { "S", NPU_TYPE_STRING, 1 } };
static const struct npu_serve_io len_l[] = { { "L", NPU_TYPE_INT32, 1 } };

static const struct npu_serve_step steps[] = {
	{ "scale", any_x, 1, any_y, 1, scale_create, scale_execute, free_state },
	{ "check", vec_x, 1, vec_y, 1, plain_create, check_execute, NULL },
	{ "lengths", str_s, 1, len_l, 1, plain_create, lengths_execute, NULL },
	{ "needs", vec_x, 1, vec_y, 1, needs_create, check_execute, NULL },
};

const struct npu_serve_step *npu_serve_backend_steps(uint32_t abi, size_t *count);

const struct npu_serve_step *npu_serve_backend_steps(uint32_t abi, size_t *count)
{
	if (abi != NPU_SERVE_BACKEND_ABI)
		return NULL;
	*count = sizeof(steps) / sizeof(steps[0]);
	return steps;
}
