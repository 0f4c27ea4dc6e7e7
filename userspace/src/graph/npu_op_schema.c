// SPDX-License-Identifier: MIT
/*
 * npu_op_schema.c - the op schema registry: the built-in table generated
 * from graph/schemas/schema_list.h, then the schemas other layers register.
 */
#include "graph/npu_op_schema.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NPU_OP_SCHEMA(sym) extern const struct npu_op_schema npu_schema_##sym;
#include "graph/schemas/schema_list.h"
#undef NPU_OP_SCHEMA

static const struct npu_op_schema *const npu_builtin_schemas[] = {
#define NPU_OP_SCHEMA(sym) &npu_schema_##sym,
#include "graph/schemas/schema_list.h"
#undef NPU_OP_SCHEMA
	NULL	/* keeps the array non-empty */
};

static size_t builtin_count(void)
{
	return sizeof(npu_builtin_schemas) / sizeof(npu_builtin_schemas[0]) - 1;
}

/*
 * Registered schemas: appended under the lock, read without it. An entry
 * is written before the count that publishes it, and never moves.
 */
#define NPU_OP_SCHEMA_MAX_REGISTERED 1024
static const struct npu_op_schema *npu_registered[NPU_OP_SCHEMA_MAX_REGISTERED];
static atomic_size_t npu_num_registered;
static pthread_mutex_t npu_register_lock = PTHREAD_MUTEX_INITIALIZER;

/* "" and "ai.onnx" name the same (default) domain. */
static const char *canon_domain(const char *domain)
{
	if (!domain || !strcmp(domain, "ai.onnx"))
		return "";
	return domain;
}

const struct npu_op_schema *npu_op_schema_at(size_t index)
{
	size_t n = atomic_load_explicit(&npu_num_registered, memory_order_acquire);

	if (index < builtin_count())
		return npu_builtin_schemas[index];
	index -= builtin_count();
	return index < n ? npu_registered[index] : NULL;
}

static bool same_op(const struct npu_op_schema *s, const char *domain, const char *op_type)
{
	return !strcmp(s->op_type, op_type) && !strcmp(canon_domain(s->domain), domain);
}

const struct npu_op_schema *npu_op_schema_find(const char *domain,
					       const char *op_type, int opset)
{
	const struct npu_op_schema *s;
	const char *dom = canon_domain(domain);
	size_t i;

	if (!op_type)
		return NULL;
	for (i = 0; (s = npu_op_schema_at(i)); i++)
		if (same_op(s, dom, op_type) && opset >= s->since_version &&
		    opset <= s->max_version)
			return s;
	return NULL;
}

/* [*lo, *hi] grown to take s's versions in; the first schema ('any' false) sets it. */
static bool widen_versions(const struct npu_op_schema *s, bool any, int *lo, int *hi)
{
	if (!any || s->since_version < *lo)
		*lo = s->since_version;
	if (!any || s->max_version > *hi)
		*hi = s->max_version;
	return true;
}

bool npu_op_schema_versions(const char *domain, const char *op_type, int *lo, int *hi)
{
	const struct npu_op_schema *s;
	const char *dom = canon_domain(domain);
	bool any = false;
	size_t i;

	*lo = *hi = 0;
	if (!op_type)
		return false;
	for (i = 0; (s = npu_op_schema_at(i)); i++)
		if (same_op(s, dom, op_type))
			any = widen_versions(s, any, lo, hi);
	return any;
}

bool npu_op_domain_reserved(const char *d)
{
	static const char *const owned[] = { "ai.onnx", "ai.npu", "com.microsoft" };
	size_t i, len;

	if (!d || !d[0])
		return true;
	for (i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		len = strlen(owned[i]);
		if (!strncmp(d, owned[i], len) && (!d[len] || d[len] == '.'))
			return true;
	}
	return npu_op_schema_domain_known(d);
}

