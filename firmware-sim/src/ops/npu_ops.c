// SPDX-License-Identifier: MIT
/*
 * npu_ops.c - the fast compute path: picks a kernel set once (AVX-512 VNNI,
 * AVX2 or portable, capped by NPU_SIM_ISA), lowers CONV2D and MATMUL onto
 * its GEMM / depthwise kernels and runs POOL, ELTWISE and LUT.
 *
 * CONV2D lowering: depthwise convolutions go to the depthwise kernel; a
 * 1x1 unpadded convolution reads input pixels in place as GEMM rows; every
 * other shape packs its patches (im2col) for a chunk of output pixels at a
 * time, so the packed buffer stays in L2 and the weights are used as
 * stored ([out_c][k_h][k_w][in_c / groups] is already [n][k]).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "npu_ops_internal.h"

static const struct npu_kern *kern_table[] = {
	&npu_kern_portable,
	&npu_kern_avx2,
	&npu_kern_avx512vnni,
};

static int kern_supported(int idx)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	switch (idx) {
	case 0:
		return 1;
	case 1:
		return __builtin_cpu_supports("avx2");
	case 2:
		return __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") &&
		       __builtin_cpu_supports("avx512dq") &&
		       __builtin_cpu_supports("avx512vnni");
	}
	return 0;
#else
	return idx == 0;
#endif
}

static int kern_index(const char *name)
{
	for (int i = 0; i < (int)(sizeof(kern_table) / sizeof(kern_table[0])); i++)
		if (!strcmp(kern_table[i]->name, name))
			return i;
	return -1;
}

/* -1 until chosen; every thread computes the same choice, so races are benign. */
static int kern_current = -1;

static const struct npu_kern *kern_get(void)
{
	int idx = __atomic_load_n(&kern_current, __ATOMIC_ACQUIRE);

	if (idx < 0) {
		const char *cap = getenv("NPU_SIM_ISA");
		int max = 2;

		if (cap && kern_index(cap) >= 0)
			max = kern_index(cap);
		for (idx = max; idx > 0 && !kern_supported(idx); idx--)
			;
		__atomic_store_n(&kern_current, idx, __ATOMIC_RELEASE);
	}
	return kern_table[idx];
}

const struct npu_kern *npu_kern_current(void)
{
	return kern_get();
}

const char *npu_ops_impl_name(void)
{
	return kern_get()->name;
}

int npu_ops_set_impl(const char *name)
{
	int idx = kern_index(name);

	if (idx < 0 || !kern_supported(idx))
		return -1;
	__atomic_store_n(&kern_current, idx, __ATOMIC_RELEASE);
	return 0;
}

/* ---------------------------------------------------------------------------
 * The executor's hooks (npu_ops.h): a reset is polled between slices of an
 * op (GEMM chunks, output rows), and the multiply-accumulates performed
 * are counted, so tests can hold the work done to what the cycle model
 * charges (issue 29 D-b). Per thread: each device runs on its own.
 */
static _Thread_local const struct npu_ops_poll *ops_poll;
static _Thread_local uint64_t ops_macs_done;

void npu_ops_set_poll(const struct npu_ops_poll *poll)
{
	ops_poll = poll;
}

uint64_t npu_ops_host_macs(void)
{
	return ops_macs_done;
}

static int ops_aborted(void)
{
	return ops_poll && ops_poll->aborted(ops_poll->ctx);
}

/*
 * The pool the ops split work over (npu_ops.h), per calling thread like
 * the poll. Each item runs with the caller's poll and counts its MACs into
 * the task, which the caller adds to its own count: the workers' counters
 * stay untouched, so npu_ops_host_macs() of the calling thread sees all.
 */
static _Thread_local struct npu_ops_pool *ops_pool;

void npu_ops_set_pool(struct npu_ops_pool *pool)
{
	ops_pool = pool;
}

static unsigned int ops_threads(void)
{
	return npu_ops_pool_threads(ops_pool);
}

/*
 * Work below this many MACs (or element operations for the vector ops)
 * is not split: 2^22 MACs take some 30 us on one thread, and waking a
 * worker costs several microseconds, more on a loaded host.
 */
#define NPU_PAR_MIN_WORK	(1ull << 22)

/*
 * Units of work per item for 'units' units of 'unit_work' each: 'serial'
 * (what the op uses alone), cut so that each thread gets about four items
 * when the op is large enough to split, rounded up to 'align' units.
 */
static uint64_t par_min_work = NPU_PAR_MIN_WORK;

uint64_t npu_ops_set_split_min(uint64_t work)
{
	uint64_t old = par_min_work;

	par_min_work = work;
	return old;
}

static uint32_t par_chunk(uint32_t units, uint64_t unit_work, uint32_t serial,
			  uint32_t align)
{
	unsigned int threads = ops_threads();
	uint64_t want;

	if (threads < 2 || (uint64_t)units * unit_work < par_min_work)
		return serial;
	want = (units + 4ull * threads - 1) / (4ull * threads);
	want = (want + align - 1) / align * align;
	return want < serial ? (uint32_t)want : serial;
}

struct par_task {
	npu_pool_fn fn;
	void *ctx;
	const struct npu_ops_poll *poll;
	_Atomic uint64_t macs;
};

static void par_item(void *arg, uint32_t item, unsigned int worker)
{
	struct par_task *t = arg;
	const struct npu_ops_poll *saved = ops_poll;
	uint64_t macs0 = ops_macs_done;

	ops_poll = t->poll;
	t->fn(t->ctx, item, worker);
	atomic_fetch_add_explicit(&t->macs, ops_macs_done - macs0,
				  memory_order_relaxed);
	ops_macs_done = macs0;
	ops_poll = saved;
}

/* fn(ctx, item, worker) for item < items, split over the pool if any. */
static void ops_parallel(uint32_t items, npu_pool_fn fn, void *ctx)
{
	struct par_task t = { .fn = fn, .ctx = ctx, .poll = ops_poll };

	if (ops_threads() < 2 || items < 2) {
		for (uint32_t i = 0; i < items; i++)
			fn(ctx, i, 0);
		return;
	}
	atomic_init(&t.macs, 0);
	npu_pool_run(ops_pool, items, par_item, &t);
	ops_macs_done += atomic_load_explicit(&t.macs, memory_order_relaxed);
}

/* Per-thread GEMM row pointers and im2col rows of the CONV2D / MATMUL drivers. */
struct gemm_scratch {
	const int8_t **arow;
	int8_t **orow;
	int32_t *row;
	int8_t *patch;
};

static struct gemm_scratch *gemm_scratch_alloc(unsigned int n, uint32_t chunk,
					       size_t patch_len)
{
	struct gemm_scratch *s = calloc(n, sizeof(*s));

	if (!s)
		abort();
	for (unsigned int i = 0; i < n; i++) {
		s[i].arow = malloc(sizeof(*s[i].arow) * chunk);
		s[i].orow = malloc(sizeof(*s[i].orow) * chunk);
		s[i].row = malloc(sizeof(*s[i].row) * chunk);
		s[i].patch = patch_len ? malloc(patch_len) : NULL;
		if (!s[i].arow || !s[i].orow || !s[i].row || (patch_len && !s[i].patch))
			abort();
	}
	return s;
}

static void gemm_scratch_free(struct gemm_scratch *s, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		free(s[i].arow);
		free(s[i].orow);
		free(s[i].row);
		free(s[i].patch);
	}
	free(s);
}

/* POOL: output pixels between polls, a window of up to 65,025 taps each. */
static uint32_t pool_poll_pixels(const struct npu_insn_pool *in)
{
	uint64_t pixel = (uint64_t)in->k_h * in->k_w * in->c;

	return pixel >= (1u << 16) ? 1 : (uint32_t)((1u << 16) / (pixel ? pixel : 1));
}

/* ---------------------------------------------------------------------------
 * CONV2D / MATMUL
 */

/* Output pixels per GEMM call: bounds the im2col buffer to ~256 KiB. */
static uint32_t chunk_rows(uint32_t k)
{
	uint32_t p = (256u << 10) / (k ? k : 1);

	if (p < 16)
		p = 16;
	if (p > 1024)
		p = 1024;
	return p & ~3u;
}

/*
 * Rows per GEMM call between polls of the reset epoch: about 2^22 MACs,
 * at least 4 rows (a row is k * n MACs, at most the SRAM's size, since the
 * weights are k * n bytes of it), at most 'max_rows'.
 */
#define NPU_OPS_SLICE_MACS	(1ull << 22)

static uint32_t slice_rows(uint32_t k, uint32_t n, uint32_t max_rows)
{
	uint64_t row_macs = (uint64_t)k * n;
	uint64_t rows = NPU_OPS_SLICE_MACS / (row_macs ? row_macs : 1);

	if (rows < 4)
		rows = 4;
	return rows < max_rows ? (uint32_t)rows : max_rows;
}

/* Per-channel tables the kernels read, padded for whole-vector loads. */
struct chan_tables {
	int32_t *bias, *col, *mult, *shift;
};

static int chan_tables_init(struct chan_tables *t, uint32_t n)
{
	size_t len = (size_t)n + NPU_RQ_PAD;
	int32_t *mem = calloc(4 * len, sizeof(*mem));

	if (!mem)
		return -1;
	t->bias = mem;
	t->col = mem + len;
	t->mult = mem + 2 * len;
	t->shift = mem + 3 * len;
	for (size_t i = n; i < len; i++)
		t->shift[i] = 1;
	return 0;
}

/*
 * Fills g->rq.col for columns [0, n) of b (the channels of one group):
 * for the U8S8 form it folds zero points and the +128 bias of the u8
 * operand into the per-channel constant (npu_ops_internal.h); an S8U8
 * kernel folds its own when it packs b.
 */
