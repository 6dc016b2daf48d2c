/* progress.c - install stages per role, installation percentage and the
 * install-phase timeouts (internal/host/common.go, internal/host/config.go
 * upstream). */
#include "assisted/progress.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const STAGES[HOST_STAGE_COUNT] = {
	HOST_STAGE_STARTING_INSTALLATION, HOST_STAGE_WAITING_FOR_CONTROL_PLANE, HOST_STAGE_WAITING_FOR_BOOTKUBE,
	HOST_STAGE_WAITING_FOR_CONTROLLER, HOST_STAGE_INSTALLING, HOST_STAGE_WRITING_IMAGE_TO_DISK,
	HOST_STAGE_COPYING_REGISTRY_DATA, HOST_STAGE_REBOOTING, HOST_STAGE_WAITING_FOR_IGNITION,
	HOST_STAGE_CONFIGURING, HOST_STAGE_JOINED, HOST_STAGE_DONE, HOST_STAGE_FAILED,
};

/* Each list is NULL-terminated; the day-2 lists are the same lists cut
 * after Rebooting. */
static const char *const BOOTSTRAP[] = {
	HOST_STAGE_STARTING_INSTALLATION, HOST_STAGE_INSTALLING, HOST_STAGE_WRITING_IMAGE_TO_DISK,
	HOST_STAGE_COPYING_REGISTRY_DATA, HOST_STAGE_WAITING_FOR_CONTROL_PLANE, HOST_STAGE_WAITING_FOR_BOOTKUBE,
	HOST_STAGE_WAITING_FOR_CONTROLLER, HOST_STAGE_REBOOTING, HOST_STAGE_CONFIGURING, HOST_STAGE_JOINED,
	HOST_STAGE_DONE, NULL,
};
static const char *const MASTER[] = {
	HOST_STAGE_STARTING_INSTALLATION, HOST_STAGE_INSTALLING, HOST_STAGE_WRITING_IMAGE_TO_DISK,
	HOST_STAGE_COPYING_REGISTRY_DATA, HOST_STAGE_REBOOTING, HOST_STAGE_CONFIGURING, HOST_STAGE_JOINED,
	HOST_STAGE_DONE, NULL,
};
static const char *const WORKER[] = {
	HOST_STAGE_STARTING_INSTALLATION, HOST_STAGE_INSTALLING, HOST_STAGE_WRITING_IMAGE_TO_DISK,
	HOST_STAGE_WAITING_FOR_CONTROL_PLANE, HOST_STAGE_REBOOTING, HOST_STAGE_WAITING_FOR_IGNITION,
	HOST_STAGE_CONFIGURING, HOST_STAGE_JOINED, HOST_STAGE_DONE, NULL,
};
static const char *const SNO[] = {
	HOST_STAGE_STARTING_INSTALLATION, HOST_STAGE_INSTALLING, HOST_STAGE_WAITING_FOR_BOOTKUBE,
	HOST_STAGE_WRITING_IMAGE_TO_DISK, HOST_STAGE_COPYING_REGISTRY_DATA, HOST_STAGE_REBOOTING,
	HOST_STAGE_JOINED, HOST_STAGE_DONE, NULL,
};
static const char *const NONE[] = { NULL };

int host_stage_id(const char *stage)
{
	if (!stage)
		return -1;
	for (int i = 0; i < HOST_STAGE_COUNT; i++)
		if (!strcmp(stage, STAGES[i]))
			return i;
	return -1;
}

const char *host_stage_name(int id)
{
	return id >= 0 && id < HOST_STAGE_COUNT ? STAGES[id] : NULL;
}

static size_t len_of(const char *const *l)
{
	size_t n = 0;

	while (l[n])
		n++;
	return n;
}

