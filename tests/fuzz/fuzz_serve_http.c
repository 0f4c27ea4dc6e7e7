// SPDX-License-Identifier: MIT
/*
 * fuzz_serve_http: libFuzzer target over npu-serve's whole HTTP request
 * path. The fuzzer's bytes are what a client writes on one connection:
 * libmicrohttpd parses them (pipelined requests, chunked bodies, headers),
 * then http.c routes, checks the bearer tokens and runs the handlers, the
 * panel and the repository API included, against a real repository holding
 * one tiny model written to a temporary directory at startup. Each input
 * gets a fresh socketpair handed to the server (http_add_connection); the
 * input is written, the write side shut down, and the answer read until the
 * server closes, goes quiet for QUIET_MS or IO_DEADLINE_MS pass. Seeds:
 * tests/fuzz/corpus/serve_http/.
 *
 * Deterministic enough to replay a crash: every input starts with the model
 * loaded with its config from disk (an input that loads or unloads is
 * followed by a reload), and the server has one HTTP thread and one instance.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "repository.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A whole answer comes back well within this on an idle machine. */
#define IO_DEADLINE_MS 5000
/*
 * Once the input is written, silence this long ends the conversation: a
 * request cut short (a Content-Length longer than its body) is not closed
 * on the client's half-close but only at the server's idle timeout.
 */
#define QUIET_MS 100

#define API_TOKEN "fuzz-api-token"
#define ADMIN_TOKEN "fuzz-admin-token"

/* Relu on x0 [N, 4] -> y (tests/serve/make_model.py: model("Relu", 1, "N,4")). */
static const unsigned char relu_onnx[] = {
	0x08, 0x08, 0x12, 0x0a, 0x73, 0x65, 0x72, 0x76, 0x65, 0x2d, 0x74, 0x65, 0x73, 0x74,
	0x3a, 0x46, 0x0a, 0x14, 0x0a, 0x02, 0x78, 0x30, 0x12, 0x01, 0x79, 0x1a, 0x05, 0x6e,
	0x6f, 0x64, 0x65, 0x30, 0x22, 0x04, 0x52, 0x65, 0x6c, 0x75, 0x12, 0x01, 0x67, 0x5a,
	0x15, 0x0a, 0x02, 0x78, 0x30, 0x12, 0x0f, 0x0a, 0x0d, 0x08, 0x01, 0x12, 0x09, 0x0a,
	0x03, 0x12, 0x01, 0x4e, 0x0a, 0x02, 0x08, 0x04, 0x62, 0x14, 0x0a, 0x01, 0x79, 0x12,
	0x0f, 0x0a, 0x0d, 0x08, 0x01, 0x12, 0x09, 0x0a, 0x03, 0x12, 0x01, 0x4e, 0x0a, 0x02,
	0x08, 0x04, 0x42, 0x04, 0x0a, 0x00, 0x10, 0x0d,
};

static const char tiny_config[] =
	"name: \"tiny\"\n"
	"max_batch_size: 4\n"
	"input { name: \"x0\" data_type: TYPE_FP32 dims: [ 4 ] }\n"
	"output { name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] }\n"
	"instance_group { count: 1 kind: KIND_CPU }\n";

static char dir[] = "/tmp/fuzz-serve-http.XXXXXX";
static char path_config[64], path_vdir[64], path_model[64], path_mdir[64], path_chart[64];
static struct repository *repo;
static struct http_server *srv;
/* FUZZ_SERVE_HTTP_ECHO=1: the server's answers go to stderr (replaying a crash). */
static int echo;

static struct serve_auth auth = { .api_token = API_TOKEN, .admin_token = ADMIN_TOKEN };

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_serve_http: %s: %s\n", what, detail);
	abort();
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		die("cannot write", path);
}

