/* capoa-ignition.c - the installed-node Ignition of the CAPOA bootstrap
 * provider (bmac-capi.md §C.6); see capoa-ignition.h.
 *
 * Every file is owned by root, overwrite true, its contents a base64 data
 * URL; scripts are mode 493 (0755), the bootstrap command scripts 0700.
 * User values reach the scripts only as data: variable names are checked
 * against the variable-name rule, static label keys/values against the
 * Kubernetes label characters, and a static provider ID is single-quoted. */
#include "image/capoa-ignition.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "image/ignition.h"

#define MODE_SCRIPT 493 /* 0755 */
#define MODE_PRIVATE 448 /* 0700 */
#define SCRIPT_MAX (256 * 1024)

/* --- a growing text -------------------------------------------------------- */

struct text {
	char *s;
	size_t len, cap;
	bool oom;
};

static void tput(struct text *t, const char *s)
{
	size_t n = strlen(s);

	if (t->oom)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *p;

		while (t->len + n + 1 > cap)
			cap *= 2;
		p = realloc(t->s, cap);
		if (!p) {
			t->oom = true;
			return;
		}
		t->s = p;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n + 1);
	t->len += n;
}

static void tprintf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->oom = true;
		return;
	}
	tput(t, s);
	free(s);
}

/* --- checks ---------------------------------------------------------------- */

bool capoa_var_name_valid(const char *s)
{
	const char *p;

	if (!s || !*s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (p = s + 1; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

/* "$VAR" or "${VAR}" → 1 with the name in buf; a static value → 0; a bad
 * variable name → -EINVAL. */
static int var_ref(const char *v, char *buf, size_t size)
{
	size_t n;

	if (!v || v[0] != '$')
		return 0;
	v++;
	if (*v == '{')
		v++;
	n = strlen(v);
	if (n && v[n - 1] == '}')
		n--;
	if (n == 0 || n >= size)
		return -EINVAL;
	memcpy(buf, v, n);
	buf[n] = 0;
	return capoa_var_name_valid(buf) ? 1 : -EINVAL;
}

static bool label_chars(const char *s, bool key)
{
	const char *p;

	for (p = s; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '-' || *p == '_' || (key && *p == '/')))
			return false;
	return true;
}

static bool abs_path_ok(const char *s)
{
	const char *p;

	if (!s || s[0] != '/' || !s[1])
		return false;
	for (p = s; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '.' || *p == '/' || *p == '-'))
			return false;
	return true;
}

static const char *sval(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool set(const char *s)
{
	return s && *s;
}

void capoa_node_opts_from_spec(const json_t *spec, struct capoa_node_opts *o)
{
	const json_t *nr = json_object_get(spec, "nodeRegistration");

	memset(o, 0, sizeof(*o));
	o->node_name = sval(nr, "name");
	o->kubelet_labels = json_object_get(nr, "kubeletExtraLabels");
	o->provider_id = sval(nr, "providerID");
	o->pre_commands = json_object_get(spec, "preBootstrapCommands");
	o->post_commands = json_object_get(spec, "postBootstrapCommands");
	o->sentinel_dir = sval(spec, "bootstrapCommandSentinelDir");
	o->kubeconfig_path = sval(spec, "postBootstrapKubeconfigPath");
}

static int check_opts(const struct capoa_node_opts *o, ah_err *err)
{
	char var[256];
	const json_t *v;
	size_t i;

	if (set(o->node_name) && var_ref(o->node_name[0] == '$' ? o->node_name : "$", var, sizeof(var)) != 1)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "spec.nodeRegistration.name: %s is not a variable reference ($VAR or ${VAR}) whose "
				  "name matches ^[A-Za-z_][A-Za-z0-9_]*$",
				  o->node_name);
	if (o->kubelet_labels && !json_is_array(o->kubelet_labels))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "spec.nodeRegistration.kubeletExtraLabels: must be a list of strings");
	json_array_foreach(o->kubelet_labels, i, v) {
		const char *l = json_string_value(v), *eq = l ? strchr(l, '=') : NULL;
		char key[320];
		int r;

		if (!l)
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "spec.nodeRegistration.kubeletExtraLabels[%zu]: must be a string", i);
		if (!eq)
			continue; /* not k=v: skipped, as upstream */
		if ((size_t)(eq - l) >= sizeof(key) || eq == l)
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "spec.nodeRegistration.kubeletExtraLabels[%zu]: bad label key", i);
		memcpy(key, l, (size_t)(eq - l));
		key[eq - l] = 0;
		if (!label_chars(key, true))
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "spec.nodeRegistration.kubeletExtraLabels[%zu]: label key %s has characters "
					  "other than letters, digits, '.', '-', '_' and '/'",
					  i, key);
		r = var_ref(eq + 1, var, sizeof(var));
		if (r < 0)
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "spec.nodeRegistration.kubeletExtraLabels[%zu]: in label %s: invalid variable "
					  "name: must match ^[A-Za-z_][A-Za-z0-9_]*$",
					  i, key);
		if (r == 0 && !label_chars(eq + 1, false))
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "spec.nodeRegistration.kubeletExtraLabels[%zu]: value of label %s has characters "
					  "other than letters, digits, '.', '-' and '_'",
					  i, key);
	}
	if (set(o->provider_id) && var_ref(o->provider_id, var, sizeof(var)) < 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "spec.nodeRegistration.providerID: invalid variable name: must match "
				  "^[A-Za-z_][A-Za-z0-9_]*$");
	if (set(o->provider_id) && strchr(o->provider_id, '\n'))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "spec.nodeRegistration.providerID: has a newline");
	if (set(o->sentinel_dir) && !abs_path_ok(o->sentinel_dir))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "spec.bootstrapCommandSentinelDir: must match ^/[a-zA-Z0-9_./-]+$");
	if (set(o->kubeconfig_path) && !abs_path_ok(o->kubeconfig_path))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "spec.postBootstrapKubeconfigPath: must match ^/[a-zA-Z0-9_./-]+$");
	if ((o->pre_commands && !json_is_array(o->pre_commands)) || (o->post_commands && !json_is_array(o->post_commands)))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "spec.preBootstrapCommands/postBootstrapCommands: must be lists of strings");
	json_array_foreach(o->pre_commands, i, v)
		if (!json_is_string(v))
			return ah_err_set(err, EINVAL, 400, "BadRequest", "spec.preBootstrapCommands[%zu]: must be a string", i);
	json_array_foreach(o->post_commands, i, v)
		if (!json_is_string(v))
			return ah_err_set(err, EINVAL, 400, "BadRequest", "spec.postBootstrapCommands[%zu]: must be a string", i);
	return 0;
}

