/* SPDX-License-Identifier: MIT */
/*
 * rate_limiter: Triton's rate limiter (--rate-limit=execution_count). An
 * instance_group's rate_limiter { resources [{ name global count }]
 * priority } names what each of its instances holds while it runs a
 * batch; the resources are the server's, shared by every model: per
 * device (the instance's), or one pool for all with 'global'. A pool holds
 * what --rate-limit-resource=NAME:COUNT[:DEVICE] gives it, or else the
 * most any registered instance needs (Triton's default). An instance waits
 * for all of its resources at once; among waiters that fit, the lowest
 * 'priority' value goes first, then the longest waiting. Off (the
 * default, as Triton): the rate_limiter blocks are accepted and nothing
 * waits.
 */
#ifndef NPU_SERVE_RATE_LIMITER_H
#define NPU_SERVE_RATE_LIMITER_H

#include "model_config.h"

#define RATE_LIMITER_MAX_POOLS 256

/* --rate-limit=execution_count|off; --rate-limit-resource=NAME:COUNT[:DEVICE]. 0 or -1 + err. */
int rate_limiter_mode_arg(const char *value, char *err);
int rate_limiter_resource_arg(const char *value, char *err);
int rate_limiter_enabled(void);

/*
 * An instance of group 'group' (-1: none) on 'device' is created: its
 * resources join their pools. SERVE_INVALID when it needs more of one
 * than --rate-limit-resource gives (it could never run).
 */
int rate_limiter_register(const struct model_config *cfg, int group, const char *device,
			  char *err);
/* Wait until the group's resources are free and take them; give them back. */
void rate_limiter_acquire(const struct model_config *cfg, int group, const char *device);
void rate_limiter_release(const struct model_config *cfg, int group, const char *device);

#endif /* NPU_SERVE_RATE_LIMITER_H */
