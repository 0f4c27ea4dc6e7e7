/* SPDX-License-Identifier: MIT */
/*
 * response_cache: Triton's response cache. One cache for the server
 * (--cache-config local,size=BYTES), used by the model versions whose
 * config says response_cache { enable: true }. A request's key is its
 * model version's load (name, version and which load of it), its inputs
 * (names, datatypes, shapes, bytes) and the outputs it asks for and in
 * which form; it is hashed with XXH3 and compared whole on a hit, so a
 * collision never answers. Least recently used entries go first once the
 * cache's bytes or entries would pass their bounds; an entry larger than
 * the cache is not stored. A hit is answered at once, never queued.
 */
#ifndef NPU_SERVE_RESPONSE_CACHE_H
#define NPU_SERVE_RESPONSE_CACHE_H

#include "batcher.h"

#define CACHE_DEFAULT_MAX_ENTRIES 65536

/*
 * --cache-config local,size=BYTES[,max_entries=N] (repeatable, the
 * settings add up). Returns 0 or -1 with a message in err.
 */
int response_cache_config_arg(const char *value, char *err);
/* The cache's byte bound (0: no cache configured). */
size_t response_cache_size(void);

/* A unique id for each load of a model version (entries never outlive it). */
uint64_t response_cache_new_load_id(void);
/* Drop every entry of a load (its version is unloaded). */
void response_cache_purge(uint64_t load_id);

/*
 * Look 'req' (decoded, model and version set) up. A hit fills its results
 * and status, counts it in 'stats' and returns 1: the caller answers it
 * (req->done) without queuing. A miss returns 0 and makes the request store
 * its response when it succeeds, chaining req->done; -1: out of memory (the
 * request runs uncached).
 */
int response_cache_lookup(uint64_t load_id, struct model_stats *stats,
			  struct infer_request *req);

/* A missed request that was not queued after all: undo the lookup's chaining. */
void response_cache_abandon(struct infer_request *req);

#endif /* NPU_SERVE_RESPONSE_CACHE_H */