/* --- pieces ------------------------------------------------------------------ */

static int add_file(json_t *files, const char *path, const char *content, int mode)
{
	char *b64 = util_base64_encode(content, strlen(content));
	char *src = NULL;
	json_t *f;

	if (!b64 || asprintf(&src, "data:text/plain;charset=utf-8;base64,%s", b64) < 0) {
		free(b64);
		return -ENOMEM;
	}
	free(b64);
	f = json_pack("{s:s,s:b,s:{s:s},s:{s:s},s:i}", "path", path, "overwrite", 1, "user", "name", "root", "contents",
		      "source", src, "mode", mode);
	free(src);
	if (!f || json_array_append_new(files, f) < 0)
		return -ENOMEM;
	return 0;
}

static int add_unit(json_t *units, const char *name, const char *contents)
{
	json_t *u = json_pack("{s:s,s:b,s:s}", "name", name, "enabled", 1, "contents", contents);

	if (!u || json_array_append_new(units, u) < 0)
		return -ENOMEM;
	return 0;
}

static const char CONFIGDRIVE_SCRIPT[] =
	"#!/bin/bash\n"
	"# The config drive's metadata (openstack/latest/meta_data.json on the\n"
	"# partition labelled config-2) as METADATA_<KEY>=<value> lines.\n"
	"set -u\n"
	"out=/etc/metadata_env\n"
	"mnt=$(mktemp -d)\n"
	"mount -o ro -L config-2 \"$mnt\" || exit 1\n"
	"md=\"$mnt/openstack/latest/meta_data.json\"\n"
	"jq -r 'keys[]' \"$md\" | while IFS= read -r key; do\n"
	"  name=$(printf '%s' \"$key\" | tr 'a-z-' 'A-Z_')\n"
	"  printf 'METADATA_%s=%s\\n' \"$name\" \"$(jq -r --arg k \"$key\" '.[$k]' \"$md\")\"\n"
	"done | sort -u > \"$out\"\n"
	"umount \"$mnt\"\n"
	"rmdir \"$mnt\"\n";

