/* SPDX-License-Identifier: MIT */
/*
 * exec.c - running one job: descriptor checks, command-stream fetch through
 * the MMU, the instruction decoder/validator, DMA and TIMESTAMP execution,
 * the two-engine timing model with hazard detection, and the watchdog.
 * Compute instructions are checked and run by ops/ (npu_ops.h).
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "firmware-sim decodes little-endian structures in place"
#endif

/*
 * Check the abort flag inside long DMA loops after about this many bytes
 * (a row counts its bytes plus 64, so tiny rows are polled too). VA rows
 * are also polled page by page by the MMU; SRAM rows are not, and 1024
 * rows of 2 MiB each would be 2 GiB of memmove between polls.
 */
#define NPU_ABORT_POLL_BYTES	(1u << 22)

static bool npu_dma_poll_due(uint64_t *since, uint32_t row_bytes)
{
	*since += (uint64_t)row_bytes + 64;
	if (*since < NPU_ABORT_POLL_BYTES)
		return false;
	*since = 0;
	return true;
}

union npu_insn_any {
	struct npu_insn_header hdr;
	struct npu_insn_dma_copy dma_copy;
	struct npu_insn_dma_fill dma_fill;
	struct npu_insn_conv2d conv2d;
	struct npu_insn_matmul matmul;
	struct npu_insn_pool pool;
	struct npu_insn_eltwise eltwise;
	struct npu_insn_lut lut;
	struct npu_insn_resize resize;
	struct npu_insn_softmax softmax;
	struct npu_insn_layernorm layernorm;
	struct npu_insn_reduce reduce;
	struct npu_insn_timestamp timestamp;
	struct npu_insn_barrier barrier;
};

/* What the decoder learned about one instruction before running it. */
struct npu_insn_plan {
	enum npu_engine_id engine;
	bool sync;
	uint64_t op_cycles;	/* without NPU_CYCLES_INSN_OVERHEAD */
	struct npu_op_footprint fp;
};

static bool npu_aborted(struct npu_sim *sim, const struct npu_sim_run *run)
{
	return atomic_load_explicit(&sim->epoch, memory_order_relaxed) != run->epoch;
}

/* The ops' poll (npu_ops.h): a reset stops a long op, not only the stream. */
static bool npu_exec_poll_aborted(void *ctx)
{
	struct npu_sim *sim = ctx;

	return npu_aborted(sim, &sim->run);
}

static uint64_t npu_add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t npu_cycles_to_ns(uint64_t cycles)
{
	return cycles / NPU_CLOCK_MHZ * 1000 +
	       cycles % NPU_CLOCK_MHZ * 1000 / NPU_CLOCK_MHZ;
}

/* ---- Command-stream fetch ---------------------------------------------- */

/*
 * Make stream bytes [offset, offset + len) available. The stream is read
 * in chunks of up to NPU_STREAM_CHUNK bytes; a fault beyond the requested
 * bytes only shortens the chunk, so it is reported for the instruction
 * that actually lies on the faulting page.
 */
static uint32_t npu_stream_fetch(struct npu_sim *sim, struct npu_sim_run *run,
				 uint32_t offset, uint32_t len,
				 const uint8_t **bytes)
{
	uint32_t want;

	if (offset >= run->chunk_offset &&
	    offset - run->chunk_offset <= run->chunk_len &&
	    len <= run->chunk_len - (offset - run->chunk_offset)) {
		*bytes = run->chunk + (offset - run->chunk_offset);
		return NPU_JOB_OK;
	}
	want = run->cmd_size - offset;
	if (want > NPU_STREAM_CHUNK)
		want = NPU_STREAM_CHUNK;
	run->chunk_offset = offset;
	run->chunk_len = 0;
	run->chunk_fault = NPU_JOB_OK;
	while (run->chunk_len < want) {
		uint64_t va = run->cmd_va + offset + run->chunk_len;
		uint32_t in_page = NPU_PAGE_SIZE - (va & (NPU_PAGE_SIZE - 1));
		uint32_t n = want - run->chunk_len;
		uint32_t status;

		if (n > in_page)
			n = in_page;
		status = npu_mmu_read(sim, run, va, run->chunk + run->chunk_len, n);
		if (status != NPU_JOB_OK) {
			if (run->chunk_len >= len) {
				run->chunk_fault = status;
				break;
			}
			return status;
		}
		run->chunk_len += n;
	}
	*bytes = run->chunk;
	return NPU_JOB_OK;
}

