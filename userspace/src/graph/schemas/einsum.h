/* SPDX-License-Identifier: MIT */
/* What op_einsum.c's schemas and kernels share (graph/schemas/einsum.c). */
#ifndef NPU_SCHEMA_EINSUM_H
#define NPU_SCHEMA_EINSUM_H

#include "graph/schemas/schema_common.h"

#define EIN_MAX_IN 8
#define EIN_MAX_LABELS 52		/* letters; ellipsis dims follow */
#define EIN_LABELS (EIN_MAX_LABELS + NPU_MAX_RANK)

struct npu_einsum {
	int n_in;
	int rank[EIN_MAX_IN];
	int label[EIN_MAX_IN][NPU_MAX_RANK];	/* label of each input dim */
	int out_rank;
	int out_label[NPU_MAX_RANK];
	int ell_rank;				/* dims the ellipsis covers */
	int64_t size[EIN_LABELS];		/* -1: unknown */
	bool used[EIN_LABELS];
};

/* Parses the equation against the inputs' shapes. */
npu_status npu_ein_parse(const struct npu_node *node,
			 const struct npu_shape *const *shapes, int n_in,
			 struct npu_einsum *e, struct npu_error *err);

#endif /* NPU_SCHEMA_EINSUM_H */
