/* SPDX-License-Identifier: MIT */
/*
 * names.c - printable names of the contract's enums, for messages.
 */
#include "npu_sim.h"

const char *npu_job_status_name(uint32_t status)
{
	static const char *const names[NPU_JOB_STATUS_COUNT] = {
		[NPU_JOB_OK] = "OK",
		[NPU_JOB_ERR_BAD_DESC] = "BAD_DESC",
		[NPU_JOB_ERR_BAD_CONTEXT] = "BAD_CONTEXT",
		[NPU_JOB_ERR_BAD_HEADER] = "BAD_HEADER",
		[NPU_JOB_ERR_TRUNCATED] = "TRUNCATED",
		[NPU_JOB_ERR_BAD_OPCODE] = "BAD_OPCODE",
		[NPU_JOB_ERR_BAD_ENCODING] = "BAD_ENCODING",
		[NPU_JOB_ERR_BAD_PARAM] = "BAD_PARAM",
		[NPU_JOB_ERR_SRAM_BOUNDS] = "SRAM_BOUNDS",
		[NPU_JOB_ERR_MMU_UNMAPPED] = "MMU_UNMAPPED",
		[NPU_JOB_ERR_MMU_PERM] = "MMU_PERM",
		[NPU_JOB_ERR_DMA] = "DMA",
		[NPU_JOB_ERR_WATCHDOG] = "WATCHDOG",
		[NPU_JOB_ERR_HAZARD] = "HAZARD",
		[NPU_JOB_ERR_ABORTED] = "ABORTED",
	};

	return status < NPU_JOB_STATUS_COUNT ? names[status] : "UNKNOWN";
}

const char *npu_boot_status_name(uint32_t status)
{
	static const char *const names[] = {
		[NPU_BOOT_OK] = "OK",
		[NPU_BOOT_BAD_MAGIC] = "BAD_MAGIC",
		[NPU_BOOT_BAD_VERSION] = "BAD_VERSION",
		[NPU_BOOT_BAD_SIZE] = "BAD_SIZE",
		[NPU_BOOT_BAD_CHECKSUM] = "BAD_CHECKSUM",
		[NPU_BOOT_BAD_CONFIG] = "BAD_CONFIG",
		[NPU_BOOT_DMA_ERROR] = "DMA_ERROR",
		[NPU_BOOT_NOT_OFF] = "NOT_OFF",
	};

	return status < sizeof(names) / sizeof(names[0]) ? names[status] :
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
	default:
		return NULL;
	}
}
