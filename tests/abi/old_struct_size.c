// SPDX-License-Identifier: MIT
/*
 * Applications built against another version of the option structs: an
 * older, shorter npu_model_options still loads (missing fields take their
 * defaults); a newer, longer one that sets a field this library does not
 * know is refused with a message saying so; an uninitialised one (size 0)
 * is refused too. Nothing is written past the caller's struct_size. A
 * run with 2.0.0's npu_run_options (before IO binding) still runs.
 */
#include <npu/npu.h>

#include <stdio.h>
#include <string.h>

/* npu_model_options as a 1.0 application saw it, up to calib_method. */
struct old_model_options {
	size_t struct_size;
	const char *device;
	int profile;
	const char *calib_dir;
	const char *calib_method;
};

/* npu_run_options as 2.0.0 saw it, before IO binding. */
struct old_run_options {
	size_t struct_size;
	int timings;
	struct npu_cancel *cancel;
};

/* A run with 2.0.0's run options computes every output, as it did then. */
static int run_with_old_options(struct npu_model *m)
{
	struct old_run_options ro = { .struct_size = sizeof(ro) };
	struct npu_tensor_info info;
	struct npu_host_tensor in = { 0 }, out;
	struct npu_session *s;
	static float x[4096];
	size_t n = 1;
	int d, bad;

	if (npu_model_input_info(m, 0, &info) != NPU_OK ||
	    npu_session_create(m, NULL, &s) != NPU_OK)
		return 1;
	in.dtype = info.dtype;
	in.rank = info.rank;
	for (d = 0; d < info.rank; d++)
		n *= (size_t)(in.dims[d] = info.dims[d] > 0 ? info.dims[d] : 1);
	in.data = x;
	in.nbytes = n * sizeof(float);
	bad = n > sizeof(x) / sizeof(x[0]) ||
	      npu_session_run_with(s, NULL, &in, 1, (const struct npu_run_options *)&ro) != NPU_OK ||
	      npu_session_output(s, 0, &out) != NPU_OK || out.nbytes != in.nbytes;
	npu_session_destroy(s);
	return bad;
}

struct future_model_options {
	struct npu_model_options now;
	uint64_t new_field;
};

static int fail(const char *what)
{
	fprintf(stderr, "old_struct_size: %s (last error: %s)\n", what, npu_last_error());
	return 1;
}

int main(int argc, char **argv)
{
	struct old_model_options old;
	struct future_model_options fut;
	struct npu_model_stats small;
	struct npu_engine *e = NULL;
	struct npu_model *m = NULL;
	unsigned char guard[64];

	if (argc != 2)
		return fail("usage: old_struct_size MODEL.onnx");
	if (npu_engine_create(NULL, &e) != NPU_OK)
		return fail("engine");
	memset(&old, 0, sizeof(old));
	old.struct_size = sizeof(old);
	old.device = "cpu";
	if (npu_model_load_file(e, argv[1], (const struct npu_model_options *)&old, &m) != NPU_OK)
		return fail("an older, shorter options struct was refused");
	/* A stats struct shorter than the library's: only its bytes are written. */
	memset(guard, 0xa5, sizeof(guard));
	memset(&small, 0, sizeof(small));
	small.struct_size = offsetof(struct npu_model_stats, plans_built);
	if (npu_model_get_stats(m, &small) != NPU_OK || small.imports != 1 || small.plans_built)
		return fail("a shorter stats struct was not filled as far as it goes");
	if (run_with_old_options(m))
		return fail("a run with 2.0.0's shorter npu_run_options failed");
	npu_model_destroy(m);
	m = NULL;

	npu_model_options_init(&fut.now);
	fut.now.struct_size = sizeof(fut);
	fut.new_field = 0;
	if (npu_model_load_file(e, argv[1], &fut.now, &m) != NPU_OK)
		return fail("a longer struct with the unknown field zero was refused");
	npu_model_destroy(m);
	m = NULL;
	fut.new_field = 7;
	if (npu_model_load_file(e, argv[1], &fut.now, &m) != NPU_ERR_UNSUPPORTED || m ||
	    !strstr(npu_last_error(), "newer libnpu-user"))
		return fail("a newer struct setting an unknown field was not refused clearly");
	memset(&old, 0, sizeof(old));
	if (npu_model_load_file(e, argv[1], (const struct npu_model_options *)&old, &m) !=
		    NPU_ERR_INVALID_ARG || m || !strstr(npu_last_error(), "struct_size is 0"))
		return fail("an uninitialised options struct was not refused");
	npu_engine_destroy(e);
	printf("old, new and uninitialised option structs handled\n");
	return 0;
}
