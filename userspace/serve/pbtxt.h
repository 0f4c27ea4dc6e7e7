/* SPDX-License-Identifier: MIT */
/*
 * pbtxt: the protobuf text format, read into a tree of fields without a
 * schema (model_config.c gives the fields their meaning). Supported:
 * 'name: value', 'name { ... }' / 'name: { ... }' / 'name < ... >',
 * lists 'name: [ 1, 2 ]' and '[ { ... }, { ... } ]', strings in '' or ""
 * with C escapes and adjacent concatenation, numbers, identifiers (enums,
 * true/false), '#' comments, ',' or ';' after a field. Errors give
 * "line:column: reason".
 */
#ifndef NPU_SERVE_PBTXT_H
#define NPU_SERVE_PBTXT_H

#include <stddef.h>
#include <stdint.h>

enum pbtxt_kind {
	PBTXT_SCALAR,	/* number or identifier, as written */
	PBTXT_STRING,	/* a quoted string, decoded */
	PBTXT_MESSAGE,
};

struct pbtxt_node {
	char *name;
	int line, col;
	enum pbtxt_kind kind;
	char *text;		/* SCALAR / STRING */
	size_t text_len;	/* STRING may hold NULs */
	struct pbtxt_node *child;	/* MESSAGE: first field */
	struct pbtxt_node *next;	/* next field of the same message */
};

/*
 * Parse 'len' bytes. Returns the root message (a node of kind MESSAGE with
 * no name) or NULL with "line:col: reason" in err (errlen bytes).
 */
struct pbtxt_node *pbtxt_parse(const char *text, size_t len, char *err,
			       size_t errlen);
void pbtxt_free(struct pbtxt_node *node);

/*
 * Reading a field's value for a schema (model_config.c, sequence.c).
 * Errors go to err (SERVE_ERR_MAX bytes) as "ORIGIN:LINE:COL: [WHAT: ]
 * reason" and the readers return SERVE_INVALID (0 on success).
 */
struct pbtxt_ctx {
	const char *origin;	/* "config.pbtxt", "config override" */
	const char *what;	/* a prefix for the reason, or NULL */
	char *err;
};

int pbtxt_bad(const struct pbtxt_ctx *x, const struct pbtxt_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The field is a message (message 1) or a value (0). */
int pbtxt_want(const struct pbtxt_ctx *x, const struct pbtxt_node *n, int message);
int pbtxt_int(const struct pbtxt_ctx *x, const struct pbtxt_node *n, int64_t lo, int64_t hi,
	      int64_t *out);
int pbtxt_double(const struct pbtxt_ctx *x, const struct pbtxt_node *n, double *out);
/* true / True / 1, false / False / 0. */
int pbtxt_bool(const struct pbtxt_ctx *x, const struct pbtxt_node *n, int *out);
/* A string of at most size - 1 bytes, without NUL. */
int pbtxt_str(const struct pbtxt_ctx *x, const struct pbtxt_node *n, char *out, size_t size);

#endif /* NPU_SERVE_PBTXT_H */
