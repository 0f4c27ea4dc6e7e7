// SPDX-License-Identifier: MIT
/*
 * libnpu_serve_ocr.so: PaddleOCR's pre- and post-processing as npu-serve
 * backend steps (npu_serve_backend.h), so that an ensemble serves OCR as
 * one model: an encoded image in, text lines out. The processing is
 * npu-ocr's own (examples/ocr/ppocr.c), so the ensemble reads what
 * `npu-ocr` reads.
 *
 *   decode      IMAGE (BYTES [1]: a PNG or JPEG file)
 *               -> DET_INPUT (FP32 [1,3,H,W]), RGB (UINT8 [h,w,3]),
 *                  DET_SIZE (INT32 [2]: the resized image's w, h in the input)
 *   text_boxes  DET_MAP (FP32 [1,1,H,W]), RGB, DET_SIZE
 *               -> REC_INPUT (FP32 [N,3,48,W]), BOXES (FP32 [N,4,2]: corners
 *                  clockwise from the top-left), BOX_SCORES (FP32 [N])
 *   ctc_decode  REC_OUTPUT (FP32 [N,T,C]), BOXES
 *               -> TEXT (BYTES [M]), TEXT_BOXES (FP32 [M,4,2]), SCORES (FP32 [M]):
 *                  the lines read with a score >= drop_score, in reading order
 *
 * Parameters (config.pbtxt, all optional but 'dict'): decode: limit_side
 * (960), limit_type (max|min), min_side (64), max_side (4000), max_pixels
 * (64000000), pad (1: the det input's sides are multiples of 32; an NPU
 * model takes 128 to share plans); text_boxes: thresh (0.3), box_thresh
 * (0.6), unclip_ratio (1.5), rec_widths ("160,320,480,640,960,1280,1920":
 * every crop of an image is read at the narrowest width that holds the
 * widest, so rec runs once per image); ctc_decode: dict (the character
 * list, a file: relative to the model's directory or cache:PATH),
 * drop_score (0.5), space_thresh (0.008), latin_fixes (on|off).
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#include <npu/npu_serve_backend.h>

#include "ppocr.h"

#define REC_H 48
#define MAX_BOXES 1000
#define MAX_WIDTHS 16

/* ---- Parameters ------------------------------------------------------------ */

static int param_num(const struct npu_serve_host *h, struct npu_serve_context *ctx,
		     const char *key, double def, double lo, double hi, double *out)
{
	const char *v = h->param(ctx, key);
	char *end;

	*out = def;
	if (!v)
		return 0;
	errno = 0;
	*out = strtod(v, &end);
	if (errno || end == v || *end || !(*out >= lo && *out <= hi)) {
		h->error(ctx, "parameter %s '%s': expected a number in [%g, %g]", key, v, lo, hi);
		return -1;
	}
	return 0;
}

/* ---- decode ---------------------------------------------------------------- */

struct decode_state {
	struct det_resize resize;
	long long max_pixels;
	int pad;
};

static const struct npu_serve_io decode_in[] = { { "IMAGE", NPU_TYPE_STRING, 1 } };
static const struct npu_serve_io decode_out[] = {
	{ "DET_INPUT", NPU_TYPE_FLOAT, 4 },
	{ "RGB", NPU_TYPE_UINT8, 3 },
	{ "DET_SIZE", NPU_TYPE_INT32, 1 },
};

static int decode_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
			 void **state)
{
	struct decode_state *s = calloc(1, sizeof(*s));
	const char *type = h->param(ctx, "limit_type");
	double v;

	if (!s) {
		h->error(ctx, "out of memory");
		return -1;
	}
	det_resize_default(&s->resize);
	if (type && strcmp(type, "max") && strcmp(type, "min")) {
		h->error(ctx, "parameter limit_type '%s': expected max or min", type);
		goto fail;
	}
	s->resize.limit_min = type && !strcmp(type, "min");
	if (param_num(h, ctx, "limit_side", 960, 32, 8192, &v))
		goto fail;
	s->resize.limit_side = (int)v;
	if (param_num(h, ctx, "min_side", 64, 0, 8192, &v))
		goto fail;
	s->resize.min_side = (int)v;
	if (param_num(h, ctx, "max_side", 4000, 32, 16384, &v))
		goto fail;
	s->resize.max_side = (int)v;
	if (param_num(h, ctx, "max_pixels", 64000000, 1, 1e9, &v))
		goto fail;
	s->max_pixels = (long long)v;
	if (param_num(h, ctx, "pad", 1, 1, 1024, &v))
		goto fail;
	s->pad = (int)v;
	*state = s;
	return 0;
fail:
	free(s);
	return -1;
}

