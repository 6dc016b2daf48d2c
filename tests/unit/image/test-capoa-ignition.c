/* Tests for src/image/capoa-ignition.c: the CAPOA installed-node Ignition
 * (bmac-capi.md §C.6): which units and files each option adds, their modes,
 * owners and data URLs, the variable-name rule, the merge with the
 * ignition-override annotation and the bootstrap data appended to a
 * discovery ignition.  Every config is checked with ignition-validate when
 * it is installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "image/capoa-ignition.h"

static void assert_ignition_valid(const char *text)
{
	char path[] = "/tmp/ah-capoa-ign-XXXXXX";
	char cmd[256], out[4096] = "";
	FILE *f;
	size_t n;
	int fd, rc;

	if (system("command -v ignition-validate >/dev/null 2>&1") != 0) {
		printf("note: ignition-validate not installed; skipping validation\n");
		return;
	}
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "ignition-validate %s 2>&1", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	rc = pclose(f);
	unlink(path);
	if (rc != 0)
		fail_msg("ignition-validate: %s\n%s", out, text);
}

#define DATA_PREFIX "data:text/plain;charset=utf-8;base64,"

static const json_t *find(const json_t *list, const char *key, const char *val)
{
	const json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
		if (json_string_value(json_object_get(v, key)) && strcmp(json_string_value(json_object_get(v, key)), val) == 0)
			return v;
	return NULL;
}

/* The decoded contents of file path in cfg (malloc'd), or NULL. */
static char *file_text(const json_t *cfg, const char *path, int *mode)
{
	const json_t *f = find(json_object_get(json_object_get(cfg, "storage"), "files"), "path", path);
	const char *src, *p;
	unsigned char *out = NULL;
	size_t len = 0;
	char *s;

	if (!f)
		return NULL;
	assert_true(json_is_true(json_object_get(f, "overwrite")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "user"), "name")), "root");
	*mode = (int)json_integer_value(json_object_get(f, "mode"));
	src = json_string_value(json_object_get(json_object_get(f, "contents"), "source"));
	assert_non_null(src);
	assert_true(strncmp(src, DATA_PREFIX, strlen(DATA_PREFIX)) == 0);
	p = src + strlen(DATA_PREFIX);
	assert_int_equal(util_base64_decode(p, strlen(p), &out, &len), 0);
	s = malloc(len + 1);
	memcpy(s, out, len);
	s[len] = 0;
	free(out);
	return s;
}

static json_t *agent_override(const struct capoa_node_opts *o, const char *ann)
{
	char *text = NULL;
	ah_err err = { 0 };
	json_t *cfg;

	assert_int_equal(capoa_ignition_agent_override(o, ann, &text, &err), 0);
	assert_ignition_valid(text);
	cfg = json_loads(text, 0, NULL);
	assert_non_null(cfg);
	assert_string_equal(json_string_value(json_object_get(json_object_get(cfg, "ignition"), "version")), "3.1.0");
	free(text);
	return cfg;
}

static void test_nothing_set(void **state)
{
	struct capoa_node_opts o = { 0 };
	json_t *cfg = agent_override(&o, NULL);

	(void)state;
	assert_null(json_object_get(cfg, "storage"));
	assert_null(json_object_get(cfg, "systemd"));
	json_decref(cfg);
}