static void teardown(void)
{
	http_stop(srv);
	srv = NULL;
	repository_destroy(repo);
	repo = NULL;
	unlink(path_model);
	rmdir(path_vdir);
	unlink(path_config);
	rmdir(path_mdir);
	unlink(path_chart);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char *load[] = { "tiny" };
	struct repo_options ro = { .device = "cpu", .threads = 1, .mode = CONTROL_EXPLICIT,
				   .poll_secs = 15, .strict_readiness = 1, .num_load = 1,
				   .load_models = load };
	struct http_options ho = { .address = "127.0.0.1", .port = 0, .threads = 1,
				   .max_body_bytes = 1u << 20, .timeout_secs = 10,
				   .auth = &auth };
	static const char chart[] = "/* chart.js stand-in */\n";
	char err[SERVE_ERR_MAX];

	(void)argc;
	(void)argv;
	serve_verbose = SERVE_LOG_ERROR;
	echo = getenv("FUZZ_SERVE_HTTP_ECHO") != NULL;
	if (!mkdtemp(dir))
		die("mkdtemp", strerror(errno));
	snprintf(path_mdir, sizeof(path_mdir), "%s/tiny", dir);
	snprintf(path_vdir, sizeof(path_vdir), "%s/tiny/1", dir);
	snprintf(path_config, sizeof(path_config), "%s/tiny/config.pbtxt", dir);
	snprintf(path_model, sizeof(path_model), "%s/tiny/1/model.onnx", dir);
	snprintf(path_chart, sizeof(path_chart), "%s/chart.js", dir);
	if (mkdir(path_mdir, 0700) || mkdir(path_vdir, 0700))
		die("mkdir", strerror(errno));
	write_file(path_config, tiny_config, sizeof(tiny_config) - 1);
	write_file(path_model, relu_onnx, sizeof(relu_onnx));
	write_file(path_chart, chart, sizeof(chart) - 1);
	ho.chartjs_path = path_chart;
	ro.path = dir;
	if (repository_create(&ro, &repo, err))
		die("repository", err);
	repository_start(repo);
	if (!repository_model_ready(repo, "tiny", -1))
		die("the model did not load", dir);
	/* It listens on an ephemeral loopback port too; no one connects there. */
	if (http_start(repo, &ho, &srv, err))
		die("http_start", err);
	atexit(teardown);
	return 0;
}

/* Every input starts from the same repository state: tiny loaded from disk. */
static void reset_model(void)
{
	char err[SERVE_ERR_MAX];

	if (repository_load(repo, "tiny", NULL, -1, err))
		die("reloading the model", err);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write the client's bytes and read the answer until EOF or the deadline. */
static void converse(int fd, const uint8_t *data, size_t size)
{
	long long deadline = now_ms() + IO_DEADLINE_MS, last_io = now_ms();
	size_t sent = 0;
	int write_open = 1;
	char buf[16384];

	if (!size) {
		shutdown(fd, SHUT_WR);
		write_open = 0;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (write_open ? POLLOUT : 0) };
		long long left = deadline - now_ms();
		ssize_t n;

		if (!write_open && last_io + QUIET_MS - now_ms() < left)
			left = last_io + QUIET_MS - now_ms();
		if (left <= 0)
			return;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p.revents & POLLIN) {
			n = read(fd, buf, sizeof(buf));
			if (n > 0)
				last_io = now_ms();
			if (n > 0 && echo)
				fwrite(buf, 1, (size_t)n, stderr);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				return;
		}
		if (write_open && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
			n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0) {
				sent += (size_t)n;
				last_io = now_ms();
			}
			if (sent == size || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				shutdown(fd, SHUT_WR);
				write_open = 0;
			}
		}
		if (!write_open && (p.revents & (POLLHUP | POLLERR)) && !(p.revents & POLLIN))
			return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[SERVE_ERR_MAX];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair", strerror(errno));
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK))
		die("fcntl", strerror(errno));
	if (http_add_connection(srv, sv[1], err)) {
		close(sv[0]);
		die("http_add_connection", err);
	}
	converse(sv[0], data, size);
	close(sv[0]);
	/* A load or an unload changed the repository: back to the model on disk. */
	if (memmem(data, size, "load", 4) || !repository_model_ready(repo, "tiny", -1))
		reset_model();
	return 0;
}
