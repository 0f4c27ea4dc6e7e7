/* SPDX-License-Identifier: MIT */
/*
 * http: the HTTP/REST front end (Open Inference Protocol v2 and Triton's
 * extensions) on libmicrohttpd: a thread pool, and an inference request's
 * connection suspended while it waits for its batch. One endpoint table
 * maps path patterns to handlers.
 */
#ifndef NPU_SERVE_HTTP_H
#define NPU_SERVE_HTTP_H

#include "auth.h"
#include "repository.h"

struct http_options {
	const char *address;		/* default 127.0.0.1 */
	int port;			/* 0: ephemeral */
	int threads;			/* the pool; default 4 */
	size_t max_body_bytes;		/* default 64 MiB */
	unsigned int timeout_secs;	/* idle connection timeout; default 60 */
	size_t max_header_bytes;	/* per-connection memory for headers; default 64 KiB */
	/*
	 * Hostile clients (Documentation/serving.md, "Limits and hardening"):
	 * a request's headers must be complete within header_timeout_secs of
	 * the connection's start or of the previous response (default 30),
	 * its body within body_timeout_secs of the headers (default 120); at
	 * most max_connections (default 1024) and per_client_connections from
	 * one address (default 128); request bodies held by all connections
	 * together at most max_buffered_bytes (default 512 MiB, at least
	 * max_body_bytes).
	 */
	unsigned int header_timeout_secs;
	unsigned int body_timeout_secs;
	unsigned int max_connections;
	unsigned int per_client_connections;
	size_t max_buffered_bytes;
	/*
	 * Host names accepted in the Host header besides IP literals and
	 * "localhost" (DNS rebinding). Checked when the server listens on a
	 * loopback address, or whenever this list is not empty.
	 */
	const char *const *allowed_hosts;
	size_t num_allowed_hosts;
	int metrics_only;		/* serve /metrics only (--metrics-port) */
	/* HTTPS (--tls-cert, --tls-key): PEM texts; NULL: plain HTTP. */
	const char *tls_cert_pem, *tls_key_pem;
	const struct serve_auth *auth;	/* bearer tokens; NULL: open */
	const char *chartjs_path;	/* served as /panel/chart.js */
};

struct http_server;

int http_start(struct repository *repo, const struct http_options *o,
	       struct http_server **out, char *err);
int http_port(const struct http_server *s);
/* Stop accepting connections (SIGTERM); requests in flight go on. */
void http_quiesce(struct http_server *s);
/* Wait until no inference request is in flight, at most timeout_ms. */
int http_wait_idle(struct http_server *s, int timeout_ms);
void http_stop(struct http_server *s);
/* Serve an already connected socket (the fuzzer); the server owns 'fd'. */
int http_add_connection(struct http_server *s, int fd, char *err);

#endif /* NPU_SERVE_HTTP_H */
