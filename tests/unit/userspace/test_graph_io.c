// SPDX-License-Identifier: MIT
/*
 * The IR graph as bytes (graph/npu_graph_io.h), on every ONNX node-test
 * model the importer takes: written, read back and written again gives the
 * same bytes (every field that is stored survives), and the read graph
 * runs to bit-identical outputs on the model's own test inputs. Then the
 * reader on hostile bytes: every truncation and thousands of seeded
 * corruptions of a model with a Loop and captures are an error or a valid
 * graph, never a crash or a leak (the ASan suite runs this too).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph/npu_graph_io.h"
#include "graph/npu_ir.h"
#include "onnx/npu_onnx.h"
#include "runtime/npu_runtime.h"

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"

static bool serialize(const struct npu_graph *g, struct npu_wbuf *w)
{
	memset(w, 0, sizeof(*w));
	npu_graph_write(w, g);
	return !w->oom;
}

static struct npu_graph *deserialize(const struct npu_wbuf *w, struct npu_error *err)
{
	struct npu_rbuf r = { .p = w->data, .left = w->size, .source = "bytes",
			      .where = "graph", .err = err };
	struct npu_graph *g = npu_graph_read(&r, "bytes");

	if (g && r.left) {	/* the whole stream is the graph */
		npu_graph_destroy(g);
		npu_error_set(err, NPU_ERR_MODEL, "%zu bytes left after the graph", r.left);
		return NULL;
	}
	return g;
}

/* Inputs test_data_set_0/input_K.pb of a node test (tensors, sequences, optionals). */
static size_t read_inputs(const char *dir, const struct npu_graph *g, struct npu_tensor **in)
{
	size_t k;

	for (k = 0; k < g->num_inputs; k++) {
		char path[1024];
		struct npu_error err = { 0 };

		snprintf(path, sizeof(path), "%s/test_data_set_0/input_%zu.pb", dir, k);
		if (npu_onnx_read_value_file(path, g->inputs[k]->dtype, &in[k], NULL, &err) != NPU_OK)
			break;
		if (in[k]->dtype != g->inputs[k]->dtype) {
			npu_tensor_destroy(in[k]);
			break;
		}
	}
	return k;
}

static bool same_tensor(const struct npu_tensor *a, const struct npu_tensor *b)
{
	return a && b && a->dtype == b->dtype && a->nbytes == b->nbytes &&
	       a->shape.rank == b->shape.rank &&
	       !memcmp(a->shape.dims, b->shape.dims, (size_t)a->shape.rank * sizeof(int64_t)) &&
	       (!a->nbytes || !memcmp(a->data, b->data, a->nbytes));
}

static bool same_outputs(const struct npu_graph *g, const struct npu_exec *a,
			 const struct npu_exec *b)
{
	size_t i;

	for (i = 0; i < g->num_outputs; i++)
		if (!same_tensor(npu_exec_output(a, i), npu_exec_output(b, i)))
			return false;
	return true;
}

/*
 * Run g twice and h (its copy through bytes) once on 'in'; false if the
 * original does not run, or gives other outputs on a second run (random
 * ops: nothing to compare).
 */
static bool run_both(struct npu_graph *g, struct npu_graph *h, struct npu_tensor **in,
		     const char *name)
{
	const struct npu_tensor *const *x = (const struct npu_tensor *const *)in;
	struct npu_exec_options o = { .threads = 1 };
	struct npu_exec *sg = NULL, *sg2 = NULL, *sh = NULL;
	struct npu_error err = { 0 };
	bool ran = false;

	if (npu_exec_create(g, &o, &sg, &err) || npu_exec_run(sg, x, &err) ||
	    npu_exec_create(g, &o, &sg2, &err) || npu_exec_run(sg2, x, &err) ||
	    !same_outputs(g, sg, sg2))
		goto out;
	if (npu_exec_create(h, &o, &sh, &err) || npu_exec_run(sh, x, &err))
		fail_msg("%s: the original runs, the copy read from bytes does not: %s", name,
			 err.msg);
	if (!same_outputs(g, sg, sh))
		fail_msg("%s: an output differs after the round trip", name);
	ran = true;
out:
	npu_exec_destroy(sh);
	npu_exec_destroy(sg2);
	npu_exec_destroy(sg);
	return ran;
}

