/* bmc.c - the simulated Redfish BMC (see bmc.h for the surface and the behaviour).
 *
 * Every resource is built as JSON from the machine's state on each GET, so what a
 * client reads is always what the next boot will use; its ETag is a hash of that JSON.
 * Writes validate the whole body before changing anything, so a 400 leaves the machine
 * as it was. */
#include "agent/bmc.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define ROOT "/redfish/v1"
#define REG "Base.1.8."

struct machine {
	char id[37], name[32], mac[18];
	unsigned cpus, memory_gib;
	bool on;
	const char *target;  /* static strings from the allowed lists */
	const char *enabled;
	const char *mode;
	char *image;         /* virtual media */
	bool inserted, write_protected;
	bool disk_installed;
	/* What the ironic agent's write_image put on the disk: the image URL (never
	 * downloaded) and the config drive ({meta_data, user_data, network_data}). */
	char *disk_image;
	json_t *disk_configdrive;
	unsigned gen;
	enum bmc_boot boot;
	char *boot_image;
	bool changed;        /* queued in the change ring */
	/* The ironic agent this boot runs (converged flow), reset by every power event. */
	bool ipa;
	char *ipa_token;
	json_t *cmds;        /* its commands, newest last, at most IPA_MAX_COMMANDS */
	bool assist;         /* start_assisted_install accepted */
	bool assist_running; /* ... and not finished */
	char assist_id[40];
};

#define IPA_MAX_COMMANDS 16

struct bmc {
	pthread_mutex_t lock;
	struct machine *m;
	unsigned n;
	unsigned *ring;      /* changed machines, each at most once */
	size_t rhead, rlen;
	char *auth;          /* the expected Authorization header value (secret) */
	void (*wake)(void *);
	void *wake_arg;
};

static const char *const TARGETS[] = { "None", "Pxe", "Cd", "Hdd", NULL };
static const char *const ENABLED[] = { "Disabled", "Once", "Continuous", NULL };
static const char *const MODES[] = { "UEFI", "Legacy", NULL };
static const char *const RESETS[] = { "On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", NULL };

static void ipa_reset(struct machine *m);
static bool method_is(const char *m, const char *want);
static void wrong_method(struct bmc_reply *r, const char *allow, const char *method);

static const char *in_list(const char *v, const char *const *list)
{
	for (; v && *list; list++)
		if (!strcmp(v, *list))
			return *list;
	return NULL;
}

static json_t *list_json(const char *const *list)
{
	json_t *a = json_array();

	for (; a && *list; list++)
		json_array_append_new(a, json_string(*list));
	return a;
}

int bmc_new(const struct bmc_machine_def *defs, unsigned n, const struct bmc_opts *o, struct bmc **ret,
	    ah_err *err)
{
	struct bmc *b;
	char *up = NULL, *enc;

	if (!o->user || !*o->user || !o->password || !*o->password)
		return ah_err_set(err, EINVAL, 0, "", "the BMC user and password must not be empty");
	if (strchr(o->user, ':'))
		return ah_err_set(err, EINVAL, 0, "", "the BMC user must not contain ':' (HTTP Basic auth)");
	b = calloc(1, sizeof(*b));
	if (!b)
		return ah_err_set(err, ENOMEM, 0, "", "out of memory");
	pthread_mutex_init(&b->lock, NULL);
	b->n = n;
	b->m = calloc(n ? n : 1, sizeof(*b->m));
	b->ring = calloc(n ? n : 1, sizeof(*b->ring));
	if (asprintf(&up, "%s:%s", o->user, o->password) < 0)
		up = NULL;
	enc = up ? util_base64_encode(up, strlen(up)) : NULL;
	if (up) {
		explicit_bzero(up, strlen(up));
		free(up);
	}
	if (enc && asprintf(&b->auth, "Basic %s", enc) < 0)
		b->auth = NULL;
	if (enc) {
		explicit_bzero(enc, strlen(enc));
		free(enc);
	}
	if (!b->m || !b->ring || !b->auth) {
		bmc_free(b);
		return ah_err_set(err, ENOMEM, 0, "", "out of memory");
	}
	for (unsigned i = 0; i < n; i++) {
		struct machine *m = &b->m[i];
		snprintf(m->id, sizeof(m->id), "%s", defs[i].id);
		snprintf(m->name, sizeof(m->name), "%s", defs[i].name);
		snprintf(m->mac, sizeof(m->mac), "%s", defs[i].mac);
		m->cpus = defs[i].cpus;
		m->memory_gib = defs[i].memory_gib;
		m->target = "None";
		m->enabled = "Disabled";
		m->mode = "UEFI";
		m->write_protected = true;
	}
	*ret = b;
	return 0;
}

void bmc_free(struct bmc *b)
{
	if (!b)
		return;
	for (unsigned i = 0; b->m && i < b->n; i++) {
		free(b->m[i].image);
		free(b->m[i].boot_image);
		free(b->m[i].disk_image);
		json_decref(b->m[i].disk_configdrive);
		ipa_reset(&b->m[i]);
	}
	if (b->auth) {
		explicit_bzero(b->auth, strlen(b->auth));
		free(b->auth);
	}
	free(b->m);
	free(b->ring);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

void bmc_set_wake(struct bmc *b, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&b->lock);
	b->wake = fn;
	b->wake_arg = arg;
	pthread_mutex_unlock(&b->lock);
}

unsigned bmc_count(const struct bmc *b)
{
	return b->n;
}

/* ---- machine state (lock held) ---- */

static void ipa_reset(struct machine *m)
{
	m->ipa = false;
	m->assist = m->assist_running = false;
	m->assist_id[0] = '\0';
	if (m->ipa_token) {
		explicit_bzero(m->ipa_token, strlen(m->ipa_token));
		free(m->ipa_token);
		m->ipa_token = NULL;
	}
	json_decref(m->cmds);
	m->cmds = NULL;
}

static void mark_changed(struct bmc *b, struct machine *m)
{
	if (m->changed)
		return;
	m->changed = true;
	b->ring[(b->rhead + b->rlen++) % b->n] = (unsigned)(m - b->m);
}

static bool boot_from(struct machine *m, const char *dev)
{
	if (!strcmp(dev, "Cd") && m->inserted && m->image) {
		char *u = strdup(m->image);
		if (!u)
			return false;
		m->boot = BMC_BOOT_CD;
		m->boot_image = u;
		return true;
	}
	if (!strcmp(dev, "Hdd") && m->disk_installed) {
		m->boot = BMC_BOOT_HDD;
		return true;
	}
	return false;
}

