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
	/*
	 * Connections (threads): at most max_connections (default 256); when
	 * full, the oldest one with no open stream is closed for a newcomer.
	 * At most max_connections_per_client (default 64) from one address.
	 */
	int max_connections;
	int max_connections_per_client;
	int max_streams;	/* SETTINGS_MAX_CONCURRENT_STREAMS per connection, default 64 */
	/* Flow control: the receive windows we announce (default 1 MiB, 4 MiB). */
	size_t stream_window_bytes, connection_window_bytes;
	/*
	 * Request bytes held (received, not yet decoded) per connection
	 * (default 2 x max_message_bytes) and in all (4 x): past either, no
	 * WINDOW_UPDATE, so the clients wait.
	 */
	size_t max_connection_buffer_bytes, max_buffer_bytes;
	/*
	 * ModelStreamInfer: responses queued for the client plus inputs in
	 * flight per stream (default max_message_bytes); past it the stream's
	 * messages wait unread.
	 */
	size_t max_stream_pending_bytes;
	int preface_timeout_ms;	/* TLS handshake and HTTP/2 preface, default 10 s */
	int idle_timeout_ms;	/* no stream open: GOAWAY and close, default 300 s */
	int body_timeout_ms;	/* a request (or a stream's message) begun and not ended, default 60 s */
	const struct serve_auth *auth;	/* bearer tokens in "authorization"; NULL: open */
	/* TLS (--tls-cert, --tls-key): PEM texts; NULL: h2c. */
	const char *tls_cert_pem, *tls_key_pem;
};

struct grpc_server;

int grpc_start(struct repository *repo, const struct grpc_options *o,
	       struct grpc_server **out, char *err);
int grpc_port(const struct grpc_server *s);
/*
 * Stop accepting connections and drain: every connection gets GOAWAY, a
 * new call UNAVAILABLE; calls in flight go on, and an open ModelStreamInfer
 * ends (UNAVAILABLE) once its queued work is answered.
 */
void grpc_quiesce(struct grpc_server *s);
/* Wait until no call is in flight, at most timeout_ms; 1 when idle. */
int grpc_wait_idle(struct grpc_server *s, int timeout_ms);
/* Close every connection and free. */
void grpc_stop(struct grpc_server *s);

/*
 * For tests (tests/fuzz/fuzz_serve_grpc.c): serve one h2c connection on
 * 'fd' (a socket, made non-blocking) in the calling thread until the peer
 * closes it; the fd is closed. Returns 0, or -1 when it could not start.
 */
int grpc_serve_connection(struct repository *repo, const struct grpc_options *o, int fd);

#endif /* NPU_SERVE_GRPC_H */