/*
 * Fetch the instruction at 'offset' into 'insn' and check its header: the
 * header is read once, from the same bytes as the rest of the instruction,
 * and everything past its size is zero, so what runs is exactly what was
 * checked (issue 29 D-a). The chunk is a private copy: guest writes after
 * the read cannot change it. When the instruction crosses the chunk's end
 * it is re-read as a whole from 'offset', and the new bytes, which a
 * guest (or an earlier DMA of the same stream) may have changed, are
 * checked again from the header on.
 */
static uint32_t npu_fetch_insn(struct npu_sim *sim, struct npu_sim_run *run,
			       uint32_t offset, union npu_insn_any *insn,
			       uint16_t *size)
{
	struct npu_isa_check hdr_check = { .op_mask = run->op_mask };
	uint32_t remaining = run->cmd_size - offset;
	uint32_t want = sizeof(struct npu_insn_header);
	const uint8_t *bytes;
	uint32_t status, avail;
	struct npu_insn_header hdr;

	for (;;) {
		status = npu_stream_fetch(sim, run, offset, want, &bytes);
		if (status != NPU_JOB_OK)
			return status;
		/* The header rules are the validator's (npu_isa.h), in its order. */
		status = npu_insn_check_header(bytes, remaining, &hdr_check);
		if (status != NPU_JOB_OK)
			return status;
		memcpy(&hdr, bytes, sizeof(hdr));
		avail = run->chunk_len - (offset - run->chunk_offset);
		if (hdr.size <= avail)
			break;
		/* Re-read and now a larger opcode, ending on a page that faulted. */
		if (want > sizeof(hdr))
			return run->chunk_fault != NPU_JOB_OK ? run->chunk_fault :
								NPU_JOB_ERR_DMA;
		want = hdr.size;
	}
	memset(insn, 0, sizeof(*insn));
	memcpy(insn, bytes, hdr.size);
	*size = hdr.size;
	return NPU_JOB_OK;
}

/* ---- Timing model and hazards ------------------------------------------ */

static bool npu_ranges_overlap(struct npu_sram_range a, struct npu_sram_range b)
{
	return a.begin < a.end && b.begin < b.end &&
	       a.begin < b.end && b.begin < a.end;
}

/* Does 'next' touch SRAM that 'prev' (still in flight) writes or reads? */
static bool npu_footprints_conflict(const struct npu_op_footprint *next,
				    const struct npu_op_footprint *prev)
{
	for (unsigned int w = 0; w < prev->num_writes; w++) {
		for (unsigned int r = 0; r < next->num_reads; r++)
			if (npu_ranges_overlap(next->reads[r], prev->writes[w]))
				return true;
		for (unsigned int n = 0; n < next->num_writes; n++)
			if (npu_ranges_overlap(next->writes[n], prev->writes[w]))
				return true;
	}
	for (unsigned int r = 0; r < prev->num_reads; r++)
		for (unsigned int n = 0; n < next->num_writes; n++)
			if (npu_ranges_overlap(next->writes[n], prev->reads[r]))
				return true;
	return false;
}

static struct npu_inflight *npu_window_at(struct npu_engine *engine,
					  unsigned int i)
{
	return &engine->window[(engine->first + i) % NPU_HAZARD_WINDOW];
}

/*
 * Check an instruction starting at 'start' against the other engine's
 * in-flight window. Entries that end by 'start' can never overlap a later
 * instruction of this engine either (it starts later still): drop them.
 */
static bool npu_hazard(struct npu_engine *other, uint64_t start,
		       const struct npu_op_footprint *fp)
{
	while (other->count && npu_window_at(other, 0)->end <= start) {
		other->first = (other->first + 1) % NPU_HAZARD_WINDOW;
		other->count--;
	}
	for (unsigned int i = 0; i < other->count; i++)
		if (npu_footprints_conflict(fp, &npu_window_at(other, i)->fp))
			return true;
	return false;
}

/*
 * Record an instruction in its engine's window. When the window is full
 * the oldest entry is dropped and the other engine's next instruction is
 * stalled until that entry has finished, so dropping it cannot hide a
 * hazard (documented in hardware.md).
 */