static void test_everything(void **state)
{
	json_t *spec = json_loads("{\"nodeRegistration\":{\"name\":\"$METADATA_NAME\","
				  "\"kubeletExtraLabels\":[\"metal3.io/uuid=$METADATA_UUID\",\"zone=${METADATA_ZONE}\",\"tier=gold\"],"
				  "\"providerID\":\"${METADATA_UUID}\"},"
				  "\"preBootstrapCommands\":[\"echo pre\"],\"postBootstrapCommands\":[\"echo post\"],"
				  "\"bootstrapCommandSentinelDir\":\"/var/lib/mine/\"}",
				  0, NULL);
	struct capoa_node_opts o;
	json_t *cfg, *units;
	char *s;
	int mode = 0;

	(void)state;
	capoa_node_opts_from_spec(spec, &o);
	cfg = agent_override(&o, NULL);
	units = json_object_get(json_object_get(cfg, "systemd"), "units");
	assert_int_equal(json_array_size(units), 6);
	assert_non_null(find(units, "name", "configdrive-metadata.service"));
	assert_non_null(find(units, "name", "kubelet-customlabels.service"));
	assert_non_null(find(units, "name", "set-hostname.service"));
	assert_non_null(find(units, "name", "capoa-pre-bootstrap.service"));
	assert_non_null(find(units, "name", "capoa-post-bootstrap.service"));
	assert_non_null(find(units, "name", "capoa-inject-provider-id.service"));
	assert_true(json_is_true(json_object_get(find(units, "name", "set-hostname.service"), "enabled")));

	s = file_text(cfg, "/usr/local/bin/configdrive_metadata", &mode);
	assert_int_equal(mode, 493);
	assert_non_null(strstr(s, "config-2"));
	assert_non_null(strstr(s, "/etc/metadata_env"));
	free(s);
	s = file_text(cfg, "/usr/local/bin/set_hostname", &mode);
	assert_int_equal(mode, 493);
	assert_non_null(strstr(s, "'^METADATA_NAME='"));
	assert_non_null(strstr(s, "hostnamectl set-hostname \"$METADATA_NAME\""));
	free(s);
	s = file_text(cfg, "/usr/local/bin/kubelet_custom_labels", &mode);
	assert_int_equal(mode, 493);
	assert_non_null(strstr(s, "CUSTOM_KUBELET_LABELS=metal3.io/uuid=${METADATA_UUID},zone=${METADATA_ZONE},tier=gold"));
	assert_non_null(strstr(s, "KUBELET_PROVIDERID=${METADATA_UUID}"));
	assert_non_null(strstr(s, "/run/kubelet-provider-id"));
	free(s);
	s = file_text(cfg, "/usr/local/bin/capoa-pre-bootstrap.sh", &mode);
	assert_int_equal(mode, 0700);
	assert_non_null(strstr(s, "set -euo pipefail\necho pre\n"));
	assert_non_null(strstr(s, "touch /var/lib/mine/pre-bootstrap.done"));
	free(s);
	s = file_text(cfg, "/usr/local/bin/capoa-post-bootstrap.sh", &mode);
	assert_int_equal(mode, 0700);
	assert_non_null(strstr(s, "/readyz"));
	assert_non_null(strstr(s, "/var/lib/kubelet/kubeconfig"));
	assert_non_null(strstr(s, "-lt 600"));
	assert_non_null(strstr(s, "touch /var/lib/mine/post-bootstrap.done"));
	free(s);
	s = file_text(cfg, "/usr/local/bin/inject-provider-id", &mode);
	assert_int_equal(mode, 493);
	assert_non_null(strstr(s, "20-provider-id.conf"));
	free(s);
	assert_non_null(strstr(json_string_value(json_object_get(find(units, "name", "capoa-pre-bootstrap.service"), "contents")),
			       "ConditionPathExists=!/var/lib/mine/pre-bootstrap.done"));
	assert_non_null(strstr(json_string_value(json_object_get(find(units, "name", "capoa-pre-bootstrap.service"), "contents")),
			       "Before=kubelet.service"));
	assert_non_null(strstr(json_string_value(json_object_get(find(units, "name", "capoa-post-bootstrap.service"), "contents")),
			       "After=kubelet.service"));
	json_decref(cfg);
	json_decref(spec);
}

static void test_labels_only(void **state)
{
	json_t *labels = json_pack("[s]", "a=b");
	struct capoa_node_opts o = { .kubelet_labels = labels };
	json_t *cfg = agent_override(&o, NULL), *units = json_object_get(json_object_get(cfg, "systemd"), "units");

	(void)state;
	assert_int_equal(json_array_size(units), 2);
	assert_non_null(find(units, "name", "configdrive-metadata.service"));
	assert_non_null(find(units, "name", "kubelet-customlabels.service"));
	json_decref(cfg);
	json_decref(labels);
}

static void test_static_provider_id_quoted(void **state)
{
	struct capoa_node_opts o = { .provider_id = "metal3://ns/it's/m" };
	json_t *cfg = agent_override(&o, NULL);
	int mode;
	char *s = file_text(cfg, "/usr/local/bin/kubelet_custom_labels", &mode);

	(void)state;
	assert_non_null(strstr(s, "'metal3://ns/it'\\''s/m'"));
	free(s);
	json_decref(cfg);
}

