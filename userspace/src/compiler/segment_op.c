// SPDX-License-Identifier: MIT
/*
 * The NpuSegment op: how the CPU runtime runs a compiled NPU segment, as
 * a TFLite delegate kernel would. Inputs are quantized (and turned NHWC)
 * straight into the device arena, the segment's command stream runs as one
 * job, and the outputs are dequantized back to fp32 NCHW.
 */
#include "compiler/compiler.h"
#include "compiler/segment_rt.h"

#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops/cpu_ops.h"

/*
 * x * inv rounded to nearest even, as lrintf() in the default rounding
 * mode, without the libm call (the segment's inputs are millions of
 * elements): clamped first, to a range whose every value rounds exactly
 * by the 1.5 * 2^23 trick and still saturates int16, so NaN and values
 * past the long range saturate too (NaN to the low end).
 */
static inline int32_t quant_round(float x, float inv)
{
	float v = x * inv;

	v = v >= -65536.0f ? v : -65536.0f;
	v = v <= 65536.0f ? v : 65536.0f;
	return (int32_t)((v + 12582912.0f) - 12582912.0f);
}

/* Element e of act a's storage: int8, or int16 (symmetric) when a->i16. */
static inline void put_q(const struct npu_act *a, int8_t *dst, uint64_t e, float x,
			 float inv)
{
	int32_t v = quant_round(x, inv) + a->q.zero_point;

	if (a->i16)
		((int16_t *)(void *)dst)[e] = (int16_t)(v < -32767 ? -32767 : v > 32767 ? 32767 : v);
	else
		dst[e] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

/*
 * 'count' floats of 'src' into elements e0, e0 + stride, ... of act a:
 * put_q() with the element width decided once per run.
 */
static void put_q_run(const struct npu_act *a, int8_t *dst, uint64_t e0, uint64_t stride,
		      const float *src, uint64_t count, float inv)
{
	int32_t zp = a->q.zero_point;
	uint64_t i;

	if (a->i16) {
		int16_t *d = (int16_t *)(void *)dst + e0;

		for (i = 0; i < count; i++) {
			int32_t v = quant_round(src[i], inv) + zp;

			d[i * stride] = (int16_t)(v < -32767 ? -32767 : v > 32767 ? 32767 : v);
		}
		return;
	}
	for (i = 0; i < count; i++) {
		int32_t v = quant_round(src[i], inv) + zp;

		dst[e0 + i * stride] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
	}
}

static inline float get_q(const struct npu_act *a, const int8_t *src, uint64_t e)
{
	int32_t q = a->i16 ? ((const int16_t *)(const void *)src)[e] : src[e];

	return a->q.scale * (float)(q - a->q.zero_point);
}

/*
 * fp32 NCHW -> int8 im2col (npu_act.im2col): every output pixel's window,
 * [k_h][k_w][c], padding as the zero point. The source is t's own NCHW
 * shape; a window pixel outside it reads as padding, so no index leaves t.
 */
static void quantize_im2col(const struct npu_tensor *t, const struct npu_act *a,
			    int8_t *dst, float inv)
{
	const float *src = t->data;
	uint32_t kh = a->im2col.k_h, kw = a->im2col.k_w, c = a->c / (kh * kw);
	int64_t H = t->shape.rank == 4 ? t->shape.dims[2] : 0;
	int64_t W = t->shape.rank == 4 ? t->shape.dims[3] : 0;
	uint64_t e = 0, n, y, x, i, j, k;

	if (t->shape.rank != 4 || t->shape.dims[0] != a->n || t->shape.dims[1] != c)
		H = W = 0;	/* not the value compiled for: padding only */
	for (n = 0; n < a->n; n++)
		for (y = 0; y < a->h; y++)
			for (x = 0; x < a->w; x++)
				for (i = 0; i < kh; i++)
					for (j = 0; j < kw; j++) {
						int64_t sy = (int64_t)(y * a->im2col.stride_h + i) -
							     a->im2col.pad_top;
						int64_t sx = (int64_t)(x * a->im2col.stride_w + j) -
							     a->im2col.pad_left;
						bool in = sy >= 0 && sy < H && sx >= 0 && sx < W;

						for (k = 0; k < c; k++, e++) {
							if (in)
								put_q(a, dst, e, src[((n * c + k) * H + sy) *
										     W + sx], inv);
							else	/* padding: the zero point, either width */
								put_q(a, dst, e, 0.0f, inv);
						}
					}
}

/*
 * fp32 NCHW (or rows) -> int8 NHWC (or rows), with rounding to nearest
 * even; int16 elements for an int16 act.
 */
void npu_segment_quantize_in(const struct npu_tensor *t, const struct npu_act *a,
			enum npu_layout layout, int8_t *dst)
{
	const float *src = t->data;
	float inv = 1.0f / a->q.scale;
	uint64_t hw = (uint64_t)a->h * a->w, n, c;

	if (layout == NPU_LAYOUT_ROWS) {
		put_q_run(a, dst, 0, 1, src, npu_act_elems(a), inv);
		return;
	}
	if (layout == NPU_LAYOUT_IM2COL) {
		quantize_im2col(t, a, dst, inv);
		return;
	}
	for (n = 0; n < a->n; n++)
		for (c = 0; c < a->c; c++)
			put_q_run(a, dst, n * hw * a->c + c, a->c,
				  src + (n * a->c + c) * hw, hw, inv);
}

void npu_segment_dequantize_out(const int8_t *src, const struct npu_act *a,
			   enum npu_layout layout, struct npu_tensor *t)
{
	float *dst = t->data;
	uint64_t hw = (uint64_t)a->h * a->w, n, p, c;

	if (layout == NPU_LAYOUT_ROWS) {
		uint64_t i, count = npu_act_elems(a);

		for (i = 0; i < count; i++)
			dst[i] = get_q(a, src, i);
		return;
	}
	for (n = 0; n < a->n; n++) {
		for (c = 0; c < a->c; c++) {
			float *plane = dst + (n * a->c + c) * hw;
			uint64_t base = n * hw * a->c + c;

			for (p = 0; p < hw; p++)
				plane[p] = get_q(a, src, base + p * a->c);
		}
	}
}

static npu_status segment_infer(struct npu_infer_ctx *ctx)
{
	const struct npu_node *n = ctx->node;
	size_t i;

	/* Shapes were fixed at compile time; the outputs already carry them. */
	for (i = 0; i < n->num_outputs; i++) {
		ctx->out_dtypes[i] = NPU_DTYPE_FLOAT;
		ctx->out_shapes[i] = n->outputs[i]->shape;
	}
	return NPU_OK;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait for an in-flight segment and dequantize its outputs. */
static npu_status segment_finish(struct npu_segment_rt *rt, struct npu_error *err)
{
	const struct npu_segment *seg = rt->seg;
	struct npu_job_result res = { 0 };
	double t0 = now_ms();
	npu_status st;
	size_t i;

	if (!rt->job)
		return NPU_OK;	/* completed already (the next segment's submit) */
	st = npu_job_wait(rt->job, UINT64_MAX);
	npu_job_get_result(rt->job, &res);
	if (st != NPU_OK)
		npu_error_set(err, st,
			      "NPU segment %d (%s .. %s): %s (device status %s at command offset %u)",
			      seg->index, seg->first_node, seg->last_node,
			      npu_job_last_error(rt->job),
			      npu_job_status_str(res.device_status), res.error_offset);
	npu_job_release(rt->job);
	rt->job = NULL;
	if (rt->group->inflight == rt)
		rt->group->inflight = NULL;
	if (st != NPU_OK)
		return st;
	rt->runs++;
	rt->cycles += res.cycles;
	rt->device_ns += res.device_end_ns - res.device_start_ns;
	rt->last = res;
	if (rt->epoch != rt->group->epoch) {	/* the first job of this run */
		rt->epoch = rt->group->epoch;
		rt->run_jobs = rt->run_cycles = 0;
		rt->run_wall_ms = 0;
		for (i = 0; rt->lop_cycles && i < seg->prog.num_lops; i++)
			rt->lop_cycles[i] = 0;
	}
	rt->run_jobs++;
	rt->run_cycles += res.cycles;
	for (i = 0; i < seg->num_outputs; i++) {
		const struct npu_act *a = &seg->prog.acts[seg->output_acts[i]];

		npu_segment_dequantize_out((const int8_t *)rt->arena_map + a->offset, a,
			       seg->output_layout[i], rt->outputs[i]);
	}
	for (i = 0; rt->profile_map && i < seg->prog.num_lops; i++)
		rt->lop_cycles[i] += rt->profile_map[i + 1] - rt->profile_map[i];
	/* Host time inside the op: quantize + submit, then wait + dequantize. */
	rt->last_wall_ms = rt->submit_ms + (now_ms() - t0);
	rt->run_wall_ms += rt->last_wall_ms;
	return NPU_OK;
}

static npu_status segment_submit(struct npu_op_ctx *ctx)
{
	struct npu_segment_rt *rt = ctx->state;
	const struct npu_segment *seg;
	double t0;
	npu_status st;
	size_t i;

	if (!rt)
		return npu_error_set(ctx->err, NPU_ERR_INTERNAL,
				     "node '%s': NPU segment not bound to a device in this session",
				     ctx->node->name);
	seg = rt->seg;
	/* The arena is shared: the segment in flight must finish first. */
	if (rt->group->inflight) {
		st = segment_finish(rt->group->inflight, ctx->err);
		if (st != NPU_OK)
			return st;
	}
	t0 = now_ms();
	for (i = 0; i < seg->num_inputs; i++) {
		const struct npu_act *a = &seg->prog.acts[seg->input_acts[i]];
		/* An im2col act is bigger than the value it gathers from. */
		uint64_t elems = seg->input_layout[i] == NPU_LAYOUT_IM2COL ?
				 (uint64_t)npu_shape_numel(&seg->inputs[i]->shape) : npu_act_elems(a);

		if (ctx->inputs[i]->nbytes != elems * sizeof(float))
			return npu_error_set(ctx->err, NPU_ERR_INVALID_ARG,
					     "NPU segment %d: input '%s' has %zu bytes, compiled for %llu",
					     seg->index, seg->inputs[i]->name, ctx->inputs[i]->nbytes,
					     (unsigned long long)(elems * sizeof(float)));
		npu_segment_quantize_in(ctx->inputs[i], a, seg->input_layout[i],
			    (int8_t *)rt->arena_map + a->offset);
	}
	{
		struct npu_buffer_use uses[3] = { { rt->arena, NPU_ACCESS_READ_WRITE } };
		unsigned int n = 1;
		/* Queue 1: the strict-priority queue 0 is privileged on accel. */
		struct npu_submit s = {
			.cmd = rt->cmd, .cmd_size = rt->stream_size, .buffers = uses,
			.queue = 1,
		};

		if (seg->consts)
			uses[n++] = (struct npu_buffer_use){ seg->consts, NPU_ACCESS_READ_ONLY };
		if (rt->profile)
			uses[n++] = (struct npu_buffer_use){ rt->profile, NPU_ACCESS_READ_WRITE };
		s.num_buffers = n;

		st = npu_job_submit(rt->dev, &s, &rt->job);
	}
	if (st != NPU_OK)
		return npu_error_set(ctx->err, st, "NPU segment %d (%s .. %s): %s",
				     seg->index, seg->first_node, seg->last_node,
				     npu_device_last_error(rt->dev));
	for (i = 0; i < seg->num_outputs; i++)
		rt->outputs[i] = ctx->outputs[i];
	rt->group->inflight = rt;
	rt->submit_ms = now_ms() - t0;
	return NPU_OK;
}

static npu_status segment_wait(struct npu_op_ctx *ctx)
{
	struct npu_segment_rt *rt = ctx->state;

	return rt ? segment_finish(rt, ctx->err) : NPU_OK;
}

/* The synchronous form, for callers that want the results at once. */
static npu_status segment_compute(struct npu_op_ctx *ctx)
{
	npu_status st = segment_submit(ctx);

	return st != NPU_OK ? st : segment_wait(ctx);
}

/* The runtime runs NpuSegment nodes (domain ai.npu) with this kernel. */
static const struct npu_op_def segment_op_def = {
	.op_type = NPU_SEGMENT_OP,
	.domain = NPU_SEGMENT_DOMAIN,
	.compute = segment_compute,
	.submit = segment_submit,
	.wait = segment_wait,
};

/* What an NpuSegment is, for the graph; the compiler owns the domain. */
static const struct npu_op_schema segment_op_schema = {
	.op_type = NPU_SEGMENT_OP,
	.domain = NPU_SEGMENT_DOMAIN,
	.since_version = 1,
	.max_version = 1,
	.infer = segment_infer,
	.owner = "npu",
};

__attribute__((constructor)) static void segment_op_register(void)
{
	static const struct npu_op_schema *const list[] = { &segment_op_schema };
	struct npu_error err;

	/* Only a second owner of ai.npu.NpuSegment could make this fail. */
	(void)npu_op_schema_register(list, 1, &err);
	npu_kernel_register(&segment_op_def);	/* the runtime finds it as any kernel */
}
