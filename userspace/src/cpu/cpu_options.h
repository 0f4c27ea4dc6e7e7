/* SPDX-License-Identifier: MIT */
/*
 * cpu_options.h - how a model's CPU part is built: the graph passes for
 * the CPU kernels and the convolution algorithm. Options of the compile,
 * not of the process: each model keeps its own (npu_model_options.cpu),
 * a compiled model (.npub) stores them, so one file plans the same CPU
 * code in every process.
 */
#ifndef NPU_CPU_OPTIONS_H
#define NPU_CPU_OPTIONS_H

#include <stdbool.h>

#include "common/npu_error.h"

/* A technique taken where its rule says, never, or wherever it can. */
enum npu_cpu_choice {
	NPU_CPU_AUTO = 0,	/* the default rule */
	NPU_CPU_OFF,		/* never */
	NPU_CPU_ON,		/* nchwc: on any ISA; winograd: every eligible conv */
};

/*
 * The zero value is the default: every pass, the blocked layout on
 * AVX-512 only, Winograd where it wins (Documentation/cpu-kernels.md).
 */
struct npu_cpu_options {
	bool no_fuse;			/* no CPU graph passes: the graph as imported */
	enum npu_cpu_choice nchwc;	/* the blocked (NCHWc) layout pass */
	enum npu_cpu_choice winograd;	/* Winograd F(4,3) for 3x3 convolutions */
};

/*
 * Set options from "key=value[,key=value...]": fuse = 0|1; nchwc = auto|0|1;
 * winograd = auto|0|all. Keys not given keep their value. An unknown key or
 * value fails naming it.
 */
npu_status npu_cpu_options_parse(struct npu_cpu_options *o, const char *spec,
				 struct npu_error *err);

static inline bool npu_cpu_options_default(const struct npu_cpu_options *o)
{
	return !o || (!o->no_fuse && o->nchwc == NPU_CPU_AUTO && o->winograd == NPU_CPU_AUTO);
}

#endif /* NPU_CPU_OPTIONS_H */