static void npu_window_push(struct npu_engine *engine, struct npu_engine *other,
			    uint64_t end, const struct npu_op_footprint *fp)
{
	if (!fp->num_reads && !fp->num_writes)
		return;
	if (engine->count == NPU_HAZARD_WINDOW) {
		struct npu_inflight *oldest = npu_window_at(engine, 0);

		if (other->free_at < oldest->end)
			other->free_at = oldest->end;
		engine->first = (engine->first + 1) % NPU_HAZARD_WINDOW;
		engine->count--;
	}
	*npu_window_at(engine, engine->count) = (struct npu_inflight){
		.end = end,
		.fp = *fp,
	};
	engine->count++;
}

static uint64_t npu_job_cycles(const struct npu_sim_run *run)
{
	uint64_t dma = run->engines[NPU_ENGINE_DMA].free_at;
	uint64_t compute = run->engines[NPU_ENGINE_COMPUTE].free_at;

	return dma > compute ? dma : compute;
}

/* ---- DMA --------------------------------------------------------------- */

/* Copy one row of a checked DMA_COPY. */
static uint32_t npu_dma_copy_row(struct npu_sim *sim, struct npu_sim_run *run,
				 const struct npu_insn_dma_copy *insn,
				 uint64_t src, uint64_t dst)
{
	uint8_t bounce[1024];
	uint64_t done = 0;
	uint32_t status = NPU_JOB_OK;

	if (insn->src_space == NPU_SPACE_SRAM && insn->dst_space == NPU_SPACE_SRAM) {
		memmove(sim->sram + dst, sim->sram + src, insn->row_bytes);
		return NPU_JOB_OK;
	}
	if (insn->src_space == NPU_SPACE_VA && insn->dst_space == NPU_SPACE_SRAM)
		return npu_mmu_read(sim, run, src, sim->sram + dst, insn->row_bytes);
	if (insn->src_space == NPU_SPACE_SRAM)
		return npu_mmu_write(sim, run, dst, sim->sram + src, insn->row_bytes);
	while (status == NPU_JOB_OK && done < insn->row_bytes) {
		uint64_t n = insn->row_bytes - done;

		if (n > sizeof(bounce))
			n = sizeof(bounce);
		status = npu_mmu_read(sim, run, src + done, bounce, n);
		if (status == NPU_JOB_OK)
			status = npu_mmu_write(sim, run, dst + done, bounce, n);
		done += n;
	}
	return status;
}

/*
 * DMA_COPY with the weight codec (ISA 1.6): read the compressed stream,
 * decode it whole, then write SRAM, so a malformed stream (BAD_PARAM)
 * writes nothing. DRAM moved the compressed bytes only.
 */
static uint32_t npu_run_dma_decode(struct npu_sim *sim, struct npu_sim_run *run,
				   const struct npu_insn_dma_copy *insn)
{
	/* stream and output in buffers the simulator keeps (bounded by the check) */
	uint64_t need = (uint64_t)insn->src_bytes + insn->row_bytes;
	uint32_t status;

	if (need > sim->codec_cap) {
		uint8_t *p = realloc(sim->codec_buf, need);

		if (!p)
			return NPU_JOB_ERR_DMA;
		sim->codec_buf = p;
		sim->codec_cap = need;
	}
	status = npu_mmu_read(sim, run, insn->src, sim->codec_buf, insn->src_bytes);
	/* decoded aside whole, so a malformed stream writes nothing to SRAM */
	if (status == NPU_JOB_OK)
		status = npu_wcodec_decode(sim->codec_buf, insn->src_bytes,
					   sim->codec_buf + insn->src_bytes, insn->row_bytes, NULL);
	if (status == NPU_JOB_OK) {
		memcpy(sim->sram + insn->dst, sim->codec_buf + insn->src_bytes, insn->row_bytes);
		run->dma_bytes += insn->src_bytes;
	}
	return status;
}

static uint32_t npu_run_dma_copy(struct npu_sim *sim, struct npu_sim_run *run,
				 const struct npu_insn_dma_copy *insn)
{
	uint64_t since_poll = 0;

	if (insn->codec)
		return npu_run_dma_decode(sim, run, insn);

	for (uint32_t r = 0; r < insn->rows; r++) {
		uint32_t status;

		if (npu_dma_poll_due(&since_poll, insn->row_bytes) &&
		    npu_aborted(sim, run))
			return NPU_JOB_ERR_ABORTED;
		status = npu_dma_copy_row(sim, run, insn,
					  insn->src + r * insn->src_stride,
					  insn->dst + r * insn->dst_stride);
		if (status != NPU_JOB_OK)
			return status;
	}
	run->dma_bytes += (uint64_t)insn->rows * insn->row_bytes;
	return NPU_JOB_OK;
}

