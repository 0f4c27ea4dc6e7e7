// SPDX-License-Identifier: MIT
/*
 * npu-serve (also `npu serve`): an inference server speaking the KServe v2
 * / Triton protocol over HTTP, with a model repository in Triton's layout
 * and dynamic batching. Flags follow Triton's names.
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"
#include "logging.h"
#include "panel.h"
#include "rate_limiter.h"
#include "repository.h"
#include "response_cache.h"
#include "trace.h"
#include "shm.h"
#ifdef NPU_SERVE_HAVE_GRPC
#include "grpc.h"
#endif

static void usage(FILE *out)
{
	fprintf(out,
		"usage: npu serve --model-repository DIR [options]\n"
		"\n"
		"Serves the models of DIR (Triton's layout: DIR/<model>/config.pbtxt and\n"
		"DIR/<model>/<version>/model.onnx or model.npub) over HTTP with the KServe v2 /\n"
		"Triton protocol, and over gRPC (inference.GRPCInferenceService).\n"
		"SIGTERM or SIGINT stops accepting, drains and exits 0.\n"
		"\n"
		"  --http-port N              HTTP port (default 8000; 0: any free port)\n"
		"  --http-address ADDR        IPv4 address to bind (default 127.0.0.1)\n"
		"  --http-thread-count N      HTTP threads (default 4)\n"
		"  --http-max-body-bytes N    largest request body (default 67108864)\n"
		"  --http-timeout-secs N      idle connection timeout (default 60)\n"
		"  --http-header-timeout-secs N  a request's headers must arrive within N s (default 30)\n"
		"  --http-body-timeout-secs N    and its body within N s more (default 120)\n"
		"  --http-max-connections N   open HTTP connections (default 1024)\n"
		"  --http-max-connections-per-client N  from one address (default 128)\n"
		"  --http-max-buffered-bytes N  request bodies held at once, all connections\n"
		"                             (default 536870912)\n"
		"  --allowed-host NAME        a host name clients may use in Host besides IP addresses\n"
		"                             and localhost (DNS-rebinding check); repeatable\n"
		"  --metrics-port N           also serve /metrics on this port (default 8002; 0: any; -1: off)\n"
		"  --allow-metrics=false      no /metrics anywhere\n"
		"  --grpc-port N              gRPC port (default 8001; 0: any free port; -1: off)\n"
		"  --grpc-max-connections N   gRPC connections (default 256; when full the oldest idle one\n"
		"                             is closed for a newcomer)\n"
		"  --grpc-max-connections-per-client N  from one address (default 64)\n"
		"  --grpc-max-streams N       concurrent calls per gRPC connection (default 64)\n"
		"  --grpc-max-buffer-bytes N  request bytes the gRPC connections hold in all\n"
		"                             (default 4 x --http-max-body-bytes; half per connection)\n"
		"  --grpc-stream-pending-bytes N  ModelStreamInfer answers waiting for a client that\n"
		"                             does not read (default --http-max-body-bytes)\n"
		"  --grpc-preface-timeout-secs N  TLS handshake and HTTP/2 preface (default 10)\n"
		"  --grpc-idle-timeout-secs N     no call open: GOAWAY and close (default 300)\n"
		"  --grpc-body-timeout-secs N     a request begun and not ended: reset (default 60)\n"
		"  --model-control-mode M     none (default): load everything, no load/unload API;\n"
		"                             explicit: load --load-model ones, load/unload API;\n"
		"                             poll: load everything and follow changes on disk\n"
		"  --repository-poll-secs N   poll interval (default 15)\n"
		"  --load-model NAME          with explicit: load NAME at start ('*': all); repeatable\n"
		"  --strict-readiness[=BOOL]  ready only when every model asked for is loaded (default true)\n"
		"  --device D                 device of KIND_AUTO instances: cpu (default), sim, sim:N,\n"
		"                             accel, accel:K, accel:* (a set: instances on each NPU)\n"
		"  --threads N                CPU threads of the engine (default: all cores)\n"
		"  --backend-directory DIR    backend libraries (libnpu_serve_NAME.so) of models whose\n"
		"                             config names a backend (default: ../lib/npu-serve/backends\n"
		"                             beside this program, else " NPU_SERVE_BACKEND_DIR ";\n"
		"                             run from its build tree, the tree's)\n"
		"  --exit-timeout-secs N      longest drain at exit (default 30)\n"
		"  --max-json-bytes N         largest JSON part of an inference request (default\n"
		"                             8388608; binary tensor data is bounded by the body limit)\n"
		"  --default-max-queue-size N queue bound of a priority level whose config sets no\n"
		"                             max_queue_size (default 1024); a full queue answers 503\n"
		"  --max-new-shapes-per-minute N  input shapes not seen lately (each compiles a plan)\n"
		"                             a version of a variable-dim model takes per minute\n"
		"                             (default 60; -1: no limit); over it: 503\n"
		"  --shm-max-regions N        system shared memory regions clients may register\n"
		"                             (default 64)\n"
		"  --shm-max-bytes N          bytes of shared memory they may map in all (default 4 GiB)\n"
		"  --max-sequences N          live sequences of a sequence_batching model version\n"
		"                             (default 1024); a START over it answers 503\n"
		"  --max-sequence-state-bytes N  implicit state bytes those sequences hold, per\n"
		"                             version (default 67108864); over it: 503\n"
		"  --port-file FILE           write 'http=', 'grpc=' and 'metrics=PORT' lines once listening\n"
		"  --tls-cert FILE            serve HTTPS (and /metrics on --metrics-port) and gRPC over\n"
		"                             TLS (ALPN h2) with this PEM certificate chain; needs --tls-key\n"
		"  --tls-key FILE             the PEM private key of --tls-cert\n"
		"  --api-token TOKEN|@FILE    require 'Authorization: Bearer TOKEN' for inference,\n"
		"                             metadata, statistics and the panel's data (HTTP and gRPC)\n"
		"  --admin-token TOKEN|@FILE  require it for the repository API (index, load, unload);\n"
		"                             also accepted wherever the API token is\n"
		"  --panel-chartjs FILE       Chart.js served to the panel (default\n"
		"                             /usr/share/javascript/chart.js/chart.min.js, libjs-chart.js)\n"
		"  --cache-config local,size=BYTES[,max_entries=N]  the response cache of models whose\n"
		"                             config has response_cache { enable: true } (default:\n"
		"                             none; max_entries default 65536)\n"
		"  --rate-limit M             execution_count: instances run a batch only when their\n"
		"                             instance_group's rate_limiter resources are free; off (default)\n"
		"  --rate-limit-resource NAME:COUNT[:DEVICE]  a resource's count (default: the most\n"
		"                             any instance needs); repeatable\n"
		"  --trace-dir DIR            trace files (the trace extension's trace_file) go here only\n"
		"  --log-dir DIR              the logging extension's log_file goes here only\n"
		"  --log-verbose N            0: info (default), 1: debug\n");
}

/*
 * Where backend libraries are: the build tree's when this program runs
 * from it (uninstalled), else beside it in its prefix
 * (bin/../lib/npu-serve/backends), else where it was installed to.
 */