/* Power on (or restart): pick what boots, consuming a Once override. */
static void power_on(struct bmc *b, struct machine *m)
{
	const char *t = strcmp(m->enabled, "Disabled") ? m->target : "None";

	if (!strcmp(m->enabled, "Once")) {
		m->enabled = "Disabled";
		m->target = "None";
	}
	free(m->boot_image);
	m->boot_image = NULL;
	m->boot = BMC_BOOT_NONE;
	m->on = true;
	m->gen++;
	ipa_reset(m);
	if (!boot_from(m, t) && !boot_from(m, "Hdd"))
		boot_from(m, "Cd");
	mark_changed(b, m);
}

static void power_off(struct bmc *b, struct machine *m)
{
	free(m->boot_image);
	m->boot_image = NULL;
	m->boot = BMC_BOOT_NONE;
	m->on = false;
	m->gen++;
	ipa_reset(m);
	mark_changed(b, m);
}

int bmc_machine_power(struct bmc *b, unsigned i, struct bmc_power *ret)
{
	int r = 0;

	if (i >= b->n)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	ret->on = b->m[i].on;
	ret->gen = b->m[i].gen;
	ret->boot = b->m[i].boot;
	ret->image = NULL;
	ret->start_assisted = b->m[i].assist;
	ret->disk_user_data = NULL;
	ret->disk_meta_data = NULL;
	if (b->m[i].boot == BMC_BOOT_HDD && b->m[i].disk_configdrive) {
		const json_t *cd = b->m[i].disk_configdrive;
		const char *ud = json_string_value(json_object_get(cd, "user_data"));

		if (ud && !(ret->disk_user_data = strdup(ud)))
			r = -ENOMEM;
		if (json_is_object(json_object_get(cd, "meta_data")) &&
		    !(ret->disk_meta_data = json_dumps(json_object_get(cd, "meta_data"), JSON_COMPACT | JSON_SORT_KEYS)))
			r = -ENOMEM;
	}
	if (b->m[i].boot_image && !(ret->image = strdup(b->m[i].boot_image)))
		r = -ENOMEM;
	pthread_mutex_unlock(&b->lock);
	return r;
}

size_t bmc_take_changed(struct bmc *b, unsigned *ret_idx, size_t max)
{
	size_t k = 0;

	pthread_mutex_lock(&b->lock);
	while (k < max && b->rlen) {
		unsigned i = b->ring[b->rhead];
		b->rhead = (b->rhead + 1) % b->n;
		b->rlen--;
		b->m[i].changed = false;
		ret_idx[k++] = i;
	}
	pthread_mutex_unlock(&b->lock);
	return k;
}

void bmc_set_disk_installed(struct bmc *b, unsigned i, bool installed)
{
	if (i >= b->n)
		return;
	pthread_mutex_lock(&b->lock);
	b->m[i].disk_installed = installed;
	/* An install writes the whole disk: the image and config drive before it are gone. */
	free(b->m[i].disk_image);
	b->m[i].disk_image = NULL;
	json_decref(b->m[i].disk_configdrive);
	b->m[i].disk_configdrive = NULL;
	pthread_mutex_unlock(&b->lock);
}

/* ---- replies ---- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The body as JSON text; without it (out of memory) the answer is a bare 500. */
static void set_body(struct bmc_reply *r, json_t *j)
{
	r->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!r->body)
		r->status = 500;
}

/* A Redfish error: {"error": {"code", "message", "@Message.ExtendedInfo": [one Message]}}. */
static void error_reply(struct bmc_reply *r, unsigned status, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void error_reply(struct bmc_reply *r, unsigned status, const char *id, const char *fmt, ...)
{
	char msg[512], code[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(code, sizeof(code), REG "%s", id);
	set_body(r, json_pack("{s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:s}]}}", "error", "code",
			      status >= 500 ? REG "InternalError" : REG "GeneralError", "message",
			      "A general error has occurred. See ExtendedInfo for more information.",
			      "@Message.ExtendedInfo", "@odata.type", "#Message.v1_1_1.Message", "MessageId", code,
			      "Message", msg, "Severity", status >= 500 ? "Critical" : "Warning", "Resolution",
			      status == 401 ? "Send valid HTTP Basic credentials."
					    : "Correct the request and resubmit it."));
	if (r->body)
		r->status = status;
}

/* A resource: the body with its @odata.etag, and the same ETag in the header. */
static void resource_reply(struct bmc_reply *r, json_t *j)
{
	char *text;

	if (!j) {
		r->status = 500;
		return;
	}
	text = json_dumps(j, JSON_COMPACT);
	if (!text) {
		json_decref(j);
		r->status = 500;
		return;
	}
	snprintf(r->etag, sizeof(r->etag), "W/\"%016llx\"", (unsigned long long)fnv1a(text));
	free(text);
	json_object_set_new(j, "@odata.etag", json_string(r->etag));
	r->status = 200;
	set_body(r, j);
}

static json_t *link(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *link(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return json_pack("{s:s}", "@odata.id", buf);
}

/* ---- resources ---- */

static json_t *system_json(const struct machine *m)
{
	char target[200], self[128];

	snprintf(target, sizeof(target), ROOT "/Systems/%s/Actions/ComputerSystem.Reset", m->id);
	snprintf(self, sizeof(self), ROOT "/Systems/%s", m->id);
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:{s:s, s:s, s:s, s:o, s:o, s:o},"
		" s:{s:I, s:s}, s:{s:I}, s:{s:[o], s:[]}, s:o, s:o, s:{s:{s:s, s:o}}}",
		"@odata.type", "#ComputerSystem.v1_10_0.ComputerSystem", "@odata.id", self,
		"Id", m->id, "Name", m->name, "UUID", m->id, "HostName", m->name, "Manufacturer", "agenthub",
		"Model", "simulated machine", "SystemType", "Physical", "Status", "State", "Enabled", "Health", "OK",
		"PowerState", m->on ? "On" : "Off", "Boot", "BootSourceOverrideEnabled", m->enabled,
		"BootSourceOverrideTarget", m->target, "BootSourceOverrideMode", m->mode,
		"BootSourceOverrideTarget@Redfish.AllowableValues", list_json(TARGETS),
		"BootSourceOverrideEnabled@Redfish.AllowableValues", list_json(ENABLED),
		"BootSourceOverrideMode@Redfish.AllowableValues", list_json(MODES), "ProcessorSummary", "Count",
		(json_int_t)m->cpus, "Model", "simulated CPU", "MemorySummary", "TotalSystemMemoryGiB",
		(json_int_t)m->memory_gib, "Links", "ManagedBy", link(ROOT "/Managers/%s", m->id), "Chassis",
		"EthernetInterfaces", link(ROOT "/Systems/%s/EthernetInterfaces", m->id), "VirtualMedia",
		link(ROOT "/Systems/%s/VirtualMedia", m->id), "Actions", "#ComputerSystem.Reset", "target", target,
		"ResetType@Redfish.AllowableValues", list_json(RESETS));
}

static json_t *manager_json(const struct machine *m)
{
	char self[128];

	snprintf(self, sizeof(self), ROOT "/Managers/%s", m->id);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:o, s:{s:[o]}}", "@odata.type",
			 "#Manager.v1_5_0.Manager", "@odata.id", self, "Id", m->id,
			 "Name", "agenthub simulated BMC", "ManagerType", "BMC", "UUID", m->id, "Model",
			 "agenthub-bmc", "Status", "State", "Enabled", "Health", "OK", "PowerState", "On",
			 "VirtualMedia", link(ROOT "/Managers/%s/VirtualMedia", m->id), "Links",
			 "ManagerForServers", link(ROOT "/Systems/%s", m->id));
}