bool npu_op_schema_domain_known(const char *domain)
{
	const struct npu_op_schema *s;
	const char *dom = canon_domain(domain);
	size_t i;

	for (i = 0; (s = npu_op_schema_at(i)); i++)
		if (!strcmp(canon_domain(s->domain), dom))
			return true;
	return false;
}

static bool overlaps(const struct npu_op_schema *a, const struct npu_op_schema *b)
{
	return same_op(b, canon_domain(a->domain), a->op_type) &&
	       a->since_version <= b->max_version && b->since_version <= a->max_version;
}

/* s against every schema there is and the 'nprev' before it in its batch. */
static npu_status check_new(const struct npu_op_schema *s,
			    const struct npu_op_schema *const *prev, size_t nprev,
			    struct npu_error *err)
{
	const struct npu_op_schema *o = NULL;
	size_t i;

	if (!s || !s->op_type || !s->op_type[0] || !s->domain || !s->infer)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "op schema '%s': needs an op type, a domain and infer()",
				     s && s->op_type ? s->op_type : "(null)");
	if (s->since_version < 1 || s->max_version < s->since_version)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "op schema '%s%s%s': opset range %d to %d is empty",
				     s->domain, s->domain[0] ? "." : "", s->op_type,
				     s->since_version, s->max_version);
	for (i = 0; !o && i < nprev; i++)
		if (overlaps(s, prev[i]))
			o = prev[i];
	for (i = 0; !o && npu_op_schema_at(i); i++)
		if (overlaps(s, npu_op_schema_at(i)))
			o = npu_op_schema_at(i);
	if (o)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "op schema '%s%s%s' opsets %d to %d: already defined for opsets %d to %d",
				     s->domain, s->domain[0] ? "." : "", s->op_type,
				     s->since_version, s->max_version,
				     o->since_version, o->max_version);
	return NPU_OK;
}

npu_status npu_op_schema_register(const struct npu_op_schema *const *schemas,
				  size_t count, struct npu_error *err)
{
	npu_status st = NPU_OK;
	size_t i, n;

	pthread_mutex_lock(&npu_register_lock);
	n = atomic_load_explicit(&npu_num_registered, memory_order_relaxed);
	if (count > NPU_OP_SCHEMA_MAX_REGISTERED - n)
		st = npu_error_set(err, NPU_ERR_NO_MEMORY,
				   "op schemas: %zu more would pass the limit of %d registered",
				   count, NPU_OP_SCHEMA_MAX_REGISTERED);
	/* All or nothing: every one is checked before any is published. */
	for (i = 0; i < count && st == NPU_OK; i++)
		st = check_new(schemas[i], schemas, i, err);
	if (st == NPU_OK) {
		for (i = 0; i < count; i++)
			npu_registered[n + i] = schemas[i];
		atomic_store_explicit(&npu_num_registered, n + count, memory_order_release);
	}
	pthread_mutex_unlock(&npu_register_lock);
	return st;
}

/* ---- Kernel registries (an engine's custom ops) ---- */

struct npu_op_registry {
	pthread_mutex_t lock;		/* writers */
	atomic_size_t count;		/* published entries */
	struct npu_op_registry_entry {
		const struct npu_op_schema *schema;
		const struct npu_op_def *kernel;
	} entries[NPU_OP_REGISTRY_MAX];
};

struct npu_op_registry *npu_op_registry_create(void)
{
	struct npu_op_registry *r = calloc(1, sizeof(*r));

	if (r)
		pthread_mutex_init(&r->lock, NULL);
	return r;
}

