// SPDX-License-Identifier: MIT
/* bytes: BYTES tensors, serialized and engine forms (see bytes.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int bytes_check(const void *data, size_t n, uint64_t elems, const char *what, char *err)
{
	const unsigned char *p = data;
	size_t off = 0;
	uint64_t i;

	for (i = 0; off < n; i++) {
		uint32_t len;

		if (i == elems)
			return serve_err(err, SERVE_INVALID,
					 "%s: the BYTES data holds more than the %" PRIu64 " elements of its shape (%zu bytes left at offset %zu)",
					 what, elems, n - off, off);
		if (n - off < 4)
			return serve_err(err, SERVE_INVALID,
					 "%s: BYTES element %" PRIu64 " has a length prefix cut short (%zu of 4 bytes left at offset %zu)",
					 what, i, n - off, off);
		len = get_le32(p + off);
		if (len > n - off - 4)
			return serve_err(err, SERVE_INVALID,
					 "%s: BYTES element %" PRIu64 " at offset %zu claims %u bytes but only %zu remain",
					 what, i, off, len, n - off - 4);
		off += 4 + (size_t)len;
	}
	if (i < elems)
		return serve_err(err, SERVE_INVALID,
				 "%s: the BYTES data holds %" PRIu64 " elements but its shape has %" PRIu64,
				 what, i, elems);
	return SERVE_OK;
}

/* One UTF-8 sequence at p (n bytes left): its length, 0 if invalid (RFC 3629). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len, k;
	uint32_t c;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, c = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, c = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, c = p[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[k] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return len;
}

int bytes_utf8(const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t off = 0;

	while (n - off >= 4) {
		size_t len = get_le32(p + off), i, k;

		off += 4;
		if (len > n - off)
			return 0;
		for (i = 0; i < len; i += k) {
			k = utf8_seq(p + off + i, len - i);
			/* NUL is valid UTF-8, but jansson takes no NUL in a string. */
			if (!k || !p[off + i])
				return 0;
		}
		off += len;
	}
	return 1;
}

int bytes_to_engine(const void *data, size_t n, size_t count, void **out, size_t *out_bytes,
		    char *err)
{
	const unsigned char *p = data;
	const char **strs = calloc(count ? count : 1, sizeof(*strs));
	size_t *lens = calloc(count ? count : 1, sizeof(*lens)), off = 0, i, size;
	int r = SERVE_OK;

	*out = NULL;
	if (!strs || !lens) {
		r = serve_err(err, SERVE_INTERNAL, "out of memory");
		goto out;
	}
	for (i = 0; i < count; i++) {
		/* Checked when decoded (bytes_check): the prefixes tile the data. */
		if (n - off < 4 || get_le32(p + off) > n - off - 4) {
			r = serve_err(err, SERVE_INTERNAL, "BYTES element %zu is cut short", i);
			goto out;
		}
		lens[i] = get_le32(p + off);
		strs[i] = (const char *)p + off + 4;
		off += 4 + lens[i];
	}
	size = npu_string_tensor_bytes(lens, count);
	*out = malloc(size ? size : 1);
	if (!*out) {
		r = serve_err(err, SERVE_INTERNAL, "out of memory");
		goto out;
	}
	if (npu_string_tensor_pack(strs, lens, count, *out, size) != NPU_OK) {
		r = serve_err(err, SERVE_INTERNAL, "packing BYTES: %s", npu_last_error());
		free(*out);
		*out = NULL;
		goto out;
	}
	*out_bytes = size;
out:
	free(strs);
	free(lens);
	return r;
}

int bytes_from_engine(const struct npu_host_tensor *t, size_t first, size_t count, void **out,
		      size_t *out_bytes, char *err)
{
	size_t total = 0, i, off = 0;
	unsigned char *b;

	*out = NULL;
	for (i = 0; i < count; i++) {
		const char *s;
		size_t len;

		if (npu_string_tensor_get(t, first + i, &s, &len) != NPU_OK)
			return serve_err(err, SERVE_INTERNAL, "string output: %s", npu_last_error());
		if (len > UINT32_MAX)
			return serve_err(err, SERVE_INTERNAL,
					 "string output element %zu is %zu bytes, over BYTES' 4 GiB",
					 first + i, len);
		total += 4 + len;
	}
	b = malloc(total ? total : 1);
	if (!b)
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	for (i = 0; i < count; i++) {
		const char *s;
		size_t len;

		npu_string_tensor_get(t, first + i, &s, &len);
		b[off] = (unsigned char)len;
		b[off + 1] = (unsigned char)(len >> 8);
		b[off + 2] = (unsigned char)(len >> 16);
		b[off + 3] = (unsigned char)(len >> 24);
		if (len)
			memcpy(b + off + 4, s, len);
		off += 4 + len;
	}
	*out = b;
	*out_bytes = total;
	return SERVE_OK;
}