static const char CONFIGDRIVE_UNIT[] = "[Unit]\n"
				       "Description=Configdrive Metadata\n"
				       "After=ostree-finalize-staged.service\n"
				       "Before=kubelet-customlabels.service set-hostname.service kubelet.service\n"
				       "\n"
				       "[Service]\n"
				       "Type=oneshot\n"
				       "RemainAfterExit=yes\n"
				       "ExecStart=/usr/local/bin/configdrive_metadata\n"
				       "\n"
				       "[Install]\n"
				       "WantedBy=multi-user.target\n";

static int add_configdrive(json_t *files, json_t *units)
{
	int r = add_file(files, "/usr/local/bin/configdrive_metadata", CONFIGDRIVE_SCRIPT, MODE_SCRIPT);

	return r < 0 ? r : add_unit(units, "configdrive-metadata.service", CONFIGDRIVE_UNIT);
}

/* A shell line setting shell variable var from /etc/metadata_env, no expansion. */
static void read_var(struct text *t, const char *var)
{
	tprintf(t,
		"%s=\"\"\n"
		"if [ -f /etc/metadata_env ]; then\n"
		"  %s=$(/usr/bin/grep '^%s=' /etc/metadata_env | /usr/bin/head -n1 | /usr/bin/cut -d= -f2-)\n"
		"fi\n",
		var, var, var);
}

static int add_set_hostname(json_t *files, json_t *units, const char *node_name)
{
	char var[256];
	struct text t = { 0 };
	int r;

	if (var_ref(node_name, var, sizeof(var)) != 1)
		return -EINVAL;
	tput(&t, "#!/bin/bash\n# The node name from the config drive's metadata.\n");
	read_var(&t, var);
	tprintf(&t, "if [ -n \"$%s\" ]; then\n  /usr/bin/hostnamectl set-hostname \"$%s\"\nfi\n", var, var);
	if (t.oom) {
		free(t.s);
		return -ENOMEM;
	}
	r = add_file(files, "/usr/local/bin/set_hostname", t.s, MODE_SCRIPT);
	free(t.s);
	if (r == 0)
		r = add_unit(units, "set-hostname.service",
			     "[Unit]\n"
			     "Description=Set Hostname from Metadata\n"
			     "Wants=configdrive-metadata.service\n"
			     "After=configdrive-metadata.service\n"
			     "Before=kubelet.service\n"
			     "\n"
			     "[Service]\n"
			     "Type=oneshot\n"
			     "RemainAfterExit=yes\n"
			     "ExecStart=/bin/bash /usr/local/bin/set_hostname\n"
			     "\n"
			     "[Install]\n"
			     "WantedBy=multi-user.target\n");
	return r;
}

static void squote(struct text *t, const char *s)
{
	tput(t, "'");
	for (; *s; s++) {
		char c[2] = { *s, 0 };

		tput(t, *s == '\'' ? "'\\''" : c);
	}
	tput(t, "'");
}

static int add_custom_labels(json_t *files, json_t *units, const struct capoa_node_opts *o)
{
	struct text t = { 0 }, labels = { 0 };
	const json_t *v;
	char var[256], pvar[256];
	size_t i;
	int pr = 0, r;

	tput(&t, "#!/bin/bash\n# Kubelet labels and provider ID for /etc/kubernetes/kubelet-env.\n");
	json_array_foreach(o->kubelet_labels, i, v) {
		const char *l = json_string_value(v), *eq = strchr(l, '=');

		if (!eq)
			continue;
		if (labels.len)
			tput(&labels, ",");
		tprintf(&labels, "%.*s=", (int)(eq - l), l);
		if (var_ref(eq + 1, var, sizeof(var)) == 1) {
			read_var(&t, var);
			tprintf(&labels, "${%s}", var);
		} else {
			tput(&labels, eq + 1);
		}
	}
	if (set(o->provider_id) && (pr = var_ref(o->provider_id, pvar, sizeof(pvar))) == 1)
		read_var(&t, pvar);
	tprintf(&t, "echo \"CUSTOM_KUBELET_LABELS=%s\" >> /etc/kubernetes/kubelet-env\n", labels.s ? labels.s : "");
	if (set(o->provider_id)) {
		if (pr == 1) {
			tprintf(&t, "echo \"KUBELET_PROVIDERID=${%s}\" >> /etc/kubernetes/kubelet-env\n", pvar);
			tprintf(&t, "printf '%%s\\n' \"${%s}\" > /run/kubelet-provider-id\n", pvar);
		} else {
			tput(&t, "printf 'KUBELET_PROVIDERID=%s\\n' ");
			squote(&t, o->provider_id);
			tput(&t, " >> /etc/kubernetes/kubelet-env\nprintf '%s\\n' ");
			squote(&t, o->provider_id);
			tput(&t, " > /run/kubelet-provider-id\n");
		}
	}
	free(labels.s);
	if (t.oom || labels.oom) {
		free(t.s);
		return -ENOMEM;
	}
	r = add_file(files, "/usr/local/bin/kubelet_custom_labels", t.s, MODE_SCRIPT);
	free(t.s);
	if (r == 0)
		r = add_unit(units, "kubelet-customlabels.service",
			     "[Unit]\n"
			     "Description=Kubelet Custom Labels\n"
			     "After=ostree-finalize-staged.service configdrive-metadata.service\n"
			     "Before=kubelet.service\n"
			     "\n"
			     "[Service]\n"
			     "Type=oneshot\n"
			     "RemainAfterExit=yes\n"
			     "ExecStart=/usr/local/bin/kubelet_custom_labels\n"
			     "\n"
			     "[Install]\n"
			     "WantedBy=multi-user.target\n");
	return r;
}

