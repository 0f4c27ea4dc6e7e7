/* SPDX-License-Identifier: MIT */
/*
 * npu_isa.h - the one validator of the command-stream ISA (npu_hw.h).
 *
 * firmware-sim's executor and the host-side builder (userspace's
 * npu_cmdbuf, npu_cs_validate) both call these functions, so a stream the
 * host accepts is exactly a stream the device's static checks accept.
 * A check returns NPU_JOB_OK or the enum npu_job_status the device
 * reports; with a struct npu_isa_check it also names the failing field and
 * says why, for host error messages. What needs device state is left to
 * the device: MMU translations (through the optional va_check hook),
 * hazards, and shift values stored in SRAM (npu_op_*_check_sram()).
 *
 * The order of the checks is part of the contract (Documentation/isa.md,
 * hardware.md "Command-stream execution"): header (BAD_OPCODE,
 * BAD_ENCODING, TRUNCATED), then per instruction encoding (BAD_ENCODING),
 * parameters (BAD_PARAM), operand bounds (SRAM_BOUNDS / the VA hook).
 */
#ifndef NPU_ISA_H
#define NPU_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "npu_hw.h"

/* A half-open SRAM byte range [begin, end). */
struct npu_sram_range {
	uint32_t begin;
	uint32_t end;
};

#define NPU_OP_MAX_READS	5	/* CONV2D: input, weight, quant, bias, lut */
#define NPU_OP_MAX_WRITES	1

/* What a checked instruction touches in SRAM and costs. */
struct npu_op_footprint {
	struct npu_sram_range reads[NPU_OP_MAX_READS];
	unsigned int num_reads;
	struct npu_sram_range writes[NPU_OP_MAX_WRITES];
	unsigned int num_writes;
	uint64_t cycles;	/* op cycles, without NPU_CYCLES_INSN_OVERHEAD */
	uint64_t macs;		/* MACs the op will execute (0 for non-MAC ops) */
};

/*
 * Context of one check. Zero-initialize it; every input left 0 takes the
 * device's value. On failure 'field' names the offending field ("out_h",
 * "input", "reserved1", "header.size"...) and 'reason' is a one-line
 * message that starts with it, e.g. "out_h is 7, expected 8 from ...".
 */
struct npu_isa_check {
	uint32_t sram_size;	/* in: operands must lie in [0, sram_size) */
	uint32_t op_mask;	/* in: opcodes enabled (NPU_OP_BIT) */
	/*
	 * in: the VA side of a DMA or TIMESTAMP, [va, va + len) with
	 * NPU_ACCESS_*; returns a status. NULL: only the VA-space limit
	 * (NPU_VA_BITS) is checked, as MMU_UNMAPPED.
	 */
	uint32_t (*va_check)(void *ctx, uint64_t va, uint64_t len,
			     uint32_t access);
	void *va_ctx;
	const char *field;	/* out */
	char reason[192];	/* out */
};

/* Size of an opcode's instruction struct, 0 for an unknown opcode. */
uint16_t npu_insn_size(uint8_t opcode);
/* Lower-case name of an opcode ("conv2d"), "unknown" if none. */
const char *npu_insn_name(uint8_t opcode);
/* The engine an opcode runs on: 1 = DMA, 0 = compute. */
int npu_insn_is_dma(uint8_t opcode);
/* Whether an opcode accepts NPU_INSN_I16 (ISA 1.2). */
int npu_insn_i16_ok(uint8_t opcode);

/*
 * The instruction header at the start of 'avail' stream bytes: TRUNCATED
 * (fewer than 8 bytes, or fewer than its size), BAD_OPCODE (unknown or
 * masked off), BAD_ENCODING (size field, header reserved, header flags,
 * NPU_INSN_I16 on an opcode without an int16 mode).
 */
uint32_t npu_insn_check_header(const void *bytes, size_t avail,
			       struct npu_isa_check *c);

/*
 * One whole instruction (header already passed npu_insn_check_header;
 * 'insn' may be unaligned). Fills 'fp' (may be NULL) with its SRAM
 * footprint, op cycles and MACs. 'c' may be NULL: device defaults, no
 * message.
 */
uint32_t npu_insn_check(const void *insn, struct npu_isa_check *c,
			struct npu_op_footprint *fp);

/*
 * The MAC array in mode 'mode' (NPU_CONV_ARRAY(), ISA 1.5): 'parts'
 * sub-arrays of rows x cols. With 'i16' (NPU_INSN_I16) an int16 x int8
 * product takes two cells, so rows halves. Returns 0, or -1 for a mode
 * that does not exist (the outputs are then mode 0's).
 */
struct npu_array_shape {
	uint32_t rows, cols, parts;
};

int npu_array_shape(uint32_t mode, int i16, struct npu_array_shape *shape);

/*
 * Cycles of a CONV2D (npu_hw.h's cycle model): 'pixels' = out_h * out_w,
 * 'taps' as the executor counts them (zero insertion skipped), depthwise
 * when groups == in_c == out_c. And of a MATMUL of m x k by k x n.
 * npu_conv2d_fastest_mode() / npu_matmul_fastest_mode(): the mode with the
 * fewest cycles, the lowest on a tie; the compiler's choice.
 */
uint64_t npu_conv2d_cycles(uint64_t pixels, uint64_t taps, uint32_t groups,
			   uint32_t in_c, uint32_t out_c, int i16, uint32_t mode);
uint32_t npu_conv2d_fastest_mode(uint64_t pixels, uint64_t taps,
				 uint32_t groups, uint32_t in_c,
				 uint32_t out_c, int i16);
