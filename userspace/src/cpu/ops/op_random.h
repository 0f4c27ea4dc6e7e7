/* SPDX-License-Identifier: MIT */
/*
 * op_random.h - random draws of the CPU ops (internal to cpu/ops).
 *
 * The generator is MT19937 seeded as numpy's legacy RandomState.seed(n),
 * and doubles in [0, 1) are drawn as its random_sample: so a node with a
 * seed gives the numbers the ONNX reference implementation (numpy) gives.
 */
#ifndef NPU_CPU_OP_RANDOM_H
#define NPU_CPU_OP_RANDOM_H

#include <stdint.h>

#include "cpu/ops/cpu_ops.h"

struct npu_mt19937 {
	uint32_t state[624];
	int pos;
};

void npu_mt19937_seed(struct npu_mt19937 *mt, uint32_t seed);
/* A seed for a node that has none (ONNX: "auto generated"): varies per call. */
uint32_t npu_random_seed(void);
uint32_t npu_mt19937_next(struct npu_mt19937 *mt);
/* Uniform in [0, 1) with 53 random bits (numpy's random_sample). */
double npu_mt19937_double(struct npu_mt19937 *mt);

/*
 * Dropout with training_mode = true and ratio r in (0, 1): y = x / (1 - r)
 * where a uniform draw is >= r, else 0; the optional mask output says
 * which were kept. Draws one number per element in C order from the
 * node's 'seed' attribute (else npu_random_seed()). float and double.
 */
npu_status npu_op_dropout_train(struct npu_op_ctx *ctx, double r);

#endif /* NPU_CPU_OP_RANDOM_H */
