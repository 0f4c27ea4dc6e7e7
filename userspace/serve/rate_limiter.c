// SPDX-License-Identifier: MIT
/* rate_limiter: resources shared by the instances of every model (see rate_limiter.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rate_limiter.h"

struct pool {
	char name[64];
	char device[SERVE_NAME_MAX];	/* "": a global resource */
	uint32_t count, used;
	int fixed;			/* count given by --rate-limit-resource */
};

/* An instance waiting for its resources, in a list ordered by arrival. */
struct waiter {
	const struct model_config *cfg;
	int group;
	const char *device;
	uint32_t priority;
	struct waiter *next;
};

static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rl_cond = PTHREAD_COND_INITIALIZER;
static int enabled;
static size_t num_pools;
static struct pool pools[RATE_LIMITER_MAX_POOLS];
/* --rate-limit-resource without a device: the count of that name on every device. */
static struct pool defaults[RATE_LIMITER_MAX_POOLS];
static size_t num_defaults;
static struct waiter *waiters;

int rate_limiter_mode_arg(const char *value, char *err)
{
	if (!strcmp(value, "execution_count"))
		enabled = 1;
	else if (!strcmp(value, "off"))
		enabled = 0;
	else {
		serve_err(err, -1, "--rate-limit: '%s' is not execution_count or off", value);
		return -1;
	}
	return 0;
}

int rate_limiter_enabled(void)
{
	return enabled;
}

int rate_limiter_resource_arg(const char *value, char *err)
{
	char buf[256], *name, *count, *device, *end;
	unsigned long v;
	struct pool *p;

	if (snprintf(buf, sizeof(buf), "%s", value) >= (int)sizeof(buf)) {
		serve_err(err, -1, "--rate-limit-resource: too long");
		return -1;
	}
	name = buf;
	count = strchr(buf, ':');
	if (!count) {
		serve_err(err, -1, "--rate-limit-resource: '%s' is not NAME:COUNT[:DEVICE]", value);
		return -1;
	}
	*count++ = 0;
	device = strchr(count, ':');
	if (device)
		*device++ = 0;
	errno = 0;
	v = strtoul(count, &end, 10);
	if (!name[0] || strlen(name) >= sizeof(p->name) || errno || end == count || *end ||
	    count[0] == '-' || v > UINT32_MAX || (device && (!device[0] ||
	    strlen(device) >= sizeof(p->device)))) {
		serve_err(err, -1, "--rate-limit-resource: '%s' is not NAME:COUNT[:DEVICE] (a count in [0, 2^32))",
			  value);
		return -1;
	}
	if ((device ? num_pools : num_defaults) == RATE_LIMITER_MAX_POOLS) {
		serve_err(err, -1, "--rate-limit-resource: more than %d resources", RATE_LIMITER_MAX_POOLS);
		return -1;
	}
	p = device ? &pools[num_pools++] : &defaults[num_defaults++];
	/* Lengths checked above. */
	snprintf(p->name, sizeof(p->name), "%.*s", (int)sizeof(p->name) - 1, name);
	snprintf(p->device, sizeof(p->device), "%.*s", (int)sizeof(p->device) - 1,
		 device ? device : "");
	p->count = (uint32_t)v;
	p->fixed = 1;
	return 0;
}

/* Under rl_lock: the pool of a resource an instance on 'device' uses, made on first use. */
static struct pool *pool_of(const struct config_resource *r, const char *device, int create)
{
	const char *dev = r->global ? "" : device;
	size_t i;

	for (i = 0; i < num_pools; i++)
		if (!strcmp(pools[i].name, r->name) && !strcmp(pools[i].device, dev))
			return &pools[i];
	if (!create || num_pools == RATE_LIMITER_MAX_POOLS)
		return NULL;
	memset(&pools[num_pools], 0, sizeof(pools[0]));
	snprintf(pools[num_pools].name, sizeof(pools[0].name), "%s", r->name);
	snprintf(pools[num_pools].device, sizeof(pools[0].device), "%s", dev);
	for (i = 0; i < num_defaults; i++)
		if (!strcmp(defaults[i].name, r->name)) {
			pools[num_pools].count = defaults[i].count;
			pools[num_pools].fixed = 1;
		}
	return &pools[num_pools++];
}