static void test_bad_values(void **state)
{
	const char *bad_labels[] = { "a=$1abc", "a=${bad-name}", "a=$(reboot)", "a=x y", "a;b=c", NULL };
	ah_err err = { 0 };
	char *text = NULL;
	int i;

	(void)state;
	for (i = 0; bad_labels[i]; i++) {
		json_t *l = json_pack("[s]", bad_labels[i]);
		struct capoa_node_opts o = { .kubelet_labels = l };

		assert_int_equal(capoa_ignition_agent_override(&o, NULL, &text, &err), -EINVAL);
		assert_int_equal(err.status, 400);
		assert_non_null(strstr(err.message, "spec.nodeRegistration.kubeletExtraLabels[0]"));
		json_decref(l);
	}
	{
		struct capoa_node_opts o = { .node_name = "$9name" };

		assert_int_equal(capoa_ignition_agent_override(&o, NULL, &text, &err), -EINVAL);
		assert_non_null(strstr(err.message, "spec.nodeRegistration.name"));
		assert_int_equal(capoa_ignition_bootstrap_data("{}", 2, &o, &text, NULL, &err), -EINVAL);
	}
	{
		struct capoa_node_opts o = { .sentinel_dir = "relative/dir" };

		assert_int_equal(capoa_ignition_agent_override(&o, NULL, &text, &err), -EINVAL);
		assert_non_null(strstr(err.message, "spec.bootstrapCommandSentinelDir"));
	}
	{
		struct capoa_node_opts o = { .provider_id = "${x y}" };

		assert_int_equal(capoa_ignition_agent_override(&o, NULL, &text, &err), -EINVAL);
		assert_non_null(strstr(err.message, "spec.nodeRegistration.providerID"));
	}
	assert_true(capoa_var_name_valid("_A1"));
	assert_false(capoa_var_name_valid("1A"));
	assert_false(capoa_var_name_valid(""));
}

static void test_annotation_merge(void **state)
{
	struct capoa_node_opts o = { .node_name = "${METADATA_NAME}" };
	const char *ann = "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"/etc/extra\","
			  "\"contents\":{\"source\":\"data:,hello\"},\"mode\":420}]},"
			  "\"systemd\":{\"units\":[{\"name\":\"set-hostname.service\",\"enabled\":false}]}}";
	json_t *cfg = agent_override(&o, ann);
	const json_t *files = json_object_get(json_object_get(cfg, "storage"), "files");
	const json_t *units = json_object_get(json_object_get(cfg, "systemd"), "units");
	char *text = NULL;
	ah_err err = { 0 };

	(void)state;
	assert_non_null(find(files, "path", "/etc/extra"));
	assert_non_null(find(files, "path", "/usr/local/bin/set_hostname"));
	/* Units merge by name: the annotation's field wins, the rest stays. */
	assert_int_equal(json_array_size(units), 2);
	assert_true(json_is_false(json_object_get(find(units, "name", "set-hostname.service"), "enabled")));
	assert_non_null(json_object_get(find(units, "name", "set-hostname.service"), "contents"));
	json_decref(cfg);
	/* Not JSON: ignored, as upstream. */
	cfg = agent_override(&o, "not json");
	assert_int_equal(json_array_size(json_object_get(json_object_get(cfg, "systemd"), "units")), 2);
	json_decref(cfg);
	/* JSON but not an object: an error naming the annotation. */
	assert_int_equal(capoa_ignition_agent_override(&o, "[1]", &text, &err), -EINVAL);
	assert_non_null(strstr(err.message, "ignition-override"));
}