uint64_t npu_matmul_cycles(uint64_t m, uint64_t k, uint64_t n, int i16,
			   uint32_t mode);
uint32_t npu_matmul_fastest_mode(uint64_t m, uint64_t k, uint64_t n, int i16);

/*
 * Adds delta to every SRAM offset the instruction at 'insn' names (the
 * SRAM side of a DMA; the operands of a compute op, a bias only without
 * NPU_CONV_NO_BIAS, the output table only with NPU_CONV_OUT_LUT), so that
 * the same work runs on SRAM shifted by delta: its footprint moves by
 * delta and nothing else changes. The caller keeps the result in SRAM.
 */
void npu_insn_shift_sram(void *insn, int64_t delta);

/* Per-op checks, as npu_insn_check() runs them; 'c' may be NULL. */
uint32_t npu_op_conv2d_validate(const struct npu_insn_conv2d *insn,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c);
uint32_t npu_op_matmul_validate(const struct npu_insn_matmul *insn,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c);
uint32_t npu_op_pool_validate(const struct npu_insn_pool *insn,
			      struct npu_op_footprint *fp,
			      struct npu_isa_check *c);
uint32_t npu_op_eltwise_validate(const struct npu_insn_eltwise *insn,
				 struct npu_op_footprint *fp,
				 struct npu_isa_check *c);
uint32_t npu_op_lut_validate(const struct npu_insn_lut *insn,
			     struct npu_op_footprint *fp,
			     struct npu_isa_check *c);
uint32_t npu_op_resize_validate(const struct npu_insn_resize *insn,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c);
uint32_t npu_op_softmax_validate(const struct npu_insn_softmax *insn,
				 struct npu_op_footprint *fp,
				 struct npu_isa_check *c);
uint32_t npu_op_layernorm_validate(const struct npu_insn_layernorm *insn,
				   struct npu_op_footprint *fp,
				   struct npu_isa_check *c);
uint32_t npu_op_reduce_validate(const struct npu_insn_reduce *insn,
				struct npu_op_footprint *fp,
				struct npu_isa_check *c);

/*
 * N:M sparse weights (ISA 1.6, NPU_CONV_SPARSE()). A weight matrix of
 * 'rows' rows of k int8 (CONV2D: out_c * k_h * k_w rows of cin_g; MATMUL:
 * n rows of k), m dividing k, is stored as rows * k / m groups of n values
 * followed by their positions, npu_sparse_bits(m) bits each, LSB first.
 * npu_sparse_bytes(): that size. npu_sparse_check_data(): the positions
 * increase within each group and are < m (BAD_PARAM naming the group
 * otherwise). npu_sparse_expand(): the dense rows, 'fill' (zp_w) where no
 * weight is kept. npu_sparse_pack(): the inverse, for a dense matrix whose
 * every group has at most n values other than 'fill' (returns -1 if one
 * has more); 'out' holds npu_sparse_bytes(). npu_sparse_live_tiles(): the
 * tiles of arows kept weights x acols output channels, per group and tap,
 * whose kept values are not all 'fill': what the cycle model charges.
 * A pair that is not N:M (2 <= m <= 8, 1 <= n < m) gets 0 bytes, -1 from
 * pack and BAD_PARAM from the check, never a division by zero.
 */
uint32_t npu_sparse_bits(uint32_t m);
uint64_t npu_sparse_bytes(uint64_t rows, uint64_t k, uint32_t n, uint32_t m);
uint32_t npu_sparse_check_data(const uint8_t *w, uint64_t rows, uint64_t k,
			       uint32_t n, uint32_t m, struct npu_isa_check *c);
void npu_sparse_expand(const uint8_t *w, uint64_t rows, uint64_t k, uint32_t n,
		       uint32_t m, int8_t fill, int8_t *dense);
int npu_sparse_pack(const int8_t *dense, uint64_t rows, uint64_t k, uint32_t n,
		    uint32_t m, int8_t fill, uint8_t *out);
uint64_t npu_sparse_live_tiles(const uint8_t *w, uint32_t groups,
			       uint32_t cout_g, uint64_t taps, uint64_t kept,
			       int8_t fill, uint32_t arows, uint32_t acols);
/*
 * Data-dependent cycles of a checked sparse CONV2D / MATMUL (zero tiles
 * skipped); the static check reports every tile. Dense: the static ones.
 */
uint64_t npu_op_conv2d_cycles_sram(const struct npu_insn_conv2d *insn,
				   const uint8_t *sram);
uint64_t npu_op_matmul_cycles_sram(const struct npu_insn_matmul *insn,
				   const uint8_t *sram);

/*
 * The DMA weight codec (ISA 1.6, NPU_DMA_CODEC_BLOCK; npu_hw.h has the
 * format). npu_wcodec_max_bytes(): the longest valid stream of 'len'
 * bytes. npu_wcodec_encode(): the shortest stream of src (dst holds
 * npu_wcodec_max_bytes(len)); returns its length. npu_wcodec_decode():
 * exactly dst_len bytes from exactly src_len stream bytes, else BAD_PARAM
 * naming the block and why ('dst' may then hold a partial result; NULL:
 * check the stream only, writing nothing).
 */
uint64_t npu_wcodec_max_bytes(uint32_t len);
uint32_t npu_wcodec_encode(const uint8_t *src, uint32_t len, uint8_t *dst);
uint32_t npu_wcodec_decode(const uint8_t *src, uint32_t src_len, uint8_t *dst,
			   uint32_t dst_len, struct npu_isa_check *c);

#endif /* NPU_ISA_H */