const char *const *host_install_stages(const char *role, bool sno, bool day2, size_t *n)
{
	const char *const *l = NONE;
	size_t len;

	role = role ? role : "";
	if (!strcmp(role, "bootstrap"))
		l = sno ? SNO : BOOTSTRAP;
	else if (!strcmp(role, "master") || !strcmp(role, "arbiter"))
		l = MASTER;
	else if (!strcmp(role, "worker"))
		l = WORKER;
	len = len_of(l);
	if (day2) {
		/* The list stops at Rebooting: the stages after it are never
		 * reported by a day-2 host of a non-kube-api service. */
		int r = host_stage_index(l, len, HOST_STAGE_REBOOTING);

		if (r >= 0)
			len = (size_t)r + 1;
	}
	if (n)
		*n = len;
	return l;
}

int host_stage_index(const char *const *stages, size_t n, const char *stage)
{
	if (!stages || !stage)
		return -1;
	for (size_t i = 0; i < n && stages[i]; i++)
		if (!strcmp(stages[i], stage))
			return (int)i;
	return -1;
}

int host_install_percentage(const char *role, bool sno, bool day2, const char *stage)
{
	size_t n;
	const char *const *l = host_install_stages(role, sno, day2, &n);
	int i = host_stage_index(l, n, stage);

	if (i < 0 || n == 0)
		return -1;
	/* Upstream: float64(i+1)/float64(len)*100 stored in an int64 column. */
	return (int)((double)(i + 1) / (double)n * 100.0);
}

void host_timeouts_init(struct host_timeouts *t)
{
	memset(t, 0, sizeof(*t));
	t->prepare_s = 8 * 60;
	t->installing_s = 20 * 60;
	t->pending_user_action_s = 60 * 60;
	t->log_collection_s = 10 * 60;
	t->log_pending_s = 2 * 60;
	t->reclaim_s = 60 * 60;
	t->sno_rebooting_s = 80 * 60;
	t->disconnect_s = 3 * 60;
	for (int i = 0; i < HOST_STAGE_COUNT; i++)
		t->stage_s[i] = 60 * 60;
	t->stage_s[host_stage_id(HOST_STAGE_STARTING_INSTALLATION)] = 30 * 60;
	t->stage_s[host_stage_id(HOST_STAGE_WRITING_IMAGE_TO_DISK)] = 30 * 60;
	t->stage_s[host_stage_id(HOST_STAGE_COPYING_REGISTRY_DATA)] = 90 * 60;
	t->stage_s[host_stage_id(HOST_STAGE_REBOOTING)] = 40 * 60;
	t->stage_s[host_stage_id(HOST_STAGE_WAITING_FOR_IGNITION)] = 24 * 60 * 60;
}

int64_t host_stage_timeout_s(const struct host_timeouts *t, const char *stage, bool sno)
{
	struct host_timeouts def;
	int id = host_stage_id(stage);

	host_timeouts_init(&def);
	if (sno && id == host_stage_id(HOST_STAGE_REBOOTING))
		return t && t->sno_rebooting_s > 0 ? t->sno_rebooting_s : def.sno_rebooting_s;
	if (id < 0)
		return 60 * 60;
	return t && t->stage_s[id] > 0 ? t->stage_s[id] : def.stage_s[id];
}

void host_stage_timeout_env(const char *stage, char *buf, size_t size)
{
	size_t o;

	if (size == 0)
		return;
	o = (size_t)snprintf(buf, size, "HOST_STAGE_");
	for (const char *p = stage ? stage : ""; *p && o + 1 < size; p++)
		buf[o++] = *p == ' ' ? '_' : (char)toupper((unsigned char)*p);
	buf[o < size ? o : size - 1] = '\0';
	if (o < size)
		snprintf(buf + o, size - o, "_TIMEOUT");
}

/* Go's time.ParseDuration for the units a knob needs (h, m, s, ms, us, ns),
 * with decimal fractions; a plain number is seconds. */
