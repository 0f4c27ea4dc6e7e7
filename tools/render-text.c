// SPDX-License-Identifier: MIT
/*
 * render-text: draw lines of text on an RGB image and save it as PNG,
 * printing each line's ink bounding box, so a text-detection model can be
 * run on an image made locally and its boxes checked against the truth.
 *
 *   render-text -o img.png [--size WxH|auto] [--font FILE.ttf] [--px N]
 *               [--fg RRGGBB] [--bg RRGGBB] [--rotate DEG] [--blur SIGMA]
 *               [--noise SIGMA] [--seed N] [--boxes FILE] "line one" ...
 *
 * Lines are placed top to bottom with a margin; each box is written as
 * "x0 y0 x1 y1 text" (pixels, x1/y1 exclusive, before any rotation).
 * --size auto fits the image to the text. The degradations apply in this
 * order: rotation about the centre (the background fills the corners),
 * Gaussian blur, then Gaussian noise from a fixed-seed generator, so the
 * same arguments always give the same image.
 */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ft2build.h>
#include FT_FREETYPE_H
#include <png.h>

#define PI 3.14159265358979323846
#define DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"

struct canvas {
	int width, height;
	unsigned char *rgb;
	unsigned char fg[3], bg[3];
};

struct box {
	int x0, y0, x1, y1;
};

static void blend_glyph(struct canvas *c, const FT_Bitmap *bm, int left,
			int top, struct box *ink)
{
	unsigned int row, col;

	for (row = 0; row < bm->rows; row++) {
		for (col = 0; col < bm->width; col++) {
			int x = left + (int)col, y = top + (int)row;
			unsigned char a = bm->buffer[row * bm->pitch + col];
			unsigned char *px;
			int ch;

			if (!a || x < 0 || y < 0 || x >= c->width || y >= c->height)
				continue;
			px = c->rgb + ((size_t)y * c->width + x) * 3;
			for (ch = 0; ch < 3; ch++)	/* ink over the background */
				px[ch] = (unsigned char)((px[ch] * (255 - a) + c->fg[ch] * a) / 255);
			if (a > 64) {
				ink->x0 = x < ink->x0 ? x : ink->x0;
				ink->y0 = y < ink->y0 ? y : ink->y0;
				ink->x1 = x + 1 > ink->x1 ? x + 1 : ink->x1;
				ink->y1 = y + 1 > ink->y1 ? y + 1 : ink->y1;
			}
		}
	}
}

static int draw_line(struct canvas *c, FT_Face face, const char *text,
		     int pen_x, int baseline, struct box *ink)
{
	const unsigned char *p;

	ink->x0 = c->width;
	ink->y0 = c->height;
	ink->x1 = ink->y1 = 0;
	for (p = (const unsigned char *)text; *p; p++) {
		FT_Error e = FT_Load_Char(face, *p, FT_LOAD_RENDER);

		if (e) {
			fprintf(stderr, "render-text: cannot render character 0x%02x of \"%s\" (FreeType error %d)\n",
				*p, text, e);
			return -1;
		}
		blend_glyph(c, &face->glyph->bitmap,
			    pen_x + face->glyph->bitmap_left,
			    baseline - face->glyph->bitmap_top, ink);
		pen_x += (int)(face->glyph->advance.x >> 6);
	}
	return 0;
}

/* The pen advance of a line, in pixels (what --size auto fits to). */
static int line_advance(FT_Face face, const char *text)
{
	const unsigned char *p;
	int w = 0;

	for (p = (const unsigned char *)text; *p; p++)
		if (!FT_Load_Char(face, *p, FT_LOAD_DEFAULT))
			w += (int)(face->glyph->advance.x >> 6);
	return w;
}

static unsigned char clamp_u8(double v)
{
	return v <= 0 ? 0 : v >= 255 ? 255 : (unsigned char)(v + 0.5);
}

