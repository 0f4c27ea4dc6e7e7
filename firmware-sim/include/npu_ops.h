/* SPDX-License-Identifier: MIT */
/*
 * npu_ops.h - the compute engine of firmware-sim: CONV2D, MATMUL, POOL,
 * ELTWISE, LUT and RESIZE over on-chip SRAM. Its executor (exec.c) runs
 * them; the compiler's quantization report runs the reference kernels on
 * the host to reproduce the device's int8 arithmetic.
 *
 * Each op comes in three parts used by the executor (exec.c):
 *   npu_op_<op>_check()  - npu_op_<op>_validate() of npu_isa.h (the one
 *                          validator) with the device's SRAM and no
 *                          message: every field of a decoded instruction,
 *                          its SRAM footprint and modeled cycles; returns
 *                          NPU_JOB_OK or a status;
 *   npu_op_<op>()        - computes a checked instruction, fast path
 *                          (AVX-512 VNNI / AVX2 chosen at run time, or
 *                          portable); returns the MACs executed;
 *   npu_ref_<op>()       - the naive reference the fast path must equal
 *                          bit for bit (golden tests).
 */
#ifndef NPU_OPS_H
#define NPU_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "npu_hw.h"
#include "npu_isa.h"

uint32_t npu_op_conv2d_check(const struct npu_insn_conv2d *insn,
			     struct npu_op_footprint *fp);
uint32_t npu_op_matmul_check(const struct npu_insn_matmul *insn,
			     struct npu_op_footprint *fp);
uint32_t npu_op_pool_check(const struct npu_insn_pool *insn,
			   struct npu_op_footprint *fp);
uint32_t npu_op_eltwise_check(const struct npu_insn_eltwise *insn,
			      struct npu_op_footprint *fp);
uint32_t npu_op_lut_check(const struct npu_insn_lut *insn,
			  struct npu_op_footprint *fp);
uint32_t npu_op_resize_check(const struct npu_insn_resize *insn,
			     struct npu_op_footprint *fp);
/* ISA 1.3 row ops (npu_vec.c) */
uint32_t npu_op_softmax_check(const struct npu_insn_softmax *insn,
			      struct npu_op_footprint *fp);
uint32_t npu_op_layernorm_check(const struct npu_insn_layernorm *insn,
				struct npu_op_footprint *fp);
uint32_t npu_op_reduce_check(const struct npu_insn_reduce *insn,
			     struct npu_op_footprint *fp);

/* 'sram' is NPU_SRAM_SIZE bytes; the instruction must have passed check. */
void npu_op_conv2d(const struct npu_insn_conv2d *insn, uint8_t *sram);
void npu_op_matmul(const struct npu_insn_matmul *insn, uint8_t *sram);
void npu_op_pool(const struct npu_insn_pool *insn, uint8_t *sram);
void npu_op_eltwise(const struct npu_insn_eltwise *insn, uint8_t *sram);
void npu_op_lut(const struct npu_insn_lut *insn, uint8_t *sram);
void npu_op_resize(const struct npu_insn_resize *insn, uint8_t *sram);
void npu_op_softmax(const struct npu_insn_softmax *insn, uint8_t *sram);
void npu_op_layernorm(const struct npu_insn_layernorm *insn, uint8_t *sram);
void npu_op_reduce(const struct npu_insn_reduce *insn, uint8_t *sram);

/*
 * The executor's hooks into long op loops, per calling thread. While a
 * poll is set, npu_op_*() call poll->aborted(poll->ctx) between slices of
 * work (GEMM chunks, bands of output rows: about 2^22 MACs each, or
 * one output row or pixel when that is larger)
 * and, once it returns true, stop early and write no temporary result:
 * the job is being aborted (a reset), its outputs do not matter, and the
 * reset must not wait for the whole op. NULL clears it.
 */