int host_parse_duration(const char *text, int64_t *ret_s)
{
	const char *p = text;
	double total = 0;
	char *end;

	if (!text || !*text)
		return -EINVAL;
	{
		long long v = strtoll(text, &end, 10);

		if (*end == '\0') {
			if (v < 0)
				return -EINVAL;
			*ret_s = v;
			return 0;
		}
	}
	while (*p) {
		double v, mult;

		if (!isdigit((unsigned char)*p) && *p != '.')
			return -EINVAL;
		v = strtod(p, &end);
		if (end == p || !isfinite(v) || v < 0)
			return -EINVAL;
		p = end;
		if (!strncmp(p, "ms", 2))
			mult = 1e-3, p += 2;
		else if (!strncmp(p, "us", 2) || !strncmp(p, "\xc2\xb5s", 3))
			mult = 1e-6, p += *p == 'u' ? 2 : 3;
		else if (!strncmp(p, "ns", 2))
			mult = 1e-9, p += 2;
		else if (*p == 'h')
			mult = 3600, p++;
		else if (*p == 'm')
			mult = 60, p++;
		else if (*p == 's')
			mult = 1, p++;
		else
			return -EINVAL;
		total += v * mult;
		if (total > 9.2e15)
			return -EINVAL;
	}
	*ret_s = (int64_t)total;
	return 0;
}

void host_format_duration(int64_t secs, char *buf, size_t size)
{
	int64_t h = secs / 3600, m = (secs % 3600) / 60, s = secs % 60;

	if (secs <= 0)
		snprintf(buf, size, "0s");
	else if (h > 0)
		snprintf(buf, size, "%lldh%lldm%llds", (long long)h, (long long)m, (long long)s);
	else if (m > 0)
		snprintf(buf, size, "%lldm%llds", (long long)m, (long long)s);
	else
		snprintf(buf, size, "%llds", (long long)s);
}

/* A knob's duration: zero is refused because a zero field of struct
 * host_timeouts means "the default", so "0s" would silently mean 60m. */
static int knob_duration(const char *name, const char *value, int64_t *ret_s, ah_err *err)
{
	if (host_parse_duration(value, ret_s) < 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "%s: \"%s\" is not a duration (e.g. 30m, 1h30m or seconds)", name, value);
	if (*ret_s < 1)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "%s: \"%s\" is shorter than one second", name,
				  value);
	return 0;
}

int host_timeouts_set(struct host_timeouts *t, const char *name, const char *value, ah_err *err)
{
	static const struct {
		const char *name;
		size_t off;
	} knobs[] = {
		{ "HOST_MAX_DISCONNECTION_TIME", offsetof(struct host_timeouts, disconnect_s) },
		{ "PREPARE_FOR_INSTALLATION_HOST_TIMEOUT", offsetof(struct host_timeouts, prepare_s) },
		{ "HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT", offsetof(struct host_timeouts, pending_user_action_s) },
		{ "HOST_LOG_COLLECTION_TIMEOUT", offsetof(struct host_timeouts, log_collection_s) },
		{ "HOST_LOG_PENDING_TIMEOUT", offsetof(struct host_timeouts, log_pending_s) },
	};
	int64_t v;
	int id = -1;

	if (!name || !value)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "timeout knob: name and value are required");
	if (!strcmp(name, "ENABLE_SOFT_TIMEOUTS")) {
		if (!strcmp(value, "true") || !strcmp(value, "1"))
			t->soft = true;
		else if (!strcmp(value, "false") || !strcmp(value, "0"))
			t->soft = false;
		else
			return ah_err_set(err, EINVAL, 400, "BadRequest", "%s: \"%s\" is not a boolean (true or false)",
					  name, value);
		return 0;
	}
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (!strcmp(name, knobs[i].name)) {
			if (knob_duration(name, value, &v, err) < 0)
				return -EINVAL;
			*(int64_t *)((char *)t + knobs[i].off) = v;
			return 0;
		}
	for (int i = 0; i < HOST_STAGE_COUNT; i++) {
		char env[96];

		host_stage_timeout_env(STAGES[i], env, sizeof(env));
		if (!strcmp(env, name)) {
			id = i;
			break;
		}
	}
	if (id < 0)
		return -ENOENT;
	if (knob_duration(name, value, &v, err) < 0)
		return -EINVAL;
	t->stage_s[id] = v;
	return 0;
}

static struct host_timeouts configured;
static bool have_configured;

void host_timeouts_configure(const struct host_timeouts *t)
{
	if (t)
		configured = *t;
	have_configured = t != NULL;
}

const struct host_timeouts *host_timeouts_configured(void)
{
	return have_configured ? &configured : NULL;
}