/* Rotate by 'deg' (counter-clockwise) about the centre, bilinear. */
static int rotate(struct canvas *c, double deg)
{
	double a = deg * PI / 180, cs = cos(a), sn = sin(a);
	double cx = (c->width - 1) / 2.0, cy = (c->height - 1) / 2.0;
	unsigned char *out = malloc((size_t)c->width * c->height * 3);
	int x, y, ch;

	if (!out)
		return -1;
	for (y = 0; y < c->height; y++) {
		for (x = 0; x < c->width; x++) {
			/* Inverse map: the source pixel this one comes from. */
			double sx = cs * (x - cx) - sn * (y - cy) + cx;
			double sy = sn * (x - cx) + cs * (y - cy) + cy;
			int x0 = (int)floor(sx), y0 = (int)floor(sy);
			double fx = sx - x0, fy = sy - y0;

			for (ch = 0; ch < 3; ch++) {
				double v = 0;
				int dx, dy;

				for (dy = 0; dy < 2; dy++)
					for (dx = 0; dx < 2; dx++) {
						int px = x0 + dx, py = y0 + dy;
						double wgt = (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
						int s = px < 0 || py < 0 || px >= c->width || py >= c->height ?
							c->bg[ch] :
							c->rgb[((size_t)py * c->width + px) * 3 + ch];

						v += wgt * s;
					}
				out[((size_t)y * c->width + x) * 3 + ch] = clamp_u8(v);
			}
		}
	}
	free(c->rgb);
	c->rgb = out;
	return 0;
}

/* Separable Gaussian blur, edges replicated. */
static int blur(struct canvas *c, double sigma)
{
	int r = (int)ceil(3 * sigma), pass, x, y, ch, k;
	double *kern = malloc(sizeof(double) * (size_t)(2 * r + 1)), sum = 0;
	unsigned char *tmp = malloc((size_t)c->width * c->height * 3);

	if (!kern || !tmp) {
		free(kern);
		free(tmp);
		return -1;
	}
	for (k = -r; k <= r; k++)
		sum += kern[k + r] = exp(-k * k / (2 * sigma * sigma));
	for (k = 0; k <= 2 * r; k++)
		kern[k] /= sum;
	for (pass = 0; pass < 2; pass++) {
		const unsigned char *src = pass ? tmp : c->rgb;
		unsigned char *dst = pass ? c->rgb : tmp;

		for (y = 0; y < c->height; y++)
			for (x = 0; x < c->width; x++)
				for (ch = 0; ch < 3; ch++) {
					double v = 0;

					for (k = -r; k <= r; k++) {
						int sx = pass ? x : x + k, sy = pass ? y + k : y;

						sx = sx < 0 ? 0 : sx >= c->width ? c->width - 1 : sx;
						sy = sy < 0 ? 0 : sy >= c->height ? c->height - 1 : sy;
						v += kern[k + r] * src[((size_t)sy * c->width + sx) * 3 + ch];
					}
					dst[((size_t)y * c->width + x) * 3 + ch] = clamp_u8(v);
				}
	}
	free(kern);
	free(tmp);
	return 0;
}

/* Additive Gaussian noise (the same on the three channels: sensor-like). */
static void add_noise(struct canvas *c, double sigma, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i, n = (size_t)c->width * c->height;
	int ch;

	for (i = 0; i < n; i++) {
		double u1, u2, g;

		/* xorshift64*, then Box-Muller */
		s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
		u1 = ((s * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
		s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
		u2 = ((s * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
		g = sqrt(-2 * log(u1 + 1e-12)) * cos(2 * PI * u2) * sigma;
		for (ch = 0; ch < 3; ch++)
			c->rgb[i * 3 + ch] = clamp_u8(c->rgb[i * 3 + ch] + g);
	}
}

static int parse_colour(const char *opt, const char *s, unsigned char rgb[3])
{
	unsigned int v;
	char end;

	if (strlen(s) != 6 || sscanf(s, "%6x%c", &v, &end) != 1) {
		fprintf(stderr, "render-text: %s '%s': expected RRGGBB (hex)\n", opt, s);
		return -1;
	}
	rgb[0] = (unsigned char)(v >> 16);
	rgb[1] = (unsigned char)(v >> 8);
	rgb[2] = (unsigned char)v;
	return 0;
}

static int write_png(const char *path, const struct canvas *c)
{
	png_image img;

	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	img.width = (png_uint_32)c->width;
	img.height = (png_uint_32)c->height;
	img.format = PNG_FORMAT_RGB;
	if (!png_image_write_to_file(&img, path, 0, c->rgb, 0, NULL)) {
		fprintf(stderr, "render-text: %s: %s\n", path, img.message);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: render-text -o OUT.png [--size WxH|auto] [--font FILE.ttf] [--px N]\n"
		"                   [--fg RRGGBB] [--bg RRGGBB] [--rotate DEG] [--blur SIGMA]\n"
		"                   [--noise SIGMA] [--seed N] [--boxes FILE] TEXT...\n"
		"  --size auto   fit the image to the text (a margin of one line height)\n"
		"  --fg, --bg    ink and background colours (default 000000 on ffffff)\n"
		"  --rotate DEG  rotate the picture about its centre (-45..45)\n"
		"  --blur SIGMA  Gaussian blur (0..10 px)\n"
		"  --noise SIGMA additive Gaussian noise (0..128 levels), seeded by --seed\n");
}

int main(int argc, char **argv)
{
	const char *out = NULL, *font = DEFAULT_FONT, *boxes_path = NULL;
	int width = 640, height = 640, px = 40, first_text = 0, i, rc = 1;
	struct canvas canvas = { .fg = { 0, 0, 0 }, .bg = { 255, 255, 255 } };
	double rot = 0, blur_sigma = 0, noise_sigma = 0;
	unsigned long long seed = 1;
	bool fit = false;
	FT_Library lib = NULL;
	FT_Face face = NULL;
	FILE *boxes = stdout;
	int lines, line_h, y, step;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "-o") && v) {
			out = argv[++i];
		} else if (!strcmp(a, "--size") && v) {
			i++;
			if (!strcmp(v, "auto")) {
				fit = true;
			} else if (sscanf(v, "%dx%d", &width, &height) != 2 ||
				   width < 16 || height < 16 || width > 8192 || height > 8192) {
				fprintf(stderr, "render-text: --size '%s': expected auto or WxH between 16 and 8192\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--font") && v) {
			font = argv[++i];
		} else if (!strcmp(a, "--px") && v) {
			px = atoi(argv[++i]);
			if (px < 6 || px > 512) {
				fprintf(stderr, "render-text: --px '%s': expected 6..512\n", argv[i]);
				return 2;
			}
		} else if ((!strcmp(a, "--fg") || !strcmp(a, "--bg")) && v) {
			if (parse_colour(a, v, a[2] == 'f' ? canvas.fg : canvas.bg))
				return 2;
			i++;
		} else if ((!strcmp(a, "--rotate") || !strcmp(a, "--blur") ||
			    !strcmp(a, "--noise")) && v) {
			double d = strtod(v, &end), lo = a[2] == 'r' ? -45 : 0;
			double hi = a[2] == 'r' ? 45 : a[2] == 'b' ? 10 : 128;

			if (end == v || *end || !(d >= lo && d <= hi)) {
				fprintf(stderr, "render-text: %s '%s': expected a number in %g..%g\n", a, v, lo, hi);
				return 2;
			}
			*(a[2] == 'r' ? &rot : a[2] == 'b' ? &blur_sigma : &noise_sigma) = d;
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			seed = strtoull(v, &end, 10);
			if (end == v || *end) {
				fprintf(stderr, "render-text: --seed '%s': expected an integer\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--boxes") && v) {
			boxes_path = argv[++i];
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "render-text: unknown option '%s'%s\n", a,
				v ? "" : " (or it needs a value)");
			usage(stderr);
			return 2;
		} else {
			first_text = i;
			break;
		}
	}
	if (!out || !first_text) {
		usage(stderr);
		return 2;
	}
	lines = argc - first_text;
	line_h = px * 2;
	if (FT_Init_FreeType(&lib) || FT_New_Face(lib, font, 0, &face)) {
		fprintf(stderr, "render-text: cannot load font %s\n", font);
		goto out;
	}
	FT_Set_Pixel_Sizes(face, 0, (FT_UInt)px);
	if (fit) {
		/* Lines 1.5 px apart, a margin of one px around them, and room
		 * for the rotation to keep the text inside. */
		int w = 0;

		for (i = first_text; i < argc; i++) {
			int adv = line_advance(face, argv[i]);

			w = adv > w ? adv : w;
		}
		width = w + 2 * px;
		height = lines * (px * 3 / 2) + px + (int)ceil(fabs(sin(rot * PI / 180)) * width);
		if (width > 8192 || height > 8192) {
			fprintf(stderr, "render-text: the text needs %dx%d pixels, above 8192\n", width, height);
			goto out;
		}
	} else if (lines * line_h + px > height) {
		fprintf(stderr, "render-text: %d lines of %d px do not fit in height %d\n",
			lines, px, height);
		goto out;
	}

	canvas.width = width;
	canvas.height = height;
	canvas.rgb = malloc((size_t)width * height * 3);
	if (!canvas.rgb) {
		fprintf(stderr, "render-text: out of memory\n");
		goto out;
	}
	for (i = 0; i < width * height; i++)
		memcpy(canvas.rgb + (size_t)i * 3, canvas.bg, 3);

	if (boxes_path) {
		boxes = fopen(boxes_path, "w");
		if (!boxes) {
			fprintf(stderr, "render-text: %s: %s\n", boxes_path, strerror(errno));
			goto out;
		}
	}
	if (fit) {
		/* Baselines: the block of lines centred vertically. */
		step = px * 3 / 2;
		y = (height - lines * step) / 2 + px;
	} else {
		/* Spread the lines over the height, starting one line height down. */
		step = (height - line_h) / lines;
		y = line_h;
	}
	for (i = first_text; i < argc; i++, y += step) {
		struct box ink;

		if (draw_line(&canvas, face, argv[i], px, y, &ink))
			goto out;
		if (ink.x1 > ink.x0)
			fprintf(boxes, "%d %d %d %d %s\n", ink.x0, ink.y0, ink.x1, ink.y1, argv[i]);
	}
	if ((rot && rotate(&canvas, rot)) || (blur_sigma > 0 && blur(&canvas, blur_sigma))) {
		fprintf(stderr, "render-text: out of memory\n");
		goto out;
	}
	if (noise_sigma > 0)
		add_noise(&canvas, noise_sigma, seed);
	if (write_png(out, &canvas))
		goto out;
	rc = 0;
out:
	if (boxes && boxes != stdout)
		fclose(boxes);
	if (face)
		FT_Done_Face(face);
	if (lib)
		FT_Done_FreeType(lib);
	free(canvas.rgb);
	return rc;
}