static const char *default_backend_dir(char *buf, size_t size)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;
	struct stat st;

	if (n <= 0)
		return NPU_SERVE_BACKEND_DIR;
	exe[n] = '\0';
	if (!strncmp(exe, NPU_SERVE_BUILD_ROOT "/", strlen(NPU_SERVE_BUILD_ROOT "/")))
		return NPU_SERVE_BUILD_BACKEND_DIR;
	slash = strrchr(exe, '/');
	if (slash) {
		*slash = '\0';
		snprintf(buf, size, "%s/../lib/npu-serve/backends", exe);
		if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
			return buf;
	}
	return NPU_SERVE_BACKEND_DIR;
}

static int parse_int(const char *flag, const char *v, long lo, long hi, long *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi) {
		fprintf(stderr, "npu serve: %s: '%s' is not an integer in [%ld, %ld]\n", flag, v, lo, hi);
		return -1;
	}
	*out = x;
	return 0;
}

/* A whole PEM file into memory (libmicrohttpd takes the texts). */
static char *read_pem(const char *flag, const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f) {
		fprintf(stderr, "npu serve: %s: cannot open '%s': %s\n", flag, path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > (1L << 20) || fseek(f, 0, SEEK_SET) ||
	    !(buf = calloc(1, (size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "npu serve: %s: cannot read '%s' (at most 1 MiB)\n", flag, path);
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	if (!strstr(buf, "-----BEGIN ")) {
		fprintf(stderr, "npu serve: %s: '%s' is not a PEM file (no '-----BEGIN' line)\n", flag, path);
		free(buf);
		return NULL;
	}
	return buf;
}

static int parse_bool(const char *flag, const char *v, int *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"))
		*out = 1;
	else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
		*out = 0;
	else {
		fprintf(stderr, "npu serve: %s: '%s' is not true or false\n", flag, v);
		return -1;
	}
	return 0;
}

/*
 * A numeric limit flag: its range, the unit its field counts in (1000:
 * seconds given, milliseconds kept) and where it goes in an options struct.
 */
struct limit_flag {
	const char *flag;
	long lo, hi, scale;
	size_t offset;
	enum { FIELD_INT, FIELD_UINT, FIELD_SIZE } type;
};

static const struct limit_flag http_limits[] = {
	{ "--http-header-timeout-secs", 1, 86400, 1,
	  offsetof(struct http_options, header_timeout_secs), FIELD_UINT },
	{ "--http-body-timeout-secs", 1, 86400, 1,
	  offsetof(struct http_options, body_timeout_secs), FIELD_UINT },
	{ "--http-max-connections", 1, 65536, 1,
	  offsetof(struct http_options, max_connections), FIELD_UINT },
	{ "--http-max-connections-per-client", 1, 65536, 1,
	  offsetof(struct http_options, per_client_connections), FIELD_UINT },
	{ "--http-max-buffered-bytes", 1, 1L << 40, 1,
	  offsetof(struct http_options, max_buffered_bytes), FIELD_SIZE },
};

#ifdef NPU_SERVE_HAVE_GRPC
static const struct limit_flag grpc_limits[] = {
	{ "--grpc-max-connections", 1, 65536, 1, offsetof(struct grpc_options, max_connections),
	  FIELD_INT },
	{ "--grpc-max-connections-per-client", 1, 65536, 1,
	  offsetof(struct grpc_options, max_connections_per_client), FIELD_INT },
	{ "--grpc-max-streams", 1, 65536, 1, offsetof(struct grpc_options, max_streams), FIELD_INT },
	{ "--grpc-max-buffer-bytes", 1, 1L << 40, 1, offsetof(struct grpc_options, max_buffer_bytes),
	  FIELD_SIZE },
	{ "--grpc-stream-pending-bytes", 1, 1L << 40, 1,
	  offsetof(struct grpc_options, max_stream_pending_bytes), FIELD_SIZE },
	{ "--grpc-preface-timeout-secs", 1, 3600, 1000,
	  offsetof(struct grpc_options, preface_timeout_ms), FIELD_INT },
	{ "--grpc-idle-timeout-secs", 1, 86400, 1000, offsetof(struct grpc_options, idle_timeout_ms),
	  FIELD_INT },
	{ "--grpc-body-timeout-secs", 1, 86400, 1000, offsetof(struct grpc_options, body_timeout_ms),
	  FIELD_INT },
};
#endif

/*
 * Set 'flag' if the table has it: 1 when it was one of them, 0 when not,
 * -1 when its value is bad (said why).
 */
static int set_limit_flag(const struct limit_flag *table, size_t n, const char *flag,
			  const char *val, void *options)
{
	char *field;
	size_t i;
	long x;

	for (i = 0; i < n; i++) {
		if (strcmp(flag, table[i].flag))
			continue;
		if (parse_int(flag, val, table[i].lo, table[i].hi, &x))
			return -1;
		field = (char *)options + table[i].offset;
		if (table[i].type == FIELD_SIZE)
			*(size_t *)field = (size_t)x;
		else if (table[i].type == FIELD_UINT)
			*(unsigned int *)field = (unsigned int)(x * table[i].scale);
		else
			*(int *)field = (int)(x * table[i].scale);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct repo_options ro = { .device = "cpu", .mode = CONTROL_NONE, .poll_secs = 15,
				   .strict_readiness = 1 };
	struct http_options ho = { .address = "127.0.0.1", .port = 8000 };
	struct http_server *http = NULL, *metrics = NULL;
#ifdef NPU_SERVE_HAVE_GRPC
	struct grpc_server *grpc = NULL;
#endif
	int grpc_bound = -1;
	struct repository *repo = NULL;
	const char *port_file = NULL;
	size_t shm_max_regions = 0;
	uint64_t shm_max_bytes = 0;
	long metrics_port = 8002, grpc_port_flag = 8001, exit_timeout = 30, x;
#ifdef NPU_SERVE_HAVE_GRPC
	struct grpc_options go = { 0 };
#endif
	int allow_metrics = 1, i, sig, st;
	static struct serve_auth auth;
	/* Static: reachable (not leaked) when a bad flag returns early. */
	static char *tls_cert, *tls_key;
	char err[SERVE_ERR_MAX], backend_dir[4200];
	sigset_t set;

	static char *load_models[256];
	static const char *allowed_hosts[64];

	ro.load_models = load_models;
	for (i = 1; i < argc; i++) {
		char flag[64];
		const char *arg = argv[i], *val = NULL, *eq;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			return 0;
		}
		if (strncmp(arg, "--", 2)) {
			fprintf(stderr, "npu serve: unexpected argument '%s'\n", arg);
			usage(stderr);
			return 2;
		}
		eq = strchr(arg, '=');
		if (eq) {
			snprintf(flag, sizeof(flag), "%.*s", (int)(eq - arg), arg);
			val = eq + 1;
		} else {
			snprintf(flag, sizeof(flag), "%s", arg);
		}
		/* Boolean flags may stand alone. */
		if (!strcmp(flag, "--strict-readiness")) {
			if (val && parse_bool(flag, val, &ro.strict_readiness))
				return 2;
			if (!val)
				ro.strict_readiness = 1;
			continue;
		}
		if (!strcmp(flag, "--allow-metrics")) {
			if (val && parse_bool(flag, val, &allow_metrics))
				return 2;
			if (!val)
				allow_metrics = 1;
			continue;
		}
		if (!val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "npu serve: %s needs a value\n", flag);
				return 2;
			}
			val = argv[++i];
		}
		st = set_limit_flag(http_limits, sizeof(http_limits) / sizeof(http_limits[0]), flag,
				    val, &ho);
#ifdef NPU_SERVE_HAVE_GRPC
		if (!st)
			st = set_limit_flag(grpc_limits, sizeof(grpc_limits) / sizeof(grpc_limits[0]),
					    flag, val, &go);
#endif
		if (st < 0)
			return 2;
		if (st > 0)
			continue;
		if (!strcmp(flag, "--model-repository") || !strcmp(flag, "--model-store")) {
			ro.path = val;
		} else if (!strcmp(flag, "--backend-directory")) {
			ro.backend_dir = val;
		} else if (!strcmp(flag, "--http-port")) {
			if (parse_int(flag, val, 0, 65535, &x))
				return 2;
			ho.port = (int)x;
		} else if (!strcmp(flag, "--http-address")) {
			ho.address = val;
		} else if (!strcmp(flag, "--http-thread-count")) {
			if (parse_int(flag, val, 1, 256, &x))
				return 2;
			ho.threads = (int)x;
		} else if (!strcmp(flag, "--http-max-body-bytes")) {
			if (parse_int(flag, val, 1, 1L << 40, &x))
				return 2;
			ho.max_body_bytes = (size_t)x;
		} else if (!strcmp(flag, "--http-timeout-secs")) {
			if (parse_int(flag, val, 1, 86400, &x))
				return 2;
			ho.timeout_secs = (unsigned int)x;
		} else if (!strcmp(flag, "--allowed-host")) {
			if (ho.num_allowed_hosts >= sizeof(allowed_hosts) / sizeof(allowed_hosts[0])) {
				fprintf(stderr, "npu serve: more than 64 --allowed-host\n");
				return 2;
			}
			allowed_hosts[ho.num_allowed_hosts++] = val;
			ho.allowed_hosts = allowed_hosts;
		} else if (!strcmp(flag, "--metrics-port")) {
			if (parse_int(flag, val, -1, 65535, &metrics_port))
				return 2;
		} else if (!strcmp(flag, "--grpc-port")) {
			if (parse_int(flag, val, -1, 65535, &grpc_port_flag))
				return 2;
		} else if (!strcmp(flag, "--model-control-mode")) {
			if (!strcmp(val, "none"))
				ro.mode = CONTROL_NONE;
			else if (!strcmp(val, "explicit"))
				ro.mode = CONTROL_EXPLICIT;
			else if (!strcmp(val, "poll"))
				ro.mode = CONTROL_POLL;
			else {
				fprintf(stderr, "npu serve: --model-control-mode: '%s' is not none, explicit or poll\n",
					val);
				return 2;
			}
		} else if (!strcmp(flag, "--repository-poll-secs")) {
			if (parse_int(flag, val, 1, 86400, &x))
				return 2;
			ro.poll_secs = (int)x;
		} else if (!strcmp(flag, "--load-model")) {
			if (ro.num_load >= sizeof(load_models) / sizeof(load_models[0])) {
				fprintf(stderr, "npu serve: more than 256 --load-model\n");
				return 2;
			}
			ro.load_models[ro.num_load++] = (char *)val;
		} else if (!strcmp(flag, "--device")) {
			ro.device = val;
		} else if (!strcmp(flag, "--threads")) {
			if (parse_int(flag, val, 0, 1024, &x))
				return 2;
			ro.threads = (int)x;
		} else if (!strcmp(flag, "--exit-timeout-secs")) {
			if (parse_int(flag, val, 0, 86400, &exit_timeout))
				return 2;
		} else if (!strcmp(flag, "--max-json-bytes")) {
			if (parse_int(flag, val, 1024, 1L << 40, &x))
				return 2;
			ro.max_json_bytes = (size_t)x;
		} else if (!strcmp(flag, "--default-max-queue-size")) {
			if (parse_int(flag, val, 1, 1L << 30, &x))
				return 2;
			ro.default_max_queue_size = (uint64_t)x;
		} else if (!strcmp(flag, "--max-new-shapes-per-minute")) {
			if (parse_int(flag, val, -1, 1000000, &x))
				return 2;
			ro.max_new_shapes_per_minute = x ? (int)x : -1;
		} else if (!strcmp(flag, "--shm-max-regions")) {
			if (parse_int(flag, val, 1, 65536, &x))
				return 2;
			shm_max_regions = (size_t)x;
		} else if (!strcmp(flag, "--shm-max-bytes")) {
			if (parse_int(flag, val, 4096, 1L << 50, &x))
				return 2;
			shm_max_bytes = (uint64_t)x;
		} else if (!strcmp(flag, "--max-sequences")) {
			if (parse_int(flag, val, 1, 1L << 24, &x))
				return 2;
			ro.max_sequences = (size_t)x;
		} else if (!strcmp(flag, "--max-sequence-state-bytes")) {
			if (parse_int(flag, val, 1, 1L << 40, &x))
				return 2;
			ro.max_sequence_state_bytes = (size_t)x;
		} else if (!strcmp(flag, "--port-file")) {
			port_file = val;
		} else if (!strcmp(flag, "--tls-cert") || !strcmp(flag, "--tls-key")) {
			char **dst = flag[6] == 'c' ? &tls_cert : &tls_key;

			free(*dst);
			*dst = read_pem(flag, val);
			if (!*dst)
				return 2;
		} else if (!strcmp(flag, "--api-token") || !strcmp(flag, "--admin-token")) {
			char **dst = flag[3] == 'p' ? &auth.api_token : &auth.admin_token;

			free(*dst);
			*dst = auth_token_arg(flag, val, err, sizeof(err));
			if (!*dst) {
				fprintf(stderr, "npu serve: %s\n", err);
				return 2;
			}
		} else if (!strcmp(flag, "--panel-chartjs")) {
			ho.chartjs_path = val;
		} else if (!strcmp(flag, "--cache-config") || !strcmp(flag, "--rate-limit") ||
			   !strcmp(flag, "--rate-limit-resource") || !strcmp(flag, "--trace-dir") ||
			   !strcmp(flag, "--log-dir")) {
			int bad = !strcmp(flag, "--cache-config") ? response_cache_config_arg(val, err) :
				  !strcmp(flag, "--rate-limit") ? rate_limiter_mode_arg(val, err) :
				  !strcmp(flag, "--rate-limit-resource") ?
					rate_limiter_resource_arg(val, err) :
				  !strcmp(flag, "--trace-dir") ? trace_dir_arg(val, err) :
				  log_dir_arg(val, err);

			if (bad) {
				fprintf(stderr, "npu serve: %s\n", err);
				return 2;
			}
		} else if (!strcmp(flag, "--log-verbose")) {
			if (parse_int(flag, val, 0, 10, &x))
				return 2;
			serve_verbose = x ? SERVE_LOG_DEBUG : SERVE_LOG_INFO;
		} else {
			fprintf(stderr, "npu serve: unknown option '%s'\n", flag);
			usage(stderr);
			return 2;
		}
	}
	if (!ro.path) {
		fprintf(stderr, "npu serve: --model-repository is required\n");
		usage(stderr);
		return 2;
	}
	if (!tls_cert != !tls_key) {
		fprintf(stderr, "npu serve: --tls-cert and --tls-key go together\n");
		return 2;
	}
	ho.tls_cert_pem = tls_cert;
	ho.tls_key_pem = tls_key;
	ho.auth = &auth;
	if (auth.api_token && auth.admin_token && !strcmp(auth.api_token, auth.admin_token)) {
		fprintf(stderr, "npu serve: --api-token and --admin-token must differ\n");
		return 2;
	}
	if ((auth.api_token || auth.admin_token) && !tls_cert &&
	    strcmp(ho.address, "127.0.0.1") && strcmp(ho.address, "localhost"))
		serve_log(SERVE_LOG_WARN, "bearer tokens over plain HTTP on %s: anyone on the path can read them (--tls-cert)",
			  ho.address);
	if (ro.num_load && ro.mode != CONTROL_EXPLICIT)
		serve_log(SERVE_LOG_WARN, "--load-model only applies with --model-control-mode=explicit");

	/* Signals go to this thread only (sigwait below). */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!ro.backend_dir)
		ro.backend_dir = default_backend_dir(backend_dir, sizeof(backend_dir));
	shm_set_limits(shm_max_regions, shm_max_bytes);
	if (repository_create(&ro, &repo, err)) {
		serve_log(SERVE_LOG_ERROR, "%s", err);
		return 1;
	}
	repository_start(repo);
	if (panel_start())
		serve_log(SERVE_LOG_WARN, "cannot start the panel's sampler: its charts stay empty");
	if (http_start(repo, &ho, &http, err)) {
		serve_log(SERVE_LOG_ERROR, "HTTP: %s", err);
		repository_destroy(repo);
		return 1;
	}
	if (allow_metrics && metrics_port >= 0) {
		struct http_options mo = ho;

		mo.port = (int)metrics_port;
		mo.threads = 1;
		mo.metrics_only = 1;
		if (http_start(repo, &mo, &metrics, err))
			serve_log(SERVE_LOG_WARN, "metrics port: %s (/metrics stays on the HTTP port)", err);
	}
	serve_log(SERVE_LOG_INFO, "%s on %s:%d%s%s%s", tls_cert ? "HTTPS" : "HTTP", ho.address,
		  http_port(http), auth.api_token ? ", API token required" : "",
		  auth.admin_token ? ", admin token required" : "",
		  repository_mode(repo) == CONTROL_POLL ? ", polling the repository" : "");
	if (metrics)
		serve_log(SERVE_LOG_INFO, "metrics on %s:%d/metrics", ho.address, http_port(metrics));
#ifdef NPU_SERVE_HAVE_GRPC
	if (grpc_port_flag >= 0) {
		go.address = ho.address;
		go.port = (int)grpc_port_flag;
		go.max_message_bytes = ho.max_body_bytes;
		go.auth = &auth;
		go.tls_cert_pem = tls_cert;
		go.tls_key_pem = tls_key;
		if (go.max_buffer_bytes && !go.max_connection_buffer_bytes)
			go.max_connection_buffer_bytes = go.max_buffer_bytes / 2;
		if (grpc_start(repo, &go, &grpc, err)) {
			serve_log(SERVE_LOG_ERROR, "gRPC: %s", err);
			http_stop(metrics);
			http_stop(http);
			repository_destroy(repo);
			return 1;
		}
		grpc_bound = grpc_port(grpc);
		serve_log(SERVE_LOG_INFO, "gRPC%s on %s:%d", tls_cert ? " over TLS (ALPN h2)" : "",
			  ho.address, grpc_bound);
	}
#else
	if (grpc_port_flag >= 0)
		serve_log(SERVE_LOG_WARN, "built without gRPC (libnghttp2-dev): --grpc-port ignored");
#endif
	if (port_file) {
		char tmp[4096];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
		f = fopen(tmp, "w");
		if (!f || fprintf(f, "http=%d\ngrpc=%d\nmetrics=%d\n", http_port(http), grpc_bound,
				  metrics ? http_port(metrics) : -1) < 0 ||
		    fclose(f) || rename(tmp, port_file)) {
			serve_log(SERVE_LOG_ERROR, "--port-file %s: %s", port_file, strerror(errno));
#ifdef NPU_SERVE_HAVE_GRPC
			grpc_stop(grpc);
#endif
			http_stop(http);
			http_stop(metrics);
			repository_destroy(repo);
			return 1;
		}
	}

	for (;;) {
		if (sigwait(&set, &sig) == 0 && (sig == SIGTERM || sig == SIGINT))
			break;
	}
	serve_log(SERVE_LOG_INFO, "%s: no new connections; draining the requests in flight",
		  sig == SIGTERM ? "SIGTERM" : "SIGINT");
	http_quiesce(http);
	http_quiesce(metrics);
#ifdef NPU_SERVE_HAVE_GRPC
	grpc_quiesce(grpc);
	if (!grpc_wait_idle(grpc, (int)exit_timeout * 1000)) {
		serve_log(SERVE_LOG_ERROR, "gRPC calls still in flight after --exit-timeout-secs %ld; exiting",
			  exit_timeout);
		_exit(1);
	}
#endif
	if (!http_wait_idle(http, (int)exit_timeout * 1000)) {
		/* Their completions would touch connections stopped below. */
		serve_log(SERVE_LOG_ERROR, "requests still in flight after --exit-timeout-secs %ld; exiting",
			  exit_timeout);
		_exit(1);
	}
	http_stop(metrics);
	http_stop(http);
#ifdef NPU_SERVE_HAVE_GRPC
	grpc_stop(grpc);
#endif
	repository_destroy(repo);
	shm_shutdown();
	panel_stop();
	trace_shutdown();
	free(tls_cert);
	free(tls_key);
	free(auth.api_token);
	free(auth.admin_token);
	serve_log(SERVE_LOG_INFO, "stopped");
	log_shutdown();
	return 0;
}
