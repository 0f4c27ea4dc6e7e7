// SPDX-License-Identifier: MIT
#include "text_boxes.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void db_params_default(struct db_params *p)
{
	p->bin_thresh = 0.3f;
	p->box_thresh = 0.6f;
	p->unclip_ratio = 1.5f;
	p->min_side = 3;
}

struct region {
	int x0, y0, x1, y1;	/* inclusive pixel bounds */
	double prob_sum;
	long pixels;
};

/* Flood-fill one 8-connected component from 'seed' with an explicit stack. */
static void grow_region(const float *prob, unsigned char *mask, int w, int h,
			int seed, int *stack, struct region *r)
{
	int top = 0;

	stack[top++] = seed;
	mask[seed] = 0;
	r->x0 = r->x1 = seed % w;
	r->y0 = r->y1 = seed / w;
	r->prob_sum = 0;
	r->pixels = 0;
	while (top) {
		int idx = stack[--top], x = idx % w, y = idx / w, dx, dy;

		r->prob_sum += prob[idx];
		r->pixels++;
		r->x0 = x < r->x0 ? x : r->x0;
		r->x1 = x > r->x1 ? x : r->x1;
		r->y0 = y < r->y0 ? y : r->y0;
		r->y1 = y > r->y1 ? y : r->y1;
		for (dy = -1; dy <= 1; dy++) {
			for (dx = -1; dx <= 1; dx++) {
				int nx = x + dx, ny = y + dy, n;

				if (nx < 0 || ny < 0 || nx >= w || ny >= h)
					continue;
				n = ny * w + nx;
				if (mask[n]) {
					mask[n] = 0;	/* mark before push: each pixel once */
					stack[top++] = n;
				}
			}
		}
	}
}

int db_find_boxes(const float *prob, int width, int height,
		  const struct db_params *p, float sx, float sy,
		  struct text_box *boxes, int max)
{
	size_t n = (size_t)width * height, i;
	unsigned char *mask = malloc(n);
	int *stack = malloc(n * sizeof(*stack));
	int found = 0;

	if (!mask || !stack) {
		free(mask);
		free(stack);
		return -1;
	}
	for (i = 0; i < n; i++)
		mask[i] = prob[i] > p->bin_thresh;
	for (i = 0; i < n; i++) {
		struct region r;
		float w, h, d;

		if (!mask[i])
			continue;
		grow_region(prob, mask, width, height, (int)i, stack, &r);
		if (r.prob_sum / r.pixels <= p->box_thresh)
			continue;
		w = (float)(r.x1 - r.x0 + 1);
		h = (float)(r.y1 - r.y0 + 1);
		if (w < p->min_side || h < p->min_side)
			continue;
		/* DB shrinks text regions in training; unclip restores them. */
		d = w * h * p->unclip_ratio / (2.0f * (w + h));
		if (found < max) {
			struct text_box *b = &boxes[found];

			b->x0 = fmaxf(0.0f, (r.x0 - d) * sx);
			b->y0 = fmaxf(0.0f, (r.y0 - d) * sy);
			b->x1 = fminf(width * sx, (r.x1 + 1 + d) * sx);
			b->y1 = fminf(height * sy, (r.y1 + 1 + d) * sy);
			b->score = (float)(r.prob_sum / r.pixels);
		}
		found++;
	}
	free(mask);
	free(stack);
	return found;
}

float text_box_iou(const struct text_box *a, const struct text_box *b)
{
	float ix = fminf(a->x1, b->x1) - fmaxf(a->x0, b->x0);
	float iy = fminf(a->y1, b->y1) - fmaxf(a->y0, b->y0);
	float inter, uni;

	if (ix <= 0 || iy <= 0)
		return 0.0f;
	inter = ix * iy;
	uni = (a->x1 - a->x0) * (a->y1 - a->y0) + (b->x1 - b->x0) * (b->y1 - b->y0) - inter;
	return uni > 0 ? inter / uni : 0.0f;
}

int rgb_image_load_png(const char *path, struct rgb_image *img, char *err,
		       size_t err_size)
{
	return rgb_image_load_png_limit(path, img, 0, err, err_size);
}

