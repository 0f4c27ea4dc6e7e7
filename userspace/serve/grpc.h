/* SPDX-License-Identifier: MIT */
/*
 * grpc: the gRPC front end, inference.GRPCInferenceService of the KServe v2
 * protocol (grpc_service.proto: the calls we answer) over HTTP/2, cleartext
 * (h2c) or TLS with ALPN "h2" (GnuTLS), with nghttp2 and protobuf-c. One
 * thread per connection (the TLS handshake in it); ModelInfer calls
 * are queued on the batcher and answered when done, so the streams of a
 * connection run concurrently.
 */
#ifndef NPU_SERVE_GRPC_H
#define NPU_SERVE_GRPC_H

#include "auth.h"
#include "repository.h"

struct grpc_options {
	const char *address;	/* default 127.0.0.1 */
	int port;		/* 0: ephemeral */
	size_t max_message_bytes;	/* default 64 MiB */
	int max_connections;	/* default 256 */
	const struct serve_auth *auth;	/* bearer tokens in "authorization"; NULL: open */
	/* TLS (--tls-cert, --tls-key): PEM texts; NULL: h2c. */
	const char *tls_cert_pem, *tls_key_pem;
};

struct grpc_server;

int grpc_start(struct repository *repo, const struct grpc_options *o,
	       struct grpc_server **out, char *err);
int grpc_port(const struct grpc_server *s);
/* Stop accepting connections; calls in flight go on. */
void grpc_quiesce(struct grpc_server *s);
/* Wait until no call is in flight, at most timeout_ms; 1 when idle. */
int grpc_wait_idle(struct grpc_server *s, int timeout_ms);
/* Close every connection and free. */
void grpc_stop(struct grpc_server *s);

#endif /* NPU_SERVE_GRPC_H */
