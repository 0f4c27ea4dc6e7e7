/* SPDX-License-Identifier: MIT */
/*
 * npu_bytes.h - little-endian byte streams for the library's own file
 * formats (the serialized graph, compiled models): a growing writer that
 * remembers running out of memory, and a bounded reader that turns the
 * first short or bad field into an error naming the file, the section and
 * the field, after which every read is a no-op returning zeros. Readers
 * check once at the end instead of after every field.
 */
#ifndef NPU_BYTES_H
#define NPU_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/npu_error.h"

struct npu_wbuf {
	uint8_t *data;
	size_t size, cap;
	bool oom;
};

void npu_put(struct npu_wbuf *w, const void *p, size_t n);
static inline void npu_put_u8(struct npu_wbuf *w, uint8_t v) { npu_put(w, &v, 1); }
static inline void npu_put_u16(struct npu_wbuf *w, uint16_t v) { npu_put(w, &v, 2); }
static inline void npu_put_u32(struct npu_wbuf *w, uint32_t v) { npu_put(w, &v, 4); }
static inline void npu_put_u64(struct npu_wbuf *w, uint64_t v) { npu_put(w, &v, 8); }
static inline void npu_put_f32(struct npu_wbuf *w, float v) { npu_put(w, &v, 4); }
/* A u32 length and the bytes ("" for NULL). */
void npu_put_str(struct npu_wbuf *w, const char *s);
/* A u64 length and the bytes (0 for NULL). */
void npu_put_blob(struct npu_wbuf *w, const void *p, uint64_t n);

struct npu_rbuf {
	const uint8_t *p;
	size_t left;
	const char *source;	/* the file, for messages */
	const char *where;	/* the section, for messages */
	struct npu_error *err;
	bool bad;		/* an error was recorded: reads return zeros */
};

/* n bytes into 'out' (NULL: skip them); false once the stream is bad. */
bool npu_take(struct npu_rbuf *r, void *out, size_t n, const char *field);
static inline uint8_t npu_get_u8(struct npu_rbuf *r, const char *f)
{ uint8_t v = 0; npu_take(r, &v, 1, f); return v; }
static inline uint16_t npu_get_u16(struct npu_rbuf *r, const char *f)
{ uint16_t v = 0; npu_take(r, &v, 2, f); return v; }
static inline uint32_t npu_get_u32(struct npu_rbuf *r, const char *f)
{ uint32_t v = 0; npu_take(r, &v, 4, f); return v; }
static inline uint64_t npu_get_u64(struct npu_rbuf *r, const char *f)
{ uint64_t v = 0; npu_take(r, &v, 8, f); return v; }
static inline float npu_get_f32(struct npu_rbuf *r, const char *f)
{ float v = 0; npu_take(r, &v, 4, f); return v; }

/*
 * Mark the stream bad with "<source>: <where>: " and the message; the
 * first error wins. Returns false, for `return npu_rbuf_fail(...)`.
 */
bool npu_rbuf_fail(struct npu_rbuf *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A u32 count that must not exceed 'max' (0 once bad). */
uint32_t npu_get_count(struct npu_rbuf *r, const char *field, uint32_t max);
/* A NUL-terminated malloc'ed copy of a string of at most 'max' bytes
 * without a NUL inside; NULL once bad. */
char *npu_get_str(struct npu_rbuf *r, const char *field, uint32_t max);

#endif /* NPU_BYTES_H */