struct jpeg_fail {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

static void jpeg_fail_exit(j_common_ptr cinfo)
{
	struct jpeg_fail *f = (struct jpeg_fail *)cinfo->err;

	cinfo->err->format_message(cinfo, f->msg);
	longjmp(f->jump, 1);
}

static void jpeg_quiet(j_common_ptr cinfo, int level)
{
	(void)cinfo;
	(void)level;
}

static int decode_jpeg(const unsigned char *p, size_t n, long long max_pixels,
		       struct rgb_image *img, char *err, size_t err_size)
{
	struct jpeg_decompress_struct cinfo;
	struct jpeg_fail fail;
	unsigned char *volatile data = NULL;

	memset(&cinfo, 0, sizeof(cinfo));
	cinfo.err = jpeg_std_error(&fail.mgr);
	fail.mgr.error_exit = jpeg_fail_exit;
	fail.mgr.emit_message = jpeg_quiet;
	if (setjmp(fail.jump)) {
		snprintf(err, err_size, "corrupt or truncated JPEG (libjpeg: %s)", fail.msg);
		jpeg_destroy_decompress(&cinfo);
		free(data);
		return -1;
	}
	jpeg_create_decompress(&cinfo);
	jpeg_mem_src(&cinfo, p, (unsigned long)n);
	jpeg_read_header(&cinfo, TRUE);
	if ((long long)cinfo.image_width * cinfo.image_height > max_pixels) {
		snprintf(err, err_size, "a %ux%u image is above the limit of %lld pixels",
			 cinfo.image_width, cinfo.image_height, max_pixels);
		jpeg_destroy_decompress(&cinfo);
		return -1;
	}
	cinfo.out_color_space = JCS_RGB;
	jpeg_start_decompress(&cinfo);
	data = malloc((size_t)cinfo.output_width * cinfo.output_height * 3);
	if (!data) {
		snprintf(err, err_size, "out of memory for a %ux%u image", cinfo.output_width,
			 cinfo.output_height);
		jpeg_destroy_decompress(&cinfo);
		return -1;
	}
	while (cinfo.output_scanline < cinfo.output_height) {
		JSAMPROW row = data + (size_t)cinfo.output_scanline * cinfo.output_width * 3;

		jpeg_read_scanlines(&cinfo, &row, 1);
	}
	jpeg_finish_decompress(&cinfo);
	img->width = (int)cinfo.output_width;
	img->height = (int)cinfo.output_height;
	img->data = data;
	jpeg_destroy_decompress(&cinfo);
	return 0;
}

static int decode_png(const unsigned char *p, size_t n, long long max_pixels,
		      struct rgb_image *img, char *err, size_t err_size)
{
	png_color white = { 255, 255, 255 };
	png_image png;

	memset(&png, 0, sizeof(png));
	png.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&png, p, n)) {
		snprintf(err, err_size, "corrupt or truncated PNG header (libpng: %s)", png.message);
		return -1;
	}
	if ((long long)png.width * png.height > max_pixels) {
		snprintf(err, err_size, "a %ux%u image is above the limit of %lld pixels", png.width,
			 png.height, max_pixels);
		png_image_free(&png);
		return -1;
	}
	png.format = PNG_FORMAT_RGB;
	img->width = (int)png.width;
	img->height = (int)png.height;
	img->data = malloc((size_t)png.width * png.height * 3);
	if (!img->data) {
		snprintf(err, err_size, "out of memory for a %ux%u image", png.width, png.height);
		png_image_free(&png);
		return -1;
	}
	if (!png_image_finish_read(&png, &white, img->data, 0, NULL)) {
		snprintf(err, err_size, "truncated or corrupt PNG data (libpng: %s)", png.message);
		free(img->data);
		img->data = NULL;
		return -1;
	}
	return 0;
}

static int decode_execute(void *state, const struct npu_serve_host *h,
			  struct npu_serve_context *ctx)
{
	static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	struct decode_state *s = state;
	const struct npu_serve_tensor *in = h->input(ctx, 0);
	const unsigned char *p = in->data;
	struct rgb_image img = { 0 };
	char err[256];
	uint32_t len;
	int64_t dims[4];
	int w, hh, pw, ph, rc;
	float *x;
	unsigned char *rgb;
	int32_t *size;