struct npu_ops_poll {
	bool (*aborted)(void *ctx);
	void *ctx;
};
void npu_ops_set_poll(const struct npu_ops_poll *poll);
/*
 * Host threads for one instruction: npu_op_*() split the independent work
 * of a large CONV2D, MATMUL, ELTWISE, LUT, POOL or RESIZE (output pixel
 * chunks, row bands, element ranges) over the pool set on the calling
 * thread, which takes part. Every output element is computed by exactly
 * one thread from inputs no thread writes, so the result is the same
 * byte for byte for any thread count; small instructions are not split.
 * A pool of 'threads' (1..NPU_OPS_MAX_THREADS, 1 = no workers) starts
 * threads - 1 workers once; NULL when the count is outside that range or
 * a thread or memory cannot be had. One pool serves one caller at a time.
 * npu_ops_set_pool(NULL) (the default) runs everything on the caller.
 */
#define NPU_OPS_MAX_THREADS	64
struct npu_ops_pool;
struct npu_ops_pool *npu_ops_pool_create(unsigned int threads);
void npu_ops_pool_destroy(struct npu_ops_pool *pool);
unsigned int npu_ops_pool_threads(const struct npu_ops_pool *pool);
void npu_ops_set_pool(struct npu_ops_pool *pool);
/*
 * Decoded sparse weights (ISA 1.6) kept between instructions and jobs: a
 * cache the caller owns and lends to this thread's npu_op_*() calls
 * (npu_ops_set_cache(NULL): none lent), else this thread's own, which
 * npu_ops_release_caches() frees. Entries are keyed by the packed bytes
 * themselves (compared on every use), so SRAM changes are always seen.
 */
struct npu_ops_cache;
struct npu_ops_cache *npu_ops_cache_create(void);
void npu_ops_cache_destroy(struct npu_ops_cache *cache);
void npu_ops_set_cache(struct npu_ops_cache *cache);
void npu_ops_release_caches(void);
/*
 * Tests: split every instruction of at least this much work (MACs, or
 * element operations) into items, instead of the default 2^22; 0 splits
 * whatever has two units of work (rows, pixels, element ranges).
 * Returns the previous value. Not thread-safe against running ops.
 */
uint64_t npu_ops_set_split_min(uint64_t work);

/*
 * Multiply-accumulates npu_op_conv2d() / npu_op_matmul() have performed on
 * this thread so far: the work done, which tests hold to the MACs the
 * cycle model charges (npu_op_footprint.macs; issue 29 D-b).
 */
uint64_t npu_ops_host_macs(void);

void npu_ref_conv2d(const struct npu_insn_conv2d *insn, uint8_t *sram);
void npu_ref_matmul(const struct npu_insn_matmul *insn, uint8_t *sram);
void npu_ref_pool(const struct npu_insn_pool *insn, uint8_t *sram);
void npu_ref_eltwise(const struct npu_insn_eltwise *insn, uint8_t *sram);
void npu_ref_lut(const struct npu_insn_lut *insn, uint8_t *sram);
void npu_ref_resize(const struct npu_insn_resize *insn, uint8_t *sram);
void npu_ref_softmax(const struct npu_insn_softmax *insn, uint8_t *sram);
void npu_ref_layernorm(const struct npu_insn_layernorm *insn, uint8_t *sram);
void npu_ref_reduce(const struct npu_insn_reduce *insn, uint8_t *sram);

/*
 * The per-output-channel shifts of CONV2D / MATMUL are data in SRAM, so
 * npu_op_*_check() cannot see them: the executor calls these when the
 * instruction runs (after earlier writes to 'quant' have landed) and fails
 * the job with the status returned (NPU_JOB_ERR_BAD_PARAM for a shift
 * outside 1..62). npu_op_*() and npu_ref_*() write nothing for such an
 * instruction, so skipping this call can never corrupt memory.
 */
uint32_t npu_op_conv2d_check_sram(const struct npu_insn_conv2d *insn,
				  const uint8_t *sram);
uint32_t npu_op_matmul_check_sram(const struct npu_insn_matmul *insn,
				  const uint8_t *sram);

/*
 * Which implementation npu_op_*() use: "avx512vnni", "avx2" or "portable".
 * NPU_SIM_ISA=portable|avx2|avx512vnni in the environment caps the choice
 * (read once), so tests can cover every path on one machine.
 */
const char *npu_ops_impl_name(void);

/*
 * Tests and benchmarks: switch to the named implementation. Returns 0, or
 * -1 when the host CPU cannot run it (the current one is kept). Not
 * thread-safe against concurrent npu_op_*() calls.
 */
int npu_ops_set_impl(const char *name);

#endif /* NPU_OPS_H */