int rgb_image_load_png_limit(const char *path, struct rgb_image *img, long long max_pixels,
			     char *err, size_t err_size)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	/* Transparent pixels show the page they would be printed on. */
	const png_color white = { 255, 255, 255 };
	unsigned char head[8];
	png_image png;
	size_t got;
	FILE *f;

	memset(&png, 0, sizeof(png));
	memset(img, 0, sizeof(*img));
	/* libpng's own messages ("Read Error") name neither the file nor the
	 * problem: look at the file first. */
	f = fopen(path, "rb");
	if (!f) {
		snprintf(err, err_size, "%s: %s", path, strerror(errno));
		return -1;
	}
	got = fread(head, 1, sizeof(head), f);
	if (got == 0) {
		fclose(f);
		snprintf(err, err_size, "%s: empty file, not a PNG image", path);
		return -1;
	}
	if (got < sizeof(head) || memcmp(head, sig, sizeof(sig))) {
		fclose(f);
		snprintf(err, err_size, "%s: not a PNG image (no PNG signature)", path);
		return -1;
	}
	rewind(f);
	png.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_stdio(&png, f)) {
		fclose(f);
		snprintf(err, err_size, "%s: corrupt or truncated PNG header (libpng: %s)", path,
			 png.message);
		return -1;
	}
	if (png.width == 0 || png.height == 0 ||
	    (max_pixels > 0 && (long long)png.width * png.height > max_pixels)) {
		snprintf(err, err_size, "%s: %ux%u pixels is above the limit of %lld pixels", path,
			 png.width, png.height, max_pixels);
		png_image_free(&png);
		fclose(f);
		return -1;
	}
	png.format = PNG_FORMAT_RGB;
	img->width = (int)png.width;
	img->height = (int)png.height;
	img->data = malloc(PNG_IMAGE_SIZE(png));
	if (!img->data) {
		png_image_free(&png);
		fclose(f);
		snprintf(err, err_size, "%s: out of memory for a %dx%d image", path,
			 img->width, img->height);
		return -1;
	}
	if (!png_image_finish_read(&png, &white, img->data, 0, NULL)) {
		snprintf(err, err_size, "%s: truncated or corrupt PNG data (libpng: %s)", path,
			 png.message);
		rgb_image_free(img);
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

int rgb_image_save_png(const char *path, const struct rgb_image *img,
		       char *err, size_t err_size)
{
	png_image png;

	memset(&png, 0, sizeof(png));
	png.version = PNG_IMAGE_VERSION;
	png.width = (png_uint_32)img->width;
	png.height = (png_uint_32)img->height;
	png.format = PNG_FORMAT_RGB;
	if (!png_image_write_to_file(&png, path, 0, img->data, 0, NULL)) {
		snprintf(err, err_size, "%s: %s", path, png.message);
		return -1;
	}
	return 0;
}

void rgb_image_free(struct rgb_image *img)
{
	free(img->data);
	img->data = NULL;
}

void rgb_image_to_ppocr_input(const struct rgb_image *img, int out_w,
			      int out_h, float *nchw)
{
	static const float mean[3] = { 0.485f, 0.456f, 0.406f };
	static const float std[3] = { 0.229f, 0.224f, 0.225f };
	size_t plane = (size_t)out_w * out_h;
	int x, y, c;

	for (y = 0; y < out_h; y++) {
		int sy = (int)((long)y * img->height / out_h);

		for (x = 0; x < out_w; x++) {
			int sx = (int)((long)x * img->width / out_w);
			const unsigned char *px = img->data + ((size_t)sy * img->width + sx) * 3;

			for (c = 0; c < 3; c++) {
				float v = px[2 - c] / 255.0f;	/* RGB -> BGR */

				nchw[c * plane + (size_t)y * out_w + x] = (v - mean[c]) / std[c];
			}
		}
	}
}

static void put_pixel(struct rgb_image *img, int x, int y,
		      const unsigned char rgb[3])
{
	if (x < 0 || y < 0 || x >= img->width || y >= img->height)
		return;
	memcpy(img->data + ((size_t)y * img->width + x) * 3, rgb, 3);
}

void rgb_image_draw_box(struct rgb_image *img, const struct text_box *box,
			const unsigned char rgb[3], int thickness)
{
	int x0 = (int)box->x0, y0 = (int)box->y0;
	int x1 = (int)ceilf(box->x1) - 1, y1 = (int)ceilf(box->y1) - 1;
	int t, x, y;

	for (t = 0; t < thickness; t++) {
		for (x = x0; x <= x1; x++) {
			put_pixel(img, x, y0 + t, rgb);
			put_pixel(img, x, y1 - t, rgb);
		}
		for (y = y0; y <= y1; y++) {
			put_pixel(img, x0 + t, y, rgb);
			put_pixel(img, x1 - t, y, rgb);
		}
	}
}