static const char INJECT_PROVIDER_ID[] =
	"#!/bin/bash\n"
	"# Give kubelet --provider-id (from /run/kubelet-provider-id) unless its\n"
	"# command line already has one.\n"
	"set -eu\n"
	"[ -s /run/kubelet-provider-id ] || exit 0\n"
	"if systemctl cat kubelet.service 2>/dev/null | grep -q -- '--provider-id'; then\n"
	"  exit 0\n"
	"fi\n"
	"dir=/etc/systemd/system/kubelet.service.d\n"
	"mkdir -p \"$dir\"\n"
	"printf '[Service]\\nEnvironment=\"KUBELET_PROVIDERID=%s\"\\nExecStart=\\nExecStart=%s --provider-id=%s\\n' \\\n"
	"  \"$(cat /run/kubelet-provider-id)\" \\\n"
	"  \"$(systemctl show -P ExecStart kubelet.service | sed -n 's/.*argv\\[\\]=\\([^;]*\\) ;.*/\\1/p' | head -n1)\" \\\n"
	"  \"$(cat /run/kubelet-provider-id)\" > \"$dir/20-provider-id.conf\"\n"
	"systemctl daemon-reload\n";

static int add_inject_provider_id(json_t *files, json_t *units)
{
	int r = add_file(files, "/usr/local/bin/inject-provider-id", INJECT_PROVIDER_ID, MODE_SCRIPT);

	return r < 0 ? r
		     : add_unit(units, "capoa-inject-provider-id.service",
				"[Unit]\n"
				"Description=CAPOA inject kubelet provider ID\n"
				"After=kubelet-customlabels.service\n"
				"Before=kubelet.service\n"
				"\n"
				"[Service]\n"
				"Type=oneshot\n"
				"RemainAfterExit=yes\n"
				"ExecStart=/usr/local/bin/inject-provider-id\n"
				"\n"
				"[Install]\n"
				"WantedBy=multi-user.target\n");
}

static const char *sentinel_dir(const struct capoa_node_opts *o, char *buf, size_t size)
{
	size_t n;

	snprintf(buf, size, "%s", set(o->sentinel_dir) ? o->sentinel_dir : CAPOA_DEFAULT_SENTINEL_DIR);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	return buf;
}

static int add_commands(struct text *t, const json_t *cmds)
{
	const json_t *v;
	size_t i;

	json_array_foreach(cmds, i, v) {
		tput(t, json_string_value(v));
		tput(t, "\n");
	}
	return t->len > SCRIPT_MAX ? -E2BIG : 0;
}

