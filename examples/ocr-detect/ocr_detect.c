// SPDX-License-Identifier: MIT
/*
 * ocr-detect - find text boxes in a PNG with a PaddleOCR PP-OCR detection
 * model, through libnpu-user's public API only (<npu/npu.h>, pkg-config
 * libnpu-user). The shortest honest path from "I have an ONNX model and an
 * image" to "my program runs it on the NPU":
 *
 *   1. npu_engine_create()         threads and devices, once per process
 *   2. npu_model_load_file()       import the ONNX file for a device
 *   3. npu_model_get_plan()        plan the model for this image's H x W
 *                                  (cached: the next image of that size
 *                                  plans nothing)
 *   4. npu_session_run()           run on one NCHW float tensor
 *   5. npu_session_output()        read the 1x1xHxW text probability map
 *
 * and everything around it is ordinary application code (text_boxes.c):
 * PNG in, PP-OCR normalization, DB post-processing into boxes, PNG out.
 *
 *   ocr-detect MODEL.onnx IMAGE.png|DIR... [--device cpu|sim|accel]
 *              [--threads N] [--overlay OUT.png] [--truth BOXES.txt]
 *              [--calib DIR] [--save-input FILE.npy]
 *
 * Several images (or directories of *.png) run through one model and one
 * session: each distinct input size is planned once, the next image of
 * that size reuses the plan.
 *
 * Exit status: 0 on success, 1 on any error (with a message on stderr),
 * 2 on a usage error, 3 when --truth is given and some truth line has no
 * detected box with IoU >= 0.5.
 */
#define _POSIX_C_SOURCE 200809L	/* clock_gettime */

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <npu/npu.h>
#include <npu/npu_model.h>

#include "text_boxes.h"

#define MAX_BOXES 1024
#define MAX_TRUTH 256
#define MATCH_IOU 0.5f

#define MAX_IMAGES 4096

struct options {
	const char *model_path;
	const char *images[MAX_IMAGES];	/* files or directories */
	int num_images;
	const char *device;
	int threads;
	const char *overlay_path;
	const char *truth_path;
	const char *calib_dir;
	const char *save_input_path;
};

struct truth_line {
	struct text_box box;
	char text[256];
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: ocr-detect MODEL.onnx IMAGE.png|DIR... [--device cpu|sim|accel]\n"
		"                  [--threads N] [--overlay OUT.png] [--truth BOXES.txt]\n"
		"                  [--calib DIR] [--save-input FILE.npy]\n"
		"\n"
		"  IMAGE.png|DIR    one or more images, or directories of *.png; each\n"
		"                   input size is planned (compiled) once\n"
		"  --device D       where the model runs (default: cpu)\n"
		"  --threads N      CPU threads including the caller (default 0: all cores)\n"
		"  --overlay FILE   write IMAGE with the detected boxes drawn in red\n"
		"                   (and the --truth boxes in green)\n"
		"  --calib DIR      NPU devices: calibrate int8 ranges on DIR/*.npy inputs\n"
		"  --save-input F   write the preprocessed input tensor as .npy and exit\n"
		"  --truth FILE     lines \"x0 y0 x1 y1 text\" (render-text --boxes): print\n"
		"                   each line's best IoU; exit 3 unless all match (IoU >= 0.5)\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
	int i, positional = 0;

