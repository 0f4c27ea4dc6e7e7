/* SPDX-License-Identifier: MIT */
/*
 * Pointwise groups: elementwise subgraphs y = F(x) that become one LUT.
 * Every NPU LUT is built here, by running the CPU's own code for F on the
 * 256 values of the input's int8 domain, so the NPU computes what the CPU
 * path would, quantized.
 */
#ifndef NPU_COMPILER_POINTWISE_H
#define NPU_COMPILER_POINTWISE_H

#include "compiler/quant.h"
#include "graph/npu_ir.h"

struct npu_pw_group {
	struct npu_node **nodes;	/* in topological order */
	size_t count;			/* >= 2 */
	struct npu_value *x;		/* the one activation read */
	struct npu_value *y;		/* the one value used outside */
};

struct npu_pw_groups {
	struct npu_pw_group *groups;
	size_t count;
};

/* Find disjoint groups in a sorted graph (calibrated values keep names). */
npu_status npu_find_pointwise_groups(const struct npu_graph *g,
				     struct npu_pw_groups *out,
				     struct npu_error *err);
void npu_pointwise_groups_free(struct npu_pw_groups *gs);
const struct npu_pw_group *npu_pointwise_group_of(const struct npu_pw_groups *gs,
						  const struct npu_node *n);

/* table[i] = quantize(F(dequantize(i - 128, in)), out), F run on the CPU ops. */
npu_status npu_pointwise_table(const struct npu_pw_group *grp,
			       struct npu_qparams in, struct npu_qparams out,
			       int8_t table[256], struct npu_error *err);

/* The same for an activation fused into 'n' (npu_activation* attributes). */
npu_status npu_fused_activation_table(const struct npu_node *n, struct npu_qparams in,
				      struct npu_qparams out, int8_t table[256],
				      struct npu_error *err);

/*
 * The 513 knots of F as an int16 LUT (NPU_INSN_I16): of the group, or
 * with grp NULL of the activation fused into 'fused'; 'in' and 'out' are
 * symmetric int16 parameters.
 */
npu_status npu_pointwise_table16(const struct npu_pw_group *grp, const struct npu_node *fused,
				 struct npu_qparams in, struct npu_qparams out,
				 int16_t table[513], struct npu_error *err);

/*
 * Narrow the input parameters of F to where F is not flat: a range method
 * sees only the data, but values below x0 of a HardSwish (or far out on a
 * Sigmoid's tails) all give the same output, so clamping them costs
 * nothing and the step over the rest gets finer. Flat means within a
 * quarter of an output step. The group's x must have no other reader.
 */
npu_status npu_pointwise_tighten_input(const struct npu_pw_group *grp,
				       struct npu_qparams *in, struct npu_qparams out,
				       struct npu_error *err);
/* The same for the activation fused into node 'n' (its pre-activation). */
npu_status npu_fused_activation_tighten_input(const struct npu_node *n,
					      struct npu_qparams *in, struct npu_qparams out,
					      struct npu_error *err);

#endif /* NPU_COMPILER_POINTWISE_H */
