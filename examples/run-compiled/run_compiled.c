// SPDX-License-Identifier: MIT
/*
 * run-compiled: a deployment that runs a compiled model (.npub, from
 * `npu compile -o`) with libnpu-runtime, the library without the ONNX
 * importer and the compiler. Inputs and outputs are .npy files:
 *
 *   run-compiled MODEL.npub [--device D] [--on K] [-o OUTDIR] NAME=IN.npy...
 *
 * --device takes any device spec, a set too ("sim:4", "accel:*"); --on K
 * runs on device K of the set (a session's device_mask), where the
 * library puts the compiled code on first use.
 * Writes OUTDIR/<output name>.npy for every output and prints how the
 * model loaded: a compiled file imports nothing, runs no graph pass and
 * generates no code.
 */
#include <npu/npu.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUTS 16

int main(int argc, char **argv)
{
	struct npu_host_tensor in[MAX_INPUTS] = { 0 };
	const char *model = NULL, *device = "sim", *outdir = ".";
	struct npu_session_options so;
	long on = -1;
	struct npu_engine_options eo;
	struct npu_model_options mo;
	struct npu_model_stats stats;
	struct npu_engine *engine = NULL;
	struct npu_model *m = NULL;
	struct npu_session *s = NULL;
	size_t n = 0, i;
	int rc = 1;

	for (i = 1; i < (size_t)argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!strcmp(argv[i], "--device") && i + 1 < (size_t)argc) {
			device = argv[++i];
		} else if (!strcmp(argv[i], "--on") && i + 1 < (size_t)argc) {
			char *end;

			on = strtol(argv[++i], &end, 10);
			if (*end || on < 0 || on > 63) {
				fprintf(stderr, "run-compiled: --on '%s': expected a device index 0..63\n",
					argv[i]);
				goto out;
			}
		} else if (!strcmp(argv[i], "-o") && i + 1 < (size_t)argc) {
			outdir = argv[++i];
		} else if (eq && argv[i][0] != '-' && model && n < MAX_INPUTS) {
			*eq = 0;
			if (npu_tensor_file_read(eq + 1, &in[n]) != NPU_OK) {
				fprintf(stderr, "run-compiled: %s\n", npu_last_error());
				goto out;
			}
			in[n++].name = argv[i];
		} else if (!model && argv[i][0] != '-') {
			model = argv[i];
		} else {
			fprintf(stderr, "usage: run-compiled MODEL.npub [--device D] [--on K] "
					"[-o OUTDIR] NAME=IN.npy...\n");
			goto out;
		}
	}
	if (!model) {
		fprintf(stderr, "run-compiled: no model given\n");
		goto out;
	}
	npu_engine_options_init(&eo);
	npu_model_options_init(&mo);
	npu_session_options_init(&so);
	mo.device = device;
	if (on >= 0)
		so.device_mask = 1ull << on;
	if (npu_engine_create(&eo, &engine) != NPU_OK ||
	    npu_model_load_file(engine, model, &mo, &m) != NPU_OK ||
	    npu_session_create(m, &so, &s) != NPU_OK || npu_session_run(s, in, n) != NPU_OK) {
		fprintf(stderr, "run-compiled: %s\n", npu_last_error());
		goto out;
	}
	for (i = 0; i < npu_model_num_outputs(m); i++) {
		struct npu_host_tensor out;
		char path[4096];

		if (npu_session_output(s, i, &out) != NPU_OK) {
			fprintf(stderr, "run-compiled: %s\n", npu_last_error());
			goto out;
		}
		snprintf(path, sizeof(path), "%s/%s.npy", outdir, out.name);
		for (char *c = path + strlen(outdir) + 1; *c; c++)
			if (*c == '/')
				*c = '_';
		if (npu_tensor_file_write_npy(path, &out) != NPU_OK) {
			fprintf(stderr, "run-compiled: %s\n", npu_last_error());
			goto out;
		}
	}
	npu_model_stats_init(&stats);
	npu_model_get_stats(m, &stats);
	{
		struct npu_model_device_stats ds;
		size_t dev = npu_session_last_device(s);

		npu_model_device_stats_init(&ds);
		if (npu_model_num_devices(m) == 0 || npu_model_device_stats(m, dev, &ds) != NPU_OK)
			ds.name = "cpu";
		printf("%s on %s (device %zu, %s): %zu outputs; imports %llu, compilations %llu, code generations %llu\n",
		       model, device, dev, ds.name, npu_model_num_outputs(m),
		       (unsigned long long)stats.imports, (unsigned long long)stats.compilations,
		       (unsigned long long)stats.codegens);
	}
	rc = 0;
out:
	for (i = 0; i < n; i++) {
		in[i].name = NULL;	/* argv's, not the library's */
		npu_host_tensor_free(&in[i]);
	}
	npu_session_destroy(s);
	npu_model_destroy(m);
	npu_engine_destroy(engine);
	return rc;
}
