// SPDX-License-Identifier: MIT
/*
 * PaddleOCR's processing in examples/ocr/ppocr.c on inputs whose answer is
 * known: det input sizes, a rotated text region found as a rotated box,
 * reading order, crops of tall boxes turned, rec widths, CTC decoding
 * (repeats, blanks, word gaps, full-width punctuation, Latin fixes). TAP
 * output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppocr.h"

static int failed, count;

static void check(int ok, const char *what)
{
	count++;
	printf("%sok %d - %s\n", ok ? "" : "not ", count, what);
	failed += !ok;
}

/* A pw x ph map with probability 'p' inside the rectangle of centre (cx, cy),
 * size w x h, turned by 'deg' (clockwise on the image, y down). */
static void fill_rect(float *map, int pw, int ph, double cx, double cy, double w, double h,
		      double deg, float p)
{
	double a = deg * 3.14159265358979 / 180, c = cos(a), s = sin(a);
	int x, y;

	for (y = 0; y < ph; y++)
		for (x = 0; x < pw; x++) {
			double dx = x - cx, dy = y - cy;
			double u = dx * c + dy * s, v = -dx * s + dy * c;

			if (fabs(u) <= w / 2 && fabs(v) <= h / 2)
				map[y * pw + x] = p;
		}
}

static void test_det_sizes(void)
{
	struct det_resize r;
	int w, h;

	det_resize_default(&r);
	det_input_size(&r, 291, 45, &w, &h);
	check(w == 416 && h == 64, "a 291x45 line is scaled up to a 64-row input: 416x64");
	det_input_size(&r, 2000, 1000, &w, &h);
	check(w == 960 && h == 480, "2000x1000 is scaled down to a 960 long side: 960x480");
	det_input_size(&r, 1, 1, &w, &h);
	check(w == 64 && h == 64, "1x1 is scaled up to the 64 px short side: 64x64");
	det_input_size(&r, 100, 70, &w, &h);
	check(w == 96 && h == 64, "100x70 keeps its size, rounded to multiples of 32: 96x64");
	r.limit_min = true;
	r.limit_side = 736;
	det_input_size(&r, 400, 100, &w, &h);
	check(w == 2944 && h == 736, "limit type min: 400x100 short side up to 736: 2944x736");
}

static void test_rotated_box(void)
{
	int pw = 320, ph = 160, n;
	float *map = calloc((size_t)pw * ph, sizeof(float));
	struct db_opts o;
	struct quad q[4];
	double angle, top, left;

	db_opts_default(&o);
	fill_rect(map, pw, ph, 160, 80, 200, 20, 10, 0.9f);
	n = db_boxes(map, pw, ph, pw, ph, &o, pw, ph, q, 4);
	check(n == 1, "one rotated text region gives one box");
	if (n != 1)
		goto out;
	angle = atan2(q[0].y[1] - q[0].y[0], q[0].x[1] - q[0].x[0]) * 180 / 3.14159265358979;
	check(fabs(angle - 10) < 1.5, "the box follows the region's 10 degree turn");
	top = hypot(q[0].x[1] - q[0].x[0], q[0].y[1] - q[0].y[0]);
	left = hypot(q[0].x[3] - q[0].x[0], q[0].y[3] - q[0].y[0]);
	/* unclip: d = 200 * 20 * 1.5 / (2 * 220) = 13.6 on every side */
	check(fabs(top - 227) < 4 && fabs(left - 47) < 4,
	      "unclipped by area x 1.5 / perimeter on every side (about 227 x 47)");
	check(q[0].x[0] < q[0].x[1] && q[0].y[1] < q[0].y[2] && q[0].x[2] > q[0].x[3],
	      "corners run clockwise from the top-left");
	check(q[0].score > 0.8f && q[0].score <= 0.9f, "the score is the mean probability inside (0.9, less a rim)");
	printf("# score %.3f\n", q[0].score);
	memset(map, 0, sizeof(float) * (size_t)pw * ph);
	fill_rect(map, pw, ph, 160, 80, 200, 20, 0, 0.5f);
	n = db_boxes(map, pw, ph, pw, ph, &o, pw, ph, q, 4);
	check(n == 0, "a region of mean probability 0.5 (< 0.6) is dropped");
	memset(map, 0, sizeof(float) * (size_t)pw * ph);
	fill_rect(map, pw, ph, 160, 80, 200, 2, 0, 0.9f);
	n = db_boxes(map, pw, ph, pw, ph, &o, pw, ph, q, 4);
	check(n == 0, "a region 2 px thin (< 3) is dropped");
out:
	free(map);
}