/* base: ROOT "/Managers/<id>" or ROOT "/Systems/<id>" (both name the same device). */
static json_t *vmedia_json(const struct machine *m, const char *base)
{
	const char *img = m->image, *slash = img ? strrchr(img, '/') : NULL;
	char ins[256], ej[256], self[200];

	snprintf(ins, sizeof(ins), "%s/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia", base);
	snprintf(ej, sizeof(ej), "%s/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia", base);
	snprintf(self, sizeof(self), "%s/VirtualMedia/Cd", base);
	return json_pack("{s:s, s:s, s:s, s:s, s:[s, s], s:o, s:s, s:b, s:b, s:s, s:o,"
			 " s:{s:{s:s}, s:{s:s}}}",
			 "@odata.type", "#VirtualMedia.v1_4_0.VirtualMedia", "@odata.id",
			 self, "Id", "Cd", "Name", "Virtual CD", "MediaTypes", "CD", "DVD",
			 "Image", img ? json_string(img) : json_null(), "ImageName", slash ? slash + 1 : "",
			 "Inserted", m->inserted, "WriteProtected", m->write_protected, "ConnectedVia",
			 m->inserted ? "URI" : "NotConnected", "TransferProtocolType",
			 !img ? json_null() : !strncmp(img, "https:", 6) ? json_string("HTTPS") : json_string("HTTP"),
			 "Actions", "#VirtualMedia.InsertMedia", "target", ins, "#VirtualMedia.EjectMedia", "target",
			 ej);
}

static json_t *collection(const char *type, const char *name, const char *self, json_t *members)
{
	return json_pack("{s:s, s:s, s:s, s:I, s:o}", "@odata.type", type, "@odata.id", self, "Name", name,
			 "Members@odata.count", (json_int_t)json_array_size(members), "Members", members);
}

/* ---- request parsing ---- */

static bool auth_ok(const struct bmc *b, const char *presented)
{
	size_t n = strlen(b->auth), pn = presented ? strlen(presented) : 0;
	unsigned char d = (unsigned char)(pn != n);

	/* Constant time in the expected value's length, whatever was presented. */
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(b->auth[i] ^ (i < pn ? presented[i] : 0));
	return d == 0;
}

/* The tag without W/ and quotes, so a weak and a strong form of one tag match. */
static void bare_tag(const char *t, char *out, size_t size)
{
	size_t n;

	while (*t == ' ')
		t++;
	if (!strncmp(t, "W/", 2))
		t += 2;
	if (*t == '"')
		t++;
	n = strcspn(t, "\"");
	snprintf(out, size, "%.*s", (int)n, t);
}

/* If-Match: absent, "*" or any listed tag equal to the resource's current one. */
static bool if_match_ok(const char *if_match, const char *etag)
{
	char want[32], have[64];
	const char *p = if_match;

	if (!if_match)
		return true;
	bare_tag(etag, want, sizeof(want));
	while (p && *p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '*')
			return true;
		bare_tag(p, have, sizeof(have));
		if (*have && !strcmp(have, want))
			return true;
		p = strchr(p, ',');
	}
	return false;
}

/* Parse the body as a JSON object; an empty body is {} when empty_ok.  NULL after
 * answering 400. */
static json_t *body_object(const struct bmc_request *q, struct bmc_reply *r, bool empty_ok)
{
	json_error_t je;
	json_t *j;
	size_t i = 0;

	while (i < q->len && (q->body[i] == ' ' || q->body[i] == '\n' || q->body[i] == '\r' || q->body[i] == '\t'))
		i++;
	if (i == q->len) {
		if (empty_ok)
			return json_object();
		error_reply(r, 400, "MalformedJSON",
			    "The request body submitted was malformed JSON and could not be parsed by the receiving "
			    "service: the body is empty.");
		return NULL;
	}
	j = json_loadb(q->body, q->len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		error_reply(r, 400, "MalformedJSON",
			    "The request body submitted was malformed JSON and could not be parsed by the receiving "
			    "service: %s (line %d, column %d).",
			    je.text, je.line, je.column);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		error_reply(r, 400, "MalformedJSON", "The request body must be a JSON object.");
		return NULL;
	}
	return j;
}

/* A string property that must be one of list; *ret untouched when absent.  False after
 * answering 400. */
static bool enum_prop(struct bmc_reply *r, const json_t *obj, const char *key, const char *path,
		      const char *const *list, const char **ret)
{
	const json_t *v = json_object_get(obj, key);
	const char *s;

	if (!v)
		return true;
	s = in_list(json_string_value(v), list);
	if (!s) {
		char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		char allowed[128] = "";
		for (const char *const *l = list; *l; l++)
			snprintf(allowed + strlen(allowed), sizeof(allowed) - strlen(allowed), "%s%s",
				 l == list ? "" : ", ", *l);
		error_reply(r, 400, "PropertyValueNotInList",
			    "The value %s for the property %s is not in the list of acceptable values (%s).",
			    t ? t : "?", path, allowed);
		free(t);
		return false;
	}
	*ret = s;
	return true;
}