static void fold_col(const struct npu_kern *kn, const struct npu_gemm *g,
		     const int32_t *bias, int32_t *col)
{
	for (uint32_t j = 0; j < g->n; j++) {
		uint32_t c = (uint32_t)bias[j];

		if (kn->dot_kind == NPU_DOT_U8S8)
			c += -(uint32_t)(128 + g->za) *
			     kn->sum_i8(g->b + j * g->ldb, g->k) +
			     g->k * (uint32_t)g->za * (uint32_t)g->zb;
		col[j] = (int32_t)c;
	}
}

/*
 * Per-row term of the U8S8 form, needed only with a nonzero zb (an S8U8
 * kernel adds its own).
 */
static void fold_rows(const struct npu_kern *kn, struct npu_gemm *g, int32_t *row)
{
	if (kn->dot_kind != NPU_DOT_U8S8 || !g->zb) {
		g->row = NULL;
		return;
	}
	for (uint32_t i = 0; i < g->m; i++)
		row[i] = (int32_t)(-(uint32_t)g->zb * kn->sum_i8(g->arow[i], g->k));
	g->row = row;
}

/* The kernel's once-per-instruction preparation of b, if it has one. */
static void *gemm_prep(const struct npu_kern *kn, struct npu_gemm *g)
{
	void *p = kn->gemm_prep ? kn->gemm_prep(g) : NULL;

	g->prep = p;
	return p;
}

static int load_tables(struct chan_tables *t, const uint8_t *sram,
		       uint32_t bias, uint32_t quant, uint32_t flags, uint32_t n)
{
	if (chan_tables_init(t, n))
		abort();
	if (npu_load_quant(sram, quant, flags, n, t->mult, t->shift)) {
		free(t->bias);
		return -1;
	}
	if (!(flags & NPU_CONV_NO_BIAS))
		for (uint32_t i = 0; i < n; i++)
			t->bias[i] = npu_ld_i32(sram + bias + 4 * (size_t)i);
	return 0;
}

/* Where the op writes: in place, or a dense temporary if it overlaps a read. */
struct out_target {
	int8_t *base;
	size_t rs, ps;
	int8_t *tmp;
};

static void out_target_init(struct out_target *o, const struct npu_op_footprint *fp,
			    uint8_t *dst, size_t rs, size_t ps,
			    uint32_t h, uint32_t w, uint32_t c)
{
	o->tmp = NULL;
	o->base = (int8_t *)dst;
	o->rs = rs;
	o->ps = ps;
	for (unsigned int i = 0; i < fp->num_reads; i++)
		if (npu_ranges_overlap(fp->reads[i], fp->writes[0])) {
			o->tmp = malloc((size_t)h * w * c);
			if (!o->tmp)
				abort();
			o->base = o->tmp;
			o->rs = (size_t)w * c;
			o->ps = c;
			return;
		}
}

static void out_target_finish(struct out_target *o, uint8_t *dst, size_t rs,
			      size_t ps, uint32_t h, uint32_t w, uint32_t c)
{
	if (o->tmp) {
		npu_scatter_dense(dst, rs, ps, (const uint8_t *)o->tmp, h, w, c);
		free(o->tmp);
	}
}

/*
 * NPU_CONV_OUT_LUT: maps the op's int8 outputs through its table once the
 * kernel has written them (to SRAM or the temporary), so every kernel
 * shares the stage. 'table' is a private copy taken before any write: a
 * table the output overlaps still reads as it was.
 */
static void out_lut_apply(const uint8_t *table, const struct out_target *o,
			  uint32_t h, uint32_t w, uint32_t c)
{
	const struct npu_kern *kn = kern_get();

	/* Packed pixels: whole rows (or the whole tensor) in one call. */
	if (o->ps == c && o->rs == (size_t)w * c) {
		kn->lut_i8(table, (uint8_t *)o->base, (uint8_t *)o->base, (size_t)h * w * c);
		return;
	}
	for (uint32_t y = 0; y < h; y++) {
		uint8_t *row = (uint8_t *)o->base + y * o->rs;

		if (o->ps == c) {
			kn->lut_i8(table, row, row, (size_t)w * c);
			continue;
		}
		for (uint32_t x = 0; x < w; x++)
			kn->lut_i8(table, row + x * o->ps, row + x * o->ps, c);
	}
}

/* One band of output rows of a depthwise CONV2D (conv_depthwise). */
struct dw_job {
	const struct npu_kern *kn;
	const struct npu_dw *proto;
	uint64_t row_macs;
	uint32_t band;
};

static void dw_band(void *arg, uint32_t item, unsigned int worker)
{
	const struct dw_job *j = arg;
	struct npu_dw d = *j->proto;

	(void)worker;
	if (ops_aborted())
		return;
	d.oh_begin = item * j->band;
	d.oh_end = d.out_h - d.oh_begin < j->band ? d.out_h : d.oh_begin + j->band;
	j->kn->dw(&d);
	ops_macs_done += (uint64_t)(d.oh_end - d.oh_begin) * j->row_macs;
}

static void conv_depthwise(const struct npu_kern *kn,
			   const struct npu_insn_conv2d *in, const uint8_t *sram,
			   const struct chan_tables *t, const struct out_target *o)
{
	uint32_t c = in->in_c, taps = (uint32_t)in->k_h * in->k_w;
	uint32_t cpad = (c + NPU_RQ_PAD - 1) / NPU_RQ_PAD * NPU_RQ_PAD;
	const int8_t *w = (const int8_t *)(sram + in->weight);
	int32_t *wt = calloc((size_t)taps * cpad, sizeof(*wt));
	struct npu_dw d = {
		.in = (const int8_t *)(sram + in->input),
		.in_rs = in->in_row_stride, .in_ps = in->in_pixel_stride,
		.out = o->base, .out_rs = o->rs, .out_ps = o->ps,
		.in_h = in->in_h, .in_w = in->in_w,
		.out_h = in->out_h, .out_w = in->out_w, .c = c, .cpad = cpad,
		.k_h = in->k_h, .k_w = in->k_w,
		.stride_h = in->stride_h, .stride_w = in->stride_w,
		.dil_h = in->dil_h, .dil_w = in->dil_w,
		.pad_top = in->pad_top, .pad_left = in->pad_left,
		.zp_in = in->zp_in, .wt = wt,
		.rq = { t->bias, t->mult, t->shift, in->zp_out,
			in->act_min, in->act_max },
	};

	if (!wt)
		abort();
	/* [c][tap] -> [tap][c] so a tap's weights for a channel block are contiguous. */
	for (uint32_t ch = 0; ch < c; ch++)
		for (uint32_t tap = 0; tap < taps; tap++)
			wt[(size_t)tap * cpad + ch] = w[(size_t)ch * taps + tap] - in->zp_w;
	/* Bands of about NPU_OPS_SLICE_MACS between polls of the reset epoch. */
	uint64_t row_macs = (uint64_t)in->out_w * c * taps;
	uint32_t band = row_macs >= NPU_OPS_SLICE_MACS ? 1 :
			(uint32_t)(NPU_OPS_SLICE_MACS / (row_macs ? row_macs : 1));
	struct dw_job j = {
		.kn = kn, .proto = &d, .row_macs = row_macs,
		.band = par_chunk(in->out_h, row_macs, band, 1),
	};

	ops_parallel((in->out_h + j.band - 1) / j.band, dw_band, &j);
	free(wt);
}

/*
 * The im2col row of output pixel (oh, ow): k_h * k_w taps of cin bytes from
 * 'input' (the group's first channel), zp_in where a tap falls in padding.
 * With dil_w 1 and pixels packed (pixel stride == cin) a kernel row's taps
 * are one run of input: one copy for its part inside, fills for the rest.
 */
static void gather_patch(const struct npu_insn_conv2d *in, const int8_t *input,
			 uint32_t cin, uint32_t oh, uint32_t ow, int8_t *dst)
{
	int64_t iw0 = (int64_t)ow * in->stride_w - in->pad_left;
	size_t row_len = (size_t)in->k_w * cin;
	int run = in->dil_w == 1 && in->in_pixel_stride == cin;
	uint32_t kw_lo = 0, kw_hi = in->k_w;

	if (run) {
		/* The taps kw with 0 <= iw0 + kw < in_w. */
		if (iw0 < 0)
			kw_lo = (uint32_t)(-iw0 < in->k_w ? -iw0 : in->k_w);
		if (iw0 + in->k_w > in->in_w)
			kw_hi = iw0 >= in->in_w ? kw_lo : (uint32_t)(in->in_w - iw0);
		if (kw_hi < kw_lo)
			kw_hi = kw_lo;
	}
	for (uint32_t kh = 0; kh < in->k_h; kh++, dst += row_len) {
		int64_t ih = (int64_t)oh * in->stride_h - in->pad_top +
			     (int64_t)kh * in->dil_h;

		if (ih < 0 || ih >= in->in_h) {
			memset(dst, (uint8_t)in->zp_in, row_len);
			continue;
		}
		const int8_t *src = input + (size_t)ih * in->in_row_stride;

		if (run) {
			memset(dst, (uint8_t)in->zp_in, (size_t)kw_lo * cin);
			if (kw_hi > kw_lo)
				memcpy(dst + (size_t)kw_lo * cin,
				       src + (iw0 + kw_lo) * (int64_t)cin,
				       (size_t)(kw_hi - kw_lo) * cin);
			memset(dst + (size_t)kw_hi * cin, (uint8_t)in->zp_in,
			       (size_t)(in->k_w - kw_hi) * cin);
			continue;
		}
		for (uint32_t kw = 0; kw < in->k_w; kw++) {
			int64_t iw = iw0 + (int64_t)kw * in->dil_w;

			if (iw < 0 || iw >= in->in_w)
				memset(dst + (size_t)kw * cin, (uint8_t)in->zp_in, cin);
			else
				memcpy(dst + (size_t)kw * cin,
				       src + (size_t)iw * in->in_pixel_stride, cin);
		}
	}
}

/* The same with zero insertion: input (ih, iw) of the inserted grid is real
 * only at multiples of ins + 1, inside the inserted extent eff_h x eff_w. */
