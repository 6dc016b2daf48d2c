/* capoa.c - see capoa.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/capoa.h"

static int parse_num(const char **p, long *ret)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v < 0 || end - *p > 9)
		return -EINVAL;
	*ret = v;
	*p = end;
	return 0;
}

static int copy_part(const char *s, size_t n, char *buf, size_t size)
{
	size_t i;

	if (n == 0 || n >= size)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.')
			return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

int capoa_parse_version(const char *s, struct capoa_version *ret)
{
	const char *p = s, *plus;

	memset(ret, 0, sizeof(*ret));
	if (!s)
		return -EINVAL;
	if (*p == 'v' || *p == 'V')
		p++;
	if (parse_num(&p, &ret->major) < 0)
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (parse_num(&p, &ret->minor) < 0)
			return -EINVAL;
		if (*p == '.') {
			p++;
			if (parse_num(&p, &ret->patch) < 0)
				return -EINVAL;
		}
	}
	plus = strchr(p, '+');
	if (*p == '-') {
		size_t n = plus ? (size_t)(plus - p - 1) : strlen(p + 1);

		if (copy_part(p + 1, n, ret->pre, sizeof(ret->pre)) < 0)
			return -EINVAL;
		p += 1 + n;
	}
	if (*p == '+') {
		if (copy_part(p + 1, strlen(p + 1), ret->build, sizeof(ret->build)) < 0)
			return -EINVAL;
		p += strlen(p);
	}
	return *p ? -EINVAL : 0;
}

bool capoa_version_supported(const char *s)
{
	struct capoa_version v;

	if (capoa_parse_version(s, &v) < 0)
		return true;
	/* A prerelease of 4.14.0 is below 4.14.0, as semver orders them. */
	if (v.major != 4)
		return v.major > 4;
	if (v.minor != 14)
		return v.minor > 14;
	return v.patch > 0 || !v.pre[0];
}

bool capoa_is_okd(const struct capoa_version *v)
{
	return strncmp(v->pre, "okd-scos", 8) == 0;
}

char *capoa_release_image(const char *version, const char *arch, const char *override)
{
	struct capoa_version v;
	char *out = NULL;
	int n;

	if (!arch || !*arch)
		arch = "multi";
	if (override && *override)
		n = asprintf(&out, "%s:%s-%s", override, version, arch);
	else if (capoa_parse_version(version, &v) == 0 && capoa_is_okd(&v))
		n = asprintf(&out, "quay.io/okd/scos-release:%s", version);
	else
		n = asprintf(&out, "quay.io/openshift-release-dev/ocp-release:%s-%s", version, arch);
	return n < 0 ? NULL : out;
}

/* OpenShift minor → its Kubernetes minor (the releases' notes). */
static const struct {
	long minor;
	const char *kube;
} kube_table[] = {
	{ 14, "1.27" }, { 15, "1.28" }, { 16, "1.29" }, { 17, "1.30" },
	{ 18, "1.31" }, { 19, "1.32" }, { 20, "1.33" },
};

const char *capoa_kube_version(long major, long minor)
{
	size_t i;

	if (major != 4)
		return NULL;
	for (i = 0; i < sizeof(kube_table) / sizeof(kube_table[0]); i++)
		if (kube_table[i].minor == minor)
			return kube_table[i].kube;
	return NULL;
}

static bool baseline_valid(const char *b)
{
	const char *p;

	if (!strcmp(b, "None") || !strcmp(b, "vCurrent"))
		return true;
	if (strncmp(b, "v4.", 3) != 0 || !b[3])
		return false;
	for (p = b + 3; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

static void append_unique(json_t *arr, const char *s)
{
	json_t *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (!strcmp(json_string_value(e), s))
			return;
	json_array_append_new(arr, json_string(s));
}

int capoa_install_config_override(const json_t *capabilities, bool baremetal, const char *user,
				  char **ret, char *why, size_t why_size)
{
	static const char *const seeds[] = { "baremetal", "Console", "Insights", "OperatorLifecycleManager",
					     "Ingress", "marketplace", "NodeTuning", "DeploymentConfig" };
	const char *baseline = json_string_value(json_object_get(capabilities, "baselineCapability"));
	const json_t *extra = json_object_get(capabilities, "additionalEnabledCapabilities"), *e;
	json_t *out = NULL, *caps, *list;
	size_t i;
	bool empty = (!baseline || !*baseline) && json_array_size(extra) == 0;

	*ret = NULL;
	if (user && *user) {
		json_error_t jerr;

		out = json_loads(user, 0, &jerr);
		if (!json_is_object(out)) {
			snprintf(why, why_size, "annotation controlplane.cluster.x-k8s.io/install-config-override: "
				 "not a JSON object");
			json_decref(out);
			return -EINVAL;
		}
	}
	if (!(empty && !baremetal)) {
		if (baseline && *baseline && !baseline_valid(baseline)) {
			snprintf(why, why_size, "spec.config.capabilities.baselineCapability: invalid value \"%s\": "
				 "must be None, vCurrent or v4.<minor>", baseline);
			json_decref(out);
			return -EINVAL;
		}
		if (!baseline || !*baseline)
			baseline = baremetal ? "None" : "vCurrent";
		list = json_array();
		if (baremetal)
			for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
				append_unique(list, seeds[i]);
		json_array_foreach(extra, i, e)
			if (json_string_value(e) && *json_string_value(e) &&
			    !(baremetal && !strcmp(json_string_value(e), "MachineAPI")))
				append_unique(list, json_string_value(e));
		caps = json_pack("{s:s,s:o}", "baselineCapabilitySet", baseline, "additionalEnabledCapabilities", list);
		if (!out)
			out = json_object();
		json_object_set_new(out, "capabilities", caps);
	}
	if (!out)
		return 0;
	*ret = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(out);
	return *ret ? 0 : -ENOMEM;
}