static uint32_t npu_run_dma_fill(struct npu_sim *sim, struct npu_sim_run *run,
				 const struct npu_insn_dma_fill *insn)
{
	uint8_t pattern[1024];
	uint64_t since_poll = 0;

	memset(pattern, insn->value, sizeof(pattern));
	for (uint32_t r = 0; r < insn->rows; r++) {
		uint64_t dst = insn->dst + r * insn->dst_stride;

		if (npu_dma_poll_due(&since_poll, insn->row_bytes) &&
		    npu_aborted(sim, run))
			return NPU_JOB_ERR_ABORTED;
		if (insn->dst_space == NPU_SPACE_SRAM) {
			memset(sim->sram + dst, insn->value, insn->row_bytes);
			continue;
		}
		for (uint64_t done = 0; done < insn->row_bytes;) {
			uint64_t n = insn->row_bytes - done;
			uint32_t status;

			if (n > sizeof(pattern))
				n = sizeof(pattern);
			status = npu_mmu_write(sim, run, dst + done, pattern, n);
			if (status != NPU_JOB_OK)
				return status;
			done += n;
		}
	}
	run->dma_bytes += (uint64_t)insn->rows * insn->row_bytes;
	return NPU_JOB_OK;
}

static uint32_t npu_run_timestamp(struct npu_sim *sim, struct npu_sim_run *run,
				  const struct npu_insn_timestamp *insn,
				  uint64_t start_cycle)
{
	/* The device clock as modeled: job start plus the cycles so far. */
	uint64_t ns = run->start_ns + npu_cycles_to_ns(start_cycle);
	uint8_t bytes[8];

	for (unsigned int i = 0; i < 8; i++)
		bytes[i] = (uint8_t)(ns >> (8 * i));
	return npu_mmu_write(sim, run, insn->va, bytes, sizeof(bytes));
}

/* ---- Decode and execute ------------------------------------------------ */

/* The VA side of a DMA / TIMESTAMP, for the one validator (npu_isa.h). */
static uint32_t npu_va_check(void *ctx, uint64_t va, uint64_t len,
			     uint32_t access)
{
	return npu_mmu_check_range(ctx, va, len, access);
}

static uint32_t npu_check_insn(struct npu_sim_run *run,
			       const union npu_insn_any *insn,
			       struct npu_insn_plan *plan)
{
	struct npu_isa_check check = {
		.op_mask = run->op_mask,
		.va_check = npu_va_check,
		.va_ctx = run,
	};
	uint32_t status;

	memset(plan, 0, sizeof(*plan));
	plan->sync = (insn->hdr.flags & NPU_INSN_SYNC) ||
		     insn->hdr.opcode == NPU_OP_BARRIER;
	plan->engine = npu_insn_is_dma(insn->hdr.opcode) ? NPU_ENGINE_DMA :
							   NPU_ENGINE_COMPUTE;
	status = npu_insn_check(insn, &check, &plan->fp);
	/* A footprint the op fills must stay within its declared arrays. */
	if (plan->fp.num_reads > NPU_OP_MAX_READS)
		plan->fp.num_reads = NPU_OP_MAX_READS;
	if (plan->fp.num_writes > NPU_OP_MAX_WRITES)
		plan->fp.num_writes = NPU_OP_MAX_WRITES;
	plan->op_cycles = plan->fp.cycles;
	return status;
}

