// SPDX-License-Identifier: MIT
/* pbtxt: a small protobuf text format parser (see pbtxt.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbtxt.h"
#include "serve.h"

#define PBTXT_MAX_DEPTH 32

struct lexer {
	const char *s;
	size_t len, pos;
	int line, col;
	char *err;
	size_t errlen;
	int failed;
};

static void fail(struct lexer *lx, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail(struct lexer *lx, int line, int col, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (lx->failed)
		return;
	lx->failed = 1;
	if (!lx->err || !lx->errlen)
		return;
	n = snprintf(lx->err, lx->errlen, "%d:%d: ", line, col);
	if (n < 0 || (size_t)n >= lx->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(lx->err + n, lx->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static int peekc(const struct lexer *lx)
{
	return lx->pos < lx->len ? (unsigned char)lx->s[lx->pos] : -1;
}

static void advance(struct lexer *lx)
{
	if (lx->pos >= lx->len)
		return;
	if (lx->s[lx->pos] == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->pos++;
}

static void skip_space(struct lexer *lx)
{
	for (;;) {
		int c = peekc(lx);

		if (c == '#') {
			while (peekc(lx) != -1 && peekc(lx) != '\n')
				advance(lx);
		} else if (c != -1 && isspace(c)) {
			advance(lx);
		} else {
			return;
		}
	}
}

static int is_ident_start(int c)
{
	return c != -1 && (isalpha(c) || c == '_');
}

static int is_ident_char(int c)
{
	return c != -1 && (isalnum(c) || c == '_');
}

static char *read_ident(struct lexer *lx)
{
	size_t start = lx->pos;
	char *out;

	while (is_ident_char(peekc(lx)))
		advance(lx);
	out = malloc(lx->pos - start + 1);
	if (!out)
		return NULL;
	memcpy(out, lx->s + start, lx->pos - start);
	out[lx->pos - start] = '\0';
	return out;
}

/* A number or identifier value: [-+]?[A-Za-z0-9_.+-]* as written. */
static char *read_scalar(struct lexer *lx)
{
	size_t start = lx->pos;
	int line = lx->line, col = lx->col;
	char *out;

	if (peekc(lx) == '-' || peekc(lx) == '+')
		advance(lx);
	while (peekc(lx) != -1 &&
	       (isalnum(peekc(lx)) || peekc(lx) == '_' || peekc(lx) == '.' ||
		((peekc(lx) == '-' || peekc(lx) == '+') && lx->pos > start &&
		 (lx->s[lx->pos - 1] == 'e' || lx->s[lx->pos - 1] == 'E'))))
		advance(lx);
	if (lx->pos == start || (lx->pos == start + 1 &&
				 (lx->s[start] == '-' || lx->s[start] == '+'))) {
		if (peekc(lx) == -1)
			fail(lx, line, col, "expected a value, found the end of the text");
		else
			fail(lx, line, col, "expected a value, found '%c'", peekc(lx));
		return NULL;
	}
	out = malloc(lx->pos - start + 1);
	if (!out)
		return NULL;
	memcpy(out, lx->s + start, lx->pos - start);
	out[lx->pos - start] = '\0';
	return out;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One or more adjacent quoted strings, decoded and concatenated. */
static char *read_string(struct lexer *lx, size_t *out_len)
{
	size_t cap = 16, n = 0;
	char *buf = malloc(cap);

	if (!buf) {
		fail(lx, lx->line, lx->col, "out of memory");
		return NULL;
	}
	while (peekc(lx) == '"' || peekc(lx) == '\'') {
		int quote = peekc(lx), line = lx->line, col = lx->col;

		advance(lx);
		for (;;) {
			int c = peekc(lx), v;

			if (c == -1 || c == '\n') {
				fail(lx, line, col, "unterminated string");
				free(buf);
				return NULL;
			}
			advance(lx);
			if (c == quote)
				break;
			if (c == '\\') {
				int e = peekc(lx);

				if (e == -1) {
					fail(lx, line, col, "unterminated string");
					free(buf);
					return NULL;
				}
				advance(lx);
				switch (e) {
				case 'n': c = '\n'; break;
				case 't': c = '\t'; break;
				case 'r': c = '\r'; break;
				case 'a': c = '\a'; break;
				case 'b': c = '\b'; break;
				case 'f': c = '\f'; break;
				case 'v': c = '\v'; break;
				case '0': case '1': case '2': case '3':
				case '4': case '5': case '6': case '7': {
					int k;

					v = e - '0';
					for (k = 0; k < 2 && peekc(lx) >= '0' && peekc(lx) <= '7'; k++) {
						v = v * 8 + (peekc(lx) - '0');
						advance(lx);
					}
					c = v & 0xff;
					break;
				}
				case 'x':
					if (hexval(peekc(lx)) < 0) {
						fail(lx, lx->line, lx->col, "bad \\x escape");
						free(buf);
						return NULL;
					}
					v = hexval(peekc(lx));
					advance(lx);
					if (hexval(peekc(lx)) >= 0) {
						v = v * 16 + hexval(peekc(lx));
						advance(lx);
					}
					c = v;
					break;
				default:
					c = e;	/* \\ \' \" \? */
					break;
				}
			}
			if (n + 2 > cap) {
				char *nb = realloc(buf, cap * 2);

				if (!nb) {
					free(buf);
					fail(lx, line, col, "out of memory");
					return NULL;
				}
				buf = nb;
				cap *= 2;
			}
			buf[n++] = (char)c;
		}
		skip_space(lx);
	}
	buf[n] = '\0';
	*out_len = n;
	return buf;
}

static struct pbtxt_node *new_node(const char *name, int line, int col)
{
	struct pbtxt_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->line = line;
	n->col = col;
	if (name) {
		n->name = strdup(name);
		if (!n->name) {
			free(n);
			return NULL;
		}
	}
	return n;
}

static int parse_fields(struct lexer *lx, struct pbtxt_node *msg, int close,
			int depth);

/* After '{' or '<': the fields of a message up to the closing bracket. */
static int parse_message_body(struct lexer *lx, struct pbtxt_node *node,
			      int open, int depth)
{
	node->kind = PBTXT_MESSAGE;
	if (depth >= PBTXT_MAX_DEPTH) {
		fail(lx, lx->line, lx->col, "messages nested deeper than %d", PBTXT_MAX_DEPTH);
		return -1;
	}
	advance(lx);	/* the opening bracket */
	return parse_fields(lx, node, open == '{' ? '}' : '>', depth + 1);
}

/* A single value (scalar, string or message) into 'node'. */
static int parse_value(struct lexer *lx, struct pbtxt_node *node, int depth)
{
	int c = peekc(lx);

	if (c == '{' || c == '<')
		return parse_message_body(lx, node, c, depth);
	if (c == '"' || c == '\'') {
		node->kind = PBTXT_STRING;
		node->text = read_string(lx, &node->text_len);
		return node->text ? 0 : -1;
	}
	node->kind = PBTXT_SCALAR;
	node->text = read_scalar(lx);
	if (!node->text)
		return -1;
	node->text_len = strlen(node->text);
	return 0;
}

static void append(struct pbtxt_node *msg, struct pbtxt_node **tail,
		   struct pbtxt_node *n)
{
	if (*tail)
		(*tail)->next = n;
	else
		msg->child = n;
	*tail = n;
}

static int parse_fields(struct lexer *lx, struct pbtxt_node *msg, int close,
			int depth)
{
	struct pbtxt_node *tail = NULL;

	for (;;) {
		int line, col, c, colon = 0;
		char *name;

		skip_space(lx);
		c = peekc(lx);
		if (c == close && close != -1) {
			advance(lx);
			return 0;
		}
		if (c == -1) {
			if (close == -1)
				return 0;
			fail(lx, lx->line, lx->col, "expected '%c' before the end of the text", close);
			return -1;
		}
		line = lx->line;
		col = lx->col;
		if (!is_ident_start(c)) {
			fail(lx, line, col, "expected a field name, found '%c'", c);
			return -1;
		}
		name = read_ident(lx);
		if (!name) {
			fail(lx, line, col, "out of memory");
			return -1;
		}
		skip_space(lx);
		if (peekc(lx) == ':') {
			colon = 1;
			advance(lx);
			skip_space(lx);
		}
		c = peekc(lx);
		if (c == '[') {
			/* A list: each item becomes a field of this name. */
			int ll = lx->line, lc = lx->col;

			advance(lx);
			skip_space(lx);
			if (peekc(lx) == ']') {
				advance(lx);
			} else {
				for (;;) {
					struct pbtxt_node *n;

					skip_space(lx);
					n = new_node(name, lx->line, lx->col);
					if (!n) {
						free(name);
						fail(lx, ll, lc, "out of memory");
						return -1;
					}
					append(msg, &tail, n);
					if (parse_value(lx, n, depth) < 0) {
						free(name);
						return -1;
					}
					skip_space(lx);
					if (peekc(lx) == ',') {
						advance(lx);
						continue;
					}
					if (peekc(lx) == ']') {
						advance(lx);
						break;
					}
					fail(lx, lx->line, lx->col,
					     "expected ',' or ']' in the list of '%s' opened at %d:%d",
					     name, ll, lc);
					free(name);
					return -1;
				}
			}
		} else {
			struct pbtxt_node *n = new_node(name, line, col);

			if (!n) {
				free(name);
				fail(lx, line, col, "out of memory");
				return -1;
			}
			append(msg, &tail, n);
			if (!colon && c != '{' && c != '<') {
				fail(lx, lx->line, lx->col, "expected ':' or '{' after '%s'", name);
				free(name);
				return -1;
			}
			if (parse_value(lx, n, depth) < 0) {
				free(name);
				return -1;
			}
		}
		free(name);
		skip_space(lx);
		if (peekc(lx) == ',' || peekc(lx) == ';')
			advance(lx);
	}
}

struct pbtxt_node *pbtxt_parse(const char *text, size_t len, char *err,
			       size_t errlen)
{
	struct lexer lx = { .s = text, .len = len, .line = 1, .col = 1,
			    .err = err, .errlen = errlen };
	struct pbtxt_node *root = new_node(NULL, 1, 1);

	if (err && errlen)
		err[0] = '\0';
	if (!root) {
		fail(&lx, 1, 1, "out of memory");
		return NULL;
	}
	root->kind = PBTXT_MESSAGE;
	if (memchr(text, '\0', len)) {
		const char *z = memchr(text, '\0', len);
		size_t i;

		for (i = 0; text + i < z; i++)
			advance(&lx);
		fail(&lx, lx.line, lx.col, "NUL byte in the text");
		pbtxt_free(root);
		return NULL;
	}
	if (parse_fields(&lx, root, -1, 0) < 0 || lx.failed) {
		if (!lx.failed)
			fail(&lx, lx.line, lx.col, "parse error");
		pbtxt_free(root);
		return NULL;
	}
	return root;
}

void pbtxt_free(struct pbtxt_node *node)
{
	while (node) {
		struct pbtxt_node *next = node->next;

		pbtxt_free(node->child);
		free(node->name);
		free(node->text);
		free(node);
		node = next;
	}
}

/* ---- Field readers ------------------------------------------------------------ */

int pbtxt_bad(const struct pbtxt_ctx *x, const struct pbtxt_node *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (n && n->line > 0)
		k = snprintf(x->err, SERVE_ERR_MAX, "%s:%d:%d: %s%s", x->origin, n->line, n->col,
			     x->what ? x->what : "", x->what ? ": " : "");
	else
		k = snprintf(x->err, SERVE_ERR_MAX, "%s: %s%s", x->origin, x->what ? x->what : "",
			     x->what ? ": " : "");
	if (k < 0 || k >= SERVE_ERR_MAX)
		return SERVE_INVALID;
	va_start(ap, fmt);
	vsnprintf(x->err + k, SERVE_ERR_MAX - (size_t)k, fmt, ap);
	va_end(ap);
	return SERVE_INVALID;
}

int pbtxt_want(const struct pbtxt_ctx *x, const struct pbtxt_node *n, int message)
{
	if (message && n->kind != PBTXT_MESSAGE)
		return pbtxt_bad(x, n, "'%s' must be a message ({ ... })", n->name);
	if (!message && n->kind == PBTXT_MESSAGE)
		return pbtxt_bad(x, n, "'%s' must be a value, not a message", n->name);
	return 0;
}

int pbtxt_int(const struct pbtxt_ctx *x, const struct pbtxt_node *n, int64_t lo, int64_t hi,
	      int64_t *out)
{
	char *end;
	long long v;

	if (pbtxt_want(x, n, 0))
		return SERVE_INVALID;
	errno = 0;
	v = strtoll(n->text, &end, 0);
	if (errno || end == n->text || *end)
		return pbtxt_bad(x, n, "'%s': '%s' is not an integer", n->name, n->text);
	if (v < lo || v > hi)
		return pbtxt_bad(x, n, "'%s': %lld is outside [%" PRId64 ", %" PRId64 "]",
				 n->name, v, lo, hi);
	*out = v;
	return 0;
}

int pbtxt_double(const struct pbtxt_ctx *x, const struct pbtxt_node *n, double *out)
{
	char *end;

	if (pbtxt_want(x, n, 0))
		return SERVE_INVALID;
	*out = strtod(n->text, &end);
	if (end == n->text || *end)
		return pbtxt_bad(x, n, "'%s': '%s' is not a number", n->name, n->text);
	return 0;
}

int pbtxt_bool(const struct pbtxt_ctx *x, const struct pbtxt_node *n, int *out)
{
	if (pbtxt_want(x, n, 0))
		return SERVE_INVALID;
	if (!strcmp(n->text, "true") || !strcmp(n->text, "True") || !strcmp(n->text, "1"))
		*out = 1;
	else if (!strcmp(n->text, "false") || !strcmp(n->text, "False") || !strcmp(n->text, "0"))
		*out = 0;
	else
		return pbtxt_bad(x, n, "'%s': '%s' is not true or false", n->name, n->text);
	return 0;
}

int pbtxt_str(const struct pbtxt_ctx *x, const struct pbtxt_node *n, char *out, size_t size)
{
	if (pbtxt_want(x, n, 0))
		return SERVE_INVALID;
	if (n->text_len >= size || strlen(n->text) != n->text_len)
		return pbtxt_bad(x, n, "'%s': the string is too long or holds a NUL", n->name);
	memcpy(out, n->text, n->text_len + 1);
	return 0;
}
