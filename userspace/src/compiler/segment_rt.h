/* SPDX-License-Identifier: MIT */
/* A compiled segment bound to a device: what NpuSegment nodes point to. */
#ifndef NPU_COMPILER_SEGMENT_RT_H
#define NPU_COMPILER_SEGMENT_RT_H

#include "compiler/compiler.h"

struct npu_segment_rt {
	struct npu_segment *seg;
	struct npu_device *dev;
	struct npu_buffer *arena;	/* shared by every segment of a model */
	void *arena_map;
	struct npu_buffer *consts;	/* NULL when the segment has none */
	struct npu_buffer *cmd;
	/* Accumulated over runs. */
	uint64_t runs, cycles, device_ns;
	struct npu_job_result last;
	double last_wall_ms;		/* host time of the last run, in the op */
};

#endif /* NPU_COMPILER_SEGMENT_RT_H */
