// SPDX-License-Identifier: MIT
/*
 * npu_sparse.c - ISA 1.6: the N:M sparse weight format of CONV2D and
 * MATMUL (NPU_CONV_SPARSE()) and the DMA weight codec
 * (NPU_DMA_CODEC_BLOCK). Both are data the device reads, so their checks
 * run at execution; the host packs and encodes with the same functions
 * (npu_isa.h), so what it emits is what the device decodes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "npu_ops_internal.h"

#define PARAM	NPU_JOB_ERR_BAD_PARAM

uint32_t npu_sparse_bits(uint32_t m)
{
	uint32_t bits = 0;

	while ((1u << bits) < m)
		bits++;
	return bits;
}

uint64_t npu_sparse_bytes(uint64_t rows, uint64_t k, uint32_t n, uint32_t m)
{
	uint64_t kept;

	if (m < 2)	/* not an N:M form (the validator refuses it first) */
		return 0;
	kept = rows * (k / m) * n;

	return kept + (kept * npu_sparse_bits(m) + 7) / 8;
}

/* Position j of the packed index stream (LSB first; may straddle bytes). */
static uint32_t sparse_pos(const uint8_t *idx, uint64_t j, uint32_t bits)
{
	uint64_t bit = j * bits;
	uint32_t v = 0;

	if (8 % bits == 0)	/* 1, 2 or 4 bits never straddle a byte */
		return (idx[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
	for (uint32_t b = 0; b < bits; b++, bit++)
		v |= (uint32_t)((idx[bit / 8] >> (bit % 8)) & 1) << b;
	return v;
}

uint32_t npu_sparse_check_data(const uint8_t *w, uint64_t rows, uint64_t k,
			       uint32_t n, uint32_t m, struct npu_isa_check *c)
{
	uint64_t groups, kept;
	uint32_t bits = npu_sparse_bits(m);
	const uint8_t *idx;

	if (m < 2 || m > NPU_SPARSE_MAX_M || !n || n >= m)
		return npu_isa_fail(c, PARAM, "flags", "sparse %u:%u is not an N:M form", n, m);
	groups = rows * (k / m);
	kept = groups * n;
	idx = w + kept;

	for (uint64_t g = 0; g < groups; g++) {
		int32_t prev = -1;

		for (uint32_t j = 0; j < n; j++) {
			uint32_t p = sparse_pos(idx, g * n + j, bits);

			if (p >= m)
				return npu_isa_fail(c, PARAM, "weight",
						    "weight group %" PRIu64 " (row %" PRIu64
						    "): position %u is outside 0..%u",
						    g, g / (k / m), p, m - 1);
			if ((int32_t)p <= prev)
				return npu_isa_fail(c, PARAM, "weight",
						    "weight group %" PRIu64 " (row %" PRIu64
						    "): position %u does not follow %d "
						    "(positions must increase)",
						    g, g / (k / m), p, prev);
			prev = (int32_t)p;
		}
	}
	return NPU_JOB_OK;
}

void npu_sparse_expand(const uint8_t *w, uint64_t rows, uint64_t k, uint32_t n,
		       uint32_t m, int8_t fill, int8_t *dense)
{
	uint64_t groups = m ? rows * (k / m) : 0, kept = groups * n;
	uint32_t bits = npu_sparse_bits(m);

	memset(dense, fill, rows * k);
	if (m < 2)	/* not an N:M form: nothing kept */
		return;
	for (uint64_t g = 0; g < groups; g++)
		for (uint32_t j = 0; j < n; j++)
			dense[g * m + sparse_pos(w + kept, g * n + j, bits)] =
				(int8_t)w[g * n + j];
}

int npu_sparse_pack(const int8_t *dense, uint64_t rows, uint64_t k, uint32_t n,
		    uint32_t m, int8_t fill, uint8_t *out)
{
	uint64_t groups, kept;
	uint32_t bits = npu_sparse_bits(m);
	uint8_t *idx;

	if (m < 2 || m > NPU_SPARSE_MAX_M || !n || n >= m || k % m)
		return -1;
	groups = rows * (k / m);
	kept = groups * n;
	idx = out + kept;

	memset(idx, 0, (kept * bits + 7) / 8);
	for (uint64_t g = 0; g < groups; g++) {
		const int8_t *grp = dense + g * m;
		uint32_t live = 0, j = 0;

		for (uint32_t p = 0; p < m; p++)
			live += grp[p] != fill;
		if (live > n)
			return -1;
		/* Kept: every live position, then the first fill ones; in order. */
		uint8_t keep[NPU_SPARSE_MAX_M] = { 0 };
		uint32_t extra = n - live;

		for (uint32_t p = 0; p < m; p++) {
			keep[p] = grp[p] != fill;
			if (!keep[p] && extra) {
				keep[p] = 1;
				extra--;
			}
		}
		for (uint32_t p = 0; p < m; p++) {
			if (!keep[p])
				continue;
			out[g * n + j] = (uint8_t)grp[p];
			for (uint32_t b = 0; b < bits; b++) {
				uint64_t bit = (g * n + j) * bits + b;

				idx[bit / 8] |= (uint8_t)(((p >> b) & 1) << (bit % 8));
			}
			j++;
		}
	}
	return 0;
}

uint64_t npu_sparse_live_tiles(const uint8_t *w, uint32_t groups,
			       uint32_t cout_g, uint64_t taps, uint64_t kept,
			       int8_t fill, uint32_t arows, uint32_t acols)
{
	uint64_t row_blocks = (kept + arows - 1) / arows;
	uint64_t col_blocks = (cout_g + acols - 1) / acols;
	uint64_t live = 0;

	for (uint32_t g = 0; g < groups; g++)
	for (uint64_t t = 0; t < taps; t++)
	for (uint64_t cb = 0; cb < col_blocks; cb++)
	for (uint64_t rb = 0; rb < row_blocks; rb++) {
		uint64_t oc_end = (cb + 1) * acols < cout_g ? (cb + 1) * acols : cout_g;
		uint64_t j_end = (rb + 1) * arows < kept ? (rb + 1) * arows : kept;
		int any = 0;

		for (uint64_t oc = cb * acols; oc < oc_end && !any; oc++) {
			const uint8_t *row = w + (((uint64_t)g * cout_g + oc) * taps + t) * kept;

			for (uint64_t j = rb * arows; j < j_end; j++)
				if ((int8_t)row[j] != fill) {
					any = 1;
					break;
				}
		}
		live += any;
	}
	return live;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/*
 * Decoded weights: a job runs one instruction's tiles (and a fused
 * chain's few convs) over and over with the same packed weights, and the
 * next job of the same model the same ones again, so the executor's
 * position check, cycle count and the fast path's expansion decode them
 * once and compare the packed bytes after that (never trusted: any change
 * decodes anew). The simulator owns a cache (npu_ops_cache_create()) and
 * lends it to the ops for each job (npu_ops_set_cache()); without one the
 * ops use a per-thread one that npu_ops_release_caches() frees.
 */
#define SPARSE_CACHE	128		/* a model's sparse layers, all of them */
#define SPARSE_CACHE_BYTES (64u << 20)	/* packed + dense bytes at most */

struct sparse_entry {
	uint8_t *packed;	/* copy of the operand, npu_sparse_bytes() long */
	int8_t *dense;		/* expanded, rows * k */
	uint64_t len, rows, k;
	uint32_t n, m;
	int8_t fill;
	int valid;		/* positions passed npu_sparse_check_data() */
	/* the last live-tile count and what it was for */
	uint64_t tiles, tiles_key[5];
};

struct npu_ops_cache {
	struct sparse_entry e[SPARSE_CACHE];
	unsigned int next;
	uint64_t bytes;
};

static _Thread_local struct npu_ops_cache *ops_cache_lent;
static _Thread_local struct npu_ops_cache ops_cache_own;

static void entry_free(struct sparse_entry *e)
{
	free(e->packed);
	free(e->dense);
	memset(e, 0, sizeof(*e));
}

static void cache_clear(struct npu_ops_cache *c)
{
	for (unsigned int i = 0; i < SPARSE_CACHE; i++)
		entry_free(&c->e[i]);
	c->next = 0;
	c->bytes = 0;
}

/* The next slot, evicting in turn until the new entry fits the budget. */
static struct sparse_entry *cache_slot(struct npu_ops_cache *c, uint64_t need)
{
	struct sparse_entry *e = &c->e[c->next++ % SPARSE_CACHE];

	c->bytes -= e->len + e->rows * e->k;
	entry_free(e);
	for (unsigned int i = 0; i < SPARSE_CACHE && c->bytes + need > SPARSE_CACHE_BYTES; i++) {
		struct sparse_entry *old = &c->e[(c->next + i) % SPARSE_CACHE];

		c->bytes -= old->len + old->rows * old->k;
		entry_free(old);
	}
	c->bytes += need;
	return e;
}

struct npu_ops_cache *npu_ops_cache_create(void)
{
	return calloc(1, sizeof(struct npu_ops_cache));
}

void npu_ops_cache_destroy(struct npu_ops_cache *cache)
{
	if (!cache)
		return;
	cache_clear(cache);
	free(cache);
}

void npu_ops_set_cache(struct npu_ops_cache *cache)
{
	ops_cache_lent = cache;
}

void npu_ops_release_caches(void)
{
	cache_clear(&ops_cache_own);
}

/* The decoded weights at w, checked; NULL when a position is malformed. */
static struct sparse_entry *sparse_get(const uint8_t *w, uint64_t rows, uint64_t k,
				       uint32_t n, uint32_t m, int8_t fill)
{
	uint64_t len = npu_sparse_bytes(rows, k, n, m);
	struct npu_ops_cache *c = ops_cache_lent ? ops_cache_lent : &ops_cache_own;
	struct sparse_entry *e;

	for (unsigned int i = 0; i < SPARSE_CACHE; i++) {
		e = &c->e[i];
		if (e->packed && e->len == len && e->rows == rows && e->k == k && e->n == n &&
		    e->m == m && e->fill == fill && !memcmp(e->packed, w, len))
			return e->valid ? e : NULL;
	}
	e = cache_slot(c, len + rows * k);
	e->packed = malloc(len + 1);
	e->dense = malloc(rows * k + 1);
	if (!e->packed || !e->dense)
		abort();
	memcpy(e->packed, w, len);
	e->len = len;
	e->rows = rows;
	e->k = k;
	e->n = n;
	e->m = m;
	e->fill = fill;
	e->valid = npu_sparse_check_data(w, rows, k, n, m, NULL) == NPU_JOB_OK;
	if (e->valid)
		npu_sparse_expand(w, rows, k, n, m, fill, e->dense);
	return e->valid ? e : NULL;
}

const int8_t *npu_sparse_dense(const uint8_t *w, uint64_t rows, uint64_t k, uint32_t n,
			       uint32_t m, int8_t fill)
{
	struct sparse_entry *e = sparse_get(w, rows, k, n, m, fill);

	return e ? e->dense : NULL;
}

/* Live tiles through the cache (recounted when the shape asked changes). */
static uint64_t cached_tiles(const uint8_t *w, uint64_t rows, uint64_t k, uint32_t n,
			     uint32_t m, int8_t fill, uint32_t groups, uint32_t cout_g,
			     uint64_t taps, uint32_t arows, uint32_t acols)
{
	struct sparse_entry *e = sparse_get(w, rows, k, n, m, fill);
	uint64_t key[5] = { groups, cout_g, taps, arows, acols };
	uint64_t kept = k / m * n;

	if (!e)		/* refused at execution anyway: price what it names */
		return npu_sparse_live_tiles(w, groups, cout_g, taps, kept, fill, arows, acols);
	if (memcmp(e->tiles_key, key, sizeof(key))) {
		e->tiles = npu_sparse_live_tiles(w, groups, cout_g, taps, kept, fill, arows, acols);
		memcpy(e->tiles_key, key, sizeof(key));
	}
	return e->tiles;
}

uint64_t npu_op_conv2d_cycles_sram(const struct npu_insn_conv2d *in,
				   const uint8_t *sram)
{
	struct npu_op_footprint fp;
	struct npu_array_shape a;
	uint32_t n = NPU_SPARSE_N(in->flags), m = NPU_SPARSE_M(in->flags);
	uint32_t cin_g, cout_g;
	uint64_t taps;

	if (npu_op_conv2d_check(in, &fp))
		return 0;
	if (!m)
		return fp.cycles;
	npu_array_shape((in->flags & NPU_CONV_ARRAY_MASK) >> NPU_CONV_ARRAY_SHIFT,
			0, &a);
	cin_g = in->in_c / in->groups;
	cout_g = in->out_c / in->groups;
	taps = (uint64_t)in->k_h * in->k_w;
	return div_up((uint64_t)in->out_h * in->out_w, a.parts) *
	       cached_tiles(sram + in->weight, (uint64_t)in->out_c * taps, cin_g, n, m,
			    (int8_t)in->zp_w, in->groups, cout_g, taps, a.rows, a.cols);
}

uint64_t npu_op_matmul_cycles_sram(const struct npu_insn_matmul *in,
				   const uint8_t *sram)
{
	struct npu_op_footprint fp;
	struct npu_array_shape a;
	uint32_t n = NPU_SPARSE_N(in->flags), m = NPU_SPARSE_M(in->flags);

	if (npu_op_matmul_check(in, &fp))
		return 0;
	if (!m)
		return fp.cycles;
	npu_array_shape((in->flags & NPU_CONV_ARRAY_MASK) >> NPU_CONV_ARRAY_SHIFT,
			0, &a);
	return div_up(in->m, a.parts) *
	       cached_tiles(sram + in->b, in->n, in->k, n, m, (int8_t)in->zp_b, 1, in->n, 1,
			    a.rows, a.cols);
}

/* ---- The weight codec ---------------------------------------------------- */

uint64_t npu_wcodec_max_bytes(uint32_t len)
{
	return (uint64_t)len + 3 * div_up(len, NPU_WCODEC_BLOCK);
}

/* Bits of the narrowest two's complement holding v (0 for 0). */
static uint32_t width_of(int8_t v)
{
	uint32_t w = 1;

	if (!v)
		return 0;
	while (v < -(1 << (w - 1)) || v > (1 << (w - 1)) - 1)
		w++;
	return w;
}

static uint32_t put_bits(uint8_t *dst, const int8_t *v, uint32_t count,
			 uint32_t w)
{
	uint32_t bytes = (count * w + 7) / 8;

	memset(dst, 0, bytes);
	for (uint32_t i = 0; i < count; i++)
		for (uint32_t b = 0; b < w; b++) {
			uint32_t bit = i * w + b;

			dst[bit / 8] |= (uint8_t)((((uint8_t)v[i] >> b) & 1) << (bit % 8));
		}
	return bytes;
}

uint32_t npu_wcodec_encode(const uint8_t *src, uint32_t len, uint8_t *dst)
{
	uint32_t out = 0;

	for (uint32_t at = 0; at < len; at += NPU_WCODEC_BLOCK) {
		uint32_t l = len - at < NPU_WCODEC_BLOCK ? len - at : NPU_WCODEC_BLOCK;
		const int8_t *blk = (const int8_t *)src + at;
		int8_t nz[NPU_WCODEC_BLOCK];
		uint32_t w = 0, cnt = 0, mask = 0;

		for (uint32_t i = 0; i < l; i++) {
			uint32_t wi = width_of(blk[i]);

			w = wi > w ? wi : w;
			if (blk[i]) {
				nz[cnt++] = blk[i];
				mask |= 1u << i;
			}
		}
		if (w && 3 + (cnt * w + 7) / 8 < 1 + (l * w + 7) / 8) {
			dst[out++] = (uint8_t)(w | NPU_WCODEC_MASK);
			dst[out++] = (uint8_t)mask;
			dst[out++] = (uint8_t)(mask >> 8);
			out += put_bits(dst + out, nz, cnt, w);
		} else {
			dst[out++] = (uint8_t)w;
			out += put_bits(dst + out, blk, w ? l : 0, w);
		}
	}
	return out;
}

uint32_t npu_wcodec_decode(const uint8_t *src, uint32_t src_len, uint8_t *dst,
			   uint32_t dst_len, struct npu_isa_check *c)
{
	uint32_t pos = 0;

	for (uint32_t at = 0, blk = 0; at < dst_len; at += NPU_WCODEC_BLOCK, blk++) {
		uint32_t l = dst_len - at < NPU_WCODEC_BLOCK ? dst_len - at : NPU_WCODEC_BLOCK;
		uint32_t hdr, w, mask, cnt, bytes;

		if (pos >= src_len)
			return npu_isa_fail(c, PARAM, "src_bytes",
					    "codec block %u: the stream ends at byte %u "
					    "before output byte %u", blk, pos, at);
		hdr = src[pos++];
		w = hdr & 0xf;
		if (w > 8 || (hdr & 0xe0) || (!w && (hdr & NPU_WCODEC_MASK)))
			return npu_isa_fail(c, PARAM, "src",
					    "codec block %u at stream byte %u: header 0x%02x "
					    "(width %u, reserved bits 0x%02x) is not valid",
					    blk, pos - 1, hdr, w, hdr & 0xe0);
		mask = (1u << l) - 1;
		if (hdr & NPU_WCODEC_MASK) {
			if (src_len - pos < 2)
				return npu_isa_fail(c, PARAM, "src_bytes",
						    "codec block %u: its mask runs past "
						    "src_bytes %u", blk, src_len);
			mask = src[pos] | (uint32_t)src[pos + 1] << 8;
			pos += 2;
			if (mask >> l)
				return npu_isa_fail(c, PARAM, "src",
						    "codec block %u: mask 0x%04x marks bytes "
						    "past its %u", blk, mask, l);
		}
		cnt = (uint32_t)__builtin_popcount(mask);
		bytes = w ? (cnt * w + 7) / 8 : 0;
		if (src_len - pos < bytes)
			return npu_isa_fail(c, PARAM, "src_bytes",
					    "codec block %u: %u value bytes run past "
					    "src_bytes %u", blk, bytes, src_len);
		if (w == 8 && cnt == l) {	/* raw bytes */
			if (dst)
				memcpy(dst + at, src + pos, l);
		} else {
			/* a bit buffer: each byte read once, each value one shift */
			const uint8_t *p = src + pos;
			uint64_t acc = 0;
			uint32_t have = 0;

			for (uint32_t i = 0; i < l; i++) {
				uint32_t v = 0;

				if (w && (mask >> i & 1)) {
					while (have < w) {
						acc |= (uint64_t)*p++ << have;
						have += 8;
					}
					v = (uint32_t)(acc & ((1u << w) - 1));
					acc >>= w;
					have -= w;
					if (v >> (w - 1))	/* sign-extend */
						v |= ~0u << w;
				}
				if (dst)
					dst[at + i] = (uint8_t)v;
			}
			if (acc)	/* what is left of the last byte is padding */
				return npu_isa_fail(c, PARAM, "src",
						    "codec block %u: padding bits of its last "
						    "byte are not 0", blk);
		}
		pos += bytes;
	}
	if (pos != src_len)
		return npu_isa_fail(c, PARAM, "src_bytes",
				    "src_bytes %u, the stream ends at byte %u",
				    src_len, pos);
	return NPU_JOB_OK;
}
