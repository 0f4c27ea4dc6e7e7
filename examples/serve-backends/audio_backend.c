// SPDX-License-Identifier: MIT
/*
 * libnpu_serve_audio.so: the streaming front end of audio models as
 * npu-serve backend steps (npu_serve_backend.h), for sequence-batched
 * models: each keeps its window as Triton implicit state, so a stream of
 * chunks (one sequence) goes through as openWakeWord's streaming code
 * does.
 *
 *   frames  AUDIO (FP32 [n]: a chunk), TAIL (state, FP32 [context])
 *           -> SAMPLES (FP32 [1, context + n]: the stream's last 'context'
 *              samples, then the chunk; zeros before the stream),
 *              TAIL_OUT (FP32 [context])
 *   window  ROWS (FP32: new rows of 'width' values, any shape holding a
 *           whole number of them), WINDOW (state, FP32 [rows, width]),
 *           START (control, INT32 [1])
 *           -> OUT (FP32, shape 'shape': the window after the newest
 *              'keep' rows, each value x / divide + offset, went in; at
 *              START the window held 'initial'), WINDOW_OUT ([rows, width])
 *
 * Parameters: frames: context (480). window: rows, width (required),
 * keep (0: every row of ROWS), divide (1), offset (0), initial (0), shape
 * (OUT's dims, comma-separated, rows x width elements; default
 * "rows,width").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <npu/npu_serve_backend.h>

static int param_long(const struct npu_serve_host *h, struct npu_serve_context *ctx,
		      const char *key, long def, long lo, long hi, long *out)
{
	const char *v = h->param(ctx, key);
	char *end;

	*out = def;
	if (!v) {
		if (def >= lo)
			return 0;
		h->error(ctx, "parameter '%s' is missing", key);
		return -1;
	}
	errno = 0;
	*out = strtol(v, &end, 10);
	if (errno || end == v || *end || *out < lo || *out > hi) {
		h->error(ctx, "parameter %s '%s': expected an integer in [%ld, %ld]", key, v, lo, hi);
		return -1;
	}
	return 0;
}

static int param_float(const struct npu_serve_host *h, struct npu_serve_context *ctx,
		       const char *key, float def, float *out)
{
	const char *v = h->param(ctx, key);
	char *end;

	*out = def;
	if (!v)
		return 0;
	errno = 0;
	*out = strtof(v, &end);
	if (errno || end == v || *end) {
		h->error(ctx, "parameter %s '%s': expected a number", key, v);
		return -1;
	}
	return 0;
}

/* ---- frames ---------------------------------------------------------------------- */

struct frames_state {
	long context;
};

static const struct npu_serve_io frames_in[] = {
	{ "AUDIO", NPU_TYPE_FLOAT, 1 },
	{ "TAIL", NPU_TYPE_FLOAT, 1 },
};
static const struct npu_serve_io frames_out[] = {
	{ "SAMPLES", NPU_TYPE_FLOAT, 2 },
	{ "TAIL_OUT", NPU_TYPE_FLOAT, 1 },
};

