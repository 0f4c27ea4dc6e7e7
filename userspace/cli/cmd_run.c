// SPDX-License-Identifier: MIT
/* npu run: run an ONNX model on given or random inputs, write .npy outputs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npu/npu_model.h"
#include "npu/npu_remote.h"
#include "cli_util.h"
#include "npu_cli.h"

#define MAX_ARGS 64


/* mkdir -p: DIR and the directories above it; 0, or -1 with errno. */
static int make_dirs(const char *dir)
{
	char path[4096];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(path)) {
		errno = n ? ENAMETOOLONG : ENOENT;
		return -1;
	}
	memcpy(path, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0777) && errno != EEXIST)
			return -1;
		path[i] = i < n ? '/' : '\0';
	}
	return 0;
}
struct run_args {
	const char *model;
	const char *device;
	const char *providers;	/* --providers LIST */
	const char *calib_dir;	/* NPU devices: --calib-dir DIR or --calib random */
	const char *int16, *precision;	/* --int16 NODES, --precision int8|int16 */
	const char *codegen;		/* --codegen K=V,... */
	enum npu_parallel_mode parallel;	/* --parallel data|pipeline|auto */
	const char *cpu;		/* --cpu K=V,... */
	int calib_random;
	const char *inputs[MAX_ARGS];
	size_t num_inputs;
	const char *shapes[MAX_ARGS];
	size_t num_shapes;
	const char *output_dir;
	long long seed;
	int have_seed;
	int threads;
	int repeat;
	int profile;
	int quiet;
	/* Split computing: this model is the head, the tail is on a server. */
	const char *remote, *remote_model, *remote_version;
	const char *remote_cut;	/* --remote-cut: the whole model, its tail a provider */
	double remote_timeout;
	double link_mbit, link_rtt_ms;
	int link_rtt_only;	/* --link-rtt: the round trip without pacing */
	int upload_inputs;
};

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: npu run MODEL.onnx [--device cpu|sim|sim:N|accel|accel:K|accel:*] [--providers LIST]\n"
		"               [--parallel data|pipeline|auto]   (a device set: see npu bench)\n"
		"               [--input NAME=FILE.npy|FILE.pb]... [--random-inputs SEED]\n"
		"               [--shape NAME=DIMS]... [--output-dir DIR] [--threads N]\n"
		"               [--repeat N] [--profile] [--quiet]\n"
		"               [--calib-dir DIR | --calib random]   (sim, accel: see npu compile)\n"
		"               [--int16 NODE[,NODE]...] [--precision int8|int16] [--codegen K=V,...]\n"
		"               [--cpu K=V,...]   (see npu compile)\n"
		"               [--remote http://HOST:PORT --remote-model NAME [--remote-version V]\n"
		"                [--remote-timeout S] [--link MBIT[,RTT_MS] | --link-rtt MS]\n"
		"                [--upload-inputs | --remote-cut TENSOR[,TENSOR]...]]\n\n"
		"Runs the model and writes DIR/<output name>.npy for every output\n"
		"(--device sim|accel compiles it: NPU segments, CPU for the rest)\n"
		"(characters outside [A-Za-z0-9_.-] become '_'; DIR defaults to '.').\n"
		"  --input NAME=FILE    input from a .npy or a serialized TensorProto (.pb)\n"
		"  --random-inputs SEED uniform [0,1) floats (ints in [0,10)) for inputs not given\n"
		"  --shape NAME=DIMS    fix dynamic dims of an input, e.g. x=1x3x640x640\n"
		"  --providers LIST     execution providers in priority order (default npu,cpu\n"
		"                       on an NPU device, else cpu): npu takes what the NPU runs\n"
		"  --threads N          CPU threads (default: all cores)\n"
		"  --repeat N           run N times, report the median and minimum time\n"
		"  --profile            time every node, print the time per op type\n"
		"  --remote URL         split computing: MODEL is the head (npu split); its\n"
		"                       outputs go to the tail model NAME on an npu serve at URL\n"
		"                       (KServe v2, binary tensors) and the tail's outputs are\n"
		"                       written. The inputs never leave this process.\n"
		"  --remote-cut LIST    MODEL is the whole model: the execution provider 'remote'\n"
		"                       takes every node downstream of these tensors (where npu\n"
		"                       split --at cut it) and runs them as NAME on the server;\n"
		"                       --providers defaults to remote,npu,cpu (remote,cpu on cpu)\n"
		"  --remote-version V   that version of the tail (default: the server's policy)\n"
		"  --remote-timeout S   per request (default 30)\n"
		"  --link MBIT[,RTT_MS] emulate a link: pace the request and the reply at MBIT\n"
		"                       Mbit/s each way, add RTT_MS once per request\n"
		"  --link-rtt MS        only add MS once per request (a link shaped outside this\n"
		"                       process, e.g. tc tbf on the loopback of a namespace)\n"
		"  --upload-inputs      run nothing here: send MODEL's inputs to NAME (the whole\n"
		"                       model on the server; the raw inputs do leave)\n");
}

