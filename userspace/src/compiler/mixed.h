/* SPDX-License-Identifier: MIT */
/*
 * mixed.h - mixed precision: compile a graph so that its outputs reach
 * a cosine against fp32 on held-out calibration samples (internal; the
 * public form is npu_model_options.accuracy_target).
 *
 * The calibration samples split in two: the last quarter (at most
 * NPU_MIXED_MAX_HOLDOUT) is held out, the rest calibrates. The graph is
 * compiled with every NPU-capable node in int8 and its outputs compared
 * with fp32 on the held-out samples; below the target, the per-layer
 * analysis (npu_quant_sensitivity() in quant_report.h, on calibration
 * samples) ranks the NPU nodes by what the error each adds alone does to
 * the outputs, and the search promotes the k worst to int16 (the 16x8
 * mode; those without an int16 form stay int8) for the smallest k
 * (doubling, then bisection) that reaches the target; when all of them in
 * int16 do not, it keeps the k worst in fp32 on the CPU the same way
 * and then bisects how many candidates (the first k16) still need int16
 * beside those k (at most log2(candidates) + 1 more trials).
 * A candidate whose NPU op took a pointwise group as its output stage
 * takes that group along. (Ranking by local SQNR alone needed 101 of
 * det's nodes for 0.99 where this needs 21: Documentation/compiler.md.)
 */
#ifndef NPU_COMPILER_MIXED_H
#define NPU_COMPILER_MIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/compiler.h"

#define NPU_MIXED_MAX_HOLDOUT 16
#define NPU_MIXED_RANK_SAMPLES 2	/* calibration samples the ranking runs */

/* What the search did, for npu_plan_mixed_precision(). */
struct npu_mixed_result {
	double target;
	size_t calib_samples, holdout_samples;
	/* Hold-out cosine, the lowest over the float outputs: with only the
	 * caller's keep_fp32 nodes on the CPU, and the result. */
	double cosine_int8, cosine;
	bool reached;
	size_t compilations;		/* trials, the final one not counted */
	/* The nodes the search kept in fp32, most sensitive first. */
	char **kept;
	double *kept_sqnr_db;		/* output SQNR with only it in int8 */
	size_t num_kept;
	/* The best hold-out cosine with candidates in int16 only (0: not
	 * tried), and the nodes in int16 (16x8 mode) in the result. */
	double cosine_int16;
	char **int16;
	size_t num_int16;
	/* Costs: before (int8) and after, per run. */
	size_t segments_int8, segments;
	uint64_t cycles_int8, cycles;	/* modeled NPU cycles, hold-out mean */
	uint64_t cpu_macs_int8, cpu_macs;
	uint32_t clock_mhz;
};

/*
 * Compile 'graph' (inferred, not yet compiled) for opts->device so that
 * its hold-out cosine reaches 'target' in (0, 1]; the caller's
 * opts->keep_fp32 stay on the CPU in every trial. *res says what was
 * done (free it with npu_mixed_result_free). When the target cannot be
 * reached the best trial is compiled and res->reached is false.
 */
npu_status npu_mixed_compile(struct npu_graph *graph, const struct npu_compile_options *opts,
			     double target, struct npu_compiled **out,
			     struct npu_mixed_result *res, struct npu_error *err);
void npu_mixed_result_free(struct npu_mixed_result *res);

#endif /* NPU_COMPILER_MIXED_H */
