/* SPDX-License-Identifier: MIT */
/*
 * ppocr.h - PaddleOCR's pre- and post-processing for PP-OCR det and rec,
 * written from its documented behaviour (DetResizeForTest, NormalizeImage,
 * DBPostProcess, sorted_boxes, get_rotate_crop_image, resize_norm_img,
 * CTCLabelDecode), with width buckets for rec so that an NPU compiles one
 * plan per bucket instead of one per crop.
 */
#ifndef PPOCR_H
#define PPOCR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text_boxes.h"	/* struct rgb_image */

/* A text box: four corners clockwise from the top-left, image pixels. */
struct quad {
	float x[4], y[4];
	float score;		/* mean probability inside the box (DB "fast" score) */
};

/* Detection input size: DetResizeForTest's type 0. */
struct det_resize {
	int limit_side;		/* 960 */
	bool limit_min;		/* false: scale down so the long side <= limit
				 * ("max"); true: scale up so the short side >= limit */
	int min_side;		/* "max": first scale small images up so the short
				 * side >= this (64; 0: off), as PaddleX's pipelines */
	int max_side;		/* never more than this on either side (4000) */
};

/* DBPostProcess. */
struct db_opts {
	float thresh;		/* a pixel is text when its probability > this (0.3) */
	float box_thresh;	/* keep boxes whose mean probability >= this (0.6) */
	float unclip_ratio;	/* grow by area * ratio / perimeter (1.5) */
	int min_size;		/* drop boxes whose short side < this (3) */
	int max_candidates;	/* regions looked at, largest first (1000) */
};

void det_resize_default(struct det_resize *r);
void db_opts_default(struct db_opts *o);

/* The det input size for a w x h image: multiples of 32, at least 32. */
void det_input_size(const struct det_resize *r, int w, int h, int *out_w, int *out_h);

/*
 * NCHW float det input: bilinear resize to out_w x out_h, BGR, (x / 255 -
 * ImageNet mean) / std, written at the top-left of a pad_w x pad_h plane
 * (pad_w >= out_w, pad_h >= out_h) whose rest is zero (the mean colour).
 */
void det_input(const struct rgb_image *img, int out_w, int out_h, int pad_w, int pad_h,
	       float *nchw);

/*
 * Boxes in a pw x ph probability map whose top-left map_w x map_h part
 * covers the image (the rest is padding): rotated minimum-area rectangles
 * of the connected text regions, scored, unclipped, scaled to img_w x
 * img_h, those thinner than 3 px dropped, and sorted into reading order
 * (top to bottom; boxes whose tops are within 10 px left to right).
 * Returns the number stored (<= max), or -1 when out of memory.
 */
int db_boxes(const float *prob, int pw, int ph, int map_w, int map_h, const struct db_opts *o,
	     int img_w, int img_h, struct quad *out, int max);

/*
 * The crop of a box, as get_rotate_crop_image makes it: its size along
 * the box's top and left edges, turned 90 degrees counter-clockwise when
 * it is at least 1.5 times as tall as wide (vertical text).
 */
struct crop {
	struct quad q;
	int w, h;		/* before the turn */
	bool turned;
};

void crop_of(const struct quad *q, struct crop *c);

/* The width a crop takes at rec height 'rec_h', keeping its aspect. */
int crop_rec_width(const struct crop *c, int rec_h);

/*
 * rec input (resize_norm_img): the crop resized to rec_h x 'width'
 * (bilinear, straight from the image), BGR, (x / 255 - 0.5) / 0.5, at the
 * left of a rec_h x bucket_w plane padded with zeros.
 */
void rec_input(const struct rgb_image *img, const struct crop *c, int rec_h, int width,
	       int bucket_w, float *nchw);

/* The rec model's classes (CTCLabelDecode's character list). */
struct ctc_dict {
	char **keys;		/* keys[0] is the CTC blank, the last the space */
	int num_keys;
};

/*
 * ppocr_keys_v1.txt: one character per line; class 0 is the blank and
 * PaddleOCR appends a space as the last class. Returns 0, or -1 with the
 * reason (naming the file) in err.
 */
int ctc_dict_load(const char *path, struct ctc_dict *d, char *err, size_t err_size);
void ctc_dict_free(struct ctc_dict *d);

struct ctc_opts {
	/* Insert a space where the space class reached this in the blank
	 * steps between two characters (1: only where it wins the argmax). */
	float space_thresh;
	/* A 0 among letters is O, an O among digits 0, a space after a
	 * letter's comma or colon. */
	bool latin_fixes;
};

/*
 * CTC greedy decoding (CTCLabelDecode) of one crop's steps x classes
 * probabilities: argmax per step, repeats merged, blanks dropped, word
 * gaps kept (ctc_opts), full-width ASCII punctuation next to ASCII made
 * ASCII, spaces at the ends trimmed. Writes the text (NUL-terminated, cut
 * at size - 1 bytes) and returns the score: the mean probability of the
 * kept steps (0 when none).
 */
float ctc_decode(const float *probs, int64_t steps, int64_t classes, const struct ctc_dict *d,
		 const struct ctc_opts *o, char *text, size_t size);

#endif /* PPOCR_H */
