/* SPDX-License-Identifier: MIT */
/*
 * auth: bearer tokens of npu-serve. Two kinds: the API token
 * (--api-token: inference, metadata, statistics, the panel's data) and the
 * admin token (--admin-token: the repository API, load / unload / index).
 * The admin token is accepted wherever the API token is. A kind that is
 * not set is not checked. Comparison takes the same time whatever the
 * presented token holds; tokens are never logged. Shared by HTTP and gRPC
 * (the "authorization" metadata).
 */
#ifndef NPU_SERVE_AUTH_H
#define NPU_SERVE_AUTH_H

#include <stddef.h>

enum auth_scope { AUTH_OPEN, AUTH_API, AUTH_ADMIN };

enum auth_result {
	AUTH_OK,
	AUTH_MISSING,		/* no Authorization header: 401 */
	AUTH_MALFORMED,		/* not "Bearer <token>": 401 invalid_request */
	AUTH_INVALID,		/* no token of ours: 401 invalid_token */
	AUTH_FORBIDDEN,		/* the API token on an admin call: 403 */
};

struct serve_auth {
	char *api_token;	/* NULL: inference is open */
	char *admin_token;	/* NULL: the repository API is open */
};

/*
 * A token flag's value: the token itself, or "@FILE" to read it from FILE
 * (trailing newlines dropped). Returns a malloc'd token or NULL with 'err'.
 */
char *auth_token_arg(const char *flag, const char *value, char *err, size_t errlen);
/* Check an Authorization header value (NULL: absent) for 'scope'. */
enum auth_result auth_check(const struct serve_auth *a, enum auth_scope scope,
			    const char *authorization);
/* The message of a refusal, naming what was wrong (never the token). */
const char *auth_message(enum auth_result r, enum auth_scope scope);

#endif /* NPU_SERVE_AUTH_H */
