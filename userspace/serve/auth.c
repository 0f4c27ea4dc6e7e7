// SPDX-License-Identifier: MIT
/* auth: bearer tokens (see auth.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth.h"

#define TOKEN_MAX 4096

char *auth_token_arg(const char *flag, const char *value, char *err, size_t errlen)
{
	char buf[TOKEN_MAX + 2], *tok;
	size_t n, i;

	if (value[0] != '@') {
		snprintf(buf, sizeof(buf), "%s", value);
		n = strlen(value);
		if (n > TOKEN_MAX) {
			snprintf(err, errlen, "%s: the token is longer than %d bytes", flag, TOKEN_MAX);
			return NULL;
		}
	} else {
		FILE *f = fopen(value + 1, "r");

		if (!f) {
			snprintf(err, errlen, "%s: cannot read the token file '%s': %s", flag,
				 value + 1, strerror(errno));
			return NULL;
		}
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		if (n > TOKEN_MAX) {
			snprintf(err, errlen, "%s: the token in '%s' is longer than %d bytes", flag,
				 value + 1, TOKEN_MAX);
			return NULL;
		}
		buf[n] = '\0';
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
	}
	/* It goes into a header: printable ASCII without spaces (RFC 6750 b64token and more). */
	for (i = 0; i < n; i++)
		if ((unsigned char)buf[i] <= ' ' || (unsigned char)buf[i] >= 0x7f) {
			snprintf(err, errlen, "%s: the token has a space or a control or non-ASCII byte at offset %zu",
				 flag, i);
			return NULL;
		}
	if (!n) {
		snprintf(err, errlen, "%s: the token is empty", flag);
		return NULL;
	}
	tok = strdup(buf);
	if (!tok)
		snprintf(err, errlen, "%s: out of memory", flag);
	return tok;
}

/*
 * Constant time in the presented token's content: every byte of the
 * expected token is compared, whatever differed before. Only the expected
 * length can show in the timing, not which bytes matched.
 */
static int token_equal(const char *given, size_t glen, const char *want)
{
	size_t wlen = strlen(want), i;
	volatile uint8_t diff = (uint8_t)(glen != wlen);

	for (i = 0; i < wlen; i++)
		diff |= (uint8_t)((uint8_t)want[i] ^ (uint8_t)(glen ? given[i % glen] : 0));
	return diff == 0;
}

enum auth_result auth_check(const struct serve_auth *a, enum auth_scope scope,
			    const char *h)
{
	const char *tok, *end;
	size_t len;
	int is_admin, is_api;

	if (!a || scope == AUTH_OPEN)
		return AUTH_OK;
	if (scope == AUTH_API && !a->api_token)
		return AUTH_OK;
	if (scope == AUTH_ADMIN && !a->admin_token && !a->api_token)
		return AUTH_OK;
	if (scope == AUTH_ADMIN && !a->admin_token)
		return AUTH_ADMIN_UNSET;
	if (!h)
		return AUTH_MISSING;
	if (strncasecmp(h, "Bearer ", 7))
		return AUTH_MALFORMED;
	tok = h + 7;
	while (*tok == ' ')
		tok++;
	end = tok + strlen(tok);
	while (end > tok && end[-1] == ' ')
		end--;
	len = (size_t)(end - tok);
	if (!len || memchr(tok, ' ', len))
		return AUTH_MALFORMED;
	/* Both compared every time: which one matched does not show either. */
	is_admin = a->admin_token && token_equal(tok, len, a->admin_token);
	is_api = a->api_token && token_equal(tok, len, a->api_token);
	if (is_admin)
		return AUTH_OK;
	if (scope == AUTH_API && is_api)
		return AUTH_OK;
	if (scope == AUTH_ADMIN && is_api)
		return AUTH_FORBIDDEN;
	return AUTH_INVALID;
}

int auth_http_status(enum auth_result r)
{
	return r == AUTH_FORBIDDEN || r == AUTH_ADMIN_UNSET ? 403 : 401;
}

int auth_grpc_code(enum auth_result r)
{
	return r == AUTH_FORBIDDEN || r == AUTH_ADMIN_UNSET ? 7 : 16;
}

const char *auth_message(enum auth_result r, enum auth_scope scope)
{
	int admin = scope == AUTH_ADMIN;

	switch (r) {
	case AUTH_MISSING:
		return admin ? "no Authorization header: this call needs 'Authorization: Bearer <token>' with the admin token (--admin-token)"
			     : "no Authorization header: this call needs 'Authorization: Bearer <token>' with the API token (--api-token)";
	case AUTH_MALFORMED:
		return "malformed Authorization header: expected 'Bearer <token>'";
	case AUTH_INVALID:
		return admin ? "the bearer token is not valid: this call needs the admin token (--admin-token)"
			     : "the bearer token is not valid: this call needs the API token (--api-token)";
	case AUTH_FORBIDDEN:
		return "the API token does not allow repository or management calls: they need the admin token (--admin-token)";
	case AUTH_ADMIN_UNSET:
		return "repository and management calls are off: --api-token is set and --admin-token is not (set one to allow them)";
	default:
		return "ok";
	}
}