static void gather_patch_inserted(const struct npu_insn_conv2d *in,
				  const int8_t *input, uint32_t cin,
				  int64_t eff_h, int64_t eff_w,
				  uint32_t oh, uint32_t ow, int8_t *dst)
{
	int64_t uh = in->ins_h + 1, uw = in->ins_w + 1;

	for (uint32_t kh = 0; kh < in->k_h; kh++) {
		int64_t ih = (int64_t)oh * in->stride_h - in->pad_top +
			     (int64_t)kh * in->dil_h;

		for (uint32_t kw = 0; kw < in->k_w; kw++, dst += cin) {
			int64_t iw = (int64_t)ow * in->stride_w - in->pad_left +
				     (int64_t)kw * in->dil_w;

			if (ih < 0 || ih >= eff_h || ih % uh ||
			    iw < 0 || iw >= eff_w || iw % uw)
				memset(dst, (uint8_t)in->zp_in, cin);
			else
				memcpy(dst, input + ih / uh * in->in_row_stride +
				       iw / uw * in->in_pixel_stride, cin);
		}
	}
}

/* One GEMM over a chunk of output pixels of one group (conv_gemm). */
struct conv_gemm_job {
	const struct npu_kern *kn;
	const struct npu_insn_conv2d *in;
	const struct out_target *o;
	const int8_t *input;		/* the group's first channel */
	struct npu_gemm proto;		/* all but arow, orow, m and row */
	struct gemm_scratch *scr;
	uint32_t g, cin_g, pixels, chunk;
	int direct;
	int64_t eff_h, eff_w;
};

static void conv_gemm_chunk(void *arg, uint32_t item, unsigned int worker)
{
	const struct conv_gemm_job *j = arg;
	const struct npu_insn_conv2d *in = j->in;
	const struct gemm_scratch *s = &j->scr[worker];
	uint32_t p0 = item * j->chunk, k = j->proto.k;
	uint32_t m = j->pixels - p0 < j->chunk ? j->pixels - p0 : j->chunk;
	struct npu_gemm gm = j->proto;

	if (ops_aborted())
		return;
	gm.arow = s->arow;
	gm.orow = s->orow;

	/* The chunk's first pixel once, then stepped: no division per row. */
	uint32_t oh = p0 / in->out_w, ow = p0 % in->out_w;

	for (uint32_t i = 0; i < m; i++) {
		s->orow[i] = j->o->base + oh * j->o->rs + ow * j->o->ps + j->g * gm.n;
		if (j->direct) {
			s->arow[i] = j->input +
				     (size_t)oh * in->stride_h * in->in_row_stride +
				     (size_t)ow * in->stride_w * in->in_pixel_stride;
		} else {
			s->arow[i] = s->patch + (size_t)i * k;
			if (in->ins_h || in->ins_w)
				gather_patch_inserted(in, j->input, j->cin_g,
						      j->eff_h, j->eff_w, oh, ow,
						      s->patch + (size_t)i * k);
			else
				gather_patch(in, j->input, j->cin_g, oh, ow,
					     s->patch + (size_t)i * k);
		}
		if (++ow == in->out_w) {
			ow = 0;
			oh++;
		}
	}
	gm.m = m;
	fold_rows(j->kn, &gm, s->row);
	j->kn->gemm(&gm);
	ops_macs_done += (uint64_t)m * gm.n * gm.k;
}

static void conv_gemm(const struct npu_kern *kn, const struct npu_insn_conv2d *in,
		      const uint8_t *sram, const int8_t *weight,
		      const struct chan_tables *t, const struct out_target *o)
{
	uint32_t groups = in->groups;
	uint32_t cin_g = in->in_c / groups, cout_g = in->out_c / groups;
	uint32_t k = (uint32_t)in->k_h * in->k_w * cin_g;
	uint32_t pixels = (uint32_t)in->out_h * in->out_w;
	uint32_t chunk = par_chunk(pixels, (uint64_t)k * cout_g,
				   slice_rows(k, cout_g, chunk_rows(k)), 12);
	unsigned int threads = ops_threads();
	int direct = in->k_h == 1 && in->k_w == 1 && !in->pad_top &&
		     !in->pad_left && !in->pad_bottom && !in->pad_right &&
		     !in->ins_h && !in->ins_w;
	/* Zero insertion: the extent of the inserted input, its period. */
	int64_t uh = in->ins_h + 1, uw = in->ins_w + 1;
	struct conv_gemm_job j = {
		.kn = kn, .in = in, .o = o, .cin_g = cin_g, .pixels = pixels,
		.chunk = chunk, .direct = direct,
		.eff_h = ((int64_t)in->in_h - 1) * uh + 1,
		.eff_w = ((int64_t)in->in_w - 1) * uw + 1,
		.scr = gemm_scratch_alloc(threads, chunk, direct ? 0 : (size_t)chunk * k),
	};
	void *prep = NULL;

	for (uint32_t g = 0; g < groups && !ops_aborted(); g++) {
		j.proto = (struct npu_gemm){
			.b = weight + (size_t)g * cout_g * k,
			.ldb = k, .n = cout_g, .k = k,
			.za = in->zp_in, .zb = in->zp_w,
			.rq = { t->col + g * cout_g, t->mult + g * cout_g,
				t->shift + g * cout_g, in->zp_out,
				in->act_min, in->act_max },
		};
		j.g = g;
		j.input = (const int8_t *)(sram + in->input) + g * cin_g;
		fold_col(kn, &j.proto, t->bias + g * cout_g, t->col + g * cout_g);
		free(prep);
		prep = gemm_prep(kn, &j.proto);
		ops_parallel((pixels + chunk - 1) / chunk, conv_gemm_chunk, &j);
	}
	free(prep);
	gemm_scratch_free(j.scr, threads);
}

/*
 * Zero insertion: output coordinates o with the same residue
 * r = (o * stride - pad) mod (ins + 1) see inserted zeros at the same
 * kernel taps. Sort the coordinates of one dimension by residue: 'start'
 * gets period + 1 bucket starts into 'order'.
 */
static void sort_by_residue(uint32_t n, uint32_t stride, uint32_t pad,
			    uint32_t period, uint32_t *start, uint32_t *order)
{
	uint32_t *cursor = calloc(period + 1, sizeof(*cursor));

	if (!cursor)
		abort();
	for (uint32_t o = 0; o < n; o++) {
		int64_t r = ((int64_t)o * stride - pad) % period;

		cursor[(r < 0 ? r + period : r) + 1]++;
	}
	for (uint32_t r = 0; r < period; r++)
		cursor[r + 1] += cursor[r];
	memcpy(start, cursor, sizeof(*start) * (period + 1));
	for (uint32_t o = 0; o < n; o++) {
		int64_t r = ((int64_t)o * stride - pad) % period;

		order[cursor[r < 0 ? r + period : r]++] = o;
	}
	free(cursor);
}

/*
 * The kernel taps of one dimension that can land on real input for
 * residue 'r' (the others read inserted zeros: they contribute nothing
 * and the cycle model does not charge them, npu_conv_taps()). With none,
 * tap 0 stands in: it reads an inserted zero or padding, i.e. zp_in, so
 * it contributes nothing either and keeps the GEMM's k above 0.
 */
static uint32_t live_taps(uint32_t r, uint32_t k, uint32_t dil, uint32_t period,
			  uint32_t *taps)
{
	uint32_t n = 0;

	for (uint32_t t = 0; t < k; t++)
		if ((r + (uint64_t)t * dil) % period == 0)
			taps[n++] = t;
	if (!n)
		taps[n++] = 0;
	return n;
}

/*
 * Output coordinates sorted by residue, per dimension, and the live taps
 * of every residue: computed once, since a conv may have up to 2^16
 * classes (the work per class must stay small next to its pixels').
 */
struct residue_classes {
	uint32_t *start_h, *order_h, *start_w, *order_w;
	uint32_t *nkh, *kh;	/* per residue rh: count, taps at kh + rh * k_h */
	uint32_t *nkw, *kw;
};

static void residue_classes_init(struct residue_classes *rc,
				 const struct npu_insn_conv2d *in)
{
	uint32_t uh = in->ins_h + 1u, uw = in->ins_w + 1u;

	rc->start_h = malloc(sizeof(uint32_t) * (uh + 1));
	rc->start_w = malloc(sizeof(uint32_t) * (uw + 1));
	rc->order_h = malloc(sizeof(uint32_t) * in->out_h);
	rc->order_w = malloc(sizeof(uint32_t) * in->out_w);
	rc->nkh = malloc(sizeof(uint32_t) * uh);
	rc->nkw = malloc(sizeof(uint32_t) * uw);
	rc->kh = malloc(sizeof(uint32_t) * in->k_h * uh);
	rc->kw = malloc(sizeof(uint32_t) * in->k_w * uw);
	if (!rc->start_h || !rc->start_w || !rc->order_h || !rc->order_w ||
	    !rc->nkh || !rc->nkw || !rc->kh || !rc->kw)
		abort();
	sort_by_residue(in->out_h, in->stride_h, in->pad_top, uh, rc->start_h,
			rc->order_h);
	sort_by_residue(in->out_w, in->stride_w, in->pad_left, uw, rc->start_w,
			rc->order_w);
	for (uint32_t r = 0; r < uh; r++)
		rc->nkh[r] = live_taps(r, in->k_h, in->dil_h, uh,
				       rc->kh + (size_t)r * in->k_h);
	for (uint32_t r = 0; r < uw; r++)
		rc->nkw[r] = live_taps(r, in->k_w, in->dil_w, uw,
				       rc->kw + (size_t)r * in->k_w);
}

static void residue_classes_fini(struct residue_classes *rc)
{
	free(rc->start_h);
	free(rc->start_w);
	free(rc->order_h);
	free(rc->order_w);
	free(rc->nkh);
	free(rc->nkw);
	free(rc->kh);
	free(rc->kw);
}

/*
 * The live taps of output pixel (oh, ow) of residue class (kh, kw), group
 * g: nkh * nkw runs of cin_g elements of 'esize' bytes into 'dst'. Taps on
 * an inserted zero or on padding read the byte 'pad' (the zero point).
 */