	if (in->rank != 1 || in->dims[0] != 1 || in->nbytes < 4) {
		h->error(ctx, "IMAGE must hold one element (an encoded image), not %lld",
			 in->rank == 1 ? (long long)in->dims[0] : -1LL);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	memcpy(&len, p, 4);
	len = le32toh(len);
	p += 4;
	if (len != in->nbytes - 4) {
		h->error(ctx, "IMAGE: the element's length %u does not match its %zu bytes", len,
			 in->nbytes - 4);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	if (len >= 8 && !memcmp(p, png_sig, 8))
		rc = decode_png(p, len, s->max_pixels, &img, err, sizeof(err));
	else if (len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
		rc = decode_jpeg(p, len, s->max_pixels, &img, err, sizeof(err));
	else {
		snprintf(err, sizeof(err), "IMAGE is neither a PNG nor a JPEG file (%u bytes)", len);
		rc = -1;
	}
	if (rc) {
		h->error(ctx, "%s", err);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	det_input_size(&s->resize, img.width, img.height, &w, &hh);
	pw = (w + s->pad - 1) / s->pad * s->pad;
	ph = (hh + s->pad - 1) / s->pad * s->pad;
	dims[0] = 1;
	dims[1] = 3;
	dims[2] = ph;
	dims[3] = pw;
	x = h->output(ctx, 0, 4, dims, sizeof(float) * 3 * (size_t)pw * ph);
	dims[0] = img.height;
	dims[1] = img.width;
	dims[2] = 3;
	rgb = x ? h->output(ctx, 1, 3, dims, (size_t)img.width * img.height * 3) : NULL;
	dims[0] = 2;
	size = rgb ? h->output(ctx, 2, 1, dims, 2 * sizeof(int32_t)) : NULL;
	if (!size) {
		free(img.data);
		return NPU_SERVE_STEP_FAILED;
	}
	det_input(&img, w, hh, pw, ph, x);
	memcpy(rgb, img.data, (size_t)img.width * img.height * 3);
	size[0] = w;
	size[1] = hh;
	free(img.data);
	return 0;
}

/* ---- text_boxes -------------------------------------------------------------- */

struct boxes_state {
	struct db_opts db;
	int widths[MAX_WIDTHS];
	int num_widths;
	struct quad q[MAX_BOXES];
};

static const struct npu_serve_io boxes_in[] = {
	{ "DET_MAP", NPU_TYPE_FLOAT, 4 },
	{ "RGB", NPU_TYPE_UINT8, 3 },
	{ "DET_SIZE", NPU_TYPE_INT32, 1 },
};
static const struct npu_serve_io boxes_out[] = {
	{ "REC_INPUT", NPU_TYPE_FLOAT, 4 },
	{ "BOXES", NPU_TYPE_FLOAT, 3 },
	{ "BOX_SCORES", NPU_TYPE_FLOAT, 1 },
};

static int boxes_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
			void **state)
{
	struct boxes_state *s = calloc(1, sizeof(*s));
	const char *list = h->param(ctx, "rec_widths");
	double v;

	if (!s) {
		h->error(ctx, "out of memory");
		return -1;
	}
	db_opts_default(&s->db);
	if (param_num(h, ctx, "thresh", 0.3, 0, 1, &v))
		goto fail;
	s->db.thresh = (float)v;
	if (param_num(h, ctx, "box_thresh", 0.6, 0, 1, &v))
		goto fail;
	s->db.box_thresh = (float)v;
	if (param_num(h, ctx, "unclip_ratio", 1.5, 0, 10, &v))
		goto fail;
	s->db.unclip_ratio = (float)v;
	if (!list)
		list = "160,320,480,640,960,1280,1920";
	while (*list) {
		char *end;
		long w = strtol(list, &end, 10);

		if (end == list || w < 8 || w > 8192 || s->num_widths == MAX_WIDTHS ||
		    (s->num_widths && w <= s->widths[s->num_widths - 1]) || (*end && *end != ',')) {
			h->error(ctx, "parameter rec_widths: expected up to %d ascending widths in [8, 8192], separated by commas",
				 MAX_WIDTHS);
			goto fail;
		}
		s->widths[s->num_widths++] = (int)w;
		list = *end ? end + 1 : end;
	}
	if (!s->num_widths) {
		h->error(ctx, "parameter rec_widths is empty");
		goto fail;
	}
	*state = s;
	return 0;
fail:
	free(s);
	return -1;
}

static int boxes_execute(void *state, const struct npu_serve_host *h,
			 struct npu_serve_context *ctx)
{
	struct boxes_state *s = state;
	const struct npu_serve_tensor *map = h->input(ctx, 0), *rgb = h->input(ctx, 1);
	const struct npu_serve_tensor *size = h->input(ctx, 2);
	struct rgb_image img;
	struct crop c;
	int32_t sz[2];
	int64_t dims[4];
	int n, i, k, widest = 0, width, bucket;
	float *x, *b, *sc;
	size_t plane;

	if (map->rank != 4 || map->dims[0] != 1 || map->dims[1] != 1 || size->dims[0] != 2 ||
	    rgb->dims[2] != 3) {
		h->error(ctx, "DET_MAP must be [1,1,H,W], RGB [h,w,3] and DET_SIZE [2]");
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	memcpy(sz, size->data, sizeof(sz));
	if (sz[0] < 1 || sz[1] < 1 || sz[0] > map->dims[3] || sz[1] > map->dims[2]) {
		h->error(ctx, "DET_SIZE %dx%d is outside the %lldx%lld map", sz[0], sz[1],
			 (long long)map->dims[3], (long long)map->dims[2]);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	img.width = (int)rgb->dims[1];
	img.height = (int)rgb->dims[0];
	img.data = (unsigned char *)rgb->data;
	n = db_boxes(map->data, (int)map->dims[3], (int)map->dims[2], sz[0], sz[1], &s->db,
		     img.width, img.height, s->q, MAX_BOXES);
	if (n < 0) {
		h->error(ctx, "out of memory in DB post-processing");
		return NPU_SERVE_STEP_FAILED;
	}
	for (i = 0; i < n; i++) {
		crop_of(&s->q[i], &c);
		width = crop_rec_width(&c, REC_H);
		if (width > widest)
			widest = width;
	}
	/* The narrowest width that holds the widest crop, else the widest. */
	for (k = 0; k < s->num_widths - 1 && s->widths[k] < widest; k++)
		;
	bucket = s->widths[k];
	dims[0] = n;
	dims[1] = 3;
	dims[2] = REC_H;
	dims[3] = bucket;
	plane = (size_t)3 * REC_H * (size_t)bucket;
	x = h->output(ctx, 0, 4, dims, sizeof(float) * plane * (size_t)n);
	dims[1] = 4;
	dims[2] = 2;
	b = x ? h->output(ctx, 1, 3, dims, sizeof(float) * 8 * (size_t)n) : NULL;
	sc = b ? h->output(ctx, 2, 1, dims, sizeof(float) * (size_t)n) : NULL;
	if (!sc)
		return NPU_SERVE_STEP_FAILED;
	for (i = 0; i < n; i++) {
		crop_of(&s->q[i], &c);
		rec_input(&img, &c, REC_H, crop_rec_width(&c, REC_H), bucket,
			  x + plane * (size_t)i);
		for (k = 0; k < 4; k++) {
			b[i * 8 + k * 2] = s->q[i].x[k];
			b[i * 8 + k * 2 + 1] = s->q[i].y[k];
		}
		sc[i] = s->q[i].score;
	}
	return 0;
}

/* ---- ctc_decode ------------------------------------------------------------- */

struct ctc_state {
	struct ctc_dict dict;
	struct ctc_opts opts;
	float drop_score;
};

static const struct npu_serve_io ctc_in[] = {
	{ "REC_OUTPUT", NPU_TYPE_FLOAT, 3 },
	{ "BOXES", NPU_TYPE_FLOAT, 3 },
};
static const struct npu_serve_io ctc_out[] = {
	{ "TEXT", NPU_TYPE_STRING, 1 },
	{ "TEXT_BOXES", NPU_TYPE_FLOAT, 3 },
	{ "SCORES", NPU_TYPE_FLOAT, 1 },
};

static int ctc_create(const struct npu_serve_host *h, struct npu_serve_context *ctx,
		      void **state)
{
	struct ctc_state *s = calloc(1, sizeof(*s));
	const char *latin = h->param(ctx, "latin_fixes");
	char path[4096], err[512];
	double v;

	if (!s) {
		h->error(ctx, "out of memory");
		return -1;
	}
	if (h->file(ctx, "dict", path, sizeof(path)))
		goto fail;
	if (ctc_dict_load(path, &s->dict, err, sizeof(err))) {
		h->error(ctx, "%s", err);
		goto fail;
	}
	if (param_num(h, ctx, "drop_score", 0.5, 0, 1, &v))
		goto fail;
	s->drop_score = (float)v;
	if (param_num(h, ctx, "space_thresh", 0.008, 0, 1, &v))
		goto fail;
	s->opts.space_thresh = (float)v;
	if (latin && strcmp(latin, "on") && strcmp(latin, "off")) {
		h->error(ctx, "parameter latin_fixes '%s': expected on or off", latin);
		goto fail;
	}
	s->opts.latin_fixes = !latin || !strcmp(latin, "on");
	*state = s;
	return 0;
fail:
	ctc_dict_free(&s->dict);
	free(s);
	return -1;
}

static void ctc_destroy(void *state)
{
	struct ctc_state *s = state;

	ctc_dict_free(&s->dict);
	free(s);
}

#define CTC_LINE_MAX 1024

static int ctc_execute(void *state, const struct npu_serve_host *h,
		       struct npu_serve_context *ctx)
{
	struct ctc_state *s = state;
	const struct npu_serve_tensor *out = h->input(ctx, 0), *boxes = h->input(ctx, 1);
	int64_t n = out->dims[0], steps = out->dims[1], classes = out->dims[2], i, kept = 0;
	char (*text)[CTC_LINE_MAX];
	float *score;
	size_t total = 0;
	int64_t dims[3];
	unsigned char *t;
	float *b, *sc;
	int rc = NPU_SERVE_STEP_FAILED;

	if (boxes->dims[0] != n || boxes->dims[1] != 4 || boxes->dims[2] != 2) {
		h->error(ctx, "BOXES is not [%lld,4,2] for %lld recognized crops",
			 (long long)n, (long long)n);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	if (classes != s->dict.num_keys) {
		h->error(ctx, "REC_OUTPUT has %lld classes, the dictionary %d", (long long)classes,
			 s->dict.num_keys);
		return NPU_SERVE_STEP_BAD_INPUT;
	}
	text = malloc(sizeof(*text) * (size_t)(n ? n : 1));
	score = malloc(sizeof(*score) * (size_t)(n ? n : 1));
	if (!text || !score) {
		h->error(ctx, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		score[i] = ctc_decode((const float *)out->data + i * steps * classes, steps, classes,
				      &s->dict, &s->opts, text[i], CTC_LINE_MAX);
		if (text[i][0] && score[i] >= s->drop_score)
			total += 4 + strlen(text[i]);
		else
			text[i][0] = 0;
	}
	for (i = 0; i < n; i++)
		kept += text[i][0] != 0;
	dims[0] = kept;
	dims[1] = 4;
	dims[2] = 2;
	t = h->output(ctx, 0, 1, dims, total);
	b = t ? h->output(ctx, 1, 3, dims, sizeof(float) * 8 * (size_t)kept) : NULL;
	sc = b ? h->output(ctx, 2, 1, dims, sizeof(float) * (size_t)kept) : NULL;
	if (!sc)
		goto out;
	for (i = 0; i < n; i++) {
		uint32_t len = (uint32_t)strlen(text[i]), le = htole32(len);

		if (!len)
			continue;
		memcpy(t, &le, 4);
		memcpy(t + 4, text[i], len);
		t += 4 + len;
		memcpy(b, (const float *)boxes->data + i * 8, sizeof(float) * 8);
		b += 8;
		*sc++ = score[i];
	}
	rc = 0;
out:
	free(text);
	free(score);
	return rc;
}

/* ---- The library's steps ------------------------------------------------------ */

static void free_state(void *state)
{
	free(state);
}

static const struct npu_serve_step steps[] = {
	{ "decode", decode_in, 1, decode_out, 3, decode_create, decode_execute, free_state },
	{ "text_boxes", boxes_in, 3, boxes_out, 3, boxes_create, boxes_execute, free_state },
	{ "ctc_decode", ctc_in, 2, ctc_out, 3, ctc_create, ctc_execute, ctc_destroy },
};

const struct npu_serve_step *npu_serve_backend_steps(uint32_t abi, size_t *count);

const struct npu_serve_step *npu_serve_backend_steps(uint32_t abi, size_t *count)
{
	if (abi != NPU_SERVE_BACKEND_ABI)
		return NULL;
	*count = sizeof(steps) / sizeof(steps[0]);
	return steps;
}