	memset(o, 0, sizeof(*o));
	o->device = "cpu";
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--device") || !strcmp(a, "--threads") ||
			   !strcmp(a, "--overlay") || !strcmp(a, "--truth") ||
			   !strcmp(a, "--calib") || !strcmp(a, "--save-input")) {
			const char *v;

			if (i + 1 >= argc) {
				fprintf(stderr, "ocr-detect: %s needs a value\n", a);
				return -1;
			}
			v = argv[++i];
			if (!strcmp(a, "--device")) {
				o->device = v;
			} else if (!strcmp(a, "--threads")) {
				char *end;
				long n = strtol(v, &end, 10);

				if (*end || end == v || n < 0 || n > 1024) {
					fprintf(stderr, "ocr-detect: --threads '%s': expected 0..1024\n", v);
					return -1;
				}
				o->threads = (int)n;
			} else if (!strcmp(a, "--overlay")) {
				o->overlay_path = v;
			} else if (!strcmp(a, "--calib")) {
				o->calib_dir = v;
			} else if (!strcmp(a, "--save-input")) {
				o->save_input_path = v;
			} else {
				o->truth_path = v;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "ocr-detect: unknown option '%s'\n", a);
			return -1;
		} else if (positional == 0) {
			o->model_path = a;
			positional++;
		} else if (o->num_images < MAX_IMAGES) {
			o->images[o->num_images++] = a;
		} else {
			fprintf(stderr, "ocr-detect: more than %d images\n", MAX_IMAGES);
			return -1;
		}
	}
	if (positional != 1 || !o->num_images) {
		fprintf(stderr, "ocr-detect: expected MODEL.onnx and IMAGE.png (or a directory)\n");
		return -1;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* PP-OCR det wants H and W as multiples of 32: round to the nearest one. */
static int round_to_32(int v)
{
	int r = (v + 16) / 32 * 32;

	return r < 32 ? 32 : r;
}

static int compare_boxes(const void *pa, const void *pb)
{
	const struct text_box *a = pa, *b = pb;

	if (a->y0 != b->y0)
		return a->y0 < b->y0 ? -1 : 1;
	if (a->x0 != b->x0)
		return a->x0 < b->x0 ? -1 : 1;
	return 0;
}

/* Read "x0 y0 x1 y1 text" lines; returns the count or -1 (message printed). */
static int read_truth(const char *path, struct truth_line *lines, int max)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	int n = 0, lineno = 0;

	if (!f) {
		fprintf(stderr, "ocr-detect: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		struct truth_line *t = &lines[n];
		float x0, y0, x1, y1;
		int used = 0;
		size_t len;

		lineno++;
		if (buf[0] == '\n' || buf[0] == '#')
			continue;
		if (sscanf(buf, "%f %f %f %f %n", &x0, &y0, &x1, &y1, &used) != 4 ||
		    x1 <= x0 || y1 <= y0) {
			fprintf(stderr, "ocr-detect: %s:%d: expected \"x0 y0 x1 y1 text\" with x0 < x1, y0 < y1\n",
				path, lineno);
			fclose(f);
			return -1;
		}
		if (n == max) {
			fprintf(stderr, "ocr-detect: %s:%d: more than %d truth lines\n",
				path, lineno, max);
			fclose(f);
			return -1;
		}
		t->box = (struct text_box){ x0, y0, x1, y1, 1.0f };
		snprintf(t->text, sizeof(t->text), "%s", buf + used);
		len = strlen(t->text);
		while (len && (t->text[len - 1] == '\n' || t->text[len - 1] == '\r'))
			t->text[--len] = '\0';
		n++;
	}
	fclose(f);
	return n;
}

/* Print each truth line's best IoU; returns the number matched. */
static int compare_truth(const struct truth_line *truth, int ntruth,
			 const struct text_box *boxes, int nboxes)
{
	int i, j, matched = 0;

	printf("truth (x0 y0 x1 y1  best IoU  text):\n");
	for (i = 0; i < ntruth; i++) {
		float best = 0.0f;

		for (j = 0; j < nboxes; j++) {
			float iou = text_box_iou(&truth[i].box, &boxes[j]);

			best = iou > best ? iou : best;
		}
		matched += best >= MATCH_IOU;
		printf("  %4.0f %4.0f %4.0f %4.0f  %.2f %s  \"%s\"\n",
		       truth[i].box.x0, truth[i].box.y0, truth[i].box.x1,
		       truth[i].box.y1, best, best >= MATCH_IOU ? "ok  " : "MISS",
		       truth[i].text);
	}
	printf("matched %d/%d lines (IoU >= %.1f)\n", matched, ntruth, MATCH_IOU);
	return matched;
}

static int write_overlay(const char *path, struct rgb_image *img,
			 const struct text_box *boxes, int nboxes,
			 const struct truth_line *truth, int ntruth)
{
	static const unsigned char red[3] = { 230, 20, 20 };
	static const unsigned char green[3] = { 20, 170, 40 };
	char err[512];
	int i;

	for (i = 0; i < ntruth; i++)
		rgb_image_draw_box(img, &truth[i].box, green, 1);
	for (i = 0; i < nboxes; i++)
		rgb_image_draw_box(img, &boxes[i], red, 2);
	if (rgb_image_save_png(path, img, err, sizeof(err))) {
		fprintf(stderr, "ocr-detect: cannot write overlay: %s\n", err);
		return -1;
	}
	return 0;
}

/* A 1x3xHxW float32 tensor as a NumPy .npy (format 1.0), e.g. for --calib. */
static int save_npy(const char *path, const float *data, int h, int w)
{
	char header[128];
	size_t n = (size_t)3 * h * w;
	FILE *f = fopen(path, "wb");
	int len, ok;

	if (!f) {
		fprintf(stderr, "ocr-detect: %s: %s\n", path, strerror(errno));
		return -1;
	}
	len = snprintf(header, sizeof(header),
		       "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, %d, %d), }", h, w);
	/* Magic, version and length take 10 bytes; pad the header to 64. */
	while ((10 + len + 1) % 64)
		header[len++] = ' ';
	header[len++] = '\n';
	ok = fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 &&
	     fputc(len & 0xff, f) != EOF && fputc(len >> 8, f) != EOF &&
	     fwrite(header, 1, (size_t)len, f) == (size_t)len &&
	     fwrite(data, sizeof(float), n, f) == n;
	if (fclose(f) || !ok) {
		fprintf(stderr, "ocr-detect: %s: write failed\n", path);
		return -1;
	}
	return 0;
}

struct detector {
	const struct options *o;
	struct npu_model *model;
	struct npu_session *session;
	struct npu_tensor_info in_info;
	struct truth_line *truth;
	int ntruth;
};

/* Steps 3 to 5 and the boxes for one image; 0, 1 (error) or 3 (truth missed). */
static int detect(struct detector *d, const char *image_path, bool single)
{
	static struct text_box boxes[MAX_BOXES];
	const struct options *o = d->o;
	struct rgb_image img = { 0 };
	struct npu_host_tensor input, prob;
	struct npu_plan *plan = NULL;
	struct db_params db;
	float *nchw = NULL;
	char err[512];
	int in_w, in_h, map_w, map_h, nboxes, shown, i, rc = 1;
	double t0, plan_ms, post_ms;
	npu_status st;

	if (rgb_image_load_png(image_path, &img, err, sizeof(err))) {
		fprintf(stderr, "ocr-detect: cannot read image: %s\n", err);
		return 1;
	}

	/* 3. The plan for the image's H x W (rounded to 32): made once per size. */
	in_w = round_to_32(img.width);
	in_h = round_to_32(img.height);
	{
		struct npu_host_tensor shape = {
			.name = d->in_info.name, .dtype = NPU_TYPE_FLOAT, .rank = 4,
			.dims = { 1, 3, in_h, in_w },
		};

		t0 = now_ms();
		st = npu_model_get_plan(d->model, &shape, 1, &plan);
		if (st != NPU_OK) {
			fprintf(stderr, "ocr-detect: cannot plan %s for input '%s' 1x3x%dx%d: %s (%s)\n",
				o->model_path, d->in_info.name, in_h, in_w,
				npu_last_error(), npu_status_str(st));
			goto out;
		}
	}
	plan_ms = now_ms() - t0;

	/* 4. One NCHW float tensor: resized, BGR, ImageNet-normalized. */
	nchw = malloc(sizeof(float) * 3 * (size_t)in_w * in_h);
	if (!nchw) {
		fprintf(stderr, "ocr-detect: out of memory for a 1x3x%dx%d input\n",
			in_h, in_w);
		goto out;
	}
	rgb_image_to_ppocr_input(&img, in_w, in_h, nchw);
	if (o->save_input_path) {
		rc = save_npy(o->save_input_path, nchw, in_h, in_w) ? 1 : 0;
		goto out;
	}
	memset(&input, 0, sizeof(input));
	input.name = d->in_info.name;
	input.dtype = NPU_TYPE_FLOAT;
	input.rank = 4;
	input.dims[0] = 1;
	input.dims[1] = 3;
	input.dims[2] = in_h;
	input.dims[3] = in_w;
	input.data = nchw;
	input.nbytes = sizeof(float) * 3 * (size_t)in_w * in_h;
	st = npu_session_run_plan(d->session, plan, &input, 1);
	if (st != NPU_OK) {
		fprintf(stderr, "ocr-detect: run failed: %s (%s)\n",
			npu_last_error(), npu_status_str(st));
		goto out;
	}

	/* 5. Output 0 is the 1x1xHxW text probability map. */
	st = npu_session_output(d->session, 0, &prob);
	if (st != NPU_OK) {
		fprintf(stderr, "ocr-detect: cannot read output 0: %s (%s)\n",
			npu_last_error(), npu_status_str(st));
		goto out;
	}
	if (prob.dtype != NPU_TYPE_FLOAT || prob.rank != 4 || prob.dims[0] != 1 ||
	    prob.dims[1] != 1 || prob.dims[2] < 1 || prob.dims[3] < 1 ||
	    prob.nbytes < sizeof(float) * (size_t)(prob.dims[2] * prob.dims[3])) {
		fprintf(stderr, "ocr-detect: output '%s' is %s of rank %d (%lldx%lldx...): expected a float 1x1xHxW probability map\n",
			prob.name ? prob.name : "0", npu_data_type_name(prob.dtype),
			prob.rank, (long long)prob.dims[0], (long long)prob.dims[1]);
		goto out;
	}
	map_h = (int)prob.dims[2];
	map_w = (int)prob.dims[3];

	t0 = now_ms();
	db_params_default(&db);
	nboxes = db_find_boxes(prob.data, map_w, map_h, &db,
			       (float)img.width / map_w, (float)img.height / map_h,
			       boxes, MAX_BOXES);
	if (nboxes < 0) {
		fprintf(stderr, "ocr-detect: out of memory in box finding (%dx%d map)\n",
			map_w, map_h);
		goto out;
	}
	shown = nboxes < MAX_BOXES ? nboxes : MAX_BOXES;
	qsort(boxes, (size_t)shown, sizeof(boxes[0]), compare_boxes);
	post_ms = now_ms() - t0;

	if (single)
		printf("model   %s\n", o->model_path);
	printf("image   %s (%dx%d), input '%s' 1x3x%dx%d, device %s\n",
	       image_path, img.width, img.height, d->in_info.name, in_h, in_w,
	       o->device);
	printf("%d text boxes (x0 y0 x1 y1 score):\n", nboxes);
	for (i = 0; i < shown; i++)
		printf("  %4.0f %4.0f %4.0f %4.0f  %.3f\n", boxes[i].x0, boxes[i].y0,
		       boxes[i].x1, boxes[i].y1, boxes[i].score);
	if (nboxes > shown)
		printf("  ... %d more not shown\n", nboxes - shown);
	printf("timings: plan %.1f ms, run %.1f ms, boxes %.1f ms\n",
	       plan_ms, npu_session_last_run_seconds(d->session) * 1e3, post_ms);

	if (o->overlay_path) {
		if (write_overlay(o->overlay_path, &img, boxes, shown, d->truth, d->ntruth))
			goto out;
		printf("overlay %s\n", o->overlay_path);
	}
	rc = 0;
	if (o->truth_path && compare_truth(d->truth, d->ntruth, boxes, shown) < d->ntruth)
		rc = 3;
out:
	npu_plan_release(plan);
	free(nchw);
	rgb_image_free(&img);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The images: files as given, directories as their *.png sorted by name. */
static int list_images(const struct options *o, char ***out, int *count)
{
	char **list = NULL;
	int n = 0, cap = 0, i;

	for (i = 0; i < o->num_images; i++) {
		DIR *dir = opendir(o->images[i]);
		struct dirent *e;
		int first = n;

		if (!dir) {
			if (errno != ENOTDIR) {
				fprintf(stderr, "ocr-detect: %s: %s\n", o->images[i], strerror(errno));
				goto fail;
			}
			if (n == cap && !(list = realloc(list, sizeof(*list) * (size_t)(cap = cap * 2 + 16))))
				goto nomem;
			if (!(list[n++] = strdup(o->images[i])))
				goto nomem;
			continue;
		}
		while ((e = readdir(dir))) {
			size_t len = strlen(e->d_name);

			if (len < 5 || strcmp(e->d_name + len - 4, ".png"))
				continue;
			if (n == cap && !(list = realloc(list, sizeof(*list) * (size_t)(cap = cap * 2 + 16)))) {
				closedir(dir);
				goto nomem;
			}
			list[n] = malloc(strlen(o->images[i]) + len + 2);
			if (!list[n]) {
				closedir(dir);
				goto nomem;
			}
			sprintf(list[n++], "%s/%s", o->images[i], e->d_name);
		}
		closedir(dir);
		qsort(list + first, (size_t)(n - first), sizeof(*list), cmp_str);
		if (n == first) {
			fprintf(stderr, "ocr-detect: %s: no .png images\n", o->images[i]);
			goto fail;
		}
	}
	*out = list;
	*count = n;
	return 0;
nomem:
	fprintf(stderr, "ocr-detect: out of memory listing images\n");
fail:
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return -1;
}

int main(int argc, char **argv)
{
	static struct truth_line truth[MAX_TRUTH];
	struct options o;
	struct detector d = { 0 };
	struct npu_engine_options eopts;
	struct npu_model_options mopts;
	struct npu_model_stats stats;
	struct npu_engine *engine = NULL;
	char **images = NULL;
	int num_images = 0, i, rc = 1, r;
	double t0, load_ms;
	npu_status st;

	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	if (list_images(&o, &images, &num_images))
		return 1;
	if (num_images > 1 && (o.overlay_path || o.truth_path || o.save_input_path)) {
		fprintf(stderr, "ocr-detect: --overlay, --truth and --save-input take one image (%d given)\n",
			num_images);
		rc = 2;
		goto out;
	}
	d.o = &o;
	d.truth = truth;
	if (o.truth_path) {
		d.ntruth = read_truth(o.truth_path, truth, MAX_TRUTH);
		if (d.ntruth < 0)
			goto out;
	}

	/* 1. The engine: the CPU threads every model and session share. */
	npu_engine_options_init(&eopts);
	eopts.threads = o.threads;
	st = npu_engine_create(&eopts, &engine);
	if (st != NPU_OK) {
		fprintf(stderr, "ocr-detect: %s (%s)\n", npu_last_error(), npu_status_str(st));
		goto out;
	}

	/* 2. Import the ONNX file for the device; errors are per thread. */
	npu_model_options_init(&mopts);
	mopts.device = o.device;
	mopts.calib_dir = o.calib_dir;
	t0 = now_ms();
	st = npu_model_load_file(engine, o.model_path, &mopts, &d.model);
	if (st == NPU_OK)
		st = npu_session_create(d.model, NULL, &d.session);
	if (st != NPU_OK) {
		fprintf(stderr, "ocr-detect: cannot load model: %s (%s)\n",
			npu_last_error(), npu_status_str(st));
		goto out;
	}
	load_ms = now_ms() - t0;
	if (npu_model_num_inputs(d.model) != 1 || npu_model_num_outputs(d.model) < 1 ||
	    npu_model_input_info(d.model, 0, &d.in_info) != NPU_OK ||
	    d.in_info.dtype != NPU_TYPE_FLOAT || d.in_info.rank != 4) {
		fprintf(stderr, "ocr-detect: %s: expected a text-detection model with one float input of rank 4 (N x 3 x H x W) and a probability-map output\n",
			o.model_path);
		goto out;
	}
	printf("load %.1f ms\n", load_ms);
	rc = 0;
	for (i = 0; i < num_images; i++) {
		r = detect(&d, images[i], num_images == 1);
		if (r && (!rc || r == 1))
			rc = r;
	}
	npu_model_stats_init(&stats);
	if (npu_model_get_stats(d.model, &stats) == NPU_OK)
		printf("%d image%s, %llu input size%s planned\n", num_images,
		       num_images == 1 ? "" : "s", (unsigned long long)stats.plans_built,
		       stats.plans_built == 1 ? "" : "s");
out:
	for (i = 0; i < num_images; i++)
		free(images[i]);
	free(images);
	npu_session_destroy(d.session);
	npu_model_destroy(d.model);
	npu_engine_destroy(engine);
	return rc;
}