static void test_reading_order(void)
{
	int pw = 400, ph = 200, n;
	float *map = calloc((size_t)pw * ph, sizeof(float));
	struct db_opts o;
	struct quad q[8];

	db_opts_default(&o);
	/* row 1: the right word's top is 3 px higher than the left one's (6 px
	 * in the image, within the 10 px tolerance) */
	fill_rect(map, pw, ph, 80, 40, 100, 16, 0, 0.9f);
	fill_rect(map, pw, ph, 260, 37, 100, 16, 0, 0.9f);
	/* row 2 */
	fill_rect(map, pw, ph, 150, 120, 200, 16, 0, 0.9f);
	n = db_boxes(map, pw, ph, pw, ph, &o, pw * 2, ph * 2, q, 8);
	check(n == 3, "three regions, three boxes");
	if (n == 3) {
		check(q[0].x[0] < q[1].x[0] && q[2].y[0] > q[1].y[0],
		      "reading order: tops within 10 px left to right, then the next row");
		check(fabsf(q[2].x[1] - q[2].x[0] - 2 * (200 + 2 * 200 * 16 * 1.5f / 432)) < 8,
		      "boxes are scaled from the map to the image (x2)");
	}
	free(map);
}

static void test_crops(void)
{
	struct quad tall = { .x = { 10, 30, 30, 10 }, .y = { 10, 10, 110, 110 } };
	struct quad wide = { .x = { 0, 300, 300, 0 }, .y = { 0, 0, 30, 30 } };
	struct crop c;

	crop_of(&tall, &c);
	check(c.turned && c.w == 20 && c.h == 100, "a box 5 times as tall as wide is turned");
	check(crop_rec_width(&c, 48) == 240, "the turned 20x100 crop reads as 100x20: 240 wide at height 48");
	crop_of(&wide, &c);
	check(!c.turned && crop_rec_width(&c, 48) == 480, "a 300x30 crop reads 480 wide at height 48");
}

/*
 * CTC decoding on a dictionary of blank, "a", "b", "0", "，" (full-width
 * comma), "x", space: each step's probabilities put 'p' on one class and
 * the rest evenly on the others but the space (the last class), which
 * gets none.
 */
static void steps(float *probs, const int *best, int n, int classes, float p)
{
	int t, k;

	for (t = 0; t < n; t++)
		for (k = 0; k < classes; k++)
			probs[t * classes + k] = k == best[t] ? p :
						 k == classes - 1 ? 0 : (1 - p) / (float)(classes - 2);
}

static void test_ctc(void)
{
	static char blank[] = "", a[] = "a", b[] = "b", zero[] = "0", comma[] = "\xef\xbc\x8c",
		    x[] = "x", space[] = " ";
	char *keys[] = { blank, a, b, zero, comma, x, space };
	struct ctc_dict d = { keys, 7 };
	struct ctc_opts o = { 0.008f, false };
	float probs[16 * 7];
	char text[64];
	float score;
	/* a a _ b _ b: repeats merge, a blank separates two b's */
	const int ab[] = { 1, 1, 0, 2, 0, 2 };
	/* a , x: the full-width comma between ASCII letters becomes ',' */
	const int comma_run[] = { 1, 4, 5 };
	/* a 0 b: a 0 among letters is an o with latin fixes on */
	const int a0b[] = { 1, 3, 2 };

	steps(probs, ab, 6, 7, 0.9f);
	score = ctc_decode(probs, 6, 7, &d, &o, text, sizeof(text));
	check(!strcmp(text, "abb") && fabsf(score - 0.9f) < 1e-6f,
	      "CTC: repeats merge, a blank parts two of a kind; the score is the kept steps' mean");
	/* The same with the space class at 0.05 in the blank steps: a word gap. */
	probs[2 * 7 + 6] = 0.05f;
	probs[4 * 7 + 6] = 0.05f;
	ctc_decode(probs, 6, 7, &d, &o, text, sizeof(text));
	check(!strcmp(text, "a b b"), "CTC: the space class rising in a blank step is a word gap");
	steps(probs, comma_run, 3, 7, 0.8f);
	ctc_decode(probs, 3, 7, &d, &o, text, sizeof(text));
	check(!strcmp(text, "a,x"), "CTC: a full-width comma next to ASCII is ASCII");
	steps(probs, a0b, 3, 7, 0.8f);
	ctc_decode(probs, 3, 7, &d, &o, text, sizeof(text));
	check(!strcmp(text, "a0b"), "CTC: latin fixes off keeps the 0");
	o.latin_fixes = true;
	ctc_decode(probs, 3, 7, &d, &o, text, sizeof(text));
	check(!strcmp(text, "aob"), "CTC: latin fixes on: a 0 among letters is an o");
	steps(probs, (const int[]){ 0, 0, 0 }, 3, 7, 0.9f);
	score = ctc_decode(probs, 3, 7, &d, &o, text, sizeof(text));
	check(!text[0] && score == 0, "CTC: all blanks read as nothing, score 0");
}

int main(void)
{
	test_det_sizes();
	test_rotated_box();
	test_reading_order();
	test_crops();
	test_ctc();
	printf("1..%d\n", count);
	return failed ? 1 : 0;
}
