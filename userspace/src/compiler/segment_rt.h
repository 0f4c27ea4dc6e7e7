/* SPDX-License-Identifier: MIT */
/* A compiled segment's run state in one session (ctx->state of its node). */
#ifndef NPU_COMPILER_SEGMENT_RT_H
#define NPU_COMPILER_SEGMENT_RT_H

#include "compiler/compiler.h"

/*
 * One session's state of one segment. Segments of a session share its
 * device arena, so at most one is in flight: submitting the next
 * completes the previous one first.
 */
struct npu_segment_rt {
	struct npu_segment *seg;
	struct npu_segment_group *group;
	/* While in flight (submitted, outputs not yet dequantized): */
	struct npu_job *job;
	struct npu_tensor **outputs;	/* seg->num_outputs: where wait() writes */
	double submit_ms;		/* host time the submit took */
	struct npu_device *dev;
	struct npu_buffer *consts;	/* the segment's constants on dev, or NULL */
	struct npu_buffer *arena;	/* shared by every segment of a model */
	void *arena_map;
	struct npu_buffer *cmd;		/* this session's stream */
	size_t stream_size;
	/* Accumulated over runs. */
	uint64_t runs, cycles, device_ns;
	struct npu_job_result last;
	/* Per-op profiling (npu_compile_options.profile_ops): */
	struct npu_buffer *profile;	/* TIMESTAMPs around each op */
	uint64_t *profile_map;
	uint64_t *lop_cycles;		/* per op, summed over the run's jobs */
	double last_wall_ms;		/* host time of the last job inside the op
					 * (not the CPU work it overlapped) */
	/*
	 * This run's totals: one job for a top-level segment, one per
	 * iteration for a Loop or Scan body's. Valid while epoch equals
	 * group->epoch (else the segment has not run in this run).
	 */
	uint64_t epoch, run_jobs, run_cycles;
	double run_wall_ms;
};

/* The modeled cycles of rt's jobs in the session's current run. */
static inline uint64_t npu_segment_rt_run_cycles(const struct npu_segment_rt *rt)
{
	return rt && rt->epoch == rt->group->epoch ? rt->run_cycles : 0;
}

/* Jobs (iterations) of rt in the current run, at least 1: per-run MACs scale by it. */
static inline uint64_t npu_segment_rt_run_jobs(const struct npu_segment_rt *rt)
{
	return rt && rt->epoch == rt->group->epoch && rt->run_jobs > 1 ? rt->run_jobs : 1;
}

static inline double npu_segment_rt_run_wall_ms(const struct npu_segment_rt *rt)
{
	return rt && rt->epoch == rt->group->epoch ? rt->run_wall_ms : 0;
}

#endif /* NPU_COMPILER_SEGMENT_RT_H */
