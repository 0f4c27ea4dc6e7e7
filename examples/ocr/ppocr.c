// SPDX-License-Identifier: MIT
#include "ppocr.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void det_resize_default(struct det_resize *r)
{
	r->limit_side = 960;
	r->limit_min = false;
	r->min_side = 64;
	r->max_side = 4000;
}

void db_opts_default(struct db_opts *o)
{
	o->thresh = 0.3f;
	o->box_thresh = 0.6f;
	o->unclip_ratio = 1.5f;
	o->min_size = 3;
	o->max_candidates = 1000;
}

static int round32(double v)
{
	int r = (int)lround(v / 32) * 32;

	return r < 32 ? 32 : r;
}

void det_input_size(const struct det_resize *r, int w, int h, int *out_w, int *out_h)
{
	double ratio = 1;
	int lo = w < h ? w : h, hi = w > h ? w : h;

	if (r->limit_min) {
		if (lo < r->limit_side)
			ratio = (double)r->limit_side / lo;
	} else {
		/* A line of small text upscaled: DB needs a few pixels of stroke. */
		if (lo < r->min_side)
			ratio = (double)r->min_side / lo;
		if (hi * ratio > r->limit_side)
			ratio = (double)r->limit_side / hi;
	}
	if (hi * ratio > r->max_side)
		ratio = (double)r->max_side / hi;
	*out_w = round32(w * ratio);
	*out_h = round32(h * ratio);
}

/* Bilinear sample of channel 'c' at (x, y), edges replicated. */
static float sample(const struct rgb_image *img, double x, double y, int c)
{
	int x0 = (int)floor(x), y0 = (int)floor(y), x1 = x0 + 1, y1 = y0 + 1;
	double fx = x - x0, fy = y - y0;
	const unsigned char *d = img->data;
	int w = img->width, h = img->height;

	x0 = x0 < 0 ? 0 : x0 >= w ? w - 1 : x0;
	x1 = x1 < 0 ? 0 : x1 >= w ? w - 1 : x1;
	y0 = y0 < 0 ? 0 : y0 >= h ? h - 1 : y0;
	y1 = y1 < 0 ? 0 : y1 >= h ? h - 1 : y1;
	return (float)((1 - fy) * ((1 - fx) * d[((size_t)y0 * w + x0) * 3 + c] +
				   fx * d[((size_t)y0 * w + x1) * 3 + c]) +
		       fy * ((1 - fx) * d[((size_t)y1 * w + x0) * 3 + c] +
			     fx * d[((size_t)y1 * w + x1) * 3 + c]));
}