static int frames_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
			 void **state)
{
	struct frames_state *s = malloc(sizeof(*s));

	if (!s) {
		h->error(ctx, "out of memory");
		return -1;
	}
	if (param_long(h, ctx, "context", 480, 0, 1 << 20, &s->context)) {
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int frames_execute(void *state, const struct npu_serve_host *h,
			  struct npu_serve_context *ctx)
{
	const struct frames_state *s = state;
	const struct npu_serve_tensor *audio = h->input(ctx, 0), *tail = h->input(ctx, 1);
	size_t n = (size_t)audio->dims[0], c = (size_t)s->context, total = c + n;
	int64_t dims[2] = { 1, (int64_t)total };
	float *out, *tail_out;

	if (tail->nbytes != c * sizeof(float)) {
		h->error(ctx, "TAIL holds %zu bytes, not the %zu of 'context' %zu samples",
			 tail->nbytes, c * sizeof(float), c);
		return NPU_SERVE_STEP_FAILED;
	}
	if (n < c) {
		h->error(ctx, "AUDIO: a chunk of %zu samples is shorter than the context (%zu)", n,
			 c);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	out = h->output(ctx, 0, 2, dims, total * sizeof(float));
	dims[0] = (int64_t)c;
	tail_out = out ? h->output(ctx, 1, 1, dims, c * sizeof(float)) : NULL;
	if (!tail_out)
		return NPU_SERVE_STEP_FAILED;
	memcpy(out, tail->data, c * sizeof(float));
	memcpy(out + c, audio->data, n * sizeof(float));
	memcpy(tail_out, out + n, c * sizeof(float));
	return 0;
}

/* ---- window ---------------------------------------------------------------------- */

struct window_state {
	long rows, width, keep;
	float divide, offset, initial;
	int out_rank;
	int64_t out_dims[NPU_MODEL_MAX_RANK];
};

static const struct npu_serve_io window_in[] = {
	{ "ROWS", NPU_TYPE_FLOAT, -1 },
	{ "WINDOW", NPU_TYPE_FLOAT, 2 },
	{ "START", NPU_TYPE_INT32, 1 },
};
static const struct npu_serve_io window_out[] = {
	{ "OUT", NPU_TYPE_FLOAT, -1 },
	{ "WINDOW_OUT", NPU_TYPE_FLOAT, 2 },
};

static int window_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
			 void **state)
{
	struct window_state *s = calloc(1, sizeof(*s));
	const char *shape = h->param(ctx, "shape");
	int64_t elems = 1;

	if (!s) {
		h->error(ctx, "out of memory");
		return -1;
	}
	if (param_long(h, ctx, "rows", -1, 1, 1 << 16, &s->rows) ||
	    param_long(h, ctx, "width", -1, 1, 1 << 16, &s->width) ||
	    param_long(h, ctx, "keep", 0, 0, 1 << 16, &s->keep) ||
	    param_float(h, ctx, "divide", 1.0f, &s->divide) ||
	    param_float(h, ctx, "offset", 0.0f, &s->offset) ||
	    param_float(h, ctx, "initial", 0.0f, &s->initial))
		goto fail;
	if (s->divide == 0.0f) {
		h->error(ctx, "parameter divide is 0");
		goto fail;
	}
	if (s->keep > s->rows) {
		h->error(ctx, "parameter keep %ld is more than rows %ld", s->keep, s->rows);
		goto fail;
	}
	if (!shape) {
		s->out_rank = 2;
		s->out_dims[0] = s->rows;
		s->out_dims[1] = s->width;
	} else {
		const char *p = shape;

		while (*p) {
			char *end;
			long d = strtol(p, &end, 10);

			if (end == p || d < 1 || s->out_rank == NPU_MODEL_MAX_RANK ||
			    (*end && *end != ',')) {
				h->error(ctx, "parameter shape '%s': expected up to %d positive dims separated by commas",
					 shape, NPU_MODEL_MAX_RANK);
				goto fail;
			}
			s->out_dims[s->out_rank++] = d;
			elems *= d;
			p = *end ? end + 1 : end;
		}
		if (elems != (int64_t)s->rows * s->width) {
			h->error(ctx, "parameter shape '%s' holds %lld values, the window %ld x %ld",
				 shape, (long long)elems, s->rows, s->width);
			goto fail;
		}
	}
	*state = s;
	return 0;
fail:
	free(s);
	return -1;
}

static int window_execute(void *state, const struct npu_serve_host *h,
			  struct npu_serve_context *ctx)
{
	const struct window_state *s = state;
	const struct npu_serve_tensor *rows = h->input(ctx, 0), *win = h->input(ctx, 1);
	const struct npu_serve_tensor *start = h->input(ctx, 2);
	size_t width = (size_t)s->width, nwin = (size_t)s->rows, nin, keep, old, i;
	int64_t dims[2] = { s->rows, s->width };
	const float *x = rows->data;
	float *out, *next;
	int32_t first;

	nin = rows->nbytes / sizeof(float);
	if (nin % width) {
		h->error(ctx, "ROWS holds %zu values, not whole rows of %zu", nin, width);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	nin /= width;
	keep = s->keep ? (size_t)s->keep : nin;
	if (keep > nin || keep > nwin) {
		h->error(ctx, "ROWS holds %zu rows: the window takes the newest %zu of at most %zu",
			 nin, keep, nwin);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	if (win->nbytes != nwin * width * sizeof(float) || start->nbytes != sizeof(int32_t)) {
		h->error(ctx, "WINDOW is not %zu x %zu values or START not one INT32", nwin, width);
		return NPU_SERVE_STEP_FAILED;
	}
	memcpy(&first, start->data, sizeof(first));
	out = h->output(ctx, 0, s->out_rank, s->out_dims, nwin * width * sizeof(float));
	next = out ? h->output(ctx, 1, 2, dims, nwin * width * sizeof(float)) : NULL;
	if (!next)
		return NPU_SERVE_STEP_FAILED;
	old = nwin - keep;
	if (first) {
		for (i = 0; i < old * width; i++)
			next[i] = s->initial;
	} else {
		memcpy(next, (const float *)win->data + keep * width, old * width * sizeof(float));
	}
	x += (nin - keep) * width;
	for (i = 0; i < keep * width; i++)
		next[old * width + i] = x[i] / s->divide + s->offset;
	memcpy(out, next, nwin * width * sizeof(float));
	return 0;
}

/* ---- The library's steps ---------------------------------------------------------- */

static void free_state(void *state)
{
	free(state);
}

static const struct npu_serve_step steps[] = {
	{ "frames", frames_in, 2, frames_out, 2, frames_create, frames_execute, free_state },
	{ "window", window_in, 3, window_out, 2, window_create, window_execute, free_state },
};

const struct npu_serve_step *npu_serve_backend_steps(uint32_t abi, size_t *count);

const struct npu_serve_step *npu_serve_backend_steps(uint32_t abi, size_t *count)
{
	if (abi != NPU_SERVE_BACKEND_ABI)
		return NULL;
	*count = sizeof(steps) / sizeof(steps[0]);
	return steps;
}
