// SPDX-License-Identifier: MIT
/*
 * codegen_prefetch.c - constants prefetched across ops: a finished stream
 * rewritten so that an op's constant loads overlap the op before.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen_internal.h"

/* ---- Constants prefetched across ops ------------------------------------ */

/*
 * An op starts with its constants: a BARRIER, so that they do not land on
 * SRAM the op before still uses, then their DMA, then its first input
 * tile; the MAC array idles through all of it and through the last store
 * of the op before. When the two ops' SRAM footprints fit side by side,
 * the op is moved to the other end of SRAM (every SRAM operand shifted)
 * and its constants' DMAs go in front of the previous op's final store,
 * without the BARRIER: the DMA engine loads the next layer's weights
 * while the MAC array computes this layer's last tile. Bytes are the
 * same; only the schedule changes. opts.no_prefetch turns it off.
 */

/* The SRAM bytes instructions [a, b) touch: [*lo, *hi), empty if none. */
static void sram_span(uint8_t *const *insn, size_t a, size_t b, uint32_t sram, uint32_t *lo,
		      uint32_t *hi)
{
	size_t j;
	unsigned int k;

	*lo = UINT32_MAX;
	*hi = 0;
	for (j = a; j < b; j++) {
		struct npu_isa_check chk = { .sram_size = sram };
		struct npu_op_footprint fp;

		if (npu_insn_check(insn[j], &chk, &fp) != NPU_JOB_OK)
			continue;	/* the stream was checked as it was built */
		for (k = 0; k < fp.num_reads + fp.num_writes; k++) {
			const struct npu_sram_range *r = k < fp.num_reads ? &fp.reads[k] :
							 &fp.writes[k - fp.num_reads];

			if (r->end <= r->begin)
				continue;
			if (r->begin < *lo)
				*lo = r->begin;
			if (r->end > *hi)
				*hi = r->end;
		}
	}
	if (*hi <= *lo)
		*lo = *hi = 0;
}

/*
 * Cycles of instructions list[0 .. n - 1] from idle engines, by the cycle
 * model (what the simulator's two-engine timing does; cost_insn()), less
 * the timestamps. An op between per-op profiling timestamps starts from
 * idle engines too.
 */
static uint64_t replay(uint8_t *const *list, size_t n, uint32_t sram)
{
	struct cost_engines t = { 0, 0, 0 };
	size_t j;

	for (j = 0; j < n; j++) {
		struct npu_isa_check chk = { .sram_size = sram };
		struct npu_op_footprint fp = { 0 };

		/* profiling timestamps left out, so that a profiled stream
		 * prefetches what the plain one does */
		if (list[j][0] == NPU_OP_TIMESTAMP ||
		    npu_insn_check(list[j], &chk, &fp) != NPU_JOB_OK)
			continue;	/* checked as the stream was built */
		cost_insn(&t, npu_insn_is_dma(list[j][0]), list[j][1] & NPU_INSN_SYNC, fp.cycles);
	}
	return cost_end(&t);
}