void det_input(const struct rgb_image *img, int out_w, int out_h, int pad_w, int pad_h,
	       float *nchw)
{
	static const float mean[3] = { 0.485f, 0.456f, 0.406f };
	static const float std[3] = { 0.229f, 0.224f, 0.225f };
	size_t plane = (size_t)pad_w * pad_h;
	double sx = (double)img->width / out_w, sy = (double)img->height / out_h;
	int x, y, c;

	memset(nchw, 0, sizeof(float) * 3 * plane);
	for (y = 0; y < out_h; y++)
		for (x = 0; x < out_w; x++)
			for (c = 0; c < 3; c++) {
				/* BGR, as PaddleOCR's OpenCV images */
				float v = sample(img, (x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5,
						 2 - c) / 255.0f;

				nchw[c * plane + (size_t)y * pad_w + x] = (v - mean[c]) / std[c];
			}
}

struct pt {
	double x, y;
};

static double cross(struct pt o, struct pt a, struct pt b)
{
	return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

static int cmp_pt(const void *pa, const void *pb)
{
	const struct pt *a = pa, *b = pb;

	return a->x < b->x ? -1 : a->x > b->x ? 1 : a->y < b->y ? -1 : a->y > b->y;
}

/* Convex hull (monotone chain), counter-clockwise in y-down terms; returns its size. */
static int hull(struct pt *p, int n, struct pt *h)
{
	int k = 0, i, t;

	qsort(p, (size_t)n, sizeof(*p), cmp_pt);
	for (i = 0; i < n; i++) {
		while (k >= 2 && cross(h[k - 2], h[k - 1], p[i]) <= 0)
			k--;
		h[k++] = p[i];
	}
	for (i = n - 2, t = k + 1; i >= 0; i--) {
		while (k >= t && cross(h[k - 2], h[k - 1], p[i]) <= 0)
			k--;
		h[k++] = p[i];
	}
	return k > 1 ? k - 1 : k;
}

/*
 * Minimum-area rectangle of a convex polygon (rotating calipers: one side
 * lies on a hull edge), as four corners in get_mini_boxes' order: top-left,
 * top-right, bottom-right, bottom-left. Returns its short side.
 */
static double min_area_rect(const struct pt *h, int n, struct pt box[4])
{
	double best = INFINITY, side = 0;
	struct pt c[4] = { { 0, 0 } }, s[4];
	int i, j;

	if (n < 3) {
		for (i = 0; i < 4; i++)
			box[i] = h[i < n ? i : 0];
		return 0;
	}
	for (i = 0; i < n; i++) {
		struct pt a = h[i], b = h[(i + 1) % n];
		double len = hypot(b.x - a.x, b.y - a.y), ex, ey, e0 = INFINITY, e1 = -INFINITY;
		double n0 = INFINITY, n1 = -INFINITY;

		if (len == 0)
			continue;
		ex = (b.x - a.x) / len;
		ey = (b.y - a.y) / len;
		for (j = 0; j < n; j++) {
			double pe = h[j].x * ex + h[j].y * ey, pn = -h[j].x * ey + h[j].y * ex;

			e0 = pe < e0 ? pe : e0;
			e1 = pe > e1 ? pe : e1;
			n0 = pn < n0 ? pn : n0;
			n1 = pn > n1 ? pn : n1;
		}
		if ((e1 - e0) * (n1 - n0) < best) {
			best = (e1 - e0) * (n1 - n0);
			side = fmin(e1 - e0, n1 - n0);
			/* back from (e, n) coordinates: p = e * (ex, ey) + n * (-ey, ex) */
			c[0] = (struct pt){ e0 * ex - n0 * ey, e0 * ey + n0 * ex };
			c[1] = (struct pt){ e1 * ex - n0 * ey, e1 * ey + n0 * ex };
			c[2] = (struct pt){ e1 * ex - n1 * ey, e1 * ey + n1 * ex };
			c[3] = (struct pt){ e0 * ex - n1 * ey, e0 * ey + n1 * ex };
		}
	}
	memcpy(s, c, sizeof(s));
	qsort(s, 4, sizeof(*s), cmp_pt);
	box[0] = s[1].y > s[0].y ? s[0] : s[1];
	box[3] = s[1].y > s[0].y ? s[1] : s[0];
	box[1] = s[3].y > s[2].y ? s[2] : s[3];
	box[2] = s[3].y > s[2].y ? s[3] : s[2];
	return side;
}

/* Mean probability of the map inside a convex quad (box_score_fast). */
static float box_score(const float *prob, int pw, int ph, const struct pt b[4])
{
	double xmin = b[0].x, xmax = b[0].x, ymin = b[0].y, ymax = b[0].y, sum = 0;
	long count = 0;
	int x, y, i;

	for (i = 1; i < 4; i++) {
		xmin = fmin(xmin, b[i].x);
		xmax = fmax(xmax, b[i].x);
		ymin = fmin(ymin, b[i].y);
		ymax = fmax(ymax, b[i].y);
	}
	for (y = (int)fmax(0, floor(ymin)); y <= (int)fmin(ph - 1, ceil(ymax)); y++)
		for (x = (int)fmax(0, floor(xmin)); x <= (int)fmin(pw - 1, ceil(xmax)); x++) {
			struct pt p = { x, y };
			bool in = true;

			/* clockwise (y down) quad: inside when right of no edge, half a pixel slack */
			for (i = 0; i < 4 && in; i++) {
				struct pt a = b[i], c = b[(i + 1) % 4];
				double len = hypot(c.x - a.x, c.y - a.y);

				in = len == 0 || cross(a, c, p) / len >= -0.5;
			}
			if (in) {
				sum += prob[(size_t)y * pw + x];
				count++;
			}
		}
	return count ? (float)(sum / count) : 0.0f;
}

/* order_points_clockwise: top-left has the smallest x + y, bottom-right the largest. */
static void order_clockwise(struct pt p[4])
{
	struct pt r[4], rest[2];
	int i, tl = 0, br = 0, k = 0;

	for (i = 1; i < 4; i++) {
		if (p[i].x + p[i].y < p[tl].x + p[tl].y)
			tl = i;
		if (p[i].x + p[i].y >= p[br].x + p[br].y)
			br = i;
	}
	if (tl == br)
		br = (tl + 2) % 4;
	for (i = 0; i < 4; i++)
		if (i != tl && i != br)
			rest[k++] = p[i];
	r[0] = p[tl];
	r[2] = p[br];
	/* of the other two, top-right has the smaller y - x */
	r[1] = rest[0].y - rest[0].x <= rest[1].y - rest[1].x ? rest[0] : rest[1];
	r[3] = rest[0].y - rest[0].x <= rest[1].y - rest[1].x ? rest[1] : rest[0];
	memcpy(p, r, sizeof(r));
}

static int cmp_reading(const void *pa, const void *pb)
{
	const struct quad *a = pa, *b = pb;

	return a->y[0] < b->y[0] ? -1 : a->y[0] > b->y[0] ? 1 :
	       a->x[0] < b->x[0] ? -1 : a->x[0] > b->x[0];
}

int db_boxes(const float *prob, int pw, int ph, int map_w, int map_h, const struct db_opts *o,
	     int img_w, int img_h, struct quad *out, int max)
{
	size_t n = (size_t)pw * ph, i;
	unsigned char *mask = malloc(n);
	int *stack = malloc(n * sizeof(*stack)), *rmin = malloc(sizeof(int) * (size_t)ph);
	int *rmax = malloc(sizeof(int) * (size_t)ph);
	struct pt *pts = malloc(sizeof(struct pt) * 2 * (size_t)ph);
	struct pt *hp = malloc(sizeof(struct pt) * (2 * (size_t)ph + 1));
	int found = 0, candidates = 0, k, j;

	if (!mask || !stack || !rmin || !rmax || !pts || !hp) {
		found = -1;
		goto out;
	}
	for (k = 0; k < ph; k++)
		rmin[k] = pw, rmax[k] = -1;
	for (i = 0; i < n; i++)
		mask[i] = (int)(i % pw) < map_w && (int)(i / pw) < map_h && prob[i] > o->thresh;
	for (i = 0; i < n && found < max && candidates < o->max_candidates; i++) {
		struct pt box[4];
		int top = 0, y0 = ph, y1 = -1, np = 0, nh, y;
		double side, w, h, d, cx, cy, ux, uy, vx, vy;
		float score;

		if (!mask[i])
			continue;
		candidates++;
		/* The region: 8-connected pixels; keep each row's leftmost and rightmost. */
		stack[top++] = (int)i;
		mask[i] = 0;
		while (top) {
			int idx = stack[--top], x = idx % pw, yy = idx / pw, dx, dy;

			y0 = yy < y0 ? yy : y0;
			y1 = yy > y1 ? yy : y1;
			rmin[yy] = x < rmin[yy] ? x : rmin[yy];
			rmax[yy] = x > rmax[yy] ? x : rmax[yy];
			for (dy = -1; dy <= 1; dy++)
				for (dx = -1; dx <= 1; dx++) {
					int nx = x + dx, ny = yy + dy, nb;

					if (nx < 0 || ny < 0 || nx >= pw || ny >= ph)
						continue;
					nb = ny * pw + nx;
					if (mask[nb]) {
						mask[nb] = 0;
						stack[top++] = nb;
					}
				}
		}
		for (y = y0; y <= y1; y++) {
			if (rmax[y] >= 0) {
				pts[np++] = (struct pt){ rmin[y], y };
				if (rmax[y] != rmin[y])
					pts[np++] = (struct pt){ rmax[y], y };
			}
			rmin[y] = pw;
			rmax[y] = -1;
		}
		nh = hull(pts, np, hp);
		side = min_area_rect(hp, nh, box);
		if (side < o->min_size)
			continue;
		score = box_score(prob, pw, ph, box);
		if (score < o->box_thresh)
			continue;
		/* Unclip: DB's regions are shrunk text; an offset of area * ratio /
		 * perimeter restores them (a rectangle's offset's minimum-area
		 * rectangle is the rectangle grown by that on every side). */
		w = hypot(box[1].x - box[0].x, box[1].y - box[0].y);
		h = hypot(box[3].x - box[0].x, box[3].y - box[0].y);
		if (w == 0 || h == 0)
			continue;
		d = w * h * o->unclip_ratio / (2 * (w + h));
		if (fmin(w, h) + 2 * d < o->min_size + 2)
			continue;
		cx = (box[0].x + box[2].x) / 2;
		cy = (box[0].y + box[2].y) / 2;
		ux = (box[1].x - box[0].x) / w;
		uy = (box[1].y - box[0].y) / w;
		vx = (box[3].x - box[0].x) / h;
		vy = (box[3].y - box[0].y) / h;
		for (k = 0; k < 4; k++) {
			double se = (k == 1 || k == 2) ? 1 : -1, sn = (k >= 2) ? 1 : -1;
			double px = cx + se * (w / 2 + d) * ux + sn * (h / 2 + d) * vx;
			double py = cy + se * (w / 2 + d) * uy + sn * (h / 2 + d) * vy;

			/* to image pixels, rounded and clipped as PaddleOCR */
			px = round(px / map_w * img_w);
			py = round(py / map_h * img_h);
			box[k].x = fmin(fmax(px, 0), img_w - 1);
			box[k].y = fmin(fmax(py, 0), img_h - 1);
		}
		order_clockwise(box);
		if ((int)hypot(box[1].x - box[0].x, box[1].y - box[0].y) <= 3 ||
		    (int)hypot(box[3].x - box[0].x, box[3].y - box[0].y) <= 3)
			continue;
		for (k = 0; k < 4; k++) {
			out[found].x[k] = (float)box[k].x;
			out[found].y[k] = (float)box[k].y;
		}
		out[found++].score = score;
	}
	/* sorted_boxes: by top-left y then x; then neighbours whose tops are
	 * within 10 px swap into left-to-right order. */
	qsort(out, (size_t)found, sizeof(*out), cmp_reading);
	for (k = 0; k + 1 < found; k++)
		for (j = k; j >= 0; j--) {
			if (fabsf(out[j + 1].y[0] - out[j].y[0]) < 10 && out[j + 1].x[0] < out[j].x[0]) {
				struct quad t = out[j];

				out[j] = out[j + 1];
				out[j + 1] = t;
			} else {
				break;
			}
		}
out:
	free(mask);
	free(stack);
	free(rmin);
	free(rmax);
	free(pts);
	free(hp);
	return found;
}

void crop_of(const struct quad *q, struct crop *c)
{
	double top = hypot(q->x[1] - q->x[0], q->y[1] - q->y[0]);
	double bottom = hypot(q->x[2] - q->x[3], q->y[2] - q->y[3]);
	double left = hypot(q->x[3] - q->x[0], q->y[3] - q->y[0]);
	double right = hypot(q->x[2] - q->x[1], q->y[2] - q->y[1]);

	c->q = *q;
	c->w = (int)fmax(top, bottom);
	c->h = (int)fmax(left, right);
	c->w = c->w < 1 ? 1 : c->w;
	c->h = c->h < 1 ? 1 : c->h;
	c->turned = (double)c->h / c->w >= 1.5;
}

int crop_rec_width(const struct crop *c, int rec_h)
{
	int w = c->turned ? c->h : c->w, h = c->turned ? c->w : c->h;
	int r = (int)ceil((double)rec_h * w / h);

	return r < 1 ? 1 : r;
}

void rec_input(const struct rgb_image *img, const struct crop *c, int rec_h, int width,
	       int bucket_w, float *nchw)
{
	const struct quad *q = &c->q;
	int tw = c->turned ? c->h : c->w, th = c->turned ? c->w : c->h;
	size_t plane = (size_t)rec_h * bucket_w;
	int x, y, ch;

	width = width > bucket_w ? bucket_w : width;
	memset(nchw, 0, sizeof(float) * 3 * plane);
	for (y = 0; y < rec_h; y++)
		for (x = 0; x < width; x++) {
			/* rec pixel -> crop pixel (resize), -> before the turn, -> image */
			double tx = (x + 0.5) * tw / width - 0.5, ty = (y + 0.5) * th / rec_h - 0.5;
			double cx = c->turned ? c->w - 1 - ty : tx, cy = c->turned ? tx : ty;
			double u = cx / c->w, v = cy / c->h;
			double ix = (1 - u) * (1 - v) * q->x[0] + u * (1 - v) * q->x[1] +
				    u * v * q->x[2] + (1 - u) * v * q->x[3];
			double iy = (1 - u) * (1 - v) * q->y[0] + u * (1 - v) * q->y[1] +
				    u * v * q->y[2] + (1 - u) * v * q->y[3];

			for (ch = 0; ch < 3; ch++)
				nchw[ch * plane + (size_t)y * bucket_w + x] =
					(sample(img, ix, iy, 2 - ch) / 255.0f - 0.5f) / 0.5f;
		}
}

/* ---- CTCLabelDecode ---------------------------------------------------- */

#define CTC_TEXT_MAX 1024

int ctc_dict_load(const char *path, struct ctc_dict *d, char *err, size_t err_size)
{
	FILE *f = fopen(path, "r");
	char buf[256];
	int cap = 8192;

	d->keys = NULL;
	d->num_keys = 0;
	if (!f) {
		snprintf(err, err_size, "dictionary %s: %s", path, strerror(errno));
		return -1;
	}
	d->keys = calloc((size_t)cap, sizeof(*d->keys));
	if (!d->keys) {
		fclose(f);
		snprintf(err, err_size, "dictionary %s: out of memory", path);
		return -1;
	}
	d->keys[d->num_keys++] = strdup("");
	while (fgets(buf, sizeof(buf), f) && d->num_keys < cap - 1) {
		buf[strcspn(buf, "\r\n")] = 0;
		d->keys[d->num_keys++] = strdup(buf);
	}
	d->keys[d->num_keys++] = strdup(" ");
	fclose(f);
	for (cap = 0; cap < d->num_keys; cap++)
		if (!d->keys[cap]) {
			ctc_dict_free(d);
			snprintf(err, err_size, "dictionary %s: out of memory", path);
			return -1;
		}
	return 0;
}

void ctc_dict_free(struct ctc_dict *d)
{
	int i;

	for (i = 0; d->keys && i < d->num_keys; i++)
		free(d->keys[i]);
	free(d->keys);
	d->keys = NULL;
	d->num_keys = 0;
}

/*
 * The Chinese dictionary has full-width forms of ASCII punctuation
 * (U+FF01..U+FF5E, e.g. "，" "（"): next to ASCII text they are the ASCII
 * characters (NFKC maps them the same way).
 */
static void ascii_fullwidth(char *s)
{
	char *w = s, *p = s;

	while (*p) {
		unsigned char a = (unsigned char)p[0], b = (unsigned char)p[1];
		unsigned char c = b ? (unsigned char)p[2] : 0;
		/* U+FF01..U+FF5E: EF BC 81..BF, EF BD 80..9E */
		int cp = a == 0xef && (b == 0xbc || b == 0xbd) && c >= 0x80 && c <= 0xbf ?
			 0xff00 + (b - 0xbc) * 64 + (c - 0x80) : 0;

		if (cp >= 0xff01 && cp <= 0xff5e) {
			unsigned char prev = w > s ? (unsigned char)w[-1] : 0;
			unsigned char next = (unsigned char)p[3];

			if ((prev && prev < 0x80) || (next && next < 0x80)) {
				*w++ = (char)(cp - 0xff01 + 0x21);
				p += 3;
				continue;
			}
		}
		*w++ = *p++;
	}
	*w = 0;
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Latin text's two commonest misreadings by the Chinese model, fixed by
 * the characters around them: a 0 in a run of letters with no other digit
 * is the letter O ("ST0P", "p0stcode"; lower case when its neighbours are,
 * upper case at the start of a word), an O in a run of digits is 0
 * ("2O19"); and a comma, semicolon or colon right after a letter and
 * before a letter or digit lost its space ("window,88607"; "1,234" and
 * "10:30" are digits on both sides and stay).
 */
static void latin_fixes(char *s)
{
	char out[CTC_TEXT_MAX];
	size_t n = strlen(s), i, j, k, w = 0;

	for (i = 0; i < n; i = j) {
		size_t letters = 0, digits = 0, zeros = 0, ohs = 0;
		bool upper;

		for (j = i; j < n && (is_alpha(s[j]) || is_digit(s[j])); j++) {
			letters += is_alpha(s[j]);
			digits += is_digit(s[j]);
			zeros += s[j] == '0';
			ohs += s[j] == 'O' || s[j] == 'o';
		}
		if (j == i) {
			j = i + 1;
			continue;
		}
		if (letters && zeros && zeros == digits) {
			for (k = i; k < j; k++) {
				if (s[k] != '0')
					continue;
				/* upper case at a word's start, else as the next (at
				 * the end: the previous) letter, lower after a lower-case one */
				upper = k == i || (k + 1 < j ? s[k + 1] >= 'A' && s[k + 1] <= 'Z' :
						   s[k - 1] >= 'A' && s[k - 1] <= 'Z');
				if (k > i && s[k - 1] >= 'a' && s[k - 1] <= 'z')
					upper = false;
				s[k] = upper ? 'O' : 'o';
			}
		} else if (digits && ohs && ohs == letters && digits >= 2) {
			for (k = i; k < j; k++)
				if (s[k] == 'O' || s[k] == 'o')
					s[k] = '0';
		}
	}
	for (i = 0; i < n && w + 2 < sizeof(out); i++) {
		out[w++] = s[i];
		if ((s[i] == ',' || s[i] == ';' || s[i] == ':') && i > 0 && is_alpha(s[i - 1]) &&
		    i + 1 < n && (is_alpha(s[i + 1]) || is_digit(s[i + 1])))
			out[w++] = ' ';
	}
	out[w] = 0;
	memcpy(s, out, w + 1);
}

float ctc_decode(const float *probs, int64_t steps, int64_t classes, const struct ctc_dict *d,
		 const struct ctc_opts *o, char *text, size_t size)
{
	char buf[CTC_TEXT_MAX];
	int64_t t, space = d->num_keys - 1;
	int64_t prev = 0;
	size_t len = 0;
	double sum = 0;
	float gap_space = 0;
	int kept = 0;

	buf[0] = 0;
	for (t = 0; t < steps; t++) {
		const float *row = probs + t * classes;
		int64_t k, best = 0;

		for (k = 1; k < classes; k++)
			if (row[k] > row[best])
				best = k;
		if (best && best != prev && best < d->num_keys) {
			const char *str = d->keys[best];
			size_t n = strlen(str);

			/* A word gap the argmax read as blank: the space class
			 * rises there (0.01..0.2) and stays ~0 inside words;
			 * 0.008 is 2 steps of an int8 softmax output (1/255). */
			if (len && buf[len - 1] != ' ' && best != space &&
			    gap_space >= o->space_thresh && len + 1 < sizeof(buf)) {
				buf[len++] = ' ';
				buf[len] = 0;
			}
			if (len + n < sizeof(buf)) {
				memcpy(buf + len, str, n + 1);
				len += n;
			}
			sum += row[best];
			kept++;
			gap_space = 0;
		} else if (!best && space < classes && row[space] > gap_space) {
			gap_space = row[space];
		}
		prev = best;
	}
	ascii_fullwidth(buf);
	if (o->latin_fixes)
		latin_fixes(buf);
	/* The dictionary's space class lands at a crop's edges: not text. */
	len = strlen(buf);
	while (len && buf[len - 1] == ' ')
		buf[--len] = 0;
	if (buf[0] == ' ') {
		size_t lead = strspn(buf, " ");

		memmove(buf, buf + lead, len - lead + 1);
	}
	snprintf(text, size, "%s", buf);
	return kept ? (float)(sum / kept) : 0.0f;
}
