// SPDX-License-Identifier: MIT
/* logging: serve_log() and Triton's logging extension (see logging.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logging.h"
#include "trace.h"

#define LOG_FILE_NAME_MAX 128

int serve_verbose = SERVE_LOG_INFO;

/* All under log_lock: a line is written whole, settings change between lines. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_info = 1, log_warnings = 1, log_errors = 1;
static unsigned int verbose_level = 1;	/* what --log-verbose / debug means */
static int iso8601;
static int log_dir_fd = -1;
static FILE *log_file;			/* NULL: stderr */
static char log_file_name[LOG_FILE_NAME_MAX];

void serve_log(enum serve_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	struct timespec ts;
	struct tm tm;
	va_list ap;
	FILE *out;

	if ((int)level > serve_verbose)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	pthread_mutex_lock(&log_lock);
	if ((level == SERVE_LOG_ERROR && !log_errors) || (level == SERVE_LOG_WARN && !log_warnings) ||
	    (level == SERVE_LOG_INFO && !log_info)) {
		pthread_mutex_unlock(&log_lock);
		return;
	}
	out = log_file ? log_file : stderr;
	if (iso8601)
		fprintf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ npu-serve %s: ", tm.tm_year + 1900,
			tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			ts.tv_nsec / 1000000, names[level]);
	else
		fprintf(out, "%02d:%02d:%02d.%03ld npu-serve %s: ", tm.tm_hour, tm.tm_min,
			tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
	pthread_mutex_unlock(&log_lock);
}

int log_dir_arg(const char *dir, char *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		serve_err(err, -1, "--log-dir: cannot open directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (log_dir_fd >= 0)
		close(log_dir_fd);
	log_dir_fd = fd;
	return 0;
}

/* Under log_lock. */
static json_t *settings_json(void)
{
	return json_pack("{s:s, s:b, s:b, s:b, s:i, s:s}", "log_file", log_file_name,
			 "log_info", log_info, "log_warnings", log_warnings, "log_errors", log_errors,
			 "log_verbose_level", serve_verbose >= SERVE_LOG_DEBUG ? (int)verbose_level : 0,
			 "log_format", iso8601 ? "ISO8601" : "default");
}

json_t *log_settings_json(void)
{
	json_t *j;

	pthread_mutex_lock(&log_lock);
	j = settings_json();
	pthread_mutex_unlock(&log_lock);
	return j;
}

static int want_bool(const char *key, const json_t *v, int *out, char *err)
{
	if (!json_is_boolean(v))
		return serve_err(err, SERVE_INVALID, "log setting '%s' must be true or false", key);
	*out = json_is_true(v);
	return SERVE_OK;
}

int log_settings_update(const json_t *settings, json_t **out, char *err)
{
	int info = -1, warnings = -1, errors = -1, format = -1, st = SERVE_OK;
	long long verbose = -1;
	const char *key, *file = NULL;
	FILE *nf = NULL;
	json_t *v;

	*out = NULL;
	if (!json_is_object(settings))
		return serve_err(err, SERVE_INVALID, "the log settings must be a JSON object");
	/* Everything is checked before anything changes. */
	json_object_foreach((json_t *)settings, key, v) {
		if (!strcmp(key, "log_info"))
			st = want_bool(key, v, &info, err);
		else if (!strcmp(key, "log_warnings"))
			st = want_bool(key, v, &warnings, err);
		else if (!strcmp(key, "log_errors"))
			st = want_bool(key, v, &errors, err);
		else if (!strcmp(key, "log_verbose_level")) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > UINT32_MAX)
				st = serve_err(err, SERVE_INVALID,
					       "log setting 'log_verbose_level' must be an integer >= 0");
			else
				verbose = json_integer_value(v);
		} else if (!strcmp(key, "log_format")) {
			const char *f = json_string_value(v);

			if (f && !strcmp(f, "default"))
				format = 0;
			else if (f && !strcmp(f, "ISO8601"))
				format = 1;
			else
				st = serve_err(err, SERVE_INVALID,
					       "log setting 'log_format' must be \"default\" or \"ISO8601\"");
		} else if (!strcmp(key, "log_file")) {
			if (!json_is_string(v))
				st = serve_err(err, SERVE_INVALID, "log setting 'log_file' must be a string");
			else if (json_string_length(v))
				st = trace_file_name_ok(json_string_value(v), err, "log_file",
							log_dir_fd >= 0);
			if (!st)
				file = json_string_value(v);
		} else {
			st = serve_err(err, SERVE_INVALID,
				       "unknown log setting '%.64s' (log_file, log_info, log_warnings, log_errors, log_verbose_level, log_format)",
				       key);
		}
		if (st)
			return st;
	}
	if (file && file[0]) {
		/* Appended to, never through a link planted in the directory. */
		int fd = openat(log_dir_fd, file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
				0600);

		if (fd < 0 || !(nf = fdopen(fd, "a"))) {
			st = serve_err(err, SERVE_INVALID, "log_file '%s': %s", file, strerror(errno));
			if (fd >= 0)
				close(fd);
			return st;
		}
	}
	pthread_mutex_lock(&log_lock);
	if (info >= 0)
		log_info = info;
	if (warnings >= 0)
		log_warnings = warnings;
	if (errors >= 0)
		log_errors = errors;
	if (format >= 0)
		iso8601 = format;
	if (verbose >= 0) {
		if (verbose)
			verbose_level = (unsigned int)verbose;
		if (serve_verbose >= SERVE_LOG_INFO)
			serve_verbose = verbose ? SERVE_LOG_DEBUG : SERVE_LOG_INFO;
	}
	if (file) {
		if (log_file)
			fclose(log_file);
		log_file = nf;
		snprintf(log_file_name, sizeof(log_file_name), "%s", nf ? file : "");
	}
	*out = settings_json();
	pthread_mutex_unlock(&log_lock);
	return SERVE_OK;
}

void log_shutdown(void)
{
	pthread_mutex_lock(&log_lock);
	if (log_file)
		fclose(log_file);
	log_file = NULL;
	log_file_name[0] = 0;
	pthread_mutex_unlock(&log_lock);
}
