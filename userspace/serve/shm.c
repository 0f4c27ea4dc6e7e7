// SPDX-License-Identifier: MIT
/* shm: the system shared-memory extension's regions (see shm.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"

struct shm_region {
	char name[SERVE_NAME_MAX];
	char key[SERVE_NAME_MAX];
	uint64_t offset, byte_size;
	int fd;			/* kept open: each use re-checks the object's size */
	void *map;		/* the mapping, from the page holding 'offset' */
	size_t map_len;
	size_t delta;		/* offset - the mapping's (page-aligned) offset */
	int refs;		/* the table's (while registered) and each request's */
	int registered;
	struct shm_region *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct shm_region *regions;	/* registered ones */
static size_t num_regions, max_regions = SHM_DEFAULT_MAX_REGIONS;
static uint64_t mapped_bytes, max_bytes = SHM_DEFAULT_MAX_BYTES;	/* unregistered in use too */
static uint64_t registrations, refusals;

void shm_set_limits(size_t regions_max, uint64_t bytes_max)
{
	pthread_mutex_lock(&lock);
	max_regions = regions_max ? regions_max : SHM_DEFAULT_MAX_REGIONS;
	max_bytes = bytes_max ? bytes_max : SHM_DEFAULT_MAX_BYTES;
	pthread_mutex_unlock(&lock);
}

static struct shm_region *find(const char *name)
{
	struct shm_region *r;

	for (r = regions; r; r = r->next)
		if (!strcmp(r->name, name))
			return r;
	return NULL;
}

/* Under the lock: drop a reference; the last one unmaps. */
static void put(struct shm_region *r)
{
	if (--r->refs)
		return;
	munmap(r->map, r->map_len);
	close(r->fd);
	mapped_bytes -= r->map_len;
	free(r);
}

static int refuse(char *err, int status, const char *fmt, const char *a, const char *b)
{
	refusals++;
	return serve_err(err, status, fmt, a, b);
}

/* Names and keys go into logs, JSON and messages as they are. */
static int printable(const char *s, int slash_ok)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (s[i] < 0x20 || s[i] > 0x7e || (s[i] == '/' && !slash_ok))
			return 0;
	return i > 0 && i < SERVE_NAME_MAX;
}

