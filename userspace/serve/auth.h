/* SPDX-License-Identifier: MIT */
/*
 * auth: bearer tokens of npu-serve. Two kinds: the API token
 * (--api-token: inference, metadata, statistics, the panel's data) and the
 * admin token (--admin-token: the repository API, load / unload / index).
 * The admin token is accepted wherever the API token is. With no token at
 * all everything is open (the server then binds loopback by default and
 * http.c refuses cross-site requests); once any token is set, management
 * calls need the admin token, so setting only --api-token turns them off
 * rather than leaving them open. Comparison takes the same time whatever the
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
	AUTH_ADMIN_UNSET,	/* an admin call, only --api-token set: 403 */
};

struct serve_auth {
	char *api_token;	/* NULL: inference is open */
	char *admin_token;	/* NULL: the repository API is open if api_token is NULL too */
};

/*
 * A token flag's value: the token itself, or "@FILE" to read it from FILE
 * (trailing newlines dropped). Returns a malloc'd token or NULL with 'err'.
 */
char *auth_token_arg(const char *flag, const char *value, char *err, size_t errlen);
/* Check an Authorization header value (NULL: absent) for 'scope'. */
enum auth_result auth_check(const struct serve_auth *a, enum auth_scope scope,
			    const char *authorization);
/* The HTTP status of a refusal (401 or 403) and its gRPC code (UNAUTHENTICATED or PERMISSION_DENIED). */
int auth_http_status(enum auth_result r);
int auth_grpc_code(enum auth_result r);
/* The message of a refusal, naming what was wrong (never the token). */
const char *auth_message(enum auth_result r, enum auth_scope scope);

#endif /* NPU_SERVE_AUTH_H */