/* Whether instruction number j was emitted by emit_consts() (bsearch). */
static bool is_consts_load(const struct emitter *e, size_t j)
{
	size_t lo = 0, hi = e->num_const_loads;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->const_loads[mid] == j)
			return true;
		if (e->const_loads[mid] < j)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Rewrites the segment's stream: ops start at stream offsets starts[0 ..
 * nops - 1], op i with lop first_lop[i]. Each op whose footprint fits
 * beside the previous one's is moved clear of it and its leading constant
 * loads go in front of the previous op's final SYNC store (prefetch_on());
 * its predicted cycles lose what those loads cost it (they overlap the
 * previous op's last tile).
 */
npu_status prefetch_consts(struct emitter *e, const size_t *starts,
			   const size_t *first_lop, size_t nops)
{
	uint32_t sram = e->t->sram_size ? e->t->sram_size : NPU_SRAM_SIZE;
	size_t size, n = 0, cap = 0, i, j, *first = NULL, *at = NULL;
	const uint8_t *src = npu_cmdbuf_data(e->cb, &size);
	uint8_t *data = NULL, **insn = NULL, *fate = NULL;	/* 1 moved, 2 dropped */
	uint8_t **cand = NULL, **tmp = NULL;
	uint32_t prev_lo = 0, prev_hi = 0;
	npu_status st = NPU_OK;
	size_t off;

	if (e->prog->opts.no_prefetch || nops < 2 || e->const_loads_lost)
		return NPU_OK;
	data = malloc(size);
	first = calloc(nops + 1, sizeof(*first));
	at = malloc((nops + 1) * sizeof(*at));	/* op i's loads go before insn at[i] */
	if (!data || !first || !at)
		goto oom;
	for (i = 0; i <= nops; i++)
		at[i] = SIZE_MAX;
	memcpy(data, src, size);
	for (off = sizeof(struct npu_cs_header); off + sizeof(struct npu_insn_header) <= size;) {
		struct npu_insn_header h;

		memcpy(&h, data + off, sizeof(h));
		if (n == cap) {
			uint8_t **t = realloc(insn, (cap = cap ? 2 * cap : 1024) * sizeof(*t));

			if (!t)
				goto oom;
			insn = t;
		}
		insn[n++] = data + off;
		off += h.size;
	}
	fate = calloc(n + 1, 1);
	cand = malloc((n + 1) * sizeof(*cand));
	tmp = malloc((2 * n + 1) * sizeof(*tmp));
	if (!fate || !cand || !tmp)
		goto oom;
	for (i = 0, j = 0; i < nops; i++) {	/* instruction index of each op's start */
		while (j < n && (size_t)(insn[j] - data) < starts[i])
			j++;
		first[i] = j;
	}
	first[nops] = n;
	sram_span(insn, first[0], first[1], sram, &prev_lo, &prev_hi);
	for (i = 1; i < nops; i++) {
		uint32_t lo, hi, len, to;
		size_t k, last = SIZE_MAX, loads = 0;
		int64_t delta;

		sram_span(insn, first[i], first[i + 1], sram, &lo, &hi);
		lo &= ~(SRAM_ALIGN - 1);
		len = hi - lo;
		for (k = first[i - 1]; k < first[i]; k++)	/* the previous op's final store */
			if (insn[k][0] == NPU_OP_DMA_COPY && (insn[k][1] & NPU_INSN_SYNC))
				last = k;
		/* its leading constant loads, as many as the previous op's last
		 * tile hides: the previous op, replayed with them in front of its
		 * final store, must take no longer (then the per-op figures
		 * stay true too) */
		for (k = first[i]; last != SIZE_MAX && k < first[i + 1]; k++) {
			if (insn[k][0] == NPU_OP_BARRIER)
				continue;
			if (!is_consts_load(e, k))
				break;
			cand[loads++] = insn[k];
		}
		if (last != SIZE_MAX && loads) {
			size_t na = first[i] - first[i - 1], pos = last - first[i - 1];
			uint64_t before = replay(insn + first[i - 1], na, sram);

			for (; loads; loads--) {
				memcpy(tmp, insn + first[i - 1], pos * sizeof(*tmp));
				memcpy(tmp + pos, cand, loads * sizeof(*tmp));
				memcpy(tmp + pos + loads, insn + last, (na - pos) * sizeof(*tmp));
				if (replay(tmp, na + loads, sram) <= before)
					break;
			}
		}
		to = hi <= prev_lo || lo >= prev_hi ? lo :	/* clear already */
		     len <= (prev_lo & ~(SRAM_ALIGN - 1)) ? 0 :
		     ((sram - len) & ~(SRAM_ALIGN - 1)) >= prev_hi ?
		     (sram - len) & ~(SRAM_ALIGN - 1) : UINT32_MAX;
		if (!len || !loads || last == SIZE_MAX || to == UINT32_MAX) {
			prev_lo = lo;
			prev_hi = hi;
			continue;
		}
		delta = (int64_t)to - lo;
		for (k = first[i]; k < first[i + 1]; k++)
			npu_insn_shift_sram(insn[k], delta);
		{
			/* its prediction loses what it no longer waits for */
			uint64_t *pred = &e->res->lop_pred_cycles[first_lop[i]];
			uint64_t was = replay(insn + first[i], first[i + 1] - first[i], sram), now;
			size_t nb = 0;

			for (k = first[i]; loads; k++) {
				fate[k] = insn[k][0] == NPU_OP_BARRIER ? 2 : 1;
				loads -= fate[k] == 1;
			}
			for (k = first[i]; k < first[i + 1]; k++)
				if (!fate[k])
					tmp[nb++] = insn[k];
			now = replay(tmp, nb, sram);
			*pred = *pred > was - now ? *pred - (was - now) : 0;
		}
		at[i] = last;
		prev_lo = to;
		prev_hi = to + len;
	}
	npu_cmdbuf_reset(e->cb);
	for (j = 0; j < first[0] && !st; j++) {	/* before the first op: a timestamp */
		struct npu_insn_header h;

		memcpy(&h, insn[j], sizeof(h));
		st = npu_cmdbuf_raw(e->cb, insn[j], h.size);
	}
	for (i = 0; i < nops && !st; i++)
		for (j = first[i]; j < first[i + 1] && !st; j++) {
			struct npu_insn_header h;
			size_t k;

			if (i + 1 < nops && at[i + 1] == j)	/* the next op's loads */
				for (k = first[i + 1]; k < first[i + 2] && !st; k++)
					if (fate[k] == 1) {
						memcpy(&h, insn[k], sizeof(h));
						st = npu_cmdbuf_raw(e->cb, insn[k], h.size);
					}
			if (fate[j] || st)
				continue;
			memcpy(&h, insn[j], sizeof(h));
			st = npu_cmdbuf_raw(e->cb, insn[j], h.size);
		}
	if (st)
		st = npu_error_set(e->err, st, "codegen: prefetch: %s", npu_cmdbuf_last_error(e->cb));
	free(data);
	free(insn);
	free(first);
	free(at);
	free(fate);
	free(cand);
	free(tmp);
	return st;
oom:
	free(data);
	free(insn);
	free(first);
	free(at);
	free(fate);
	free(cand);
	free(tmp);
	return npu_error_set(e->err, NPU_ERR_NO_MEMORY, "codegen: out of memory");
}
