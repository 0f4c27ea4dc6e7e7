/* SPDX-License-Identifier: MIT */
/* What op_rnn.c's schemas and kernels share (graph/schemas/rnn.c). */
#ifndef NPU_SCHEMA_RNN_H
#define NPU_SCHEMA_RNN_H

#include "graph/schemas/schema_common.h"

#define RNN_MAX_ACTS 6		/* 3 per direction */

enum npu_rnn_kind { CELL_RNN, CELL_GRU, CELL_LSTM };

enum npu_rnn_act { ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_SOFTSIGN, ACT_SOFTPLUS };

struct npu_rnn {
	enum npu_rnn_kind kind;
	int gates, n_acts, dirs;
	bool reverse_only, batch_first, lbr;
	float clip;
	int64_t hidden;
	enum npu_rnn_act act[RNN_MAX_ACTS];
};

npu_status npu_rnn_parse(const struct npu_node *node,
			 enum npu_rnn_kind kind, struct npu_rnn *r,
			 struct npu_error *err);

#endif /* NPU_SCHEMA_RNN_H */