int rate_limiter_register(const struct model_config *cfg, int group, const char *device,
			  char *err)
{
	int k, st = SERVE_OK;

	if (group < 0)
		return SERVE_OK;
	pthread_mutex_lock(&rl_lock);
	for (k = 0; k < cfg->group_num_resources[group] && !st; k++) {
		const struct config_resource *r = &cfg->group_resources[group][k];
		struct pool *p = pool_of(r, device, 1);

		if (!p)
			st = serve_err(err, SERVE_INVALID, "more than %d rate limiter resources in the server",
				       RATE_LIMITER_MAX_POOLS);
		else if (p->fixed && r->count > p->count)
			st = serve_err(err, SERVE_INVALID,
				       "instance_group %d needs %" PRIu32 " of rate limiter resource '%s' but --rate-limit-resource gives %" PRIu32 "%s%s: it could never run",
				       group, r->count, r->name, p->count, p->device[0] ? " on " : "",
				       p->device);
		else if (!p->fixed && r->count > p->count)
			p->count = r->count;	/* the most any instance needs */
	}
	pthread_mutex_unlock(&rl_lock);
	return st;
}

/* Under rl_lock: whether every resource of the waiter is free now. */
static int fits(const struct waiter *w)
{
	int k;

	for (k = 0; k < w->cfg->group_num_resources[w->group]; k++) {
		const struct config_resource *r = &w->cfg->group_resources[w->group][k];
		struct pool *p = pool_of(r, w->device, 0);

		if (p && p->used + r->count > p->count)
			return 0;
	}
	return 1;
}

/* Under rl_lock: 'me' fits and no waiter that fits goes before it (priority, then arrival). */
static int my_turn(const struct waiter *me)
{
	const struct waiter *w;
	int earlier = 1;

	if (!fits(me))
		return 0;
	for (w = waiters; w; w = w->next) {
		if (w == me) {
			earlier = 0;
			continue;
		}
		if ((w->priority < me->priority || (w->priority == me->priority && earlier)) &&
		    fits(w))
			return 0;
	}
	return 1;
}

static void take(const struct model_config *cfg, int group, const char *device, int sign)
{
	int k;

	for (k = 0; k < cfg->group_num_resources[group]; k++) {
		const struct config_resource *r = &cfg->group_resources[group][k];
		struct pool *p = pool_of(r, device, 0);

		if (p)
			p->used = sign > 0 ? p->used + r->count : p->used - r->count;
	}
}

void rate_limiter_acquire(const struct model_config *cfg, int group, const char *device)
{
	struct waiter me = { cfg, group, device, 0, NULL }, **pp;

	if (!enabled || group < 0 || !cfg->group_num_resources[group])
		return;
	me.priority = cfg->group_priority[group];
	pthread_mutex_lock(&rl_lock);
	for (pp = &waiters; *pp; pp = &(*pp)->next)
		;
	*pp = &me;
	while (!my_turn(&me))
		pthread_cond_wait(&rl_cond, &rl_lock);
	for (pp = &waiters; *pp != &me; pp = &(*pp)->next)
		;
	*pp = me.next;
	take(cfg, group, device, 1);
	pthread_cond_broadcast(&rl_cond);
	pthread_mutex_unlock(&rl_lock);
}

void rate_limiter_release(const struct model_config *cfg, int group, const char *device)
{
	if (!enabled || group < 0 || !cfg->group_num_resources[group])
		return;
	pthread_mutex_lock(&rl_lock);
	take(cfg, group, device, -1);
	pthread_cond_broadcast(&rl_cond);
	pthread_mutex_unlock(&rl_lock);
}
