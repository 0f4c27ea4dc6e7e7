// SPDX-License-Identifier: MIT
/*
 * npu trace: run a command (or a command-stream file) with job tracing on
 * and write every job as a Chrome-trace JSON that Perfetto loads.
 *
 * Devices opened in the traced process append their events to the file
 * named by NPU_TRACE_FILE (src/device/trace.c). This command points it at
 * a scratch file, runs the command, adds the driver's tracepoints when
 * tracefs is there, and writes the final {"traceEvents": [...]} object.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npu_cli.h"

static bool is_model_file(const char *path)
{
	size_t n = strlen(path);

	return n > 5 && (!strcmp(path + n - 5, ".onnx") || !strcmp(path + n - 5, ".npub"));
}

static void trace_usage(FILE *out)
{
	fprintf(out,
		"usage: npu trace [--device D] -o TRACE.json -- COMMAND [ARGS...]\n"
		"       npu trace [--device D] -o TRACE.json FILE [npu submit options]\n"
		"       npu trace [--device D] -o TRACE.json MODEL.onnx|.npub [npu run options]\n"
		"\n"
		"Record every NPU job of COMMAND (any program using libnpu-user), or of\n"
		"`npu submit FILE`, as a Chrome-trace JSON: per job a host span (submit to\n"
		"completion) and a device span (device start to end) with the modeled\n"
		"cycles, MACs, status, queue and context. Open it in https://ui.perfetto.dev\n"
		"or chrome://tracing.\n"
		"A MODEL runs through `npu run` (device sim unless --device says otherwise,\n"
		"random inputs unless --input is given, outputs in TRACE.json.outputs/):\n"
		"its trace also has a host span per graph op, on the same timeline.\n"
		"\n"
		"  -o, --output F  the trace to write (required)\n"
		"  --device D      sim | accel | auto | /dev/accel/accelN, passed to the\n"
		"                  command as NPU_DEVICE\n"
		"  --no-tracefs    skip the driver's tracepoints\n"
		"\n"
		"On accel, the driver's tracepoints (npu:npu_job_submit/run/complete/\n"
		"fault/reset) are added as instant events when tracefs is mounted and\n"
		"writable (/sys/kernel/tracing, usually needs root); this is best effort\n"
		"and the trace says in otherData.tracefs whether it worked.\n");
}

static const char *tracefs_root(void)
{
	static const char *const roots[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char p[128];
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(p, sizeof(p), "%s/events/npu/enable", roots[i]);
		if (access(p, W_OK) == 0)
			return roots[i];
	}
	return NULL;
}

static bool write_file(const char *root, const char *name, const char *val)
{
	char p[256];
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", root, name);
	fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n;

	*len = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (*len + 4096 + 1 > cap) {
			char *b;

			cap = cap ? cap * 2 : 65536;
			b = realloc(buf, cap);
			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		n = fread(buf + *len, 1, cap - *len - 1, f);
		if (!n)
			break;
		*len += n;
	}
	fclose(f);
	if (buf)
		buf[*len] = '\0';
	return buf;
}

static void json_string(FILE *out, const char *s, size_t len)
{
	size_t i;

	fputc('"', out);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/*
 * tracefs text lines look like
 *   "  npu-1234  [001] .....  5678.123456: npu_job_complete: job=3 ..."
 * Each npu event becomes an instant event on the host (mono) clock.
 */
static unsigned int emit_tracefs(FILE *out, const char *text, bool *first)
{
	const char *line = text;
	unsigned int n = 0;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[1024];
		char *ev, *colon, *p;
		double ts;
		int pid = 0;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl ? nl + 1 : NULL;
		if (buf[0] == '#')
			continue;
		ev = strstr(buf, ": npu_");
		if (!ev)
			continue;
		*ev = '\0';
		ev += 2;
		/* timestamp: the last token before the event */
		p = strrchr(buf, ' ');
		if (!p)
			continue;
		ts = strtod(p + 1, NULL);
		/* pid: after the last '-' of the first token */
		{
			char *tok = buf;

			while (*tok == ' ')
				tok++;
			p = strchr(tok, ' ');
			if (p) {
				char *dash;

				*p = '\0';
				dash = strrchr(tok, '-');
				if (dash)
					pid = atoi(dash + 1);
			}
		}
		colon = strchr(ev, ':');
		if (colon)
			*colon = '\0';
		fprintf(out, "%s\n{\"name\":", *first ? "" : ",");
		json_string(out, ev, strlen(ev));
		fprintf(out, ",\"cat\":\"npu.tracepoint\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"args\":{\"raw\":",
			pid, pid, ts * 1e6);
		p = colon ? colon + 1 : ev + strlen(ev);
		while (*p == ' ')
			p++;
		json_string(out, p, strlen(p));
		fprintf(out, "}}");
		*first = false;
		n++;
	}
	return n;
}