static void gather_live_taps(const struct npu_insn_conv2d *in,
			     const uint8_t *input, uint32_t oh, uint32_t ow,
			     const uint32_t *kh, uint32_t nkh,
			     const uint32_t *kw, uint32_t nkw, uint32_t g,
			     uint32_t cin_g, size_t esize, uint8_t pad,
			     uint8_t *dst)
{
	uint32_t uh = in->ins_h + 1u, uw = in->ins_w + 1u;
	int64_t eff_h = ((int64_t)in->in_h - 1) * uh + 1;
	int64_t eff_w = ((int64_t)in->in_w - 1) * uw + 1;
	size_t run = esize * cin_g;

	for (uint32_t a = 0; a < nkh; a++) {
		int64_t ih = (int64_t)oh * in->stride_h - in->pad_top +
			     (int64_t)kh[a] * in->dil_h;

		for (uint32_t c = 0; c < nkw; c++, dst += run) {
			int64_t iw = (int64_t)ow * in->stride_w - in->pad_left +
				     (int64_t)kw[c] * in->dil_w;

			if (ih < 0 || ih >= eff_h || ih % uh ||
			    iw < 0 || iw >= eff_w || iw % uw)
				memset(dst, pad, run);
			else
				memcpy(dst, input + ih / uh * in->in_row_stride +
				       iw / uw * in->in_pixel_stride +
				       (size_t)g * run, run);
		}
	}
}

/* Residue classes of fewer output pixels run on the portable GEMM. */
#define INSERTED_PACK_MIN_PIXELS 16

/*
 * int8 CONV2D with zero insertion: per residue class, a GEMM over the live
 * taps only, with the weights cut to match. What is skipped is exactly
 * (zp_in - zp_in) * w = 0 terms, so the result equals the dense im2col's
 * bit for bit, while the work is what the cycle model charges.
 */
static void conv_gemm_inserted(const struct npu_kern *kn,
			       const struct npu_insn_conv2d *in,
			       const uint8_t *sram, const struct chan_tables *t,
			       const struct out_target *o)
{
	uint32_t groups = in->groups;
	uint32_t cin_g = in->in_c / groups, cout_g = in->out_c / groups;
	uint32_t uh = in->ins_h + 1u, uw = in->ins_w + 1u;
	uint32_t taps = (uint32_t)in->k_h * in->k_w;
	uint32_t kmax = npu_conv_taps(in->k_h, in->dil_h, in->ins_h) *
			npu_conv_taps(in->k_w, in->dil_w, in->ins_w) * cin_g;
	uint32_t chunk = slice_rows(kmax, cout_g, chunk_rows(kmax));
	const uint8_t *input = sram + in->input;
	const int8_t *weight = (const int8_t *)(sram + in->weight);
	const int8_t **arow = malloc(sizeof(*arow) * chunk);
	int8_t **orow = malloc(sizeof(*orow) * chunk);
	int32_t *row = malloc(sizeof(*row) * chunk);
	int8_t *patch = malloc((size_t)chunk * kmax);
	int8_t *b = malloc((size_t)cout_g * kmax);
	void *prep = NULL;
	struct residue_classes rc;

	if (!arow || !orow || !row || !patch || !b)
		abort();
	residue_classes_init(&rc, in);
	for (uint32_t g = 0; g < groups; g++)
	for (uint32_t rh = 0; rh < uh; rh++) {
		uint32_t nkh = rc.nkh[rh];
		const uint32_t *kh = rc.kh + (size_t)rh * in->k_h;

		if (rc.start_h[rh] == rc.start_h[rh + 1])
			continue;
		for (uint32_t rw = 0; rw < uw; rw++) {
			uint32_t nkw = rc.nkw[rw], k, npix, m = 0;
			const uint32_t *kw = rc.kw + (size_t)rw * in->k_w;
			uint32_t rows_h = rc.start_h[rh + 1] - rc.start_h[rh];
			uint32_t cols_w = rc.start_w[rw + 1] - rc.start_w[rw];
			/*
			 * A class of a few pixels does not repay packing its
			 * weights, and with many such classes the host's work
			 * would follow the classes instead of the MACs the cycle
			 * model charges (issue 29 D-b): the portable kernel,
			 * bit-identical, takes it unpacked.
			 */
			const struct npu_kern *kc =
				(uint64_t)rows_h * cols_w < INSERTED_PACK_MIN_PIXELS ?
				&npu_kern_portable : kn;
			struct npu_gemm gm;

			if (!cols_w)
				continue;
			if (ops_aborted())
				goto out;
			k = nkh * nkw * cin_g;
			for (uint32_t j = 0; j < cout_g; j++)
				for (uint32_t a = 0; a < nkh; a++)
					for (uint32_t c = 0; c < nkw; c++)
						memcpy(b + (size_t)j * k + ((size_t)a * nkw + c) * cin_g,
						       weight + ((size_t)(g * cout_g + j) * taps +
								 kh[a] * in->k_w + kw[c]) * cin_g,
						       cin_g);
			gm = (struct npu_gemm){
				.arow = arow, .orow = orow, .b = b, .ldb = k,
				.n = cout_g, .k = k, .za = in->zp_in, .zb = in->zp_w,
				.rq = { t->col + g * cout_g, t->mult + g * cout_g,
					t->shift + g * cout_g, in->zp_out,
					in->act_min, in->act_max },
			};
			fold_col(kc, &gm, t->bias + g * cout_g, t->col + g * cout_g);
			free(prep);
			prep = gemm_prep(kc, &gm);
			npix = rows_h * cols_w;
			for (uint32_t p = 0; p < npix; p++) {
				uint32_t oh = rc.order_h[rc.start_h[rh] + p / cols_w];
				uint32_t ow = rc.order_w[rc.start_w[rw] + p % cols_w];
				int8_t *dst = patch + (size_t)m * k;

				arow[m] = dst;
				orow[m] = o->base + oh * o->rs + ow * o->ps + g * cout_g;
				gather_live_taps(in, input, oh, ow, kh, nkh, kw, nkw, g,
						 cin_g, 1, (uint8_t)in->zp_in,
						 (uint8_t *)dst);
				if (++m == chunk || p + 1 == npix) {
					if (ops_aborted())
						goto out;
					gm.m = m;
					fold_rows(kc, &gm, row);
					kc->gemm(&gm);
					ops_macs_done += (uint64_t)m * gm.n * gm.k;
					m = 0;
				}
			}
		}
	}
out:
	residue_classes_fini(&rc);
	free(prep);
	free(b);
	free(patch);
	free(row);
	free(orow);
	free(arow);
}

/* ---------------------------------------------------------------------------
 * NPU_INSN_I16 (16x8): int16 activations, weights widened to int16 with
 * zp_w subtracted, the kernel's exact dot16x4() / dot16() per output
 * (four channels share each load of a patch row), int64 bias and
 * the 128-bit requantization. Every convolution shape goes through int16
 * im2col rows (aligned, so the kernels load them directly).
 */

/* Loads n int64 biases (zeros with NPU_CONV_NO_BIAS) and the quant table. */
static int load_tables16(const uint8_t *sram, uint32_t bias, uint32_t quant,
			 uint32_t flags, uint32_t n, int64_t **b, int32_t **mult,
			 int32_t **shift)
{
	*b = calloc(n, sizeof(**b));
	*mult = malloc(sizeof(**mult) * n);
	*shift = malloc(sizeof(**shift) * n);
	if (!*b || !*mult || !*shift)
		abort();
	if (npu_load_quant(sram, quant, flags, n, *mult, *shift)) {
		free(*b);
		free(*mult);
		free(*shift);
		return -1;
	}
	if (!(flags & NPU_CONV_NO_BIAS))
		for (uint32_t i = 0; i < n; i++)
			(*b)[i] = npu_ld_i64(sram + bias + 8 * (size_t)i);
	return 0;
}

/* out[j] = requant(bias[j] + dot(a, w[j])) for one row of output channels. */
static void row16(const struct npu_kern *kn, const int16_t *a, const int16_t *w,
		  uint32_t k, uint32_t n, const int64_t *bias,
		  const int32_t *mult, const int32_t *shift, int32_t lo,
		  int32_t hi, uint8_t *out)
{
	int64_t dot[4];

	for (uint32_t j0 = 0; j0 < n; j0 += 4) {
		uint32_t nb = n - j0 < 4 ? n - j0 : 4;

		if (nb == 4)
			kn->dot16x4(a, w + (size_t)j0 * k, k, k, dot);
		else
			for (uint32_t j = 0; j < nb; j++)
				dot[j] = kn->dot16(a, w + (size_t)(j0 + j) * k, k);
		for (uint32_t j = j0; j < j0 + nb; j++) {
			/* The 64-bit accumulator wraps, as the reference's. */
			int64_t acc = (int64_t)((uint64_t)bias[j] + (uint64_t)dot[j - j0]);

			npu_st_i16(out + 2 * (size_t)j,
				   npu_requant16(acc, mult[j], (uint32_t)shift[j], lo, hi));
		}
	}
}

/*
 * Depthwise with int16 activations: per output pixel, the kernel's
 * channel-inner mac16() over the taps into int32 (256 taps of products
 * below 2^23 fit), widened into int64 with the bias; one dot16() per
 * channel and pixel would be 9-element calls.
 */
