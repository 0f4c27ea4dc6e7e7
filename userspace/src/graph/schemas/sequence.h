/* SPDX-License-Identifier: MIT */
/* What op_sequence.c's schemas and kernels share (graph/schemas/sequence.c). */
#ifndef NPU_SCHEMA_SEQUENCE_H
#define NPU_SCHEMA_SEQUENCE_H

#include "graph/schemas/schema_common.h"

struct npu_graph *npu_seq_map_body(const struct npu_node *n);

#endif /* NPU_SCHEMA_SEQUENCE_H */