int shm_register(const char *name, const char *key, uint64_t offset, uint64_t byte_size,
		 char *err)
{
	long page = sysconf(_SC_PAGESIZE);
	struct shm_region *r;
	struct stat st;
	int fd, st_code;
	size_t delta, len;
	void *map;

	if (!printable(name, 0))
		return serve_err(err, SERVE_INVALID,
				 "a region name must be 1 to %d printable ASCII characters but '/'",
				 SERVE_NAME_MAX - 1);
	if (!printable(key, 1))
		return serve_err(err, SERVE_INVALID,
				 "region '%s': 'key' must be 1 to %d printable ASCII characters",
				 name, SERVE_NAME_MAX - 1);
	if (!byte_size)
		return serve_err(err, SERVE_INVALID, "region '%s': 'byte_size' is 0", name);
	if (offset > UINT64_MAX - byte_size)
		return serve_err(err, SERVE_INVALID, "region '%s': 'offset' + 'byte_size' overflows",
				 name);
	pthread_mutex_lock(&lock);
	if (find(name)) {
		st_code = refuse(err, SERVE_INVALID,
				 "shared memory region '%s' is already registered (key '%s'): unregister it first",
				 name, find(name)->key);
		goto out_unlock;
	}
	if (num_regions >= max_regions) {
		refusals++;
		st_code = serve_err(err, SERVE_INVALID,
				    "region '%s': the server holds %zu shared memory regions, its limit (--shm-max-regions)",
				    name, num_regions);
		goto out_unlock;
	}
	fd = shm_open(key, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;

		refusals++;
		st_code = serve_err(err, e == ENOENT ? SERVE_NOT_FOUND : SERVE_INVALID,
				    "region '%s': cannot open shared memory object '%s': %s",
				    name, key, strerror(e));
		goto out_unlock;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		st_code = refuse(err, SERVE_INVALID,
				 "region '%s': shared memory object '%s' is not a regular object", name, key);
		goto out_unlock;
	}
	/* Another user's object: the server would read and write it with its own rights. */
	if (st.st_uid != geteuid()) {
		close(fd);
		refusals++;
		st_code = serve_err(err, SERVE_INVALID,
				    "region '%s': shared memory object '%s' belongs to uid %u, not to the server's uid %u",
				    name, key, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out_unlock;
	}
	if ((uint64_t)st.st_size < offset + byte_size) {
		close(fd);
		refusals++;
		st_code = serve_err(err, SERVE_INVALID,
				    "region '%s': offset %" PRIu64 " + byte_size %" PRIu64 " exceed the %lld bytes of shared memory object '%s'",
				    name, offset, byte_size, (long long)st.st_size, key);
		goto out_unlock;
	}
	delta = (size_t)(offset % (uint64_t)page);
	len = delta + (size_t)byte_size;
	if (len > max_bytes || mapped_bytes > max_bytes - len) {
		close(fd);
		refusals++;
		st_code = serve_err(err, SERVE_INVALID,
				    "region '%s': mapping %zu more bytes would exceed the server's %" PRIu64 " bytes of shared memory (--shm-max-bytes; %" PRIu64 " mapped)",
				    name, len, max_bytes, mapped_bytes);
		goto out_unlock;
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(offset - delta));
	if (map == MAP_FAILED) {
		int e = errno;

		close(fd);
		refusals++;
		st_code = serve_err(err, SERVE_INVALID, "region '%s': cannot map '%s': %s", name,
				    key, strerror(e));
		goto out_unlock;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		munmap(map, len);
		close(fd);
		st_code = serve_err(err, SERVE_INTERNAL, "out of memory");
		goto out_unlock;
	}
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->offset = offset;
	r->byte_size = byte_size;
	r->fd = fd;
	r->map = map;
	r->map_len = len;
	r->delta = delta;
	r->refs = 1;
	r->registered = 1;
	r->next = regions;
	regions = r;
	num_regions++;
	mapped_bytes += len;
	registrations++;
	st_code = SERVE_OK;
	serve_log(SERVE_LOG_INFO, "shared memory region '%s' registered: '%s' offset %" PRIu64 ", %" PRIu64 " bytes",
		  name, key, offset, byte_size);
out_unlock:
	pthread_mutex_unlock(&lock);
	return st_code;
}

/* Under the lock. */
static void unlink_region(struct shm_region *r)
{
	struct shm_region **pp;

	for (pp = &regions; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	r->registered = 0;
	num_regions--;
	put(r);
}

int shm_unregister(const char *name, char *err)
{
	struct shm_region *r;

	pthread_mutex_lock(&lock);
	if (!name || !*name) {
		while (regions)
			unlink_region(regions);
		pthread_mutex_unlock(&lock);
		return SERVE_OK;
	}
	r = find(name);
	if (!r) {
		pthread_mutex_unlock(&lock);
		return serve_err(err, SERVE_NOT_FOUND, "no shared memory region '%s' is registered",
				 name);
	}
	unlink_region(r);
	pthread_mutex_unlock(&lock);
	return SERVE_OK;
}

int shm_status(const char *name, struct shm_info **out, size_t *n, char *err)
{
	struct shm_region *r;
	size_t k = 0;

	pthread_mutex_lock(&lock);
	*out = calloc(num_regions ? num_regions : 1, sizeof(**out));
	if (!*out) {
		pthread_mutex_unlock(&lock);
		return serve_err(err, SERVE_INTERNAL, "out of memory");
	}
	for (r = regions; r; r = r->next) {
		if (name && *name && strcmp(name, r->name))
			continue;
		memcpy((*out)[k].name, r->name, sizeof(r->name));
		memcpy((*out)[k].key, r->key, sizeof(r->key));
		(*out)[k].offset = r->offset;
		(*out)[k].byte_size = r->byte_size;
		k++;
	}
	pthread_mutex_unlock(&lock);
	*n = k;
	if (name && *name && !k) {
		free(*out);
		*out = NULL;
		return serve_err(err, SERVE_NOT_FOUND, "no shared memory region '%s' is registered",
				 name);
	}
	return SERVE_OK;
}

int shm_acquire(const char *name, uint64_t offset, uint64_t size, const char *what,
		struct shm_region **region, void **ptr, char *err)
{
	struct shm_region *r;
	struct stat st;

	*region = NULL;
	pthread_mutex_lock(&lock);
	r = find(name);
	if (!r) {
		pthread_mutex_unlock(&lock);
		return serve_err(err, SERVE_INVALID,
				 "%s: shared memory region '%s' is not registered", what, name);
	}
	if (offset > r->byte_size || size > r->byte_size - offset) {
		pthread_mutex_unlock(&lock);
		return serve_err(err, SERVE_INVALID,
				 "%s: shared_memory_offset %" PRIu64 " + shared_memory_byte_size %" PRIu64 " exceed the %" PRIu64 " bytes of region '%s'",
				 what, offset, size, r->byte_size, name);
	}
	/* Its owner may have shrunk the object since: touching pages past its
	 * end would fault. (A shrink between this check and the run remains
	 * the client's own risk, documented.) */
	if (fstat(r->fd, &st) || (uint64_t)st.st_size < r->offset + r->byte_size) {
		pthread_mutex_unlock(&lock);
		return serve_err(err, SERVE_INVALID,
				 "%s: the object '%s' of region '%s' is now smaller than the region",
				 what, r->key, name);
	}
	r->refs++;
	pthread_mutex_unlock(&lock);
	*region = r;
	*ptr = (char *)r->map + r->delta + offset;
	return SERVE_OK;
}

void shm_release(struct shm_region *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&lock);
	put(r);
	pthread_mutex_unlock(&lock);
}

const char *shm_region_name(const struct shm_region *r)
{
	return r->name;	/* immutable while referenced */
}

void shm_shutdown(void)
{
	shm_unregister(NULL, NULL);
}

void shm_metrics(FILE *f)
{
	pthread_mutex_lock(&lock);
	fprintf(f, "# HELP npu_serve_shm_regions System shared memory regions registered.\n"
		"# TYPE npu_serve_shm_regions gauge\n"
		"npu_serve_shm_regions %zu\n", num_regions);
	fprintf(f, "# HELP npu_serve_shm_mapped_bytes Bytes of shared memory mapped (regions unregistered while a request uses them included).\n"
		"# TYPE npu_serve_shm_mapped_bytes gauge\n"
		"npu_serve_shm_mapped_bytes %" PRIu64 "\n", mapped_bytes);
	fprintf(f, "# HELP npu_serve_shm_registrations_total System shared memory regions registered since the start.\n"
		"# TYPE npu_serve_shm_registrations_total counter\n"
		"npu_serve_shm_registrations_total %" PRIu64 "\n", registrations);
	fprintf(f, "# HELP npu_serve_shm_register_refused_total Registrations refused (name taken, no such object, another user's, over a bound).\n"
		"# TYPE npu_serve_shm_register_refused_total counter\n"
		"npu_serve_shm_register_refused_total %" PRIu64 "\n", refusals);
	pthread_mutex_unlock(&lock);
}
