// SPDX-License-Identifier: MIT
/*
 * npu-runner - our CPU path as a long-lived child of bench/ort_compare.js,
 * so that runs of ours and of onnxruntime interleave one by one in a
 * single benchmark (the machine's noise then hits both alike).
 *
 *   npu-runner MODEL.onnx IN.npy THREADS [--profile]
 *
 * Loads the model on "cpu" with an engine of THREADS threads and plans it
 * for the input's shape, then reads commands on stdin, one per line:
 *   run        one run; prints "ms <milliseconds>"
 *   out DIR    writes each output of the last run to DIR/<name>.npy; "ok"
 *   ops        per-op-type time of the runs so far (--profile): lines
 *              "op <type> <nodes> <runs> <total ms>", then "end"
 * Anything else, or a failure, prints "error <message>".
 */
#include <npu/npu.h>

#include "cli_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A little-endian float32 C-order .npy (version 1 or 2). */
static int read_npy(const char *path, struct npu_host_tensor *t)
{
	FILE *f = fopen(path, "rb");
	unsigned char head[12];
	char *hdr = NULL, *p;
	size_t hlen, n = 1;
	int rc = -1;

	if (!f)
		return -1;
	if (fread(head, 1, 10, f) != 10 || memcmp(head + 1, "NUMPY", 5))
		goto out;
	if (head[6] == 1) {
		hlen = head[8] | (size_t)head[9] << 8;
	} else {
		if (fread(head + 10, 1, 2, f) != 2)
			goto out;
		hlen = head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 |
		       (size_t)head[11] << 24;
	}
	hdr = calloc(1, hlen + 1);
	if (!hdr || fread(hdr, 1, hlen, f) != hlen || !strstr(hdr, "'<f4'"))
		goto out;
	p = strstr(hdr, "'shape':");
	p = p ? strchr(p, '(') : NULL;
	if (!p)
		goto out;
	t->rank = 0;
	for (p++; *p && *p != ')' && t->rank < NPU_MODEL_MAX_RANK;) {
		char *end;
		long long d = strtoll(p, &end, 10);

		if (end == p)
			break;
		t->dims[t->rank++] = d;
		n *= (size_t)d;
		p = end;
		while (*p == ',' || *p == ' ')
			p++;
	}
	t->dtype = NPU_TYPE_FLOAT;
	t->nbytes = n * sizeof(float);
	t->data = malloc(t->nbytes ? t->nbytes : 1);
	if (t->data && fread(t->data, 1, t->nbytes, f) == t->nbytes)
		rc = 0;
out:
	free(hdr);
	fclose(f);
	return rc;
}

static int write_npy(const char *path, const struct npu_host_tensor *t)
{
	char dict[256];
	unsigned char head[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0 };
	int len, i, ok;
	FILE *f;

	len = snprintf(dict, sizeof(dict), "{'descr': '<f4', 'fortran_order': False, 'shape': (");
	for (i = 0; i < t->rank; i++)
		len += snprintf(dict + len, sizeof(dict) - (size_t)len, "%lld%s",
				(long long)t->dims[i], t->rank == 1 ? "," : i + 1 < t->rank ? ", " : "");
	len += snprintf(dict + len, sizeof(dict) - (size_t)len, "), }");
	while ((10 + len + 1) % 64)
		dict[len++] = ' ';
	dict[len++] = '\n';
	head[8] = (unsigned char)(len & 0xff);
	head[9] = (unsigned char)(len >> 8);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	ok = fwrite(head, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len &&
	     fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct npu_engine_options eo;
	struct npu_model_options mo;
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	struct npu_session *s = NULL;
	struct npu_tensor_info info;
	struct npu_host_tensor in;
	char line[4096], cpu[128];

	if (argc < 4) {
		fprintf(stderr, "usage: npu-runner MODEL.onnx IN.npy THREADS [--profile]\n");
		return 2;
	}
	memset(&in, 0, sizeof(in));
	if (read_npy(argv[2], &in)) {
		fprintf(stderr, "npu-runner: %s: not a float32 .npy\n", argv[2]);
		return 1;
	}
	npu_engine_options_init(&eo);
	eo.threads = atoi(argv[3]);
	eo.cpu_isa = getenv("NPU_CPU_ISA");
	npu_model_options_init(&mo);
	mo.device = "cpu";
	mo.cpu = npu_cli_cpu_env(cpu, sizeof(cpu));
	mo.profile = argc > 4 && !strcmp(argv[4], "--profile");
	if (npu_engine_create(&eo, &e) != NPU_OK ||
	    npu_model_load_file(e, argv[1], &mo, &m) != NPU_OK ||
	    npu_model_input_info(m, 0, &info) != NPU_OK ||
	    npu_session_create(m, NULL, &s) != NPU_OK) {
		fprintf(stderr, "npu-runner: %s\n", npu_last_error());
		return 1;
	}
	in.name = info.name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!strcmp(line, "run")) {
			double t0 = now_ms();

			if (npu_session_run(s, &in, 1) != NPU_OK)
				printf("error %s\n", npu_last_error());
			else
				printf("ms %.4f\n", now_ms() - t0);
		} else if (!strncmp(line, "out ", 4)) {
			size_t i;
			int bad = 0;

			for (i = 0; i < npu_model_num_outputs(m); i++) {
				struct npu_host_tensor o;
				char path[8192], *c;

				if (npu_session_output(s, i, &o) != NPU_OK || o.dtype != NPU_TYPE_FLOAT) {
					bad = 1;
					continue;
				}
				snprintf(path, sizeof(path), "%s/%s.npy", line + 4, o.name);
				for (c = path + strlen(line + 4) + 1; *c; c++)
					if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
					      (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-'))
						*c = '_';
				bad |= write_npy(path, &o);
			}
			printf(bad ? "error writing outputs\n" : "ok\n");
		} else if (!strcmp(line, "ops")) {
			size_t i;

			for (i = 0; i < npu_session_num_op_stats(s); i++) {
				const char *type;
				size_t nodes;
				uint64_t calls;
				double ms;

				npu_session_op_stat(s, i, &type, &nodes, &calls, &ms);
				printf("op %s %zu %llu %.4f\n", type, nodes,
				       (unsigned long long)(nodes ? calls / nodes : 0), ms);
			}
			printf("end\n");
		} else if (!strcmp(line, "quit")) {
			break;
		} else {
			printf("error unknown command '%s'\n", line);
		}
	}
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(e);
	free(in.data);
	return 0;
}
