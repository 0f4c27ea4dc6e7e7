// SPDX-License-Identifier: MIT
/* response_cache: Triton's response cache, LRU bounded by bytes (see response_cache.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header-only XXH3: nothing to link, the same hash everywhere. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "response_cache.h"

#define CACHE_BUCKETS 16384	/* chains stay short up to ~10^5 entries */

struct cache_entry {
	uint64_t hash, load_id;
	struct model_stats *stats;	/* the version's series (never freed) */
	unsigned char *key;
	size_t key_len;
	size_t bytes;			/* what it counts against the bound */
	size_t num_results;
	struct infer_tensor results[SERVE_MAX_IO];	/* data: malloc'd copies */
	struct cache_entry *hnext;	/* its bucket's chain */
	struct cache_entry *prev, *next;	/* LRU: head the most recent */
};

/* A miss waiting for its response, chained in front of the request's done. */
struct cache_pending {
	void (*done)(struct infer_request *req, void *arg);
	void *done_arg;
	uint64_t hash, load_id, lookup_ns;
	struct model_stats *stats;
	unsigned char *key;
	size_t key_len;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t max_bytes, max_entries = CACHE_DEFAULT_MAX_ENTRIES;
static size_t used_bytes, num_entries;
static struct cache_entry *buckets[CACHE_BUCKETS];
static struct cache_entry *lru_head, *lru_tail;
static _Atomic uint64_t next_load_id = 1;

int response_cache_config_arg(const char *value, char *err)
{
	char buf[256], *save = NULL, *tok;
	int first = 1;

	if (snprintf(buf, sizeof(buf), "%s", value) >= (int)sizeof(buf)) {
		serve_err(err, -1, "--cache-config: '%.64s...' is too long", value);
		return -1;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), first = 0) {
		char *eq = strchr(tok, '='), *end;
		unsigned long long v;

		if (first) {
			if (strcmp(tok, "local")) {
				serve_err(err, -1, "--cache-config: cache '%s' is not supported (local)", tok);
				return -1;
			}
			continue;
		}
		if (!eq) {
			serve_err(err, -1, "--cache-config: '%s' is not KEY=VALUE", tok);
			return -1;
		}
		*eq = 0;
		errno = 0;
		v = strtoull(eq + 1, &end, 10);
		if (errno || end == eq + 1 || *end || eq[1] == '-' || !v || v > (1ull << 40)) {
			serve_err(err, -1, "--cache-config: %s '%s' is not an integer in [1, 2^40]",
				  tok, eq + 1);
			return -1;
		}
		if (!strcmp(tok, "size")) {
			max_bytes = (size_t)v;
		} else if (!strcmp(tok, "max_entries")) {
			max_entries = (size_t)v;
		} else {
			serve_err(err, -1, "--cache-config: unknown setting '%s' of the local cache (size, max_entries)",
				  tok);
			return -1;
		}
	}
	if (first) {
		serve_err(err, -1, "--cache-config: expected local,size=BYTES");
		return -1;
	}
	return 0;
}

size_t response_cache_size(void)
{
	return max_bytes;
}

uint64_t response_cache_new_load_id(void)
{
	return atomic_fetch_add(&next_load_id, 1);
}

/* ---- The key ------------------------------------------------------------------- */