void npu_op_registry_destroy(struct npu_op_registry *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* r's entry for (domain, op_type) at opset: the highest since_version that covers it. */
static const struct npu_op_registry_entry *registry_entry(const struct npu_op_registry *r,
							  const char *domain, const char *op_type,
							  int opset)
{
	const struct npu_op_registry_entry *best = NULL;
	const char *dom = canon_domain(domain);
	size_t i, n;

	if (!r || !op_type)
		return NULL;
	n = atomic_load_explicit(&((struct npu_op_registry *)r)->count, memory_order_acquire);
	for (i = 0; i < n; i++) {
		const struct npu_op_schema *s = r->entries[i].schema;

		if (same_op(s, dom, op_type) && opset >= s->since_version &&
		    opset <= s->max_version &&
		    (!best || s->since_version > best->schema->since_version))
			best = &r->entries[i];
	}
	return best;
}

const struct npu_op_schema *npu_op_registry_schema(const struct npu_op_registry *r,
						   const char *domain, const char *op_type,
						   int opset)
{
	const struct npu_op_registry_entry *e = registry_entry(r, domain, op_type, opset);

	return e ? e->schema : npu_op_schema_find(domain, op_type, opset);
}

const struct npu_op_def *npu_op_registry_kernel(const struct npu_op_registry *r,
						const char *domain, const char *op_type,
						int opset)
{
	const struct npu_op_registry_entry *e = registry_entry(r, domain, op_type, opset);

	return e ? e->kernel : NULL;
}

bool npu_op_registry_versions(const struct npu_op_registry *r, const char *domain,
			      const char *op_type, int *lo, int *hi)
{
	const char *dom = canon_domain(domain);
	bool any = npu_op_schema_versions(domain, op_type, lo, hi);
	size_t i, n;

	if (!r || !op_type)
		return any;
	n = atomic_load_explicit(&((struct npu_op_registry *)r)->count, memory_order_acquire);
	for (i = 0; i < n; i++) {
		const struct npu_op_schema *s = r->entries[i].schema;

		if (same_op(s, dom, op_type))
			any = widen_versions(s, any, lo, hi);
	}
	return any;
}

bool npu_op_registry_has_domain(const struct npu_op_registry *r, const char *domain)
{
	const char *dom = canon_domain(domain);
	size_t i, n;

	if (!r)
		return false;
	n = atomic_load_explicit(&((struct npu_op_registry *)r)->count, memory_order_acquire);
	for (i = 0; i < n; i++)
		if (!strcmp(canon_domain(r->entries[i].schema->domain), dom))
			return true;
	return false;
}

npu_status npu_op_registry_add(struct npu_op_registry *r, const struct npu_op_schema *s,
			       const struct npu_op_def *kernel, struct npu_error *err)
{
	npu_status st = NPU_OK;
	const char *dom;
	size_t i, n;
	int lo, hi;

	if (!r || !s || !s->op_type || !s->op_type[0] || !s->domain || !s->infer)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "op registry: a schema needs an op type, a domain and infer()");
	if (s->since_version < 1 || s->max_version < s->since_version)
		return npu_error_set(err, NPU_ERR_INVALID_ARG,
				     "op '%s.%s': opset range %d to %d is empty",
				     s->domain, s->op_type, s->since_version, s->max_version);
	dom = canon_domain(s->domain);
	pthread_mutex_lock(&r->lock);
	n = atomic_load_explicit(&r->count, memory_order_relaxed);
	if (npu_op_schema_versions(dom, s->op_type, &lo, &hi))
		st = npu_error_set(err, NPU_ERR_BUSY,
				   "op '%s%s%s' is built in (opsets %d to %d)",
				   dom, dom[0] ? "." : "", s->op_type, lo, hi);
	for (i = 0; st == NPU_OK && i < n; i++)
		if (same_op(r->entries[i].schema, dom, s->op_type) &&
		    r->entries[i].schema->since_version == s->since_version)
			st = npu_error_set(err, NPU_ERR_BUSY,
					   "op '%s.%s' version %d is registered already",
					   s->domain, s->op_type, s->since_version);
	if (st == NPU_OK && n == NPU_OP_REGISTRY_MAX)
		st = npu_error_set(err, NPU_ERR_NO_MEMORY,
				   "op '%s.%s': the registry holds %d ops at most",
				   s->domain, s->op_type, NPU_OP_REGISTRY_MAX);
	if (st == NPU_OK) {
		r->entries[n].schema = s;
		r->entries[n].kernel = kernel;
		atomic_store_explicit(&r->count, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&r->lock);
	return st;
}
