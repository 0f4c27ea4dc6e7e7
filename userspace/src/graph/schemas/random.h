/* SPDX-License-Identifier: MIT */
/* What op_random.c's schemas and kernels share (graph/schemas/random.c). */
#ifndef NPU_SCHEMA_RANDOM_H
#define NPU_SCHEMA_RANDOM_H

#include "graph/schemas/schema_common.h"

enum rand_kind { RAND_UNIFORM, RAND_NORMAL, RAND_BERNOULLI };

#endif /* NPU_SCHEMA_RANDOM_H */