static bool bool_prop(struct bmc_reply *r, const json_t *obj, const char *key, bool *ret)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return true;
	if (!json_is_boolean(v)) {
		error_reply(r, 400, "PropertyValueTypeError",
			    "The value for the property %s is of a different type than the property can accept "
			    "(want true or false).",
			    key);
		return false;
	}
	*ret = json_is_true(v);
	return true;
}

static bool only_keys(struct bmc_reply *r, const json_t *obj, const char *const *keys, const char *prefix,
		      bool action, const char *action_name)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		if (!in_list(k, keys)) {
			if (action)
				error_reply(r, 400, "ActionParameterUnknown",
					    "The action %s was submitted with the invalid parameter %s.", action_name, k);
			else
				error_reply(r, 400, !strcmp(k, "PowerState") || !strcmp(k, "Id") ? "PropertyNotWritable"
												  : "PropertyUnknown",
					    !strcmp(k, "PowerState") || !strcmp(k, "Id")
						    ? "The property %s%s is a read only property and cannot be assigned a "
						      "value (power is changed with ComputerSystem.Reset)."
						    : "The property %s%s is not in the list of valid properties for the "
						      "resource.",
					    prefix, k);
			return false;
		}
	}
	return true;
}

/* ---- handlers (lock held) ---- */

static void patch_system(struct machine *m, const struct bmc_request *q, struct bmc_reply *r)
{
	static const char *const top[] = { "Boot", NULL };
	static const char *const boot_keys[] = { "BootSourceOverrideTarget", "BootSourceOverrideEnabled",
						 "BootSourceOverrideMode", NULL };
	const char *target = NULL, *enabled = NULL, *mode = NULL;
	json_t *j = body_object(q, r, false), *boot;

	if (!j)
		return;
	boot = json_object_get(j, "Boot");
	if (!only_keys(r, j, top, "", false, NULL))
		goto out;
	if (boot && !json_is_object(boot)) {
		error_reply(r, 400, "PropertyValueTypeError", "The value for the property Boot must be an object.");
		goto out;
	}
	if (boot && (!only_keys(r, boot, boot_keys, "Boot/", false, NULL) ||
		     !enum_prop(r, boot, "BootSourceOverrideTarget", "Boot/BootSourceOverrideTarget", TARGETS, &target) ||
		     !enum_prop(r, boot, "BootSourceOverrideEnabled", "Boot/BootSourceOverrideEnabled", ENABLED, &enabled) ||
		     !enum_prop(r, boot, "BootSourceOverrideMode", "Boot/BootSourceOverrideMode", MODES, &mode)))
		goto out;
	if (target)
		m->target = target;
	if (enabled)
		m->enabled = enabled;
	if (mode)
		m->mode = mode;
	/* As BMCs do: a target alone on a disabled override arms it for the next boot, and
	 * target None disables it. */
	if (target && !enabled)
		m->enabled = strcmp(target, "None") ? (strcmp(m->enabled, "Disabled") ? m->enabled : "Once") : "Disabled";
	r->status = 204;
out:
	json_decref(j);
}

static void reset(struct bmc *b, struct machine *m, const struct bmc_request *q, struct bmc_reply *r)
{
	static const char *const keys[] = { "ResetType", NULL };
	const char *type = NULL;
	json_t *j = body_object(q, r, false);

	if (!j)
		return;
	if (!only_keys(r, j, keys, "", true, "ComputerSystem.Reset"))
		goto out;
	if (!json_object_get(j, "ResetType")) {
		error_reply(r, 400, "ActionParameterMissing",
			    "The action ComputerSystem.Reset requires the parameter ResetType to be present in the "
			    "request body.");
		goto out;
	}
	if (!enum_prop(r, j, "ResetType", "ResetType", RESETS, &type))
		goto out;
	if (!strcmp(type, "On")) {
		if (!m->on)
			power_on(b, m);
	} else if (!strcmp(type, "ForceOff") || !strcmp(type, "GracefulShutdown")) {
		if (m->on)
			power_off(b, m);
	} else {
		/* A restart of a machine that is off powers it on, as BMCs do. */
		power_on(b, m);
	}
	r->status = 204;
out:
	json_decref(j);
}

static bool image_url_ok(const char *u)
{
	if (!u || (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)))
		return false;
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return strlen(u) < 8192;
}

static void insert_media(struct machine *m, const struct bmc_request *q, struct bmc_reply *r)
{
	static const char *const keys[] = { "Image", "Inserted", "WriteProtected", "TransferProtocolType",
					    "TransferMethod", "UserName", "Password", NULL };
	static const char *const protos[] = { "HTTP", "HTTPS", NULL };
	static const char *const methods[] = { "Stream", "Upload", NULL };
	const char *proto = NULL, *method = NULL, *img;
	bool inserted = true, wp = true;
	char *copy;
	json_t *j = body_object(q, r, false);

	if (!j)
		return;
	if (!only_keys(r, j, keys, "", true, "VirtualMedia.InsertMedia"))
		goto out;
	if (!json_object_get(j, "Image")) {
		error_reply(r, 400, "ActionParameterMissing",
			    "The action VirtualMedia.InsertMedia requires the parameter Image to be present in the "
			    "request body.");
		goto out;
	}
	img = json_string_value(json_object_get(j, "Image"));
	if (!image_url_ok(img)) {
		error_reply(r, 400, "ActionParameterValueFormatError",
			    "The value for the parameter Image in the action VirtualMedia.InsertMedia is of a "
			    "different format than the parameter can accept: want an http:// or https:// URL.");
		goto out;
	}
	if (!bool_prop(r, j, "Inserted", &inserted) || !bool_prop(r, j, "WriteProtected", &wp) ||
	    !enum_prop(r, j, "TransferProtocolType", "TransferProtocolType", protos, &proto) ||
	    !enum_prop(r, j, "TransferMethod", "TransferMethod", methods, &method))
		goto out;
	if (!json_object_get(j, "UserName") != !json_object_get(j, "Password")) {
		error_reply(r, 400, "ActionParameterMissing",
			    "The action VirtualMedia.InsertMedia requires UserName and Password together.");
		goto out;
	}
	if (proto && strncasecmp(img, proto, strlen(proto))) {
		error_reply(r, 400, "ActionParameterValueConflict",
			    "The parameter TransferProtocolType %s conflicts with the scheme of Image.", proto);
		goto out;
	}
	copy = strdup(img);
	if (!copy) {
		r->status = 500;
		goto out;
	}
	/* Inserting over a mounted image replaces it, as sushy-tools does. */
	free(m->image);
	m->image = copy;
	m->inserted = inserted;
	m->write_protected = wp;
	r->status = 204;
out:
	json_decref(j);
}