static void dw_i16(const struct npu_kern *kn, const struct npu_insn_conv2d *in,
		   const uint8_t *sram,
		   const int64_t *bias, const int32_t *mult, const int32_t *shift,
		   uint8_t *res)
{
	uint32_t c = in->in_c, taps = (uint32_t)in->k_h * in->k_w;
	int32_t lo = npu_act16_lo(in->act_min), hi = npu_act16_hi(in->act_max);
	const int8_t *w = (const int8_t *)(sram + in->weight);
	int16_t *wt = malloc(sizeof(*wt) * (size_t)taps * c);
	int16_t *x = malloc(sizeof(*x) * c);
	int32_t *acc32 = malloc(sizeof(*acc32) * c);
	int64_t *acc = malloc(sizeof(*acc) * c);

	if (!wt || !x || !acc32 || !acc)
		abort();
	for (uint32_t ch = 0; ch < c; ch++)
		for (uint32_t t = 0; t < taps; t++)
			wt[(size_t)t * c + ch] = (int16_t)(w[(size_t)ch * taps + t] - in->zp_w);
	for (uint32_t oh = 0; oh < in->out_h; oh++)
	for (uint32_t ow = 0; ow < in->out_w; ow++) {
		uint32_t run = 0;

		if (ops_aborted())
			goto out;

		memcpy(acc, bias, sizeof(*acc) * c);
		memset(acc32, 0, sizeof(*acc32) * c);
		for (uint32_t kh = 0; kh < in->k_h; kh++) {
			int64_t ih = (int64_t)oh * in->stride_h - in->pad_top +
				     (int64_t)kh * in->dil_h;

			if (ih < 0 || ih >= in->in_h)
				continue;
			for (uint32_t kw = 0; kw < in->k_w; kw++) {
				int64_t iw = (int64_t)ow * in->stride_w - in->pad_left +
					     (int64_t)kw * in->dil_w;
				const int16_t *wk = wt + ((size_t)kh * in->k_w + kw) * c;

				if (iw < 0 || iw >= in->in_w)
					continue;
				memcpy(x, sram + in->input + ih * in->in_row_stride +
				       iw * in->in_pixel_stride, 2 * (size_t)c);
				kn->mac16(acc32, x, wk, c);
				ops_macs_done += c;
				if (++run == 256) {
					for (uint32_t ch = 0; ch < c; ch++) {
						acc[ch] += acc32[ch];
						acc32[ch] = 0;
					}
					run = 0;
				}
			}
		}
		for (uint32_t ch = 0; ch < c; ch++) {
			/* wraps modulo 2^64 like the reference's accumulator */
			int64_t a = (int64_t)((uint64_t)acc[ch] + (uint64_t)(int64_t)acc32[ch]);

			npu_st_i16(res + (((size_t)oh * in->out_w + ow) * c + ch) * 2,
				   npu_requant16(a, mult[ch], (uint32_t)shift[ch], lo, hi));
		}
	}
out:
	free(acc);
	free(acc32);
	free(x);
	free(wt);
}

/*
 * NPU_INSN_I16 with zero insertion: per residue class (conv_gemm_inserted)
 * the patch and the weights cover the live taps only; inserted and padded
 * taps read 0 (zero points are 0), so the sums are the dense ones exactly.
 * Writes the dense result 'res'; returns nonzero when a reset cut it short.
 */
static int conv2d_i16_inserted(const struct npu_kern *kn,
			       const struct npu_insn_conv2d *in,
			       const uint8_t *sram, const int64_t *bias,
			       const int32_t *mult, const int32_t *shift,
			       uint8_t *res)
{
	uint32_t groups = in->groups;
	uint32_t cin_g = in->in_c / groups, cout_g = in->out_c / groups;
	uint32_t uh = in->ins_h + 1u, uw = in->ins_w + 1u;
	uint32_t taps = (uint32_t)in->k_h * in->k_w;
	uint32_t kmax = npu_conv_taps(in->k_h, in->dil_h, in->ins_h) *
			npu_conv_taps(in->k_w, in->dil_w, in->ins_w) * cin_g;
	int32_t lo = npu_act16_lo(in->act_min), hi = npu_act16_hi(in->act_max);
	const uint8_t *input = sram + in->input;
	const int8_t *wsrc = (const int8_t *)(sram + in->weight);
	int16_t *w = malloc(sizeof(*w) * ((size_t)in->out_c * kmax + 1));
	int16_t *patch = malloc(sizeof(*patch) * ((size_t)kmax + 1));
	struct residue_classes rc;
	int aborted = 0;

	if (!w || !patch)
		abort();
	residue_classes_init(&rc, in);
	for (uint32_t rh = 0; rh < uh && !aborted; rh++) {
		uint32_t nkh = rc.nkh[rh];
		const uint32_t *kh = rc.kh + (size_t)rh * in->k_h;

		if (rc.start_h[rh] == rc.start_h[rh + 1])
			continue;
		for (uint32_t rw = 0; rw < uw && !aborted; rw++) {
			uint32_t rows_h = rc.start_h[rh + 1] - rc.start_h[rh];
			uint32_t cols_w = rc.start_w[rw + 1] - rc.start_w[rw];
			uint32_t nkw = rc.nkw[rw], k;
			const uint32_t *kw = rc.kw + (size_t)rw * in->k_w;

			if (!cols_w)
				continue;
			k = nkh * nkw * cin_g;
			for (uint32_t j = 0; j < in->out_c; j++)
				for (uint32_t a = 0; a < nkh; a++)
					for (uint32_t c = 0; c < nkw; c++)
						for (uint32_t i = 0; i < cin_g; i++)
							w[(size_t)j * k + ((size_t)a * nkw + c) * cin_g + i] =
								(int16_t)(wsrc[((size_t)j * taps +
										kh[a] * in->k_w +
										kw[c]) * cin_g + i] -
									  in->zp_w);
			for (uint32_t p = 0; p < rows_h * cols_w; p++) {
				uint32_t oh = rc.order_h[rc.start_h[rh] + p / cols_w];
				uint32_t ow = rc.order_w[rc.start_w[rw] + p % cols_w];

				if (ops_aborted()) {
					aborted = 1;
					break;
				}
				for (uint32_t g = 0; g < groups; g++) {
					gather_live_taps(in, input, oh, ow, kh, nkh, kw,
							 nkw, g, cin_g, 2, 0,
							 (uint8_t *)patch);
					row16(kn, patch, w + (size_t)g * cout_g * k, k, cout_g,
					      bias + g * cout_g, mult + g * cout_g,
					      shift + g * cout_g, lo, hi,
					      res + (((size_t)oh * in->out_w + ow) * in->out_c +
						     (size_t)g * cout_g) * 2);
					ops_macs_done += (uint64_t)k * cout_g;
				}
			}
		}
	}
	residue_classes_fini(&rc);
	free(patch);
	free(w);
	return aborted;
}

static void conv2d_i16(const struct npu_kern *kn, const struct npu_insn_conv2d *in,
		       uint8_t *sram)
{
	uint32_t groups = in->groups;
	uint32_t cin_g = in->in_c / groups, cout_g = in->out_c / groups;
	uint32_t k = (uint32_t)in->k_h * in->k_w * cin_g;
	size_t out_len = (size_t)in->out_h * in->out_w * in->out_c * 2;
	int64_t uh = in->ins_h + 1, uw = in->ins_w + 1;
	int64_t eff_h = ((int64_t)in->in_h - 1) * uh + 1;
	int64_t eff_w = ((int64_t)in->in_w - 1) * uw + 1;
	int32_t lo = npu_act16_lo(in->act_min), hi = npu_act16_hi(in->act_max);
	const uint8_t *input = sram + in->input;
	const int8_t *wsrc = (const int8_t *)(sram + in->weight);
	int16_t *w = malloc(sizeof(*w) * ((size_t)in->out_c * k + 1));
	int16_t *patch = malloc(sizeof(*patch) * ((size_t)k + 1));
	uint8_t *res = malloc(out_len);
	int32_t *mult, *shift;
	int64_t *bias;

	if (!w || !patch || !res)
		abort();
	if (load_tables16(sram, in->bias, in->quant, in->flags, in->out_c,
			  &bias, &mult, &shift))
		goto out;
	if (groups == in->in_c && groups == in->out_c && !in->ins_h && !in->ins_w) {
		dw_i16(kn, in, sram, bias, mult, shift, res);
		goto scatter;
	}
	if (in->ins_h || in->ins_w) {
		if (conv2d_i16_inserted(kn, in, sram, bias, mult, shift, res))
			goto aborted;
		goto scatter;
	}
	for (size_t i = 0; i < (size_t)in->out_c * k; i++)
		w[i] = (int16_t)(wsrc[i] - in->zp_w);
	for (uint32_t oh = 0; oh < in->out_h; oh++)
	for (uint32_t ow = 0; ow < in->out_w; ow++)
	for (uint32_t g = 0; g < groups; g++) {
		if (!g && ops_aborted())
			goto aborted;
		int16_t *dst = patch;

		/* Zero points are 0: padded and inserted taps read 0. */
		for (uint32_t kh = 0; kh < in->k_h; kh++) {
			int64_t ih = (int64_t)oh * in->stride_h - in->pad_top +
				     (int64_t)kh * in->dil_h;

			for (uint32_t kw = 0; kw < in->k_w; kw++, dst += cin_g) {
				int64_t iw = (int64_t)ow * in->stride_w - in->pad_left +
					     (int64_t)kw * in->dil_w;

				if (ih < 0 || ih >= eff_h || ih % uh ||
				    iw < 0 || iw >= eff_w || iw % uw)
					memset(dst, 0, sizeof(*dst) * cin_g);
				else
					memcpy(dst, input + ih / uh * in->in_row_stride +
					       iw / uw * in->in_pixel_stride +
					       (size_t)g * cin_g * 2, 2 * (size_t)cin_g);
			}
		}
		row16(kn, patch, w + (size_t)g * cout_g * k, k, cout_g,
		      bias + g * cout_g, mult + g * cout_g, shift + g * cout_g,
		      lo, hi, res + (((size_t)oh * in->out_w + ow) * in->out_c +
				     (size_t)g * cout_g) * 2);
		ops_macs_done += (uint64_t)k * cout_g;
	}
scatter:
	if (ops_aborted())
		goto aborted;
	/* Written after every read: outputs may overlap inputs. */
	npu_scatter_dense(sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, res, in->out_h, in->out_w,
			  (uint32_t)in->out_c * 2);
aborted:
	free(bias);
	free(mult);
	free(shift);
out:
	free(res);
	free(patch);
	free(w);
}