int npu_cmd_trace(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "device", required_argument, NULL, 'd' },
		{ "no-tracefs", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL, *device = NULL, *root = NULL;
	static char outputs_dir[4096];
	char raw_path[4096], tracefs_state[160] = "not requested";
	char **cmd;
	bool use_tracefs = true, first = true;
	int c, status = 0, rc;
	unsigned int events = 0, jobs = 0, tp = 0;
	char *raw, *tfs = NULL, *p;
	size_t raw_len, tfs_len;
	pid_t pid;
	FILE *out;

	optind = 1;
	/* '+': stop at the first non-option, it belongs to the command */
	while ((c = getopt_long(argc, argv, "+o:d:Th", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'd':
			device = optarg;
			break;
		case 'T':
			use_tracefs = false;
			break;
		case 'h':
			trace_usage(stdout);
			return 0;
		default:
			trace_usage(stderr);
			return 2;
		}
	}
	if (!output) {
		fprintf(stderr, "npu trace: -o TRACE.json is required\n\n");
		trace_usage(stderr);
		return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "npu trace: nothing to run: give -- COMMAND or a command-stream FILE\n\n");
		trace_usage(stderr);
		return 2;
	}
	/* FILE form: run this binary's own `submit`, or `run` for a model */
	if (optind > 0 && strcmp(argv[optind - 1], "--")) {
		int n = argc - optind, i, k = 0;
		bool model = is_model_file(argv[optind]), have_input = false;

		cmd = calloc((size_t)n + 10, sizeof(*cmd));
		if (!cmd)
			return 1;
		cmd[k++] = "/proc/self/exe";
		cmd[k++] = model ? "run" : "submit";
		for (i = 0; i < n; i++) {
			cmd[k++] = argv[optind + i];
			have_input |= !strcmp(argv[optind + i], "--input") ||
				      !strcmp(argv[optind + i], "--random-inputs");
		}
		if (model) {
			snprintf(outputs_dir, sizeof(outputs_dir), "%s.outputs", output);
			cmd[k++] = "--device";
			cmd[k++] = device ? (char *)device : "sim";
			cmd[k++] = "--output-dir";
			cmd[k++] = outputs_dir;
			if (!have_input) {
				cmd[k++] = "--random-inputs";
				cmd[k++] = "1";
			}
		}
	} else {
		cmd = NULL;
	}

	snprintf(raw_path, sizeof(raw_path), "%s.raw.XXXXXX", output);
	{
		int fd = mkstemp(raw_path);

		if (fd < 0) {
			fprintf(stderr, "npu trace: cannot create %s: %s\n", raw_path,
				strerror(errno));
			free(cmd);
			return 1;
		}
		close(fd);
	}
	if (use_tracefs) {
		root = tracefs_root();
		if (!root) {
			snprintf(tracefs_state, sizeof(tracefs_state),
				 "unavailable: no writable tracefs with npu events (driver not loaded, tracefs not mounted, or not root)");
		} else {
			write_file(root, "trace_clock", "mono");	/* = CLOCK_MONOTONIC */
			write_file(root, "trace", "");
			if (write_file(root, "events/npu/enable", "1") &&
			    write_file(root, "tracing_on", "1"))
				snprintf(tracefs_state, sizeof(tracefs_state), "enabled (%s)", root);
			else
				snprintf(tracefs_state, sizeof(tracefs_state), "could not enable npu events in %s",
					 root), root = NULL;
		}
	}

	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "npu trace: fork: %s\n", strerror(errno));
		unlink(raw_path);
		free(cmd);
		return 1;
	}
	if (pid == 0) {
		char **av = cmd ? cmd : argv + optind;

		setenv("NPU_TRACE_FILE", raw_path, 1);
		if (device)
			setenv("NPU_DEVICE", device, 1);
		execvp(av[0], av);
		fprintf(stderr, "npu trace: cannot run '%s': %s\n",
			cmd ? argv[optind] : av[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	free(cmd);
	if (root) {
		char tp_path[256];

		write_file(root, "events/npu/enable", "0");
		snprintf(tp_path, sizeof(tp_path), "%s/trace", root);
		tfs = read_all(tp_path, &tfs_len);
	}

	raw = read_all(raw_path, &raw_len);
	unlink(raw_path);
	out = fopen(output, "w");
	if (!out) {
		fprintf(stderr, "npu trace: cannot write %s: %s\n", output, strerror(errno));
		free(raw);
		free(tfs);
		return 1;
	}
	fprintf(out, "{\"traceEvents\":[");
	if (raw && raw_len) {
		/* drop the array's "[" and the last event's "," */
		char *s = raw, *e = raw + raw_len;

		if (*s == '[')
			s++;
		while (e > s && (e[-1] == '\n' || e[-1] == ',' || e[-1] == ' '))
			e--;
		*e = '\0';
		while (*s == '\n')
			s++;
		if (*s) {
			fprintf(out, "\n%s", s);
			first = false;
		}
		for (p = s; (p = strstr(p, "\"ph\":")); p++)
			events++;
		for (p = s; (p = strstr(p, "\"cat\":\"npu.device\"")); p++)
			jobs++;
	}
	if (tfs)
		tp = emit_tracefs(out, tfs, &first);
	fprintf(out, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"producer\":\"npu trace\",\"clock\":\"CLOCK_MONOTONIC (us)\",\"tracefs\":");
	json_string(out, tracefs_state, strlen(tracefs_state));
	fprintf(out, ",\"tracepoint_events\":%u}}\n", tp);
	rc = fclose(out) ? 1 : 0;
	free(raw);
	free(tfs);
	if (rc) {
		fprintf(stderr, "npu trace: writing %s failed\n", output);
		return 1;
	}
	fprintf(stderr, "npu trace: wrote %s: %u jobs, %u events, %u driver tracepoints (tracefs %s)\n",
		output, jobs, events + tp, tp, tracefs_state);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "npu trace: the command was killed by signal %d\n",
			WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return 1;
}
