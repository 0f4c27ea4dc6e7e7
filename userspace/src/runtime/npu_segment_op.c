// SPDX-License-Identifier: MIT
/*
 * npu_segment_op.c - the NpuSegment kernel: how the runtime runs a
 * compiled NPU segment, as a TFLite delegate kernel would. Inputs are
 * quantized (and turned NHWC) straight into the device arena, the
 * segment's command stream runs as one job, and the outputs are
 * dequantized back to fp32 NCHW. The op's schema is the compiler's
 * (compiler/op_schemas.c), which makes such nodes.
 */
#include "compiler/boundary.h"
#include "compiler/segment_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/ops/cpu_ops.h"

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

		if (rt->consts)
			uses[n++] = (struct npu_buffer_use){ rt->consts, NPU_ACCESS_READ_ONLY };
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

__attribute__((constructor)) static void segment_op_register(void)
{
	npu_kernel_register(&segment_op_def);	/* the runtime finds it as any kernel */
}
