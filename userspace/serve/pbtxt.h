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

#endif /* NPU_SERVE_PBTXT_H */