/* "x:0/a" -> "x_0_a" */
static void safe_name(const char *in, char *out, size_t size)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < size; i++) {
		char c = in[i];

		out[i] = ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			  c == '-') ? c : '_';
	}
	out[i] = '\0';
	if (!strcmp(out, ".") || !strcmp(out, "..") || !out[0])
		snprintf(out, size, "output");
}

static const char *shape_text(int rank, const int64_t *dims, char *buf,
			      size_t size)
{
	size_t len = 0;
	int d;

	if (!rank) {
		snprintf(buf, size, "scalar");
		return buf;
	}
	buf[0] = '\0';
	for (d = 0; d < rank && len < size; d++)
		len += (size_t)snprintf(buf + len, size - len, "%s%lld",
					d ? "x" : "", (long long)dims[d]);
	return buf;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The tail on the server, from --remote and the options that go with it. */
static void remote_options(const struct run_args *a, struct npu_remote_options *ro)
{
	npu_remote_options_init(ro);
	ro->url = a->remote;
	ro->model = a->remote_model;
	ro->version = a->remote_version;
	ro->timeout_s = a->remote_timeout;
	ro->link_mbit = a->link_mbit;
	ro->link_rtt_ms = a->link_rtt_ms;
}

/* --remote-cut: the tail as the execution provider "remote". */
static int register_remote(struct npu_engine *engine, void *arg)
{
	const struct run_args *a = arg;
	struct npu_remote_options ro;

	remote_options(a, &ro);
	return npu_remote_register_provider(engine, &ro, a->remote_cut) != NPU_OK;
}

static int parse_run_args(int argc, char **argv, struct run_args *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->device = "cpu";
	a->output_dir = ".";
	a->repeat = 1;
	for (i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			run_usage(stdout);
			exit(0);
		} else if (!strcmp(o, "--profile")) {
			a->profile = 1;
		} else if (!strcmp(o, "--quiet")) {
			a->quiet = 1;
		} else if (!strcmp(o, "--upload-inputs")) {
			a->upload_inputs = 1;
		} else if (o[0] == '-' && o[1] == '-') {
			char *end;

			if (!v) {
				fprintf(stderr, "npu run: %s needs a value\n", o);
				return -1;
			}
			i++;
			if (!strcmp(o, "--device")) {
				a->device = v;
			} else if (!strcmp(o, "--providers")) {
				a->providers = v;
			} else if (!strcmp(o, "--calib") && !strcmp(v, "random")) {
				a->calib_random = 1;
			} else if (!strcmp(o, "--calib-dir") || !strcmp(o, "--calib")) {
				a->calib_dir = v;
			} else if (!strcmp(o, "--int16")) {
				a->int16 = v;
			} else if (!strcmp(o, "--precision")) {
				if (strcmp(v, "int8") && strcmp(v, "int16")) {
					fprintf(stderr, "npu run: --precision '%s': expected int8 or int16\n", v);
					return -1;
				}
				a->precision = v;
			} else if (!strcmp(o, "--codegen")) {
				a->codegen = v;
			} else if (!strcmp(o, "--parallel")) {
				if (npu_cli_parse_parallel("run", v, &a->parallel))
					return -1;
			} else if (!strcmp(o, "--cpu")) {
				a->cpu = v;
			} else if (!strcmp(o, "--input")) {
				if (a->num_inputs == MAX_ARGS)
					return -1;
				a->inputs[a->num_inputs++] = v;
			} else if (!strcmp(o, "--shape")) {
				if (a->num_shapes == MAX_ARGS)
					return -1;
				a->shapes[a->num_shapes++] = v;
			} else if (!strcmp(o, "--remote")) {
				a->remote = v;
			} else if (!strcmp(o, "--remote-model")) {
				a->remote_model = v;
			} else if (!strcmp(o, "--remote-cut")) {
				a->remote_cut = v;
			} else if (!strcmp(o, "--remote-version")) {
				a->remote_version = v;
			} else if (!strcmp(o, "--remote-timeout")) {
				a->remote_timeout = strtod(v, &end);
				if (*end || !(a->remote_timeout > 0)) {
					fprintf(stderr, "npu run: bad --remote-timeout '%s' (seconds > 0)\n", v);
					return -1;
				}
			} else if (!strcmp(o, "--link")) {
				if (npu_cli_parse_link(v, &a->link_mbit, &a->link_rtt_ms)) {
					fprintf(stderr, "npu run: bad --link '%s' (MBIT[,RTT_MS], e.g. 10,20)\n", v);
					return -1;
				}
			} else if (!strcmp(o, "--link-rtt")) {
				a->link_rtt_ms = strtod(v, &end);
				if (*end || !(a->link_rtt_ms >= 0) || a->link_rtt_ms > 60000) {
					fprintf(stderr, "npu run: bad --link-rtt '%s' (ms, 0 to 60000)\n", v);
					return -1;
				}
				a->link_rtt_only = 1;
			} else if (!strcmp(o, "--output-dir")) {
				a->output_dir = v;
			} else if (!strcmp(o, "--random-inputs")) {
				a->seed = strtoll(v, &end, 0);
				if (*end) {
					fprintf(stderr, "npu run: bad seed '%s'\n", v);
					return -1;
				}
				a->have_seed = 1;
			} else if (!strcmp(o, "--threads")) {
				a->threads = (int)strtol(v, &end, 10);
				if (*end || a->threads < 1 || a->threads > 1024) {
					fprintf(stderr, "npu run: bad thread count '%s'\n", v);
					return -1;
				}
			} else if (!strcmp(o, "--repeat")) {
				a->repeat = (int)strtol(v, &end, 10);
				if (*end || a->repeat < 1) {
					fprintf(stderr, "npu run: bad repeat count '%s'\n", v);
					return -1;
				}
			} else {
				fprintf(stderr, "npu run: unknown option '%s'\n", o);
				return -1;
			}
		} else if (!a->model) {
			a->model = o;
		} else {
			fprintf(stderr, "npu run: unexpected argument '%s'\n", o);
			return -1;
		}
	}
	if (!a->model) {
		run_usage(stderr);
		return -1;
	}
	if ((a->remote && !a->remote_model) || (!a->remote && a->remote_model)) {
		fprintf(stderr, "npu run: --remote and --remote-model go together\n");
		return -1;
	}
	if (!a->remote && (a->remote_version || a->remote_timeout > 0 || a->link_mbit > 0 ||
			   a->link_rtt_only || a->upload_inputs)) {
		fprintf(stderr, "npu run: --remote-version, --remote-timeout, --link, --link-rtt and --upload-inputs need --remote\n");
		return -1;
	}
	if (a->remote_cut && (!a->remote || a->upload_inputs)) {
		fprintf(stderr, "npu run: --remote-cut needs --remote and excludes --upload-inputs\n");
		return -1;
	}
	if (a->link_rtt_only && a->link_mbit > 0) {
		fprintf(stderr, "npu run: --link and --link-rtt exclude each other\n");
		return -1;
	}
	return 0;
}