static int add_bootstrap(json_t *files, json_t *units, const struct capoa_node_opts *o, bool post, ah_err *err)
{
	char dir[512], unit[1024];
	const char *script = post ? "/usr/local/bin/capoa-post-bootstrap.sh" : "/usr/local/bin/capoa-pre-bootstrap.sh";
	const char *done = post ? "post-bootstrap.done" : "pre-bootstrap.done";
	struct text t = { 0 };
	int r;

	sentinel_dir(o, dir, sizeof(dir));
	tput(&t, "#!/bin/bash\nset -euo pipefail\n");
	if (post)
		tprintf(&t,
			"kubeconfig=%s\n"
			"waited=0\n"
			"until kubectl --kubeconfig=\"$kubeconfig\" get --raw /readyz >/dev/null 2>&1; do\n"
			"  [ \"$waited\" -lt 600 ] || { echo \"kube API not ready after ${waited}s\" >&2; exit 1; }\n"
			"  sleep 10; waited=$((waited + 10))\n"
			"done\n"
			"until kubectl --kubeconfig=\"$kubeconfig\" get node \"$(hostname)\" >/dev/null 2>&1; do\n"
			"  [ \"$waited\" -lt 600 ] || { echo \"node $(hostname) not registered after ${waited}s\" >&2; exit 1; }\n"
			"  sleep 10; waited=$((waited + 10))\n"
			"done\n",
			set(o->kubeconfig_path) ? o->kubeconfig_path : CAPOA_DEFAULT_KUBECONFIG);
	if (add_commands(&t, post ? o->post_commands : o->pre_commands) < 0) {
		free(t.s);
		return ah_err_set(err, E2BIG, 400, "BadRequest", "spec.%sBootstrapCommands: longer than %d bytes",
				  post ? "post" : "pre", SCRIPT_MAX);
	}
	tprintf(&t, "mkdir -p %s\ntouch %s/%s\n", dir, dir, done);
	if (t.oom) {
		free(t.s);
		return -ENOMEM;
	}
	r = add_file(files, script, t.s, MODE_PRIVATE);
	free(t.s);
	snprintf(unit, sizeof(unit),
		 "[Unit]\n"
		 "Description=CAPOA %s\n"
		 "%s\n"
		 "ConditionPathExists=!%s/%s\n"
		 "\n"
		 "[Service]\n"
		 "Type=oneshot\n"
		 "ExecStart=%s\n"
		 "\n"
		 "[Install]\n"
		 "WantedBy=multi-user.target\n",
		 post ? "capoa-post-bootstrap" : "capoa-pre-bootstrap",
		 post ? "Requires=kubelet.service\nAfter=kubelet.service"
		      : "After=network-online.target configdrive-metadata.service kubelet-customlabels.service "
			"set-hostname.service\nBefore=kubelet.service",
		 dir, done, script);
	if (r == 0)
		r = add_unit(units, post ? "capoa-post-bootstrap.service" : "capoa-pre-bootstrap.service", unit);
	return r;
}

/* --- the two outputs ---------------------------------------------------------- */

static int dump(json_t *cfg, char **ret, size_t *ret_len)
{
	char *s = json_dumps(cfg, JSON_COMPACT);

	if (!s)
		return -ENOMEM;
	*ret = s;
	if (ret_len)
		*ret_len = strlen(s);
	return 0;
}

int capoa_ignition_agent_override(const struct capoa_node_opts *o, const char *override_annotation, char **ret,
				  ah_err *err)
{
	bool labels = json_array_size(o->kubelet_labels) > 0, pid = set(o->provider_id), name = set(o->node_name);
	json_t *files = json_array(), *units = json_array(), *cfg = NULL;
	int r;

	if ((r = check_opts(o, err)) < 0)
		goto out;
	r = 0;
	if (name || labels || pid)
		r = add_configdrive(files, units);
	if (r == 0 && (labels || pid))
		r = add_custom_labels(files, units, o);
	if (r == 0 && name)
		r = add_set_hostname(files, units, o->node_name);
	if (r == 0 && json_array_size(o->pre_commands))
		r = add_bootstrap(files, units, o, false, err);
	if (r == 0 && json_array_size(o->post_commands))
		r = add_bootstrap(files, units, o, true, err);
	if (r == 0 && pid)
		r = add_inject_provider_id(files, units);
	if (r < 0)
		goto out;
	cfg = json_pack("{s:{s:s}}", "ignition", "version", "3.1.0");
	if (!cfg) {
		r = -ENOMEM;
		goto out;
	}
	if (json_array_size(files))
		json_object_set_new(cfg, "storage", json_pack("{s:O}", "files", files));
	if (json_array_size(units))
		json_object_set_new(cfg, "systemd", json_pack("{s:O}", "units", units));
	if (set(override_annotation)) {
		json_t *ov = json_loads(override_annotation, JSON_REJECT_DUPLICATES, NULL);

		if (ov) {
			if (!json_is_object(ov)) {
				json_decref(ov);
				r = ah_err_set(err, EINVAL, 400, "BadRequest",
					       "invalid openshiftassistedconfig.cluster.x-k8s.io/ignition-override "
					       "annotation: not an Ignition config object");
				goto out;
			}
			/* The result stays a v3.1.0 config. */
			json_object_del(json_object_get(ov, "ignition"), "version");
			r = ignition_merge(cfg, ov);
			json_decref(ov);
			if (r < 0)
				goto out;
		}
	}
	r = dump(cfg, ret, NULL);
out:
	json_decref(files);
	json_decref(units);
	json_decref(cfg);
	return r;
}