static void eject_media(struct machine *m, const struct bmc_request *q, struct bmc_reply *r)
{
	static const char *const keys[] = { NULL };
	json_t *j = body_object(q, r, true);

	if (!j)
		return;
	if (only_keys(r, j, keys, "", true, "VirtualMedia.EjectMedia")) {
		free(m->image);
		m->image = NULL;
		m->inserted = false;
		m->write_protected = true;
		r->status = 204;
	}
	json_decref(j);
}

/* PATCH of the virtual media resource: sushy's fallback when the actions are missing. */
static void patch_media(struct machine *m, const struct bmc_request *q, struct bmc_reply *r)
{
	static const char *const keys[] = { "Image", "Inserted", "WriteProtected", NULL };
	json_t *j = body_object(q, r, false), *img;
	bool inserted, wp = m->write_protected;

	if (!j)
		return;
	if (!only_keys(r, j, keys, "", false, NULL))
		goto out;
	img = json_object_get(j, "Image");
	if (img && !json_is_null(img) && !image_url_ok(json_string_value(img))) {
		error_reply(r, 400, "PropertyValueFormatError",
			    "The value for the property Image is of a different format than the property can accept: "
			    "want an http:// or https:// URL or null.");
		goto out;
	}
	inserted = img ? !json_is_null(img) : m->inserted;
	if (!bool_prop(r, j, "Inserted", &inserted) || !bool_prop(r, j, "WriteProtected", &wp))
		goto out;
	if (img) {
		char *copy = json_is_null(img) ? NULL : strdup(json_string_value(img));
		if (!json_is_null(img) && !copy) {
			r->status = 500;
			goto out;
		}
		free(m->image);
		m->image = copy;
	}
	m->inserted = inserted && m->image;
	m->write_protected = wp;
	r->status = 204;
out:
	json_decref(j);
}

/* ---- the ironic agent's API (converged flow) ---- */

void bmc_ipa_begin(struct bmc *b, unsigned i, unsigned gen, const char *agent_token)
{
	struct machine *m;

	if (i >= b->n)
		return;
	pthread_mutex_lock(&b->lock);
	m = &b->m[i];
	if (m->on && m->gen == gen) {
		ipa_reset(m);
		m->ipa = true;
		m->ipa_token = agent_token && *agent_token ? strdup(agent_token) : NULL;
		m->cmds = json_array();
	}
	pthread_mutex_unlock(&b->lock);
}

void bmc_ipa_step_done(struct bmc *b, unsigned i, unsigned gen, bool ok, const char *error)
{
	struct machine *m;
	json_t *c;
	size_t k;

	if (i >= b->n)
		return;
	pthread_mutex_lock(&b->lock);
	m = &b->m[i];
	if (m->ipa && m->gen == gen && m->assist_id[0]) {
		m->assist_running = false;
		json_array_foreach(m->cmds, k, c) {
			if (strcmp(json_string_value(json_object_get(c, "id")) ?: "", m->assist_id))
				continue;
			json_object_set_new(c, "command_status", json_string(ok ? "SUCCEEDED" : "FAILED"));
			json_object_set_new(c, "command_error",
					    ok ? json_null()
					       : json_pack("{s:s, s:i, s:s, s:s}", "type", "DeploymentError", "code", 500,
							   "message", "Deploy step failed", "details", error ? error : ""));
			json_object_set_new(c, "command_result",
					    ok ? json_pack("{s:{s:s, s:s, s:i}}", "deploy_result", "step",
							   "start_assisted_install", "interface", "deploy", "priority", 80)
					       : json_null());
		}
	}
	pthread_mutex_unlock(&b->lock);
}

static void ipa_error(struct bmc_reply *r, unsigned status, const char *type, const char *msg, const char *details)
{
	r->status = status;
	set_body(r, json_pack("{s:s, s:i, s:s, s:s}", "type", type, "code", (int)status, "message", msg, "details",
			      details));
}

/* Record a command (dropping the oldest past the bound); returns it (borrowed). */
static json_t *ipa_record(struct machine *m, const char *name, json_t *params, const char *status,
			  json_t *result)
{
	char id[37];
	json_t *c;

	if (util_uuid4(id, sizeof(id)) < 0)
		return NULL;
	c = json_pack("{s:s, s:s, s:o, s:s, s:n, s:o}", "id", id, "command_name", name, "command_params",
		      params ? json_incref(params) : json_object(), "command_status", status, "command_error",
		      "command_result", result ? result : json_null());
	if (!c)
		return NULL;
	while (json_array_size(m->cmds) >= IPA_MAX_COMMANDS)
		json_array_remove(m->cmds, 0);
	json_array_append_new(m->cmds, c);
	return c;
}

/* /ipa/<id>/v1/commands[/<cid>]: the machine's ironic agent, while it runs one. */
static void ipa_handle(struct bmc *b, struct machine *m, const char *rest, const struct bmc_request *q,
		       struct bmc_reply *r)
{
	json_t *j, *params, *c = NULL;
	const char *name, *dot;