static void matmul_i16(const struct npu_kern *kn, const struct npu_insn_matmul *in,
		       uint8_t *sram)
{
	const int8_t *bsrc = (const int8_t *)(sram + in->b);
	int16_t *w = malloc(sizeof(*w) * ((size_t)in->n * in->k + 1));
	int16_t *a = malloc(sizeof(*a) * ((size_t)in->k + 1));
	uint8_t *res = malloc((size_t)in->m * in->n * 2);
	int32_t lo = npu_act16_lo(in->act_min), hi = npu_act16_hi(in->act_max);
	int32_t *mult, *shift;
	int64_t *bias;

	if (!w || !a || !res)
		abort();
	if (load_tables16(sram, in->bias, in->quant, in->flags, in->n,
			  &bias, &mult, &shift))
		goto out;
	for (size_t i = 0; i < (size_t)in->n * in->k; i++)
		w[i] = (int16_t)(bsrc[i] - in->zp_b);
	for (uint32_t i = 0; i < in->m; i++) {
		if (ops_aborted())
			break;
		memcpy(a, sram + in->a + (size_t)i * in->a_stride, 2 * (size_t)in->k);
		row16(kn, a, w, in->k, in->n, bias, mult, shift, lo, hi,
		      res + (size_t)i * in->n * 2);
		ops_macs_done += (uint64_t)in->k * in->n;
	}
	if (!ops_aborted())
		npu_scatter_dense(sram + in->output, in->out_stride, 0, res, in->m, 1,
			  in->n * 2);
	free(bias);
	free(mult);
	free(shift);
out:
	free(res);
	free(a);
	free(w);
}

void npu_op_conv2d(const struct npu_insn_conv2d *in, uint8_t *sram)
{
	const struct npu_kern *kn = kern_get();
	struct npu_op_footprint fp;
	struct chan_tables t;
	struct out_target o;
	uint8_t table[256];
	const int8_t *dense = NULL;

	if (npu_op_conv2d_check(in, &fp))
		return;
	if (in->hdr.flags & NPU_INSN_I16) {
		conv2d_i16(kn, in, sram);
		return;
	}
	/* N:M sparse (ISA 1.6): the dense kernels on the expanded weights */
	if (NPU_SPARSE_M(in->flags)) {
		dense = npu_sparse_dense(sram + in->weight, (uint64_t)in->out_c * in->k_h * in->k_w,
					 in->in_c / in->groups, NPU_SPARSE_N(in->flags),
					 NPU_SPARSE_M(in->flags), (int8_t)in->zp_w);
		if (!dense)
			return;
	}
	if (load_tables(&t, sram, in->bias, in->quant, in->flags, in->out_c))
		return;
	if (in->flags & NPU_CONV_OUT_LUT)
		memcpy(table, sram + in->lut, sizeof(table));
	out_target_init(&o, &fp, sram + in->output, in->out_row_stride,
			in->out_pixel_stride, in->out_h, in->out_w, in->out_c);
	/* Zero insertion runs through im2col; the depthwise kernels lack it. */
	if (in->ins_h || in->ins_w)
		conv_gemm_inserted(kn, in, sram, &t, &o);
	else if (in->groups == in->in_c && in->groups == in->out_c)
		conv_depthwise(kn, in, sram, &t, &o);
	else
		conv_gemm(kn, in, sram, dense ? dense : (const int8_t *)(sram + in->weight),
			  &t, &o);
	if (ops_aborted()) {
		/* A partial result of an aborted job: never copied into SRAM. */
		free(o.tmp);
		free(t.bias);
		return;
	}
	if (in->flags & NPU_CONV_OUT_LUT)
		out_lut_apply(table, &o, in->out_h, in->out_w, in->out_c);
	out_target_finish(&o, sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, in->out_h, in->out_w, in->out_c);
	free(t.bias);
}

/* One GEMM over a chunk of MATMUL rows. */
struct matmul_job {
	const struct npu_kern *kn;
	const struct npu_insn_matmul *in;
	const struct out_target *o;
	const uint8_t *sram;
	struct npu_gemm proto;
	struct gemm_scratch *scr;
	uint32_t chunk;
};

static void matmul_chunk(void *arg, uint32_t item, unsigned int worker)
{
	const struct matmul_job *j = arg;
	const struct gemm_scratch *s = &j->scr[worker];
	uint32_t i0 = item * j->chunk;
	struct npu_gemm gm = j->proto;

	if (ops_aborted())
		return;
	gm.arow = s->arow;
	gm.orow = s->orow;
	gm.m = j->in->m - i0 < j->chunk ? j->in->m - i0 : j->chunk;
	for (uint32_t i = 0; i < gm.m; i++) {
		s->arow[i] = (const int8_t *)(j->sram + j->in->a) +
			     (size_t)(i0 + i) * j->in->a_stride;
		s->orow[i] = j->o->base + (size_t)(i0 + i) * j->o->rs;
	}
	fold_rows(j->kn, &gm, s->row);
	j->kn->gemm(&gm);
	ops_macs_done += (uint64_t)gm.m * gm.n * gm.k;
}

void npu_op_matmul(const struct npu_insn_matmul *in, uint8_t *sram)
{
	const struct npu_kern *kn = kern_get();
	struct npu_op_footprint fp;
	struct chan_tables t;
	struct out_target o;
	uint32_t chunk = slice_rows(in->k, in->n, 1024);
	uint8_t table[256];
	const int8_t *dense = NULL;

	if (npu_op_matmul_check(in, &fp))
		return;
	if (in->hdr.flags & NPU_INSN_I16) {
		matmul_i16(kn, in, sram);
		return;
	}
	if (NPU_SPARSE_M(in->flags)) {
		dense = npu_sparse_dense(sram + in->b, in->n, in->k, NPU_SPARSE_N(in->flags),
					 NPU_SPARSE_M(in->flags), (int8_t)in->zp_b);
		if (!dense)
			return;
	}
	if (load_tables(&t, sram, in->bias, in->quant, in->flags, in->n))
		return;
	if (in->flags & NPU_CONV_OUT_LUT)
		memcpy(table, sram + in->lut, sizeof(table));
	out_target_init(&o, &fp, sram + in->output, in->out_stride, 0,
			in->m, 1, in->n);

	unsigned int threads = ops_threads();
	struct matmul_job j = {
		.kn = kn, .in = in, .o = &o, .sram = sram,
		.chunk = par_chunk(in->m, (uint64_t)in->k * in->n, chunk, 12),
		.proto = {
			.b = dense ? dense : (const int8_t *)(sram + in->b), .ldb = in->k,
			.n = in->n, .k = in->k, .za = in->zp_a, .zb = in->zp_b,
			.rq = { t.col, t.mult, t.shift, in->zp_out,
				in->act_min, in->act_max },
		},
	};

	j.scr = gemm_scratch_alloc(threads, j.chunk, 0);
	fold_col(kn, &j.proto, t.bias, t.col);
	void *prep = gemm_prep(kn, &j.proto);

	ops_parallel((in->m + j.chunk - 1) / j.chunk, matmul_chunk, &j);
	free(prep);
	gemm_scratch_free(j.scr, threads);
	if (ops_aborted()) {
		/* A partial result of an aborted job: never copied into SRAM. */
		free(o.tmp);
		free(t.bias);
		return;
	}
	if (in->flags & NPU_CONV_OUT_LUT)
		out_lut_apply(table, &o, in->m, 1, in->n);
	out_target_finish(&o, sram + in->output, in->out_stride, 0, in->m, 1, in->n);
	free(t.bias);
}

/* ---------------------------------------------------------------------------
 * POOL, ELTWISE, LUT: vector-engine ops, plain C with channel-inner loops
 * the compiler vectorizes.
 */

/*
 * The vector ops with NPU_INSN_I16: the same loops over int16 elements
 * into a dense result, written after every read (outputs may overlap).
 */
static void pool_i16(const struct npu_insn_pool *in, uint8_t *sram)
{
	uint32_t c = in->c;
	int32_t lo = npu_act16_lo(in->act_min), hi = npu_act16_hi(in->act_max);
	uint8_t *res = malloc((size_t)in->out_h * in->out_w * c * 2);
	int64_t *acc = malloc(sizeof(*acc) * c);

	uint32_t poll = pool_poll_pixels(in), since_poll = 0;

	if (!res || !acc)
		abort();
	for (uint32_t oh = 0; oh < in->out_h; oh++) {
		int32_t h0 = (int32_t)(oh * in->stride_h) - in->pad_top;
		int32_t h1 = h0 + in->k_h;

		h1 = h1 > in->in_h ? in->in_h : h1;
		h0 = h0 < 0 ? 0 : h0;
		for (uint32_t ow = 0; ow < in->out_w; ow++) {
			int32_t w0 = (int32_t)(ow * in->stride_w) - in->pad_left;

			if (++since_poll == poll) {
				since_poll = 0;
				if (ops_aborted())
					goto aborted;
			}
			int32_t w1 = w0 + in->k_w;
			uint8_t *dst = res + ((size_t)oh * in->out_w + ow) * c * 2;
			int64_t count;

			w1 = w1 > in->in_w ? in->in_w : w1;
			w0 = w0 < 0 ? 0 : w0;
			count = (in->flags & NPU_POOL_COUNT_PAD) ?
				(int64_t)in->k_h * in->k_w :
				(int64_t)(h1 - h0) * (w1 - w0);
			for (uint32_t ch = 0; ch < c; ch++)
				acc[ch] = in->mode == NPU_POOL_MAX ? INT16_MIN : 0;
			for (int32_t ih = h0; ih < h1; ih++)
				for (int32_t iw = w0; iw < w1; iw++) {
					const uint8_t *src = sram + in->input +
							     (size_t)ih * in->in_row_stride +
							     (size_t)iw * in->in_pixel_stride;

					for (uint32_t ch = 0; ch < c; ch++) {
						int64_t x = npu_ld_i16(src + 2 * (size_t)ch);

						if (in->mode == NPU_POOL_MAX)
							acc[ch] = x > acc[ch] ? x : acc[ch];
						else
							acc[ch] += x;
					}
				}
			for (uint32_t ch = 0; ch < c; ch++) {
				int64_t v = in->mode == NPU_POOL_MAX ? acc[ch] :
					    npu_div_round(acc[ch], count);

				npu_st_i16(dst + 2 * (size_t)ch, npu_clamp64(v, lo, hi));
			}
		}
	}
	npu_scatter_dense(sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, res, in->out_h, in->out_w, c * 2);
aborted:
	free(acc);
	free(res);
}

