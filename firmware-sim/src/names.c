/* SPDX-License-Identifier: MIT */
/*
 * names.c - printable names of the contract's enums, for messages.
 */
#include "npu_sim.h"

const char *npu_job_status_name(uint32_t status)
{
	static const char *const names[NPU_JOB_STATUS_COUNT] =
		NPU_JOB_STATUS_NAMES;

	return status < NPU_JOB_STATUS_COUNT && names[status] ? names[status] :
								 "UNKNOWN";
}

const char *npu_boot_status_name(uint32_t status)
{
	static const char *const names[NPU_BOOT_STATUS_COUNT] =
		NPU_BOOT_STATUS_NAMES;

	return status < NPU_BOOT_STATUS_COUNT && names[status] ? names[status] :
								  "UNKNOWN";
}

const char *npu_opcode_name(uint32_t opcode)
{
	switch (opcode) {
	case NPU_OP_NOP:
		return "NOP";
	case NPU_OP_DMA_COPY:
		return "DMA_COPY";
	case NPU_OP_DMA_FILL:
		return "DMA_FILL";
	case NPU_OP_CONV2D:
		return "CONV2D";
	case NPU_OP_MATMUL:
		return "MATMUL";
	case NPU_OP_POOL:
		return "POOL";
	case NPU_OP_ELTWISE:
		return "ELTWISE";
	case NPU_OP_LUT:
		return "LUT";
	case NPU_OP_TIMESTAMP:
		return "TIMESTAMP";
	case NPU_OP_BARRIER:
		return "BARRIER";
	case NPU_OP_RESIZE:
		return "RESIZE";
	case NPU_OP_SOFTMAX:
		return "SOFTMAX";
	case NPU_OP_LAYERNORM:
		return "LAYERNORM";
	case NPU_OP_REDUCE:
		return "REDUCE";
	default:
		return NULL;
	}
}