static uint32_t npu_run_insn(struct npu_sim *sim, struct npu_sim_run *run,
			     const union npu_insn_any *insn,
			     const struct npu_insn_plan *plan, uint64_t start)
{
	uint32_t status;

	switch (insn->hdr.opcode) {
	case NPU_OP_DMA_COPY:
		return npu_run_dma_copy(sim, run, &insn->dma_copy);
	case NPU_OP_DMA_FILL:
		return npu_run_dma_fill(sim, run, &insn->dma_fill);
	case NPU_OP_TIMESTAMP:
		return npu_run_timestamp(sim, run, &insn->timestamp, start);
	case NPU_OP_CONV2D:
		/* The shifts are SRAM data: checkable only once earlier writes landed. */
		status = npu_op_conv2d_check_sram(&insn->conv2d, sim->sram);
		if (status != NPU_JOB_OK)
			return status;
		npu_op_conv2d(&insn->conv2d, sim->sram);
		break;
	case NPU_OP_MATMUL:
		status = npu_op_matmul_check_sram(&insn->matmul, sim->sram);
		if (status != NPU_JOB_OK)
			return status;
		npu_op_matmul(&insn->matmul, sim->sram);
		break;
	case NPU_OP_POOL:
		npu_op_pool(&insn->pool, sim->sram);
		break;
	case NPU_OP_ELTWISE:
		npu_op_eltwise(&insn->eltwise, sim->sram);
		break;
	case NPU_OP_LUT:
		npu_op_lut(&insn->lut, sim->sram);
		break;
	case NPU_OP_RESIZE:
		npu_op_resize(&insn->resize, sim->sram);
		break;
	case NPU_OP_SOFTMAX:
		npu_op_softmax(&insn->softmax, sim->sram);
		break;
	case NPU_OP_LAYERNORM:
		npu_op_layernorm(&insn->layernorm, sim->sram);
		break;
	case NPU_OP_REDUCE:
		npu_op_reduce(&insn->reduce, sim->sram);
		break;
	default:
		break;
	}
	run->macs += plan->fp.macs;
	return NPU_JOB_OK;
}

/*
 * One instruction through the timing model: pick its start (its engine
 * free; with SYNC both engines free; never before the last SYNC point's
 * start), check hazards
 * against the other engine, apply the watchdog, run it, then commit.
 */
static uint32_t npu_issue_insn(struct npu_sim *sim, struct npu_sim_run *run,
			       const union npu_insn_any *insn,
			       const struct npu_insn_plan *plan)
{
	struct npu_engine *engine = &run->engines[plan->engine];
	struct npu_engine *other = &run->engines[!plan->engine];
	uint64_t start = engine->free_at;
	uint64_t end;
	uint32_t status;

	if (plan->sync && other->free_at > start)
		start = other->free_at;
	if (run->sync_floor > start)
		start = run->sync_floor;
	uint64_t op_cycles = plan->op_cycles;

	if (npu_hazard(other, start, &plan->fp))
		return NPU_JOB_ERR_HAZARD;
	/* N:M sparse weights (ISA 1.6): tiles of zero weights are skipped. */
	if (insn->hdr.opcode == NPU_OP_CONV2D && NPU_SPARSE_M(insn->conv2d.flags))
		op_cycles = npu_op_conv2d_cycles_sram(&insn->conv2d, sim->sram);
	else if (insn->hdr.opcode == NPU_OP_MATMUL && NPU_SPARSE_M(insn->matmul.flags))
		op_cycles = npu_op_matmul_cycles_sram(&insn->matmul, sim->sram);
	end = npu_add_sat(start, npu_add_sat(NPU_CYCLES_INSN_OVERHEAD, op_cycles));
	if (run->watchdog_cycles && end > run->watchdog_cycles)
		return NPU_JOB_ERR_WATCHDOG;
	status = npu_run_insn(sim, run, insn, plan, start);
	if (status != NPU_JOB_OK)
		return status;
	engine->free_at = end;
	/* Nothing after a SYNC point starts before it (BARRIER is a fence). */
	if (plan->sync)
		run->sync_floor = start;
	npu_window_push(engine, other, end, &plan->fp);
	return NPU_JOB_OK;
}

static uint32_t npu_check_stream_header(struct npu_sim *sim,
					struct npu_sim_run *run)
{
	struct npu_cs_header header;
	const uint8_t *bytes;
	uint32_t status;

	if (run->cmd_size < sizeof(header))
		return NPU_JOB_ERR_BAD_HEADER;
	status = npu_stream_fetch(sim, run, 0, sizeof(header), &bytes);
	if (status != NPU_JOB_OK)
		return status;
	memcpy(&header, bytes, sizeof(header));
	if (header.magic != NPU_CS_MAGIC ||
	    header.isa_major != NPU_ISA_VERSION_MAJOR ||
	    header.isa_minor > NPU_ISA_VERSION_MINOR ||
	    header.reserved[0] || header.reserved[1])
		return NPU_JOB_ERR_BAD_HEADER;
	return NPU_JOB_OK;
}

