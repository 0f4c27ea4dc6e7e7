// SPDX-License-Identifier: MIT
/*
 * fuzz_serve_grpc: libFuzzer target over npu-serve's gRPC front end, the
 * frame and stream path: the fuzzer's bytes are a client's byte stream
 * (HTTP/2 preface, frames, gRPC messages) on one end of a socketpair whose
 * other end is served by the real connection code (grpc_serve_connection:
 * the nghttp2 server session, grpc.c's callbacks and flow control,
 * dispatch). The repository is an empty directory, so every model call
 * fails cleanly after decoding; an API token is set, so auth is on the
 * path (the seeds carry "authorization: Bearer fuzz-token").
 * Seeds: tests/fuzz/corpus/serve_grpc/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "grpc.h"
#include "repository.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct repository *repo;
static struct serve_auth auth = { .api_token = "fuzz-token", .admin_token = NULL };

static void setup(void)
{
	static char dir[] = "/tmp/fuzz-serve-grpc.XXXXXX";
	struct repo_options ro = { .device = "cpu", .mode = CONTROL_EXPLICIT, .threads = 1,
				   .strict_readiness = 1 };
	char err[SERVE_ERR_MAX];

	if (!mkdtemp(dir))
		abort();
	ro.path = dir;
	if (repository_create(&ro, &repo, err)) {
		fprintf(stderr, "fuzz_serve_grpc: %s\n", err);
		abort();
	}
	repository_start(repo);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct grpc_options o = { .max_message_bytes = 1 << 20, .auth = &auth };
	int sv[2], big = 1 << 20;
	size_t off = 0;
	char sink[65536];

	if (!ready) {
		setup();
		ready = 1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	/* The client's bytes (what fits), then its end of stream. */
	while (off < size) {
		ssize_t n = send(sv[0], data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(sv[0], SHUT_WR);
	grpc_serve_connection(repo, &o, sv[1]);	/* closes sv[1] */
	while (recv(sv[0], sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
	close(sv[0]);
	return 0;
}
