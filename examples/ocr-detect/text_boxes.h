/* SPDX-License-Identifier: MIT */
/*
 * text_boxes.h - DB (Differentiable Binarization) post-processing for text
 * detection models such as PaddleOCR's PP-OCR det: probability map ->
 * scored, unclipped boxes, plus the image I/O the example needs.
 */
#ifndef TEXT_BOXES_H
#define TEXT_BOXES_H

#include <stddef.h>

struct text_box {
	float x0, y0, x1, y1;	/* image pixels, x1/y1 exclusive */
	float score;		/* mean probability inside the region */
};

struct db_params {
	float bin_thresh;	/* pixel is text when prob > this (0.3) */
	float box_thresh;	/* keep regions whose mean prob > this (0.6) */
	float unclip_ratio;	/* grow by area * ratio / perimeter (1.5) */
	int min_side;		/* drop boxes thinner than this (3 px) */
};

void db_params_default(struct db_params *p);

/*
 * Find text boxes in a width x height probability map. Regions are
 * 8-connected components of the binarized map; boxes are axis-aligned
 * (PaddleOCR uses rotated min-area rectangles: for horizontal text the two
 * agree). Scales by (sx, sy) into image coordinates. Returns the number of
 * boxes, up to 'max' stored, or -1 when out of memory.
 */
int db_find_boxes(const float *prob, int width, int height,
		  const struct db_params *p, float sx, float sy,
		  struct text_box *boxes, int max);

/* Intersection over union of two boxes. */
float text_box_iou(const struct text_box *a, const struct text_box *b);

/* RGB8 image. */
struct rgb_image {
	int width, height;
	unsigned char *data;
};

/*
 * Load a PNG (grayscale, palette, 16-bit and alpha images become RGB8,
 * alpha composited on white). Errors name the file and the problem (no
 * such file, empty, not a PNG, truncated or corrupt data).
 */
int rgb_image_load_png(const char *path, struct rgb_image *img, char *err,
		       size_t err_size);
/* The same, refusing images of more than max_pixels pixels (0: no limit)
 * before decoding them. */
int rgb_image_load_png_limit(const char *path, struct rgb_image *img, long long max_pixels,
			     char *err, size_t err_size);
int rgb_image_save_png(const char *path, const struct rgb_image *img,
		       char *err, size_t err_size);
void rgb_image_free(struct rgb_image *img);

/*
 * NCHW float input for PP-OCR det: BGR channel order, (x / 255 - mean) / std
 * with ImageNet mean / std, nearest-neighbour resized to out_w x out_h.
 */
void rgb_image_to_ppocr_input(const struct rgb_image *img, int out_w,
			      int out_h, float *nchw);

/* Draw a 'thickness'-pixel rectangle outline in 'rgb' colour. */
void rgb_image_draw_box(struct rgb_image *img, const struct text_box *box,
			const unsigned char rgb[3], int thickness);

#endif /* TEXT_BOXES_H */