/* Read NAME=FILE for input 'name', if given: .npy or TensorProto .pb. */
static int load_input_file(const struct run_args *a, const char *name,
			   struct npu_host_tensor *out)
{
	size_t i, len = strlen(name);

	memset(out, 0, sizeof(*out));
	for (i = 0; i < a->num_inputs; i++) {
		const char *arg = a->inputs[i], *file;

		if (strncmp(arg, name, len) || arg[len] != '=')
			continue;
		file = arg + len + 1;
		if (npu_tensor_file_read(file, out) != NPU_OK) {
			fprintf(stderr, "npu run: input '%s': %s\n", name, npu_last_error());
			return -1;
		}
		return 1;
	}
	return 0;
}

int npu_cmd_run(int argc, char **argv)
{
	struct run_args a;
	struct npu_model_options opts;
	struct npu_cli_model cm = { 0 };
	struct npu_model *m = NULL;
	struct npu_host_tensor *ins = NULL;
	struct npu_host_tensor *files = NULL;	/* --input NAME=FILE */
	void **random_bufs = NULL;
	double *times = NULL, *head_ms = NULL, *req_ms = NULL, *wall_ms = NULL, *modeled_ms = NULL;
	struct npu_remote *remote = NULL;
	uint64_t sent_bytes = 0, recv_bytes = 0;
	size_t i, n_in, n_out, k;
	uint64_t rng;
	int rc = 1, r;
	char sbuf[160];

	if (parse_run_args(argc, argv, &a))
		return 2;
	npu_model_options_init(&opts);
	opts.profile = a.profile;
	/* sim / accel: the model is compiled, NPU segments + CPU fallback. */
	opts.device = a.device;
	opts.providers = a.providers;
	opts.calib_dir = a.calib_dir;
	opts.calib_random = a.calib_random;
	opts.int16 = a.int16;
	opts.precision = a.precision;
	opts.codegen = a.codegen;
	opts.parallel = a.parallel;
	opts.cpu = a.cpu;
	if (a.remote_cut && !opts.providers)
		opts.providers = strcmp(a.device, "cpu") ? "remote,npu,cpu" : "remote,cpu";
	if (npu_cli_open_setup(&cm, a.model, &opts, a.threads, "run",
			       a.remote_cut ? register_remote : NULL, &a))
		goto out;
	m = cm.model;
	a.device = npu_model_device(m);	/* the providers decide: "cpu" without npu */
	for (i = 0; i < a.num_shapes; i++)
		if (npu_cli_apply_shape(&cm, a.shapes[i], "run")) {
			rc = 2;
			goto out;
		}
	if (npu_session_create(m, NULL, &cm.session) != NPU_OK) {
		fprintf(stderr, "npu run: %s\n", npu_last_error());
		goto out;
	}
	n_in = npu_model_num_inputs(m);
	ins = calloc(n_in + 1, sizeof(*ins));
	files = calloc(n_in + 1, sizeof(*files));
	random_bufs = calloc(n_in + 1, sizeof(*random_bufs));
	times = calloc((size_t)a.repeat, sizeof(*times));
	if (!ins || !files || !random_bufs || !times)
		goto out;
	for (i = 0; i < a.num_inputs; i++) {
		const char *eq = strchr(a.inputs[i], '=');
		struct npu_tensor_info info;
		int found = 0;

		for (k = 0; eq && k < n_in; k++) {
			npu_model_input_info(m, k, &info);
			if (strlen(info.name) == (size_t)(eq - a.inputs[i]) &&
			    !strncmp(info.name, a.inputs[i], strlen(info.name)))
				found = 1;
		}
		if (!found) {
			fprintf(stderr, "npu run: --input '%s': %s\n", a.inputs[i],
				eq ? "the model has no such input"
				   : "expected NAME=FILE");
			rc = 2;
			goto out;
		}
	}
	rng = (uint64_t)a.seed;
	for (i = 0; i < n_in; i++) {
		struct npu_tensor_info info;
		struct npu_host_tensor *h = &ins[i];
		int64_t numel = 1;
		int d;

		npu_model_input_info(m, i, &info);
		h->name = info.name;
		r = load_input_file(&a, info.name, &files[i]);
		if (r < 0)
			goto out;
		if (r > 0) {
			h->dtype = files[i].dtype;
			h->rank = files[i].rank;
			memcpy(h->dims, files[i].dims, sizeof(h->dims));
			h->data = files[i].data;
			h->nbytes = files[i].nbytes;
			continue;
		}
		if (!a.have_seed) {
			fprintf(stderr,
				"npu run: input '%s' has no data: give --input %s=FILE.npy or --random-inputs SEED\n",
				info.name, info.name);
			rc = 2;
			goto out;
		}
		/* The planned shape: declared dims, then --shape. */
		for (k = 0; k < a.num_shapes; k++) {
			size_t len = strlen(info.name);

			if (!strncmp(a.shapes[k], info.name, len) &&
			    a.shapes[k][len] == '=') {
				info.rank = npu_cli_parse_dims(a.shapes[k] + len + 1,
						       info.dims);
			}
		}
		if (info.rank < 0) {
			fprintf(stderr, "npu run: input '%s' has unknown rank: give --shape %s=DIMS\n",
				info.name, info.name);
			rc = 2;
			goto out;
		}
		for (d = 0; d < info.rank; d++) {
			if (info.dims[d] < 0) {
				fprintf(stderr,
					"npu run: input '%s' dim %d ('%s') is not fixed: give --shape %s=DIMS\n",
					info.name, d,
					info.dim_names[d] ? info.dim_names[d] : "?",
					info.name);
				rc = 2;
				goto out;
			}
			numel *= info.dims[d];
		}
		h->dtype = info.dtype;
		h->rank = info.rank;
		memcpy(h->dims, info.dims, sizeof(h->dims));
		h->nbytes = (size_t)numel * npu_data_type_size(info.dtype);
		random_bufs[i] = malloc(h->nbytes ? h->nbytes : 1);
		h->data = random_bufs[i];
		if (!h->data || npu_cli_fill_random(h, &rng, 0.0f, 1.0f)) {
			fprintf(stderr, "npu run: input '%s': cannot make random %s data\n",
				info.name, npu_data_type_name(info.dtype));
			goto out;
		}
	}
	if (a.remote && !a.remote_cut) {
		struct npu_remote_options ro;

		remote_options(&a, &ro);
		if (npu_remote_create(&ro, &remote) != NPU_OK) {
			fprintf(stderr, "npu run: %s\n", npu_last_error());
			rc = 2;
			goto out;
		}
		head_ms = calloc((size_t)a.repeat, sizeof(*head_ms));
		req_ms = calloc((size_t)a.repeat, sizeof(*req_ms));
		wall_ms = calloc((size_t)a.repeat, sizeof(*wall_ms));
		if (!head_ms || !req_ms || !wall_ms)
			goto out;
	}
	if (!remote && strcmp(a.device, "cpu") &&
	    !(modeled_ms = calloc((size_t)a.repeat, sizeof(*modeled_ms))))
		goto out;
	if (remote && a.upload_inputs) {
		/* The whole model on the server: its inputs are what it checks. */
		struct npu_tensor_info sent[MAX_ARGS];

		for (i = 0; i < n_in && i < MAX_ARGS; i++) {
			memset(&sent[i], 0, sizeof(sent[i]));
			sent[i].name = ins[i].name;
			sent[i].dtype = ins[i].dtype;
			sent[i].rank = ins[i].rank;
			memcpy(sent[i].dims, ins[i].dims, sizeof(sent[i].dims));
		}
		if (npu_remote_check(remote, sent, i) != NPU_OK) {
			fprintf(stderr, "npu run: %s\n", npu_last_error());
			goto out;
		}
	}
	for (r = 0; r < a.repeat; r++) {
		npu_status st;

		if (remote && a.upload_inputs)
			st = npu_remote_infer(remote, ins, n_in);
		else if (remote)
			st = npu_remote_run_split(remote, cm.session, ins, n_in);
		else
			st = npu_session_run(cm.session, ins, n_in);
		if (st != NPU_OK) {
			fprintf(stderr, "npu run: %s\n", npu_last_error());
			goto out;
		}
		if (remote) {
			struct npu_remote_stats rs;
			struct npu_npu_stats ns;

			npu_remote_stats_init(&rs);
			npu_remote_get_stats(remote, &rs);
			head_ms[r] = a.upload_inputs ? 0 : rs.last_head_ms;
			/* What this process really took, the simulator's software included. */
			wall_ms[r] = head_ms[r] + rs.last_request_ms;
			/* On an NPU the device's time is the modeled one, not the simulator's. */
			npu_npu_stats_init(&ns);
			if (!a.upload_inputs && strcmp(a.device, "cpu") &&
			    npu_session_npu_stats(cm.session, &ns) == NPU_OK && ns.clock_mhz)
				head_ms[r] += (double)ns.last_cycles / (ns.clock_mhz * 1e3) -
					      ns.last_npu_wall_ms;
			req_ms[r] = rs.last_request_ms;
			times[r] = head_ms[r] + req_ms[r];
			sent_bytes = rs.last_bytes_sent;
			recv_bytes = rs.last_bytes_received;
		} else {
			struct npu_npu_stats ns;

			times[r] = npu_session_last_run_seconds(cm.session) * 1e3;
			/* The same run with its NPU segments at the device's modeled time. */
			npu_npu_stats_init(&ns);
			if (modeled_ms && npu_session_npu_stats(cm.session, &ns) == NPU_OK && ns.clock_mhz)
				modeled_ms[r] = times[r] - ns.last_npu_wall_ms +
						(double)ns.last_cycles / (ns.clock_mhz * 1e3);
		}
	}
	if (make_dirs(a.output_dir)) {
		fprintf(stderr, "npu run: --output-dir %s: %s\n", a.output_dir, strerror(errno));
		goto out;
	}
	n_out = remote ? npu_remote_num_outputs(remote) : npu_model_num_outputs(m);
	for (i = 0; i < n_out; i++) {
		struct npu_host_tensor o;
		char fname[256], path[4096];

		if (remote)
			npu_remote_output(remote, i, &o);
		else
			npu_session_output(cm.session, i, &o);
		safe_name(o.name, fname, sizeof(fname));
		snprintf(path, sizeof(path), "%s/%s.npy", a.output_dir, fname);
		if (npu_tensor_file_write_npy(path, &o) != NPU_OK) {
			fprintf(stderr, "npu run: output '%s': %s\n", o.name,
				npu_last_error());
			goto out;
		}
		if (!a.quiet)
			printf("output '%s': %s %s -> %s\n", o.name,
			       npu_data_type_name(o.dtype),
			       shape_text(o.rank, o.dims, sbuf, sizeof(sbuf)),
			       path);
	}
	qsort(times, (size_t)a.repeat, sizeof(*times), cmp_double);
	if (a.threads)
		snprintf(sbuf, sizeof(sbuf), "%d thread%s", a.threads,
			 a.threads == 1 ? "" : "s");
	else
		snprintf(sbuf, sizeof(sbuf), "all cores");
	if (remote) {
		qsort(head_ms, (size_t)a.repeat, sizeof(*head_ms), cmp_double);
		qsort(req_ms, (size_t)a.repeat, sizeof(*req_ms), cmp_double);
		printf("remote: %s %s%s%s, link %s: head %.3f ms%s, request %.3f ms (sent %llu bytes, received %llu bytes), medians of %d\n",
		       a.remote, a.remote_model, a.remote_version ? " version " : "",
		       a.remote_version ? a.remote_version : "",
		       a.link_mbit > 0 ? "paced" : "unshaped",
		       head_ms[a.repeat / 2],
		       a.upload_inputs ? " (nothing here: inputs uploaded)"
				       : strcmp(a.device, "cpu") ? " (NPU modeled)" : "",
		       req_ms[a.repeat / 2], (unsigned long long)sent_bytes,
		       (unsigned long long)recv_bytes, a.repeat);
		if (a.link_mbit > 0)
			printf("link: %.6g Mbit/s each way, RTT %.6g ms (paced sender in the client)\n",
			       a.link_mbit, a.link_rtt_ms);
		else if (a.link_rtt_only)
			printf("link: not paced here, RTT %.6g ms added per request\n", a.link_rtt_ms);
		qsort(wall_ms, (size_t)a.repeat, sizeof(*wall_ms), cmp_double);
		printf("wall: %.3f ms (median of %d, min %.3f ms): the head's measured time + the request\n",
		       wall_ms[a.repeat / 2], a.repeat, wall_ms[0]);
	}
	printf("time: %.3f ms (median of %d, min %.3f ms), device %s, %s\n",
	       times[a.repeat / 2], a.repeat, times[0], a.device, sbuf);
	if (strcmp(a.device, "cpu") && !a.upload_inputs) {
		struct npu_npu_stats ns;

		npu_npu_stats_init(&ns);
		if (npu_session_npu_stats(cm.session, &ns) == NPU_OK && modeled_ms && ns.clock_mhz) {
			qsort(modeled_ms, (size_t)a.repeat, sizeof(*modeled_ms), cmp_double);
			printf("modeled: %.3f ms (median of %d, min %.3f ms): each run with its NPU segments at the modeled NPU time\n",
			       modeled_ms[a.repeat / 2], a.repeat, modeled_ms[0]);
		}
		if (npu_session_npu_stats(cm.session, &ns) == NPU_OK && ns.total_macs)
			printf("npu: %zu segment%s, %.1f%% of MACs on the NPU, modeled %.3f ms, host time in segments %.3f ms\n",
			       ns.segments, ns.segments == 1 ? "" : "s",
			       100.0 * (double)ns.npu_macs /
				       (double)ns.total_macs,
			       ns.clock_mhz ? (double)ns.last_cycles /
						      (ns.clock_mhz * 1e3)
					    : 0.0,
			       ns.last_npu_wall_ms);
	}
	if (!a.quiet && !a.upload_inputs) {
		size_t ns = npu_session_num_op_stats(cm.session), shown = 0;

		printf("ops:");
		for (k = 0; k < ns; k++) {
			const char *op;
			size_t nodes;
			uint64_t calls;
			double ms;

			npu_session_op_stat(cm.session, k, &op, &nodes, &calls, &ms);
			if (a.profile)
				printf("%s %s x%zu %.2f ms", shown ? "," : "",
				       op, nodes, calls ? ms * (double)nodes /
							(double)calls : 0.0);
			else
				printf("%s %s x%zu", shown ? "," : "", op, nodes);
			shown++;
		}
		printf("%s\n", shown ? "" : " (none: all folded)");
	}
	rc = 0;
out:
	if (files)
		for (i = 0; i < npu_model_num_inputs(m); i++)
			npu_host_tensor_free(&files[i]);
	if (random_bufs)
		for (i = 0; i < npu_model_num_inputs(m); i++)
			free(random_bufs[i]);
	free(files);
	free(random_bufs);
	free(ins);
	free(times);
	free(head_ms);
	free(req_ms);
	free(wall_ms);
	free(modeled_ms);
	npu_remote_destroy(remote);
	npu_cli_close(&cm);
	return rc;
}
