/* SPDX-License-Identifier: MIT */
/*
 * shm: Triton's system shared-memory extension. A client names a POSIX
 * shared-memory object (shm_open key) and a range of it; the server maps
 * it once, and inference inputs are then read from it and outputs written
 * into it in place. Regions are refcounted: unregistering one a request
 * still uses unmaps it when that request is done. An object owned by
 * another user than the server's is refused. The table is bounded in
 * regions and bytes mapped (serve_main's flags).
 */
#ifndef NPU_SERVE_SHM_H
#define NPU_SERVE_SHM_H

#include <stdio.h>

#include "serve.h"

#define SHM_DEFAULT_MAX_REGIONS 64
#define SHM_DEFAULT_MAX_BYTES (4ull << 30)

struct shm_region;

/* The bounds (0: the default). Call once before serving. */
void shm_set_limits(size_t max_regions, uint64_t max_bytes);

/*
 * Map 'byte_size' bytes at 'offset' of the object 'key' as region 'name'.
 * SERVE_INVALID: a name taken, a bad range, another user's object, over
 * the bounds; SERVE_NOT_FOUND: no such object.
 */
int shm_register(const char *name, const char *key, uint64_t offset, uint64_t byte_size,
		 char *err);
/* Forget region 'name' (NULL or "": every region). SERVE_NOT_FOUND if unknown. */
int shm_unregister(const char *name, char *err);

struct shm_info {
	char name[SERVE_NAME_MAX];
	char key[SERVE_NAME_MAX];
	uint64_t offset, byte_size;
};
/* The regions (name NULL or "": all; else that one or SERVE_NOT_FOUND); free(*out). */
int shm_status(const char *name, struct shm_info **out, size_t *n, char *err);

/*
 * A view of 'size' bytes at 'offset' of region 'name', bounds-checked,
 * holding a reference until shm_release(). 'what' names the tensor in
 * the message ("input 'x'"). SERVE_INVALID for an unknown region or a
 * range outside it.
 */
int shm_acquire(const char *name, uint64_t offset, uint64_t size, const char *what,
		struct shm_region **region, void **ptr, char *err);
void shm_release(struct shm_region *r);
const char *shm_region_name(const struct shm_region *r);

/* Unmap every region (at exit, once no request runs). */
void shm_shutdown(void);

/* The table's gauges and counters in the Prometheus text format. */
void shm_metrics(FILE *f);

#endif /* NPU_SERVE_SHM_H */