	if (!m->ipa) {
		ipa_error(r, 503, "AgentNotRunning", "The ironic agent is not running on this machine",
			  "it runs only on a boot from an image with the ironic agent's configuration");
		return;
	}
	if (m->ipa_token && (!q->agent_token || strcmp(q->agent_token, m->ipa_token))) {
		ipa_error(r, 401, "Unauthorized", "Unauthorized", "a valid agent_token is required");
		return;
	}
	if (!strcmp(rest, "") || !strcmp(rest, "/v1")) {
		if (!method_is(q->method, "GET")) {
			wrong_method(r, "GET, HEAD", q->method);
			return;
		}
		r->status = 200;
		set_body(r, json_pack("{s:s, s:s, s:[{s:s}]}", "name", "OpenStack Ironic Python Agent API",
				      "description", "agenthub simulated ironic agent", "versions", "id", "v1"));
		return;
	}
	if (!strncmp(rest, "/v1/commands/", 13) && rest[13]) {
		size_t k;
		json_t *x;
		if (!method_is(q->method, "GET")) {
			wrong_method(r, "GET, HEAD", q->method);
			return;
		}
		json_array_foreach(m->cmds, k, x)
			if (!strcmp(json_string_value(json_object_get(x, "id")) ?: "", rest + 13))
				c = x;
		if (!c) {
			ipa_error(r, 404, "RequestedObjectNotFoundError", "Command not found", rest + 13);
			return;
		}
		r->status = 200;
		set_body(r, json_incref(c));
		return;
	}
	if (strcmp(rest, "/v1/commands") && strcmp(rest, "/v1/commands/")) { /* Ironic's client adds the slash */
		ipa_error(r, 404, "NotFound", "Not found", rest);
		return;
	}
	if (method_is(q->method, "GET")) {
		r->status = 200;
		set_body(r, json_pack("{s:O}", "commands", m->cmds));
		return;
	}
	if (strcmp(q->method, "POST")) {
		wrong_method(r, "GET, HEAD, POST", q->method);
		return;
	}
	if (!(j = body_object(q, r, false)))
		return;
	name = json_string_value(json_object_get(j, "name"));
	params = json_object_get(j, "params");
	if (!name || !(dot = strchr(name, '.')) || (params && !json_is_object(params))) {
		ipa_error(r, 400, "InvalidContentError", "Invalid request body",
			  "want {\"name\": \"<extension>.<command>\", \"params\": {...}}");
		goto out;
	}
	if (!strcmp(name, "deploy.get_deploy_steps")) {
		c = ipa_record(m, dot + 1, params, "SUCCEEDED",
			       json_pack("{s:{s:[{s:s, s:i, s:s, s:b, s:{}}, {s:s, s:i, s:s, s:b, s:{}}]}, s:{s:s}}",
					 "deploy_steps", "CoreOSInstallHardwareManager", "step", "install_coreos",
					 "priority", 0, "interface", "deploy", "reboot_requested", 0, "argsinfo", "step",
					 "start_assisted_install", "priority", 0, "interface", "deploy",
					 "reboot_requested", 0, "argsinfo", "hardware_manager_version",
					 "CoreOSInstallHardwareManager", "1"));
	} else if (!strcmp(name, "deploy.execute_deploy_step")) {
		const char *step = json_string_value(json_object_get(json_object_get(params, "step"), "step"));
		if (m->assist_running || (m->assist && step && !strcmp(step, "start_assisted_install"))) {
			/* One assisted agent per boot: a second start is refused too. */
			ipa_error(r, 409, "AgentIsBusy", "Agent is busy",
				  m->assist_running ? "start_assisted_install is running"
						    : "start_assisted_install already ran in this boot");
			goto out;
		}
		if (step && !strcmp(step, "write_image")) {
			/* Ironic's direct deploy: the image goes on the disk with its config
			 * drive.  The image URL is recorded, not fetched. */
			const json_t *args = json_object_get(json_object_get(params, "step"), "args");
			const json_t *info = json_object_get(args, "image_info");
			const char *url = json_string_value(json_array_get(json_object_get(info, "urls"), 0));
			const json_t *cd = json_object_get(args, "configdrive");

			if (!url || !*url || (cd && !json_is_object(cd))) {
				c = ipa_record(m, dot + 1, params, "FAILED", NULL);
				if (c)
					json_object_set_new(c, "command_error",
							    json_pack("{s:s, s:i, s:s, s:s}", "type", "InvalidCommandParamsError",
								      "code", 400, "message", "Invalid image_info",
								      "details", !url || !*url ? "image_info.urls is empty"
											       : "configdrive is not an object"));
			} else {
				char *u = strdup(url);

				c = u ? ipa_record(m, dot + 1, params, "SUCCEEDED",
						   json_pack("{s:{s:s, s:s, s:i}}", "deploy_result", "step", "write_image",
							     "interface", "deploy", "priority", 80))
				      : NULL;
				if (c) {
					free(m->disk_image);
					m->disk_image = u;
					json_decref(m->disk_configdrive);
					m->disk_configdrive = cd ? json_deep_copy(cd) : NULL;
					m->disk_installed = true;
				} else {
					free(u);
				}
			}
		} else if (step && !strcmp(step, "start_assisted_install")) {
			c = ipa_record(m, dot + 1, params, "RUNNING", NULL);
			if (c) {
				m->assist = m->assist_running = true;
				snprintf(m->assist_id, sizeof(m->assist_id), "%s",
					 json_string_value(json_object_get(c, "id")));
				mark_changed(b, m);
				if (b->wake)
					b->wake(b->wake_arg);
			}
		} else {
			c = ipa_record(m, dot + 1, params, "FAILED", NULL);
			if (c)
				json_object_set_new(c, "command_error",
						    json_pack("{s:s, s:i, s:s, s:s}", "type", "InvalidCommandParamsError",
							      "code", 400, "message", "Unknown deploy step", "details",
							      step ? step : "(no params.step.step)"));
		}
	} else if (!strcmp(name, "clean.execute_clean_step")) {
		/* erase_devices_metadata (Ironic's metadata cleaning) or erase_devices: the disk
		 * no longer holds a bootable system. */
		const char *step = json_string_value(json_object_get(json_object_get(params, "step"), "step"));

		if (step && (!strcmp(step, "erase_devices_metadata") || !strcmp(step, "erase_devices"))) {
			c = ipa_record(m, dot + 1, params, "SUCCEEDED",
				       json_pack("{s:{s:s, s:s}}", "clean_result", "step", step, "interface", "deploy"));
			if (c) {
				m->disk_installed = false;
				free(m->disk_image);
				m->disk_image = NULL;
				json_decref(m->disk_configdrive);
				m->disk_configdrive = NULL;
			}
		} else {
			c = ipa_record(m, dot + 1, params, "FAILED", NULL);
			if (c)
				json_object_set_new(c, "command_error",
						    json_pack("{s:s, s:i, s:s, s:s}", "type", "InvalidCommandParamsError",
							      "code", 400, "message", "Unknown clean step", "details",
							      step ? step : "(no params.step.step)"));
		}
	} else if (!strcmp(name, "standby.power_off")) {
		/* The agent shuts its machine down; the BMC sees it off. */
		c = ipa_record(m, dot + 1, params, "SUCCEEDED", NULL);
		if (c) {
			c = json_incref(c);
			power_off(b, m);
			r->status = 200;
			set_body(r, c);
			if (b->wake)
				b->wake(b->wake_arg);
			goto out;
		}
	} else if (!strcmp(name, "standby.sync") || !strcmp(name, "standby.get_partition_uuids") ||
		   !strcmp(name, "log.collect_system_logs")) {
		c = ipa_record(m, dot + 1, params, "SUCCEEDED", json_object());
	} else {
		ipa_error(r, 400, "InvalidCommandError", "Invalid command", name);
		goto out;
	}
	if (!c) {
		r->status = 500;
		goto out;
	}
	r->status = 200;
	set_body(r, json_incref(c));
out:
	json_decref(j);
}

