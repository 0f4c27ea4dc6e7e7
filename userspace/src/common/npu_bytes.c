// SPDX-License-Identifier: MIT
/* Byte streams of the library's own file formats (npu_bytes.h). */
#include "common/npu_bytes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void npu_put(struct npu_wbuf *w, const void *p, size_t n)
{
	if (w->oom)
		return;
	if (n > w->cap - w->size) {
		size_t cap = w->cap ? w->cap : 1 << 16;
		uint8_t *d;

		while (cap - w->size < n) {
			if (cap > SIZE_MAX / 2) {
				w->oom = true;
				return;
			}
			cap *= 2;
		}
		d = realloc(w->data, cap);
		if (!d) {
			w->oom = true;
			return;
		}
		w->data = d;
		w->cap = cap;
	}
	if (n)
		memcpy(w->data + w->size, p, n);
	w->size += n;
}

void npu_put_str(struct npu_wbuf *w, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : 0;

	npu_put_u32(w, n);
	npu_put(w, s, n);
}

void npu_put_blob(struct npu_wbuf *w, const void *p, uint64_t n)
{
	npu_put_u64(w, p ? n : 0);
	if (p)
		npu_put(w, p, n);
}

bool npu_rbuf_fail(struct npu_rbuf *r, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	if (r->bad)
		return false;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	npu_error_set(r->err, NPU_ERR_MODEL, "%s: %s: %s", r->source, r->where, msg);
	r->bad = true;
	return false;
}

bool npu_take(struct npu_rbuf *r, void *out, size_t n, const char *field)
{
	if (r->bad)
		return false;
	if (n > r->left)
		return npu_rbuf_fail(r, "truncated at field '%s' (needs %zu bytes, %zu left)",
				     field, n, r->left);
	if (out && n)
		memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
	return true;
}

uint32_t npu_get_count(struct npu_rbuf *r, const char *field, uint32_t max)
{
	uint32_t n = npu_get_u32(r, field);

	if (!r->bad && n > max)
		npu_rbuf_fail(r, "field '%s' = %u is too large (at most %u)", field, n, max);
	return r->bad ? 0 : n;
}

char *npu_get_str(struct npu_rbuf *r, const char *field, uint32_t max)
{
	uint32_t n = npu_get_count(r, field, max);
	char *s;

	if (r->bad)
		return NULL;
	if (n > r->left) {
		npu_take(r, NULL, n, field);
		return NULL;
	}
	if (memchr(r->p, '\0', n)) {
		npu_rbuf_fail(r, "field '%s' has a NUL byte inside", field);
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (!s) {
		npu_error_set(r->err, NPU_ERR_NO_MEMORY, "%s: out of memory", r->source);
		r->bad = true;
		return NULL;
	}
	npu_take(r, s, n, field);
	s[n] = '\0';
	return s;
}