static void test_node_models_round_trip(void **state)
{
	DIR *d = opendir(NODE_TESTS);
	struct dirent *e;
	size_t models = 0, ran = 0, bytes = 0;

	(void)state;
	if (!d)
		skip();
	while ((e = readdir(d))) {
		char dir[512], path[700];
		struct npu_graph *g = NULL, *h;
		struct npu_error err = { 0 };
		struct npu_wbuf w1, w2;
		struct npu_tensor *in[64] = { 0 };
		size_t n, k;

		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", NODE_TESTS, e->d_name);
		snprintf(path, sizeof(path), "%s/model.onnx", dir);
		if (npu_onnx_import_file(path, &g, &err) != NPU_OK) {
			npu_graph_destroy(g);
			continue;	/* the importer's own tests cover these */
		}
		if (npu_graph_infer(g, true, &err) != NPU_OK || g->num_inputs > 64) {
			npu_graph_destroy(g);
			continue;
		}
		assert_true(serialize(g, &w1));
		h = deserialize(&w1, &err);
		if (!h)
			fail_msg("%s: its own bytes do not read back: %s", e->d_name, err.msg);
		assert_true(serialize(h, &w2));
		if (w1.size != w2.size || memcmp(w1.data, w2.data, w1.size))
			fail_msg("%s: written, read and written again: %zu bytes, then %zu, differing",
				 e->d_name, w1.size, w2.size);
		models++;
		bytes += w1.size;
		n = read_inputs(dir, g, in);
		if (n == g->num_inputs && run_both(g, h, in, e->d_name))
			ran++;
		for (k = 0; k < n; k++)
			npu_tensor_destroy(in[k]);
		free(w1.data);
		free(w2.data);
		npu_graph_destroy(h);
		npu_graph_destroy(g);
	}
	closedir(d);
	print_message("%zu node-test models round-trip (%zu bytes in all), %zu ran bit-identically\n",
		      models, bytes, ran);
	/*
	 * Guards against a silently empty run: the importer takes 932 of
	 * Debian's node tests, and all but the random ones and those whose
	 * inputs are not files run.
	 */
	assert_true(models > 800);
	assert_true(ran * 10 > models * 9);
}

/* The node tests' Loop: a graph attribute, a body with its own values. */
static struct npu_graph *loop_graph(void)
{
	static const char loop_model[] = NODE_TESTS "/test_loop11/model.onnx";
	struct npu_graph *g = NULL;
	struct npu_error err = { 0 };

	if (npu_onnx_import_file(loop_model, &g, &err) != NPU_OK) {
		npu_graph_destroy(g);
		return NULL;
	}
	if (npu_graph_infer(g, true, &err) != NPU_OK) {
		npu_graph_destroy(g);
		return NULL;
	}
	return g;
}

static void test_truncations_are_errors(void **state)
{
	struct npu_graph *g = loop_graph(), *h;
	struct npu_wbuf w;
	size_t cut;

	(void)state;
	if (!g)
		skip();
	assert_true(serialize(g, &w));
	for (cut = 0; cut < w.size; cut++) {
		struct npu_error err = { 0 };
		struct npu_rbuf r = { .p = w.data, .left = cut, .source = "cut",
				      .where = "graph", .err = &err };

		h = npu_graph_read(&r, "cut");
		if (h)
			fail_msg("a stream cut at %zu of %zu bytes read as a graph", cut, w.size);
		assert_int_equal(err.status, NPU_ERR_MODEL);
		assert_non_null(strstr(err.msg, "cut: graph: "));
	}
	free(w.data);
	npu_graph_destroy(g);
}