int capoa_ignition_bootstrap_data(const char *discovery, size_t len, const struct capoa_node_opts *o, char **ret,
				  size_t *ret_len, ah_err *err)
{
	json_t *cfg, *files, *units, *storage, *systemd;
	int r = 0;

	cfg = json_loadb(discovery, len, 0, NULL);
	if (!json_is_object(cfg)) {
		json_decref(cfg);
		return ah_err_set(err, EINVAL, 502, "BadGateway", "the discovery ignition is not a JSON object");
	}
	if (!set(o->node_name)) {
		r = dump(cfg, ret, ret_len);
		json_decref(cfg);
		return r;
	}
	if ((r = check_opts(o, err)) < 0) {
		json_decref(cfg);
		return r;
	}
	storage = json_object_get(cfg, "storage");
	if (!json_is_object(storage)) {
		storage = json_object();
		json_object_set_new(cfg, "storage", storage);
	}
	files = json_object_get(storage, "files");
	if (!json_is_array(files)) {
		files = json_array();
		json_object_set_new(storage, "files", files);
	}
	systemd = json_object_get(cfg, "systemd");
	if (!json_is_object(systemd)) {
		systemd = json_object();
		json_object_set_new(cfg, "systemd", systemd);
	}
	units = json_object_get(systemd, "units");
	if (!json_is_array(units)) {
		units = json_array();
		json_object_set_new(systemd, "units", units);
	}
	if (!storage || !files || !systemd || !units)
		r = -ENOMEM;
	if (r == 0)
		r = add_configdrive(files, units);
	if (r == 0)
		r = add_set_hostname(files, units, o->node_name);
	if (r == 0)
		r = dump(cfg, ret, ret_len);
	json_decref(cfg);
	return r;
}

/* --- the ignition URL --------------------------------------------------------- */

/* Query parameter k of url into buf (tokens and uuids carry no escapes);
 * false when absent, empty or too long. */
static bool query_param(const char *url, const char *k, char *buf, size_t size)
{
	const char *q = strchr(url, '?'), *p;
	size_t kl = strlen(k);

	for (p = q; p && *p; p = strchr(p, '&')) {
		const char *e;
		size_t n;

		p++;
		if (strncmp(p, k, kl) != 0 || p[kl] != '=')
			continue;
		p += kl + 1;
		e = strpbrk(p, "&#");
		n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || n >= size)
			return false;
		memcpy(buf, p, n);
		buf[n] = 0;
		return true;
	}
	return false;
}

char *capoa_ignition_url(const char *events_url, const char *base, char *why, size_t why_size)
{
	char api_key[4096], id[128], *url = NULL;
	const char *scheme_end = events_url ? strstr(events_url, "://") : NULL, *host_end;
	int n;

	if (!scheme_end || scheme_end == events_url || !scheme_end[3]) {
		snprintf(why, why_size, "eventsURL is not an absolute URL");
		return NULL;
	}
	host_end = strpbrk(scheme_end + 3, "/?#");
	if (!query_param(events_url, "api_key", api_key, sizeof(api_key)) ||
	    !query_param(events_url, "infra_env_id", id, sizeof(id))) {
		snprintf(why, why_size, "eventsURL has no api_key or no infra_env_id");
		return NULL;
	}
	n = host_end ? (int)(host_end - events_url) : (int)strlen(events_url);
	if (asprintf(&url, "%.*s/api/assisted-install/v2/infra-envs/%s/downloads/files?api_key=%s&file_name=discovery.ign",
		     base ? (int)strlen(base) : n, base ? base : events_url, id, api_key) < 0) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	return url;
}
