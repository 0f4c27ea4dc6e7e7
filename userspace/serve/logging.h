/* SPDX-License-Identifier: MIT */
/*
 * logging: serve_log() and Triton's logging extension. GET/POST
 * /v2/logging and the LogSettings RPC (management calls) read and change,
 * at run time and for every thread at once, what serve_log() writes:
 * log_info, log_warnings, log_errors, log_verbose_level (>= 1: debug
 * lines), log_format ("default" or "ISO8601") and log_file, a plain file
 * name under the operator's --log-dir (opened O_APPEND | O_NOFOLLOW, mode
 * 0600; "": back to stderr). Without --log-dir no log_file is accepted.
 */
#ifndef NPU_SERVE_LOGGING_H
#define NPU_SERVE_LOGGING_H

#include <jansson.h>

#include "serve.h"

/* --log-dir DIR: opened once; 0 or -1 with err. */
int log_dir_arg(const char *dir, char *err);
json_t *log_settings_json(void);
/* POST: SERVE_OK and the new settings in *out, or SERVE_INVALID naming the setting. */
int log_settings_update(const json_t *settings, json_t **out, char *err);
/* At exit: close the log file. */
void log_shutdown(void);

#endif /* NPU_SERVE_LOGGING_H */