static void test_corruptions_never_crash(void **state)
{
	struct npu_graph *g = loop_graph();
	struct npu_wbuf w;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	size_t trial, errors = 0, graphs = 0;
	uint8_t *copy;

	(void)state;
	if (!g)
		skip();
	assert_true(serialize(g, &w));
	copy = malloc(w.size);
	assert_non_null(copy);
	for (trial = 0; trial < 4000; trial++) {
		struct npu_error err = { 0 };
		struct npu_rbuf r = { .p = copy, .left = w.size, .source = "bad",
				      .where = "graph", .err = &err };
		struct npu_graph *h;
		int flips = 1 + (int)(trial % 4), f;

		memcpy(copy, w.data, w.size);
		for (f = 0; f < flips; f++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			copy[(seed >> 33) % w.size] ^= (uint8_t)(1u << ((seed >> 29) & 7));
		}
		h = npu_graph_read(&r, "bad");
		if (h) {
			graphs++;	/* a flip in data or a name: still a valid graph */
			npu_graph_destroy(h);
		} else {
			errors++;
			assert_true(err.status == NPU_ERR_MODEL || err.status == NPU_ERR_NO_MEMORY);
			assert_true(err.msg[0] != '\0');
		}
	}
	print_message("4000 corruptions: %zu errors, %zu still valid graphs\n", errors, graphs);
	assert_true(errors > 0);
	free(copy);
	free(w.data);
	npu_graph_destroy(g);
}

/* A stream of another format version is refused, naming the version. */
/*
 * The pruned form (a compiled file's graph section) leaves out constants
 * no node reads: the Loop graph with two such constants added, one at the
 * top and one in the body, reads back without them and is written again
 * byte for byte.
 */
static void test_pruned_drops_unread_constants(void **state)
{
	struct npu_graph *g = loop_graph(), *h, *body = NULL;
	struct npu_error err = { 0 };
	struct npu_wbuf w, w2, full;
	struct npu_shape shape = { .rank = 1, .dims = { 1000 } };
	size_t i;

	(void)state;
	if (!g)
		skip();
	for (i = 0; i < g->nodes[0]->num_attrs; i++)
		if (g->nodes[0]->attrs[i].type == NPU_ATTR_GRAPH)
			body = g->nodes[0]->attrs[i].g;
	assert_non_null(body);
	for (i = 0; i < 2; i++) {
		struct npu_graph *at = i ? body : g;
		struct npu_value *v = npu_graph_add_value(at, i ? "dead_in_body" : "dead", &err);

		assert_non_null(v);
		v->constant = npu_tensor_create(NPU_DTYPE_FLOAT, &shape);
		assert_non_null(v->constant);
		v->dtype = NPU_DTYPE_FLOAT;
		v->shape = shape;
	}
	assert_true(serialize(g, &full));
	memset(&w, 0, sizeof(w));
	npu_graph_write_pruned(&w, g);
	assert_false(w.oom);
	assert_true(w.size + 2 * 4000 <= full.size);
	h = deserialize(&w, &err);
	if (!h)
		fail_msg("pruned bytes do not read back: %s", err.msg);
	assert_null(npu_graph_find_value(h, "dead"));
	assert_int_equal(h->num_values, g->num_values - 1);
	memset(&w2, 0, sizeof(w2));
	npu_graph_write_pruned(&w2, h);
	assert_int_equal(w2.size, w.size);
	assert_memory_equal(w2.data, w.data, w.size);
	free(w.data);
	free(w2.data);
	free(full.data);
	npu_graph_destroy(h);
	npu_graph_destroy(g);
}

static void test_other_version_named(void **state)
{
	struct npu_graph *g = loop_graph();
	struct npu_wbuf w;
	struct npu_error err = { 0 };
	struct npu_rbuf r;
	uint32_t version = 99;

	(void)state;
	if (!g)
		skip();
	assert_true(serialize(g, &w));
	memcpy(w.data, &version, sizeof(version));
	r = (struct npu_rbuf){ .p = w.data, .left = w.size, .source = "v99", .where = "graph",
			       .err = &err };
	assert_null(npu_graph_read(&r, "v99"));
	assert_non_null(strstr(err.msg, "graph format version 99"));
	free(w.data);
	npu_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_models_round_trip),
		cmocka_unit_test(test_truncations_are_errors),
		cmocka_unit_test(test_corruptions_never_crash),
		cmocka_unit_test(test_pruned_drops_unread_constants),
		cmocka_unit_test(test_other_version_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