/* ELTWISE with any int16 operand (NPU_INSN_I16 or 'types'). */
static int64_t elt_ld(const uint8_t *p, size_t i, int i16)
{
	return i16 ? npu_ld_i16(p + 2 * i) : (int8_t)p[i];
}

static void eltwise_i16(const struct npu_insn_eltwise *in, uint8_t *sram)
{
	uint32_t n = in->count, types = npu_elt_types(in);
	int a16 = !!(types & NPU_ELT_A16), b16 = !!(types & NPU_ELT_B16);
	int o16 = !!(types & NPU_ELT_OUT16);
	int32_t lo = o16 ? npu_act16_lo(in->act_min) : in->act_min;
	int32_t hi = o16 ? npu_act16_hi(in->act_max) : in->act_max;
	int64_t ma = in->mult_a, mb = in->mult_b, za = in->zp_a, zb = in->zp_b;
	int64_t rnd = (int64_t)1 << (in->shift - 1);
	uint8_t *res = malloc((size_t)n * 2);

	if (!res)
		abort();
	for (uint32_t i = 0, bi = 0; i < n; i++) {
		int64_t a = elt_ld(sram + in->a, i, a16) - za;
		int64_t b = elt_ld(sram + in->b, bi, b16) - zb;
		int64_t acc = in->mode == NPU_ELT_ADD ? a * ma + b * mb : a * b * ma;
		int32_t v = npu_clamp64(((acc + rnd) >> in->shift) + in->zp_out, lo, hi);

		if (o16)
			npu_st_i16(res + 2 * (size_t)i, v);
		else
			res[i] = (uint8_t)v;
		/* b's index: i, i mod channels, or 0, without a division */
		if (in->bcast == NPU_BCAST_NONE ||
		    (in->bcast == NPU_BCAST_CHANNEL && ++bi == in->channels))
			bi = in->bcast == NPU_BCAST_NONE ? i + 1 : 0;
	}
	memcpy(sram + in->output, res, (size_t)n * (o16 + 1));
	free(res);
}

static void lut_i16(const struct npu_insn_lut *in, uint8_t *sram)
{
	uint8_t table[513 * 2];
	uint8_t *res = malloc((size_t)in->count * 2);

	if (!res)
		abort();
	memcpy(table, sram + in->table, sizeof(table));
	for (uint32_t i = 0; i < in->count; i++)
		npu_st_i16(res + 2 * (size_t)i,
			   npu_lut16(table, npu_ld_i16(sram + in->input + 2 * (size_t)i)));
	memcpy(sram + in->output, res, (size_t)in->count * 2);
	free(res);
}

/*
 * RESIZE's column coordinates, the same for every output row: computed
 * once per op (three int64 divisions each) into [out_w][3] = x0, x1, fx.
 */
static uint32_t *resize_cols(const struct npu_insn_resize *in)
{
	uint32_t *cols = malloc(sizeof(*cols) * 3 * (size_t)in->out_w);

	if (!cols)
		abort();
	for (uint32_t ox = 0; ox < in->out_w; ox++)
		npu_resize_coord(ox, in->step_w, in->offset_w, in->den_w, in->in_w,
				 &cols[3 * ox], &cols[3 * ox + 1], &cols[3 * ox + 2]);
	return cols;
}

static void resize_i16(const struct npu_insn_resize *in, uint8_t *sram)
{
	uint32_t c = in->c;
	uint8_t *res = malloc((size_t)in->out_h * in->out_w * c * 2);
	uint32_t *cols = resize_cols(in);

	if (!res)
		abort();
	for (uint32_t oy = 0; oy < in->out_h; oy++) {
		uint32_t y0, y1, fy;

		npu_resize_coord(oy, in->step_h, in->offset_h, in->den_h, in->in_h,
				 &y0, &y1, &fy);
		const uint8_t *r0 = sram + in->input + (size_t)y0 * in->in_row_stride;
		const uint8_t *r1 = sram + in->input + (size_t)y1 * in->in_row_stride;

		for (uint32_t ox = 0; ox < in->out_w; ox++) {
			uint8_t *dst = res + ((size_t)oy * in->out_w + ox) * c * 2;
			uint32_t x0 = cols[3 * ox], x1 = cols[3 * ox + 1], fx = cols[3 * ox + 2];
			const uint8_t *a = r0 + (size_t)x0 * in->in_pixel_stride;

			if (in->mode == NPU_RESIZE_NEAREST) {
				memcpy(dst, a, (size_t)c * 2);
				continue;
			}
			const uint8_t *b = r0 + (size_t)x1 * in->in_pixel_stride;
			const uint8_t *d0 = r1 + (size_t)x0 * in->in_pixel_stride;
			const uint8_t *d1 = r1 + (size_t)x1 * in->in_pixel_stride;
			int64_t w00 = (int64_t)(65536 - fy) * (65536 - fx);
			int64_t w01 = (int64_t)(65536 - fy) * fx;
			int64_t w10 = (int64_t)fy * (65536 - fx);
			int64_t w11 = (int64_t)fy * fx;

			for (uint32_t ch = 0; ch < c; ch++) {
				size_t o = 2 * (size_t)ch;

				npu_st_i16(dst + o, (int32_t)((npu_ld_i16(a + o) * w00 +
							       npu_ld_i16(b + o) * w01 +
							       npu_ld_i16(d0 + o) * w10 +
							       npu_ld_i16(d1 + o) * w11 +
							       ((int64_t)1 << 31)) >> 32));
			}
		}
	}
	npu_scatter_dense(sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, res, in->out_h, in->out_w, c * 2);
	free(cols);
	free(res);
}

/* POOL (int8) over a band of output rows (npu_op_pool). */
struct pool_job {
	const struct npu_insn_pool *in;
	const uint8_t *sram;
	const struct out_target *o;
	int32_t *acc;		/* [threads][c] */
	uint32_t band;
	atomic_int aborted;	/* an item stopped at a poll */
};

static void pool_band(void *arg, uint32_t item, unsigned int worker)
{
	struct pool_job *j = arg;
	const struct npu_insn_pool *in = j->in;
	const struct out_target *o = j->o;
	uint32_t c = in->c;
	uint32_t poll = pool_poll_pixels(in), since_poll = 0;
	int32_t *acc = j->acc + (size_t)worker * c;
	uint32_t oh0 = item * j->band;
	uint32_t oh1 = in->out_h - oh0 < j->band ? in->out_h : oh0 + j->band;

	for (uint32_t oh = oh0; oh < oh1; oh++) {
		int32_t h0 = (int32_t)(oh * in->stride_h) - in->pad_top;
		int32_t h1 = h0 + in->k_h;

		h1 = h1 > in->in_h ? in->in_h : h1;
		h0 = h0 < 0 ? 0 : h0;
		for (uint32_t ow = 0; ow < in->out_w; ow++) {
			int32_t w0 = (int32_t)(ow * in->stride_w) - in->pad_left;
			int32_t w1 = w0 + in->k_w;
			int8_t *dst = o->base + oh * o->rs + ow * o->ps;
			int64_t count, valid;

			if (++since_poll == poll) {
				since_poll = 0;
				if (ops_aborted()) {
					atomic_store_explicit(&j->aborted, 1,
							      memory_order_relaxed);
					return;
				}
			}

			w1 = w1 > in->in_w ? in->in_w : w1;
			w0 = w0 < 0 ? 0 : w0;
			valid = (int64_t)(h1 - h0) * (w1 - w0);
			count = (in->flags & NPU_POOL_COUNT_PAD) ?
				(int64_t)in->k_h * in->k_w : valid;
			for (uint32_t ch = 0; ch < c; ch++)
				acc[ch] = in->mode == NPU_POOL_MAX ? -128 : 0;
			for (int32_t ih = h0; ih < h1; ih++)
				for (int32_t iw = w0; iw < w1; iw++) {
					const int8_t *src = (const int8_t *)j->sram + in->input +
							    (size_t)ih * in->in_row_stride +
							    (size_t)iw * in->in_pixel_stride;

					if (in->mode == NPU_POOL_MAX)
						for (uint32_t ch = 0; ch < c; ch++)
							acc[ch] = src[ch] > acc[ch] ? src[ch] : acc[ch];
					else
						for (uint32_t ch = 0; ch < c; ch++)
							acc[ch] += src[ch];
				}
			for (uint32_t ch = 0; ch < c; ch++) {
				/* Padded positions add zero to the sum, at most to the count. */
				int32_t v = in->mode == NPU_POOL_MAX ?
					    acc[ch] - in->zp_in :
					    npu_div_round(acc[ch] - valid * in->zp_in, count);

				dst[ch] = (int8_t)npu_clamp64((int64_t)v + in->zp_out,
							      in->act_min, in->act_max);
			}
		}
	}
}

void npu_op_pool(const struct npu_insn_pool *in, uint8_t *sram)
{
	struct npu_op_footprint fp;
	struct out_target o;
	unsigned int threads = ops_threads();
	struct pool_job j = { .in = in, .sram = sram, .o = &o };

	if (npu_op_pool_check(in, &fp))
		return;
	if (in->hdr.flags & NPU_INSN_I16) {
		pool_i16(in, sram);
		return;
	}
	atomic_init(&j.aborted, 0);
	j.acc = malloc(sizeof(*j.acc) * in->c * threads);
	if (!j.acc)
		abort();
	out_target_init(&o, &fp, sram + in->output, in->out_row_stride,
			in->out_pixel_stride, in->out_h, in->out_w, in->c);
	j.band = par_chunk(in->out_h, (uint64_t)in->out_w * in->c * in->k_h * in->k_w,
			   in->out_h, 1);
	ops_parallel((in->out_h + j.band - 1) / j.band, pool_band, &j);
	free(j.acc);
	/* A band stopped early: a partial result. (Bands that ran whole are not.) */
	if (atomic_load_explicit(&j.aborted, memory_order_relaxed)) {
		/* A partial result: never copied into SRAM. */
		free(o.tmp);
		return;
	}
	out_target_finish(&o, sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, in->out_h, in->out_w, in->c);
}