static unsigned char *put(unsigned char *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

/*
 * Everything a response depends on, in one buffer: the load, the inputs
 * whole, the outputs asked for and in which form (binary or JSON).
 */
static unsigned char *make_key(uint64_t load_id, const struct infer_request *req, size_t *len)
{
	size_t n = 64, i, name_len;
	unsigned char *key, *p;
	uint32_t u;
	uint64_t q;

	for (i = 0; i < req->num_inputs; i++)
		n += strlen(req->inputs[i].name) + 16 + 8 * (size_t)req->inputs[i].rank +
		     req->inputs[i].nbytes;
	for (i = 0; i < req->num_outputs; i++)
		n += strlen(req->outputs[i].name) + 8;
	key = malloc(n);
	if (!key)
		return NULL;
	p = put(key, &load_id, 8);
	u = (uint32_t)req->binary_output;
	p = put(p, &u, 4);
	u = (uint32_t)req->num_inputs;
	p = put(p, &u, 4);
	for (i = 0; i < req->num_inputs; i++) {
		const struct infer_tensor *t = &req->inputs[i];

		name_len = strlen(t->name);
		u = (uint32_t)name_len;
		p = put(p, &u, 4);
		p = put(p, t->name, name_len);
		u = (uint32_t)t->dtype << 8 | (uint32_t)t->rank;
		p = put(p, &u, 4);
		p = put(p, t->dims, 8 * (size_t)t->rank);
		q = t->nbytes;
		p = put(p, &q, 8);
		if (t->nbytes)
			p = put(p, t->data, t->nbytes);
	}
	u = (uint32_t)req->num_outputs;
	p = put(p, &u, 4);
	for (i = 0; i < req->num_outputs; i++) {
		name_len = strlen(req->outputs[i].name);
		u = (uint32_t)name_len << 1 | (req->outputs[i].binary != 0);
		p = put(p, &u, 4);
		p = put(p, req->outputs[i].name, name_len);
	}
	*len = (size_t)(p - key);
	return key;
}

/* ---- The table, under cache_lock ------------------------------------------------ */

static void lru_unlink(struct cache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_front(struct cache_entry *e)
{
	e->prev = NULL;
	e->next = lru_head;
	if (lru_head)
		lru_head->prev = e;
	lru_head = e;
	if (!lru_tail)
		lru_tail = e;
}

static struct cache_entry *find(uint64_t hash, const unsigned char *key, size_t len)
{
	struct cache_entry *e;

	for (e = buckets[hash % CACHE_BUCKETS]; e; e = e->hnext)
		if (e->hash == hash && e->key_len == len && !memcmp(e->key, key, len))
			return e;
	return NULL;
}

static void free_entry(struct cache_entry *e)
{
	size_t i;

	for (i = 0; i < e->num_results; i++)
		free(e->results[i].data);
	free(e->key);
	free(e);
}

/* Out of the table and the LRU; 'evicted' when the bound pushed it out. */
static void remove_entry(struct cache_entry *e, int evicted)
{
	struct cache_entry **pp;

	for (pp = &buckets[e->hash % CACHE_BUCKETS]; *pp && *pp != e; pp = &(*pp)->hnext)
		;
	if (*pp)
		*pp = e->hnext;
	lru_unlink(e);
	used_bytes -= e->bytes;
	num_entries--;
	metrics_cache_usage(e->stats, -1, -(int64_t)e->bytes, evicted);
	free_entry(e);
}

void response_cache_purge(uint64_t load_id)
{
	struct cache_entry *e, *next;

	pthread_mutex_lock(&cache_lock);
	for (e = lru_head; e; e = next) {
		next = e->next;
		if (e->load_id == load_id)
			remove_entry(e, 0);
	}
	pthread_mutex_unlock(&cache_lock);
}

/* Store a successful response under the pending key (which it takes). */
static void insert(struct cache_pending *p, const struct infer_request *req)
{
	struct cache_entry *e = calloc(1, sizeof(*e));
	size_t i, bytes = sizeof(*e) + p->key_len;

	if (!e)
		return;
	for (i = 0; i < req->num_results; i++)
		bytes += req->results[i].nbytes;
	if (bytes > max_bytes) {
		free(e);	/* larger than the whole cache: never stored */
		return;
	}
	for (i = 0; i < req->num_results; i++) {
		const struct infer_tensor *t = &req->results[i];

		e->results[i] = *t;
		e->results[i].owned = 1;
		e->results[i].data = malloc(t->nbytes ? t->nbytes : 1);
		if (!e->results[i].data) {
			e->num_results = i;
			free_entry(e);
			return;
		}
		if (t->nbytes)
			memcpy(e->results[i].data, t->data, t->nbytes);
	}
	e->num_results = req->num_results;
	e->hash = p->hash;
	e->load_id = p->load_id;
	e->stats = p->stats;
	e->key = p->key;
	e->key_len = p->key_len;
	e->bytes = bytes;
	pthread_mutex_lock(&cache_lock);
	if (find(p->hash, p->key, p->key_len)) {
		/* An identical request stored it first. */
		pthread_mutex_unlock(&cache_lock);
		e->key = NULL;
		free_entry(e);
		return;
	}
	p->key = NULL;
	while (lru_tail && (used_bytes + bytes > max_bytes || num_entries + 1 > max_entries))
		remove_entry(lru_tail, 1);
	e->hnext = buckets[e->hash % CACHE_BUCKETS];
	buckets[e->hash % CACHE_BUCKETS] = e;
	lru_push_front(e);
	used_bytes += bytes;
	num_entries++;
	metrics_cache_usage(e->stats, 1, (int64_t)bytes, 0);
	pthread_mutex_unlock(&cache_lock);
}

static void store_done(struct infer_request *req, void *arg)
{
	struct cache_pending *p = arg;
	uint64_t t0 = serve_now_ns();

	req->done = p->done;
	req->done_arg = p->done_arg;
	if (req->status == SERVE_OK)
		insert(p, req);
	/* Triton's cache_miss time: the lookup and the insertion. */
	metrics_cache(p->stats, 0, p->lookup_ns + serve_now_ns() - t0);
	free(p->key);
	free(p);
	req->done(req, req->done_arg);
}

int response_cache_lookup(uint64_t load_id, struct model_stats *stats,
			  struct infer_request *req)
{
	uint64_t t0 = serve_now_ns(), hash;
	struct cache_pending *p;
	struct cache_entry *e;
	unsigned char *key;
	size_t len, i, n;

	if (!max_bytes)
		return 0;
	key = make_key(load_id, req, &len);
	if (!key)
		return -1;
	hash = XXH3_64bits(key, len);
	pthread_mutex_lock(&cache_lock);
	e = find(hash, key, len);
	if (e) {
		lru_unlink(e);
		lru_push_front(e);
		req->num_results = 0;
		n = e->num_results;
		for (i = 0; i < n; i++) {
			struct infer_tensor *t = &req->results[i];

			*t = e->results[i];
			t->data = malloc(t->nbytes ? t->nbytes : 1);
			if (!t->data)
				break;
			if (t->nbytes)
				memcpy(t->data, e->results[i].data, t->nbytes);
			req->num_results++;
		}
		pthread_mutex_unlock(&cache_lock);
		free(key);
		if (req->num_results < n) {
			req->status = serve_err(req->err, SERVE_INTERNAL,
						"out of memory copying a cached response");
		} else {
			req->status = SERVE_OK;
		}
		metrics_cache(stats, 1, serve_now_ns() - t0);
		return 1;
	}
	pthread_mutex_unlock(&cache_lock);
	p = calloc(1, sizeof(*p));
	if (!p) {
		free(key);
		return -1;
	}
	p->done = req->done;
	p->done_arg = req->done_arg;
	p->hash = hash;
	p->load_id = load_id;
	p->stats = stats;
	p->key = key;
	p->key_len = len;
	p->lookup_ns = serve_now_ns() - t0;
	req->done = store_done;
	req->done_arg = p;
	return 0;
}

void response_cache_abandon(struct infer_request *req)
{
	struct cache_pending *p;

	if (req->done != store_done)
		return;
	p = req->done_arg;
	req->done = p->done;
	req->done_arg = p->done_arg;
	free(p->key);
	free(p);
}