static void test_bootstrap_data(void **state)
{
	const char *disc = "{\"ignition\":{\"version\":\"3.1.0\"},\"passwd\":{},\"storage\":{\"files\":[{\"path\":"
			   "\"/etc/assisted/agent-installer.env\",\"contents\":{\"source\":\"data:,x\"},\"mode\":420}]},"
			   "\"systemd\":{\"units\":[{\"name\":\"agent.service\",\"enabled\":true,\"contents\":\"[Unit]\\n\"}]}}";
	struct capoa_node_opts o = { 0 };
	char *text = NULL;
	size_t len = 0;
	ah_err err = { 0 };
	json_t *cfg, *units, *files;

	(void)state;
	/* No node name: the discovery ignition as it is. */
	assert_int_equal(capoa_ignition_bootstrap_data(disc, strlen(disc), &o, &text, &len, &err), 0);
	cfg = json_loads(text, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(json_object_get(cfg, "systemd"), "units")), 1);
	json_decref(cfg);
	free(text);
	/* A node name: configdrive-metadata and set-hostname appended, nothing else. */
	o.node_name = "$METADATA_NAME";
	o.pre_commands = json_pack("[s]", "echo pre");
	assert_int_equal(capoa_ignition_bootstrap_data(disc, strlen(disc), &o, &text, &len, &err), 0);
	assert_int_equal(len, strlen(text));
	assert_ignition_valid(text);
	cfg = json_loads(text, 0, NULL);
	units = json_object_get(json_object_get(cfg, "systemd"), "units");
	files = json_object_get(json_object_get(cfg, "storage"), "files");
	assert_int_equal(json_array_size(units), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(units, 0), "name")), "agent.service");
	assert_string_equal(json_string_value(json_object_get(json_array_get(units, 1), "name")), "configdrive-metadata.service");
	assert_string_equal(json_string_value(json_object_get(json_array_get(units, 2), "name")), "set-hostname.service");
	assert_int_equal(json_array_size(files), 3);
	assert_non_null(find(files, "path", "/usr/local/bin/configdrive_metadata"));
	assert_non_null(find(files, "path", "/usr/local/bin/set_hostname"));
	json_decref(cfg);
	free(text);
	json_decref((json_t *)o.pre_commands);
	/* Not a JSON object. */
	assert_int_equal(capoa_ignition_bootstrap_data("[]", 2, &o, &text, &len, &err), -EINVAL);
}

static void test_ignition_url(void **state)
{
	const char *ev = "https://hub.example.com:8443/api/assisted-install/v2/events?api_key=eyJ.a.b"
			 "&infra_env_id=0b1c2d3e-0000-4000-8000-000000000001";
	char why[256], *u;

	(void)state;
	u = capoa_ignition_url(ev, NULL, why, sizeof(why));
	assert_non_null(u);
	assert_string_equal(u, "https://hub.example.com:8443/api/assisted-install/v2/infra-envs/"
			       "0b1c2d3e-0000-4000-8000-000000000001/downloads/files?api_key=eyJ.a.b&file_name=discovery.ign");
	free(u);
	u = capoa_ignition_url(ev, "http://assisted-service.ns1.svc.cluster.local:8090", why, sizeof(why));
	assert_string_equal(u, "http://assisted-service.ns1.svc.cluster.local:8090/api/assisted-install/v2/infra-envs/"
			       "0b1c2d3e-0000-4000-8000-000000000001/downloads/files?api_key=eyJ.a.b&file_name=discovery.ign");
	free(u);
	/* Query order does not matter; a host without a path. */
	u = capoa_ignition_url("http://h?infra_env_id=X&api_key=K", NULL, why, sizeof(why));
	assert_string_equal(u, "http://h/api/assisted-install/v2/infra-envs/X/downloads/files?api_key=K&file_name=discovery.ign");
	free(u);
	assert_null(capoa_ignition_url("https://h/api/assisted-install/v2/events?infra_env_id=X", NULL, why, sizeof(why)));
	assert_non_null(strstr(why, "api_key"));
	assert_null(capoa_ignition_url("https://h/events?api_key=K", NULL, why, sizeof(why)));
	assert_null(capoa_ignition_url("not a url?api_key=K&infra_env_id=X", NULL, why, sizeof(why)));
	assert_null(capoa_ignition_url("https://h/events?api_key=&infra_env_id=X", NULL, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_set),
		cmocka_unit_test(test_everything),
		cmocka_unit_test(test_labels_only),
		cmocka_unit_test(test_static_provider_id_quoted),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_annotation_merge),
		cmocka_unit_test(test_bootstrap_data),
		cmocka_unit_test(test_ignition_url),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
