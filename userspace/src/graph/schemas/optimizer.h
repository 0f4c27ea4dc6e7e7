/* SPDX-License-Identifier: MIT */
/* What op_optimizer.c's schemas and kernels share (graph/schemas/optimizer.c). */
#ifndef NPU_SCHEMA_OPTIMIZER_H
#define NPU_SCHEMA_OPTIMIZER_H

#include "graph/schemas/schema_common.h"

enum npu_opt_kind { OPT_ADAGRAD, OPT_MOMENTUM, OPT_ADAM };

#endif /* NPU_SCHEMA_OPTIMIZER_H */