static uint32_t npu_exec_stream(struct npu_sim *sim, struct npu_sim_run *run,
				uint32_t *error_offset)
{
	uint32_t offset = 0;
	uint32_t status;

	*error_offset = 0;
	status = npu_mmu_check_range(run, run->cmd_va, run->cmd_size,
				     NPU_ACCESS_READ);
	if (status != NPU_JOB_OK)
		return status;
	status = npu_check_stream_header(sim, run);
	if (status != NPU_JOB_OK)
		return status;

	for (offset = sizeof(struct npu_cs_header); offset < run->cmd_size;) {
		uint32_t remaining = run->cmd_size - offset;
		union npu_insn_any insn;
		struct npu_insn_plan plan;
		uint16_t size = 0;

		*error_offset = offset;
		if (npu_aborted(sim, run))
			return NPU_JOB_ERR_ABORTED;
		if (remaining < sizeof(struct npu_insn_header))
			return NPU_JOB_ERR_TRUNCATED;
		status = npu_fetch_insn(sim, run, offset, &insn, &size);
		if (status != NPU_JOB_OK)
			return status;
		status = npu_check_insn(run, &insn, &plan);
		if (status != NPU_JOB_OK)
			return status;
		status = npu_issue_insn(sim, run, &insn, &plan);
		if (status != NPU_JOB_OK)
			return status;
		offset += size;
	}
	*error_offset = 0;
	return NPU_JOB_OK;
}

static uint32_t npu_check_desc(struct npu_sim *sim, struct npu_sim_run *run,
			       const struct npu_job_desc *desc)
{
	struct npu_ctx_entry entry;
	uint32_t status;

	if (desc->flags || desc->reserved0 || desc->reserved1[0] ||
	    desc->reserved1[1] || desc->reserved1[2] ||
	    !desc->cmd_size || desc->cmd_size % NPU_CS_ALIGN ||
	    desc->cmd_size > NPU_CS_MAX_SIZE || desc->completion_addr & 63)
		return NPU_JOB_ERR_BAD_DESC;
	if (desc->context >= NPU_NUM_CONTEXTS)
		return NPU_JOB_ERR_BAD_CONTEXT;
	status = npu_mmu_read_ctx_entry(sim, desc->context, &entry);
	if (status == NPU_JOB_ERR_DMA) {
		/* No VA to blame: report the context entry's host address. */
		run->fault_addr = atomic_load(&sim->ctx_table) +
				  desc->context * sizeof(entry);
		run->fault_access = NPU_ACCESS_READ;
	}
	return status;
}

void npu_exec_job(struct npu_sim *sim, struct npu_sim_job *job)
{
	struct npu_sim_run *run = &sim->run;
	struct npu_completion *result = &job->result;
	const struct npu_ops_poll poll = {
		.aborted = npu_exec_poll_aborted,
		.ctx = sim,
	};
	uint32_t error_offset = 0;
	uint32_t status;

	result->start_ns = npu_sim_clock_ns(sim);
	run->start_ns = result->start_ns;
	run->cmd_va = job->desc.cmd_va;
	run->cmd_size = job->desc.cmd_size;

	if (npu_aborted(sim, run))
		status = NPU_JOB_ERR_ABORTED;	/* reset before it started */
	else
		status = npu_check_desc(sim, run, &job->desc);
	if (status == NPU_JOB_OK) {
		npu_ops_set_poll(&poll);
		npu_ops_set_pool(sim->pool);
		npu_ops_set_cache(sim->ops_cache);
		status = npu_exec_stream(sim, run, &error_offset);
		npu_ops_set_pool(NULL);
		npu_ops_set_poll(NULL);
		npu_ops_set_cache(NULL);
	}
	if (status == NPU_JOB_OK && npu_aborted(sim, run))
		status = NPU_JOB_ERR_ABORTED;

	result->status = status;
	result->error_offset = error_offset;
	result->seqno = job->desc.seqno;
	result->queue = job->queue;
	result->macs = run->macs;
	result->cycles = status == NPU_JOB_ERR_WATCHDOG ? run->watchdog_cycles :
			 npu_job_cycles(run);
	result->fault_addr = (status == NPU_JOB_ERR_MMU_UNMAPPED ||
			      status == NPU_JOB_ERR_MMU_PERM ||
			      status == NPU_JOB_ERR_DMA) ? run->fault_addr : 0;
	result->end_ns = npu_sim_clock_ns(sim);
	result->fence = 0;
}