/* A channel broadcast shorter than this runs over b repeated to about this length. */
#define NPU_ELT_MIN_PERIOD	256

/*
 * The vector ops count an element as this much work against
 * NPU_PAR_MIN_WORK: split from 256 Ki elements.
 */
#define NPU_PAR_VEC_WORK	16

/* ELTWISE over elements [item * range, + range) (npu_op_eltwise). */
struct elt_job {
	const struct npu_kern *kn;
	const struct npu_elt *e;
	const int8_t *a, *b;
	int8_t *out;
	uint32_t n, bcast;
	uint32_t period;	/* channel broadcast: the length of b, else 0 */
	uint32_t range;		/* a multiple of period */
};

static void elt_range(void *arg, uint32_t item, unsigned int worker)
{
	const struct elt_job *j = arg;
	uint32_t r0 = item * j->range;
	uint32_t r1 = j->n - r0 < j->range ? j->n : r0 + j->range;

	(void)worker;
	if (!j->period) {
		j->kn->elt_i8(j->e, j->a + r0,
			      j->bcast == NPU_BCAST_SCALAR ? j->b : j->b + r0,
			      j->bcast == NPU_BCAST_SCALAR, j->out + r0, r1 - r0);
		return;
	}
	for (uint32_t i0 = r0; i0 < r1; i0 += j->period)
		j->kn->elt_i8(j->e, j->a + i0, j->b, 0, j->out + i0,
			      r1 - i0 < j->period ? r1 - i0 : j->period);
}

/* LUT over elements [item * range, + range) (npu_op_lut). */
struct lut_job {
	const struct npu_kern *kn;
	const uint8_t *table, *src;
	uint8_t *dst;
	uint32_t n, range;
};

static void lut_range(void *arg, uint32_t item, unsigned int worker)
{
	const struct lut_job *j = arg;
	uint32_t r0 = item * j->range;
	uint32_t r1 = j->n - r0 < j->range ? j->n : r0 + j->range;

	(void)worker;
	j->kn->lut_i8(j->table, j->src + r0, j->dst + r0, r1 - r0);
}

void npu_op_eltwise(const struct npu_insn_eltwise *in, uint8_t *sram)
{
	const struct npu_kern *kn = kern_get();
	struct npu_op_footprint fp;
	const int8_t *a, *b;
	int8_t *out, *tmp = NULL;
	int8_t rep[2 * NPU_ELT_MIN_PERIOD];
	uint32_t n = in->count;
	struct npu_elt e = {
		.mode = in->mode, .shift = in->shift,
		.za = in->zp_a, .zb = in->zp_b, .ma = in->mult_a, .mb = in->mult_b,
		.zp_out = in->zp_out, .lo = in->act_min, .hi = in->act_max,
	};

	if (npu_op_eltwise_check(in, &fp))
		return;
	if (npu_elt_types(in)) {
		eltwise_i16(in, sram);
		return;
	}
	a = (const int8_t *)sram + in->a;
	b = (const int8_t *)sram + in->b;
	out = (int8_t *)sram + in->output;
	/* Element i only reads a[i] (and b[i]): exact aliasing is safe in place. */
	if ((npu_ranges_overlap(fp.writes[0], fp.reads[0]) && in->a != in->output) ||
	    (npu_ranges_overlap(fp.writes[0], fp.reads[1]) &&
	     (in->bcast != NPU_BCAST_NONE || in->b != in->output))) {
		tmp = malloc(n);
		if (!tmp)
			abort();
		out = tmp;
	}

	struct elt_job j = {
		.kn = kn, .e = &e, .a = a, .b = b, .out = out, .n = n,
		.bcast = in->bcast,
	};

	if (in->bcast == NPU_BCAST_CHANNEL) {
		j.period = in->channels;
		/* Few channels: whole copies of b, so each kernel call runs long. */
		if (j.period < NPU_ELT_MIN_PERIOD) {
			uint32_t copies = (NPU_ELT_MIN_PERIOD + j.period - 1) / j.period;

			for (uint32_t r = 0; r < copies; r++)
				memcpy(rep + (size_t)r * j.period, b, j.period);
			j.period *= copies;
			j.b = rep;
		}
	}
	/* Ranges of whole periods of b, or of whole cache lines. */
	j.range = par_chunk(n, NPU_PAR_VEC_WORK, n ? n : 1, j.period ? j.period : 64);
	ops_parallel((n + j.range - 1) / j.range, elt_range, &j);
	if (tmp) {
		memcpy(sram + in->output, tmp, n);
		free(tmp);
	}
}

void npu_op_lut(const struct npu_insn_lut *in, uint8_t *sram)
{
	struct npu_op_footprint fp;
	uint8_t table[256];
	const uint8_t *src;
	uint8_t *dst, *tmp = NULL;

	if (npu_op_lut_check(in, &fp))
		return;
	if (in->hdr.flags & NPU_INSN_I16) {
		lut_i16(in, sram);
		return;
	}
	/* A private copy of the table makes a table/output overlap harmless. */
	memcpy(table, sram + in->table, 256);
	src = sram + in->input;
	dst = sram + in->output;
	if (npu_ranges_overlap(fp.writes[0], fp.reads[0]) && in->input != in->output) {
		tmp = malloc(in->count);
		if (!tmp)
			abort();
		dst = tmp;
	}
	struct lut_job j = {
		.kn = kern_get(), .table = table, .src = src, .dst = dst,
		.n = in->count,
	};

	j.range = par_chunk(j.n, NPU_PAR_VEC_WORK, j.n ? j.n : 1, 64);
	ops_parallel((j.n + j.range - 1) / j.range, lut_range, &j);
	if (tmp) {
		memcpy(sram + in->output, tmp, in->count);
		free(tmp);
	}
}

/*
 * RESIZE: per output pixel the two source rows / columns and weights are
 * computed once, then a channel-inner loop the compiler vectorizes.
 */
/* RESIZE (int8) over a band of output rows (npu_op_resize). */
struct resize_job {
	const struct npu_insn_resize *in;
	const uint8_t *sram;
	const struct out_target *o;
	const uint32_t *cols;
	uint32_t band;
};

static void resize_band(void *arg, uint32_t item, unsigned int worker);

void npu_op_resize(const struct npu_insn_resize *in, uint8_t *sram)
{
	struct npu_op_footprint fp;
	struct out_target o;
	uint32_t c = in->c;
	uint32_t *cols;

	if (npu_op_resize_check(in, &fp))
		return;
	if (in->hdr.flags & NPU_INSN_I16) {
		resize_i16(in, sram);
		return;
	}
	out_target_init(&o, &fp, sram + in->output, in->out_row_stride,
			in->out_pixel_stride, in->out_h, in->out_w, c);
	cols = resize_cols(in);

	struct resize_job j = {
		.in = in, .sram = sram, .o = &o, .cols = cols,
		.band = par_chunk(in->out_h, (uint64_t)in->out_w * c *
				  (in->mode == NPU_RESIZE_NEAREST ? 1 : 4), in->out_h, 1),
	};

	ops_parallel((in->out_h + j.band - 1) / j.band, resize_band, &j);
	out_target_finish(&o, sram + in->output, in->out_row_stride,
			  in->out_pixel_stride, in->out_h, in->out_w, c);
	free(cols);
}

static void resize_band(void *arg, uint32_t item, unsigned int worker)
{
	const struct resize_job *j = arg;
	const struct npu_insn_resize *in = j->in;
	const uint8_t *sram = j->sram;
	const struct out_target o = *j->o;
	const uint32_t *cols = j->cols;
	uint32_t c = in->c;
	uint32_t oy0 = item * j->band;
	uint32_t oy1 = in->out_h - oy0 < j->band ? in->out_h : oy0 + j->band;

	(void)worker;
	for (uint32_t oy = oy0; oy < oy1; oy++) {
		uint32_t y0, y1, fy;

		npu_resize_coord(oy, in->step_h, in->offset_h, in->den_h, in->in_h,
				 &y0, &y1, &fy);
		const int8_t *r0 = (const int8_t *)sram + in->input +
				   (size_t)y0 * in->in_row_stride;
		const int8_t *r1 = (const int8_t *)sram + in->input +
				   (size_t)y1 * in->in_row_stride;

		for (uint32_t ox = 0; ox < in->out_w; ox++) {
			int8_t *dst = o.base + oy * o.rs + ox * o.ps;
			uint32_t x0 = cols[3 * ox], x1 = cols[3 * ox + 1], fx = cols[3 * ox + 2];
			const int8_t *a = r0 + (size_t)x0 * in->in_pixel_stride;

			if (in->mode == NPU_RESIZE_NEAREST) {
				memcpy(dst, a, c);
				continue;
			}
			const int8_t *b = r0 + (size_t)x1 * in->in_pixel_stride;
			const int8_t *d0 = r1 + (size_t)x0 * in->in_pixel_stride;
			const int8_t *d1 = r1 + (size_t)x1 * in->in_pixel_stride;
			int64_t w00 = (int64_t)(65536 - fy) * (65536 - fx);
			int64_t w01 = (int64_t)(65536 - fy) * fx;
			int64_t w10 = (int64_t)fy * (65536 - fx);
			int64_t w11 = (int64_t)fy * fx;

			for (uint32_t ch = 0; ch < c; ch++)
				dst[ch] = (int8_t)((a[ch] * w00 + b[ch] * w01 +
						    d0[ch] * w10 + d1[ch] * w11 +
						    ((int64_t)1 << 31)) >> 32);
		}
	}
}