/* ---- routing ---- */

enum res { R_NONE, R_SYSTEM, R_RESET, R_NICS, R_NIC, R_MGR, R_VMS, R_VM, R_INSERT, R_EJECT };

/* Split "<id>/rest" after a prefix: the machine and the resource named by rest. */
static enum res route_machine(struct bmc *b, const char *p, bool mgr, struct machine **ret)
{
	size_t idl = strcspn(p, "/");
	const char *rest = p + idl;

	*ret = NULL;
	for (unsigned i = 0; i < b->n; i++)
		if (strlen(b->m[i].id) == idl && !strncmp(b->m[i].id, p, idl))
			*ret = &b->m[i];
	if (!*ret)
		return R_NONE;
	if (!*rest)
		return mgr ? R_MGR : R_SYSTEM;
	if (!mgr && !strcmp(rest, "/Actions/ComputerSystem.Reset"))
		return R_RESET;
	if (!mgr && !strcmp(rest, "/EthernetInterfaces"))
		return R_NICS;
	if (!mgr && !strcmp(rest, "/EthernetInterfaces/nic0"))
		return R_NIC;
	if (!strcmp(rest, "/VirtualMedia"))
		return R_VMS;
	if (!strcmp(rest, "/VirtualMedia/Cd"))
		return R_VM;
	if (!strcmp(rest, "/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"))
		return R_INSERT;
	if (!strcmp(rest, "/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia"))
		return R_EJECT;
	return R_NONE;
}

static json_t *members(struct bmc *b, const char *fmt)
{
	json_t *a = json_array();
	char buf[128];

	for (unsigned i = 0; a && i < b->n; i++) {
		snprintf(buf, sizeof(buf), fmt, b->m[i].id);
		json_array_append_new(a, json_pack("{s:s}", "@odata.id", buf));
	}
	return a;
}

static void not_found(struct bmc_reply *r, const char *path)
{
	error_reply(r, 404, "ResourceMissingAtURI", "The resource at the URI %.300s was not found.", path);
}

static bool method_is(const char *m, const char *want)
{
	return !strcmp(m, want) || (!strcmp(want, "GET") && !strcmp(m, "HEAD"));
}

static void wrong_method(struct bmc_reply *r, const char *allow, const char *method)
{
	r->allow = allow;
	error_reply(r, 405, "OperationNotAllowed", "The method %.16s is not allowed on this resource (allowed: %s).",
		    method, allow);
}

void bmc_handle(struct bmc *b, const struct bmc_request *q, struct bmc_reply *r)
{
	char path[512];
	size_t pl;
	const char *p;
	struct machine *m = NULL;
	enum res res;
	unsigned gen_before = 0;

	memset(r, 0, sizeof(*r));
	pl = strlen(q->path);
	if (pl >= sizeof(path)) {
		not_found(r, "(a path too long)");
		return;
	}
	memcpy(path, q->path, pl + 1);
	while (pl > 1 && path[pl - 1] == '/')
		path[--pl] = '\0';
	if (q->too_big) {
		error_reply(r, 413, "PayloadTooLarge", "The request body is too large.");
		return;
	}
	/* The service root is readable without credentials (Redfish DSP0266). */
	if (!strcmp(path, "/redfish") || !strcmp(path, ROOT)) {
		if (!method_is(q->method, "GET")) {
			wrong_method(r, "GET, HEAD", q->method);
			return;
		}
		if (!strcmp(path, "/redfish")) {
			r->status = 200;
			set_body(r, json_pack("{s:s}", "v1", ROOT "/"));
			return;
		}
		resource_reply(r, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:{}}", "@odata.type",
					    "#ServiceRoot.v1_5_0.ServiceRoot", "@odata.id", ROOT "/", "Id",
					    "RootService", "Name", "agenthub simulated Redfish service", "RedfishVersion",
					    "1.8.0", "UUID", "5f0c0a94-6b1e-4a8a-9d5e-a9c3b1d0e001", "Product",
					    "agenthub-agent simulate --bmc", "Systems", link(ROOT "/Systems"), "Managers",
					    link(ROOT "/Managers"), "Links"));
		return;
	}
	if (!strncmp(path, "/ipa/", 5)) {
		const char *id = path + 5;
		size_t idl = strcspn(id, "/");
		pthread_mutex_lock(&b->lock);
		for (unsigned i = 0; i < b->n; i++)
			if (strlen(b->m[i].id) == idl && !strncmp(b->m[i].id, id, idl))
				m = &b->m[i];
		if (!m)
			ipa_error(r, 404, "NotFound", "No such machine", "");
		else
			ipa_handle(b, m, id + idl, q, r);
		pthread_mutex_unlock(&b->lock);
		if (!strcmp(q->method, "HEAD")) {
			free(r->body);
			r->body = NULL;
		}
		return;
	}
	if (!auth_ok(b, q->authorization)) {
		r->authenticate = true;
		error_reply(r, 401, "NoValidSession",
			    "There is no valid session established with the implementation: the HTTP Basic "
			    "credentials are missing or wrong.");
		return;
	}
	pthread_mutex_lock(&b->lock);
	if (!strcmp(path, ROOT "/Systems") || !strcmp(path, ROOT "/Managers")) {
		bool sys = !strcmp(path, ROOT "/Systems");
		if (!method_is(q->method, "GET"))
			wrong_method(r, "GET, HEAD", q->method);
		else
			resource_reply(r, collection(sys ? "#ComputerSystemCollection.ComputerSystemCollection"
							 : "#ManagerCollection.ManagerCollection",
						     sys ? "Computer System Collection" : "Manager Collection",
						     path,
						     members(b, sys ? ROOT "/Systems/%s" : ROOT "/Managers/%s")));
		goto out;
	}
	if (!strncmp(path, ROOT "/Systems/", sizeof(ROOT "/Systems/") - 1)) {
		p = path + sizeof(ROOT "/Systems/") - 1;
		res = route_machine(b, p, false, &m);
	} else if (!strncmp(path, ROOT "/Managers/", sizeof(ROOT "/Managers/") - 1)) {
		p = path + sizeof(ROOT "/Managers/") - 1;
		res = route_machine(b, p, true, &m);
	} else {
		res = R_NONE;
	}
	if (res == R_NONE) {
		not_found(r, path);
		goto out;
	}
	gen_before = m->gen;
	switch (res) {
	case R_SYSTEM:
		if (method_is(q->method, "GET")) {
			resource_reply(r, system_json(m));
		} else if (!strcmp(q->method, "PATCH")) {
			struct bmc_reply cur = { 0 };
			resource_reply(&cur, system_json(m));
			if (cur.status != 200)
				r->status = 500;
			else if (!if_match_ok(q->if_match, cur.etag))
				error_reply(r, 412, "PreconditionFailed",
					    "The ETag supplied did not match the ETag required to change this resource.");
			else
				patch_system(m, q, r);
			bmc_reply_release(&cur);
		} else {
			wrong_method(r, "GET, HEAD, PATCH", q->method);
		}
		break;
	case R_VM:
		if (method_is(q->method, "GET")) {
			char base[128];
			snprintf(base, sizeof(base), "%.*s", (int)(strstr(path, "/VirtualMedia") - path), path);
			resource_reply(r, vmedia_json(m, base));
		} else if (!strcmp(q->method, "PATCH")) {
			char base[128];
			struct bmc_reply cur = { 0 };
			snprintf(base, sizeof(base), "%.*s", (int)(strstr(path, "/VirtualMedia") - path), path);
			resource_reply(&cur, vmedia_json(m, base));
			if (cur.status != 200)
				r->status = 500;
			else if (!if_match_ok(q->if_match, cur.etag))
				error_reply(r, 412, "PreconditionFailed",
					    "The ETag supplied did not match the ETag required to change this resource.");
			else
				patch_media(m, q, r);
			bmc_reply_release(&cur);
		} else {
			wrong_method(r, "GET, HEAD, PATCH", q->method);
		}
		break;
	case R_RESET:
	case R_INSERT:
	case R_EJECT:
		if (strcmp(q->method, "POST"))
			wrong_method(r, "POST", q->method);
		else if (res == R_RESET)
			reset(b, m, q, r);
		else if (res == R_INSERT)
			insert_media(m, q, r);
		else
			eject_media(m, q, r);
		break;
	case R_MGR:
	case R_VMS:
	case R_NICS:
	case R_NIC:
		if (!method_is(q->method, "GET")) {
			wrong_method(r, "GET, HEAD", q->method);
		} else if (res == R_MGR) {
			resource_reply(r, manager_json(m));
		} else if (res == R_VMS) {
			json_t *mem = json_array();
			json_array_append_new(mem, link("%s/Cd", path));
			resource_reply(r, collection("#VirtualMediaCollection.VirtualMediaCollection",
						     "Virtual Media Collection", path, mem));
		} else if (res == R_NICS) {
			json_t *mem = json_array();
			json_array_append_new(mem, link("%s/nic0", path));
			resource_reply(r, collection("#EthernetInterfaceCollection.EthernetInterfaceCollection",
						     "Ethernet Interface Collection", path, mem));
		} else {
			resource_reply(r, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:{s:s, s:s}}", "@odata.type",
						    "#EthernetInterface.v1_4_0.EthernetInterface", "@odata.id",
						    path, "Id", "nic0", "Name", "boot NIC", "MACAddress",
						    m->mac, "PermanentMACAddress", m->mac, "SpeedMbps", (json_int_t)10000,
						    "Status", "State", "Enabled", "Health", "OK"));
		}
		break;
	case R_NONE:
		break;
	}
	/* Under the lock, so bmc_set_wake(NULL) is a barrier: no wake after it returns. */
	if (m && m->gen != gen_before && b->wake)
		b->wake(b->wake_arg);
