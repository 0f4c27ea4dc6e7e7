// SPDX-License-Identifier: MIT
/*
 * render-text: draw lines of text on a white RGB image and save it as PNG,
 * printing each line's ink bounding box, so a text-detection model can be
 * run on an image made locally and its boxes checked against the truth.
 *
 *   render-text -o img.png [--size WxH] [--font FILE.ttf] [--px N]
 *               [--boxes FILE] "line one" "line two" ...
 *
 * Lines are placed top to bottom with a margin; each box is written as
 * "x0 y0 x1 y1 text" (pixels, x1/y1 exclusive).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ft2build.h>
#include FT_FREETYPE_H
#include <png.h>

#define DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"

struct canvas {
	int width, height;
	unsigned char *rgb;
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
			for (ch = 0; ch < 3; ch++)	/* black ink over white */
				px[ch] = (unsigned char)(px[ch] * (255 - a) / 255);
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
		"usage: render-text -o OUT.png [--size WxH] [--font FILE.ttf] [--px N]\n"
		"                   [--boxes FILE] TEXT...\n");
}

int main(int argc, char **argv)
{
	const char *out = NULL, *font = DEFAULT_FONT, *boxes_path = NULL;
	int width = 640, height = 640, px = 40, first_text = 0, i, rc = 1;
	struct canvas canvas = { 0 };
	FT_Library lib = NULL;
	FT_Face face = NULL;
	FILE *boxes = stdout;
	int lines, line_h, y;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			if (sscanf(argv[++i], "%dx%d", &width, &height) != 2 ||
			    width < 16 || height < 16 || width > 8192 || height > 8192) {
				fprintf(stderr, "render-text: --size '%s': expected WxH between 16 and 8192\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--font") && i + 1 < argc) {
			font = argv[++i];
		} else if (!strcmp(argv[i], "--px") && i + 1 < argc) {
			px = atoi(argv[++i]);
			if (px < 6 || px > 512) {
				fprintf(stderr, "render-text: --px '%s': expected 6..512\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--boxes") && i + 1 < argc) {
			boxes_path = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "render-text: unknown option '%s'\n", argv[i]);
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
	if (lines * line_h + px > height) {
		fprintf(stderr, "render-text: %d lines of %d px do not fit in height %d\n",
			lines, px, height);
		return 2;
	}

	canvas.width = width;
	canvas.height = height;
	canvas.rgb = malloc((size_t)width * height * 3);
	if (!canvas.rgb) {
		fprintf(stderr, "render-text: out of memory\n");
		return 1;
	}
	memset(canvas.rgb, 255, (size_t)width * height * 3);

	if (FT_Init_FreeType(&lib) || FT_New_Face(lib, font, 0, &face)) {
		fprintf(stderr, "render-text: cannot load font %s\n", font);
		goto out;
	}
	FT_Set_Pixel_Sizes(face, 0, (FT_UInt)px);
	if (boxes_path) {
		boxes = fopen(boxes_path, "w");
		if (!boxes) {
			fprintf(stderr, "render-text: %s: %s\n", boxes_path, strerror(errno));
			goto out;
		}
	}
	/* Spread the lines over the height, starting one line height down. */
	y = line_h;
	for (i = first_text; i < argc; i++, y += (height - line_h) / lines) {
		struct box ink;

		if (draw_line(&canvas, face, argv[i], px, y, &ink))
			goto out;
		if (ink.x1 > ink.x0)
			fprintf(boxes, "%d %d %d %d %s\n", ink.x0, ink.y0, ink.x1, ink.y1, argv[i]);
	}
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