out:
	pthread_mutex_unlock(&b->lock);
	if (!strcmp(q->method, "HEAD")) {
		free(r->body);
		r->body = NULL;
	}
}

void bmc_reply_release(struct bmc_reply *r)
{
	free(r->body);
	r->body = NULL;
}

/* ---- manifests ---- */

int bmc_write_manifests(const struct bmc *b, FILE *f, const char *address, bool tls, const char *ns,
			const char *infraenv)
{
	char *user64, *pass64;
	const char *up = b->auth + 6; /* "Basic " + base64(user:password) */
	unsigned char *dec = NULL;
	size_t dlen = 0;
	char *colon;
	int r = 0;

	if (util_base64_decode(up, strlen(up), &dec, &dlen) < 0)
		return -EIO;
	colon = memchr(dec, ':', dlen);
	if (!colon) {
		free(dec);
		return -EIO;
	}
	user64 = util_base64_encode(dec, (size_t)(colon - (char *)dec));
	pass64 = util_base64_encode(colon + 1, dlen - (size_t)(colon + 1 - (char *)dec));
	explicit_bzero(dec, dlen);
	free(dec);
	if (!user64 || !pass64) {
		free(user64);
		free(pass64);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < b->n; i++) {
		const struct machine *m = &b->m[i];
		fprintf(f,
			"---\n"
			"apiVersion: v1\n"
			"kind: Secret\n"
			"metadata:\n"
			"  name: %s-bmc-secret\n"
			"  namespace: %s\n"
			"type: Opaque\n"
			"data:\n"
			"  username: %s\n"
			"  password: %s\n"
			"---\n"
			"apiVersion: metal3.io/v1alpha1\n"
			"kind: BareMetalHost\n"
			"metadata:\n"
			"  name: %s\n"
			"  namespace: %s\n"
			"  annotations:\n"
			"    inspect.metal3.io: disabled\n",
			m->name, ns, user64, pass64, m->name, ns);
		if (infraenv)
			fprintf(f, "  labels:\n    infraenvs.agent-install.openshift.io: \"%s\"\n", infraenv);
		fprintf(f,
			"spec:\n"
			"  online: true\n"
			"  bootMACAddress: \"%s\"\n"
			"  bootMode: UEFI\n"
			"  automatedCleaningMode: disabled\n"
			"  bmc:\n"
			"    address: %s://%s/redfish/v1/Systems/%s\n"
			"    credentialsName: %s-bmc-secret\n",
			m->mac, tls ? "redfish-virtualmedia" : "redfish-virtualmedia+http", address, m->id, m->name);
		if (tls)
			fprintf(f, "    disableCertificateVerification: true\n");
	}
	explicit_bzero(pass64, strlen(pass64));
	free(user64);
	free(pass64);
	if (fflush(f) != 0 || ferror(f))
		r = -EIO;
	return r;
}
