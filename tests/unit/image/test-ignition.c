/* Tests for src/image/ignition.c and src/image/ipxe.c: discovery Ignition
 * shape, optional sections, determinism, override merge, secrets placement,
 * kernel arguments and iPXE scripts.  Every Ignition the builder returns is
 * also checked with Debian's ignition-validate when it is installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "image/ignition.h"
#include "image/ipxe.h"
#include "image/nmstate.h"

#define PULL_SECRET "{\"auths\":{\"cloud.openshift.com\":{\"auth\":\"c2VjcmV0dXNlcjpzM2NyM3RQYXNz\",\"email\":\"a@b.c\"}}}"
#define PULL_SECRET_AUTH "c2VjcmV0dXNlcjpzM2NyM3RQYXNz"
#define AGENT_TOKEN "eyJhbGciOiJFUzI1NiJ9.tokenpayload.tokensig"
#define UPSTREAM_OVERRIDE                                                                       \
	"{\"ignition\": {\"version\": \"3.1.0\"}, \"storage\": {\"files\": [{\"path\": "        \
	"\"/etc/someconfig\", \"contents\": {\"source\": "                                        \
	"\"data:text/plain;base64,aGVscGltdHJhcHBlZGluYXN3YWdnZXJzcGVj\"}}]}}"

static void base_params(struct discovery_params *p)
{
	memset(p, 0, sizeof(*p));
	p->service_base_url = "https://192.168.111.1:6443";
	p->infra_env_id = "0b8e4d9a-5a64-4a3c-9c0e-2f1f0c6a1b11";
	p->agent_token = AGENT_TOKEN;
	p->pull_secret = PULL_SECRET;
	p->cpu_architecture = "x86_64";
	p->os_image_version = "4.18";
}

/* Run ignition-validate on text; skip (with a note) when it is absent. */
static void assert_ignition_valid(const char *text)
{
	static int have = -1;
	char path[] = "/tmp/ah-ign-XXXXXX";
	char cmd[256], out[4096] = "";
	FILE *f;
	int fd, rc;

	if (have < 0) {
		have = access("/usr/bin/ignition-validate", X_OK) == 0 ||
		       system("command -v ignition-validate >/dev/null 2>&1") == 0;
		if (!have)
			printf("note: ignition-validate not installed; skipping validation\n");
	}
	if (!have)
		return;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "ignition-validate %s 2>&1", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	rc = pclose(f);
	unlink(path);
	if (rc != 0)
		fprintf(stderr, "ignition-validate failed:\n%s\nconfig: %s\n", out, text);
	assert_int_equal(rc, 0);
}

/* Build, validate with ignition-validate, and return the parsed tree. */
static json_t *build_ok(const struct discovery_params *p, char **ret_text)
{
	ah_err err = { 0 };
	char *text = NULL;
	size_t len = 0;
	json_t *root;
	int r = ignition_build_discovery(p, &text, &len, &err);

	if (r != 0)
		fprintf(stderr, "build failed: %d %s\n", r, err.message);
	assert_int_equal(r, 0);
	assert_int_equal(len, strlen(text));
	assert_ignition_valid(text);
	root = json_loads(text, 0, NULL);
	assert_non_null(root);
	if (ret_text)
		*ret_text = text;
	else
		free(text);
	return root;
}

static json_t *find_by(json_t *root, const char *section, const char *list, const char *key,
		       const char *value)
{
	json_t *arr = json_object_get(json_object_get(root, section), list), *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (strcmp(json_string_value(json_object_get(e, key)) ?: "", value) == 0)
			return e;
	return NULL;
}

static json_t *file_at(json_t *root, const char *path)
{
	return find_by(root, "storage", "files", "path", path);
}

static json_t *unit_named(json_t *root, const char *name)
{
	return find_by(root, "systemd", "units", "name", name);
}

static size_t count_path(json_t *root, const char *list, const char *path)
{
	json_t *arr = json_object_get(json_object_get(root, "storage"), list), *e;
	size_t i, n = 0;

	json_array_foreach(arr, i, e)
		n += strcmp(json_string_value(json_object_get(e, "path")), path) == 0;
	return n;
}

/* Decode a file's data URL contents (data:, or ;base64,) into a new string. */
static char *file_text(json_t *root, const char *path)
{
	json_t *f = file_at(root, path);
	const char *src = json_string_value(json_object_get(json_object_get(f, "contents"), "source"));
	const char *comma;

	assert_non_null(src);
	comma = strchr(src, ',');
	assert_non_null(comma);
	if (comma - src >= 7 && strncmp(comma - 7, ";base64", 7) == 0) {
		unsigned char *out;
		size_t n;
		assert_int_equal(util_base64_decode(comma + 1, strlen(comma + 1), &out, &n), 0);
		return (char *)out;
	}
	char *out = malloc(strlen(comma) + 1), *o = out;
	for (const char *s = comma + 1; *s; s++) {
		if (*s == '%') {
			unsigned v;
			assert_int_equal(sscanf(s + 1, "%2x", &v), 1);
			*o++ = (char)v;
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
	return out;
}

static const char *unit_text(json_t *root, const char *name)
{
	return json_string_value(json_object_get(unit_named(root, name), "contents"));
}

/* ---------- shape ---------- */

static void test_shape(void **state)
{
	static const char *const units[] = { "agent.service", "selinux.service",
					     "multipathd.service", "iscsistart.service",
					     "oci-eval-user-data.service" };
	static const char *const files[] = {
		"/usr/local/bin/agent-fix-bz1964591", "/usr/local/bin/agent-pull-image",
		"/etc/motd", "/etc/multipath.conf", "/usr/local/bin/oci-eval-user-data.sh",
		"/etc/NetworkManager/conf.d/01-ipv6.conf", "/root/.docker/config.json",
		"/root/assisted.te",
	};
	struct discovery_params p;
	json_t *root, *f;
	const char *agent;

	base_params(&p);
	root = build_ok(&p, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(root, "ignition"),
							      "version")),
			    "3.1.0");
	assert_null(json_object_get(json_object_get(root, "ignition"), "proxy"));
	assert_int_equal(json_array_size(json_object_get(json_object_get(root, "passwd"), "users")),
			 0);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		json_t *u = unit_named(root, units[i]);
		assert_non_null(u);
		assert_true(json_is_true(json_object_get(u, "enabled")));
	}
	assert_null(json_object_get(unit_named(root, "multipathd.service"), "contents"));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		f = file_at(root, files[i]);
		assert_non_null(f);
		assert_string_equal(json_string_value(json_object_get(json_object_get(f, "user"),
								      "name")),
				    "root");
	}
	assert_int_equal(json_integer_value(json_object_get(file_at(root, "/usr/local/bin/agent-pull-image"), "mode")), 493);
	assert_int_equal(json_integer_value(json_object_get(file_at(root, "/etc/motd"), "mode")), 420);
	assert_null(unit_named(root, "add-ntp-sources.service"));
	assert_null(file_at(root, "/etc/profile.d/proxy.sh"));
	assert_null(file_at(root, "/etc/assisted-service/service-ca-cert.crt"));

	agent = unit_text(root, "agent.service");
	assert_non_null(strstr(agent, "ExecStart=/usr/local/bin/agent --url https://192.168.111.1:6443 "
				      "--infra-env-id 0b8e4d9a-5a64-4a3c-9c0e-2f1f0c6a1b11 "
				      "--agent-version " IGNITION_DEFAULT_AGENT_IMAGE " --insecure=false\n"));
	assert_non_null(strstr(agent, "Environment=HTTP_PROXY=\n"));
	assert_non_null(strstr(agent, "Environment=no_proxy=\n"));
	assert_non_null(strstr(agent, "TimeoutStartSec=600\n"));
	assert_non_null(strstr(agent, "WantedBy=multi-user.target"));
	assert_null(strstr(agent, "--cacert"));

	char *te = file_text(root, "/root/assisted.te");
	assert_non_null(strstr(te, "module assisted 1.0;"));
	free(te);
	json_decref(root);
}

/* ---------- optional sections, one row each ---------- */

struct opt_row {
	const char *name;
	void (*set)(struct discovery_params *p);
	void (*check)(json_t *root); /* with the option set */
	const char *absent_file;     /* must be absent from the baseline */
	const char *absent_unit;
};

static json_t *g_ntp, *g_ntp_excl;

static void set_proxy(struct discovery_params *p)
{
	p->http_proxy = "http://proxy.example.com:3128";
	p->https_proxy = "http://user:p%40ss@proxy.example.com:3129";
	p->no_proxy = ".cluster.local,10.0.0.0/8";
}
static void chk_proxy(json_t *root)
{
	json_t *proxy = json_object_get(json_object_get(root, "ignition"), "proxy");
	const char *agent = unit_text(root, "agent.service");
	char *sh;

	assert_string_equal(json_string_value(json_object_get(proxy, "httpProxy")),
			    "http://proxy.example.com:3128");
	assert_int_equal(json_array_size(json_object_get(proxy, "noProxy")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(proxy, "noProxy"), 1)),
			    "10.0.0.0/8");
	assert_non_null(strstr(agent, "Environment=HTTPS_PROXY=http://user:p%%40ss@proxy.example.com:3129\n"));
	assert_non_null(strstr(agent, "Environment=no_proxy=.cluster.local,10.0.0.0/8\n"));
	sh = file_text(root, "/etc/profile.d/proxy.sh");
	assert_string_equal(sh, "export HTTP_PROXY='http://proxy.example.com:3128'\n"
				"export http_proxy='http://proxy.example.com:3128'\n"
				"export HTTPS_PROXY='http://user:p%40ss@proxy.example.com:3129'\n"
				"export https_proxy='http://user:p%40ss@proxy.example.com:3129'\n"
				"export NO_PROXY='.cluster.local,10.0.0.0/8'\n"
				"export no_proxy='.cluster.local,10.0.0.0/8'\n");
	free(sh);
}

static void set_ntp(struct discovery_params *p)
{
	p->additional_ntp_sources = g_ntp;
}
static void chk_ntp(json_t *root)
{
	char *sh = file_text(root, "/usr/local/bin/add-ntp-sources.sh");

	assert_non_null(unit_named(root, "add-ntp-sources.service"));
	assert_non_null(strstr(unit_text(root, "add-ntp-sources.service"), "Before=chronyd.service"));
	assert_non_null(strstr(sh, "for s in ntp1.example.com 10.1.1.1 ntp2.example.com; do"));
	assert_non_null(strstr(sh, "makestep 1.0 -1"));
	free(sh);
}

static void set_ntp_excl(struct discovery_params *p)
{
	p->ntp_sources = g_ntp_excl;
	p->additional_ntp_sources = g_ntp; /* ignored: ntpSources wins */
}
static void chk_ntp_excl(json_t *root)
{
	char *sh = file_text(root, "/usr/local/bin/add-ntp-sources.sh");

	assert_non_null(strstr(sh, "server time.example.org iburst\n"));
	assert_null(strstr(sh, "ntp1.example.com"));
	assert_non_null(strstr(sh, "makestep 1.0 -1\n"));
	free(sh);
}

static void set_ssh(struct discovery_params *p)
{
	p->ssh_authorized_key = "  ssh-ed25519 AAAAC3Nza key1@host \n\n\tssh-rsa AAAAB3Nz key2\r\n";
}
static void chk_ssh(json_t *root)
{
	json_t *u = json_array_get(json_object_get(json_object_get(root, "passwd"), "users"), 0);
	json_t *keys = json_object_get(u, "sshAuthorizedKeys");

	assert_string_equal(json_string_value(json_object_get(u, "name")), "core");
	assert_string_equal(json_string_value(json_object_get(u, "passwordHash")), "!");
	assert_string_equal(json_string_value(json_array_get(json_object_get(u, "groups"), 0)), "sudo");
	assert_int_equal(json_array_size(keys), 2);
	assert_string_equal(json_string_value(json_array_get(keys, 0)), "ssh-ed25519 AAAAC3Nza key1@host");
	assert_string_equal(json_string_value(json_array_get(keys, 1)), "ssh-rsa AAAAB3Nz key2");
}

#define PEM "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
static void set_bundle(struct discovery_params *p)
{
	p->additional_trust_bundle = PEM;
}
static void chk_bundle(json_t *root)
{
	char *t = file_text(root, "/etc/pki/ca-trust/source/anchors/assisted-infraenv-additional-trust-bundle.pem");
	assert_string_equal(t, PEM);
	free(t);
}

static void set_hubca(struct discovery_params *p)
{
	p->hub_ca_pem = PEM;
}
static void chk_hubca(json_t *root)
{
	char *t = file_text(root, "/etc/assisted-service/service-ca-cert.crt");
	assert_string_equal(t, PEM);
	free(t);
	assert_non_null(strstr(unit_text(root, "agent.service"),
			       " --insecure=false --cacert /etc/assisted-service/service-ca-cert.crt\n"));
}

static void set_mirror(struct discovery_params *p)
{
	p->registries_conf = "[[registry]]\nlocation = \"quay.io\"\n";
	p->mirror_ca_bundle = PEM;
}
static void chk_mirror(json_t *root)
{
	assert_non_null(file_at(root, "/etc/containers/registries.conf"));
	assert_non_null(file_at(root, "/etc/pki/ca-trust/source/anchors/domain.crt"));
}

static void set_misc(struct discovery_params *p)
{
	p->skip_cert_verification = true;
	p->agent_image = "registry.local/agent:v1";
	p->agent_timeout_start_sec = 1200;
	p->agent_token = NULL;
}
static void chk_misc(json_t *root)
{
	const char *agent = unit_text(root, "agent.service");

	assert_non_null(strstr(agent, "--agent-version registry.local/agent:v1 --insecure=true\n"));
	assert_non_null(strstr(agent, "ExecStartPre=/usr/local/bin/agent-pull-image registry.local/agent:v1\n"));
	assert_non_null(strstr(agent, "TimeoutStartSec=1200\n"));
	assert_null(strstr(agent, "PULL_SECRET_TOKEN"));
}

static void set_internal(struct discovery_params *p)
{
	p->internal_ignition_config_override =
		"{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":"
		"\"/etc/ironic-agent.conf\",\"contents\":{\"source\":\"data:,x\"},\"mode\":420}]}}";
}
static void chk_internal(json_t *root)
{
	assert_true(json_is_false(json_object_get(unit_named(root, "agent.service"), "enabled")));
	assert_non_null(file_at(root, "/etc/ironic-agent.conf"));
}

static const struct opt_row opt_rows[] = {
	{ "proxy", set_proxy, chk_proxy, "/etc/profile.d/proxy.sh", NULL },
	{ "additional-ntp", set_ntp, chk_ntp, "/usr/local/bin/add-ntp-sources.sh",
	  "add-ntp-sources.service" },
	{ "ntp-exclusive", set_ntp_excl, chk_ntp_excl, "/usr/local/bin/add-ntp-sources.sh", NULL },
	{ "ssh-key", set_ssh, chk_ssh, NULL, NULL },
	{ "trust-bundle", set_bundle, chk_bundle,
	  "/etc/pki/ca-trust/source/anchors/assisted-infraenv-additional-trust-bundle.pem", NULL },
	{ "hub-ca", set_hubca, chk_hubca, "/etc/assisted-service/service-ca-cert.crt", NULL },
	{ "mirror", set_mirror, chk_mirror, "/etc/containers/registries.conf", NULL },
	{ "misc", set_misc, chk_misc, NULL, NULL },
	{ "internal-override", set_internal, chk_internal, "/etc/ironic-agent.conf", NULL },
};

static void test_optional_rows(void **state)
{
	struct discovery_params p;
	json_t *baseline;

	g_ntp = json_pack("[s, s]", "ntp1.example.com, 10.1.1.1", "ntp2.example.com");
	g_ntp_excl = json_pack("[s]", "time.example.org");
	base_params(&p);
	baseline = build_ok(&p, NULL);
	for (size_t i = 0; i < sizeof(opt_rows) / sizeof(opt_rows[0]); i++) {
		const struct opt_row *row = &opt_rows[i];
		json_t *root;

		printf("row %s\n", row->name);
		if (row->absent_file)
			assert_null(file_at(baseline, row->absent_file));
		if (row->absent_unit)
			assert_null(unit_named(baseline, row->absent_unit));
		base_params(&p);
		row->set(&p);
		root = build_ok(&p, NULL);
		row->check(root);
		json_decref(root);
	}
	json_decref(baseline);
	json_decref(g_ntp);
	json_decref(g_ntp_excl);
}

static void test_proxy_quoting(void **state)
{
	struct discovery_params p;
	json_t *root;
	char *sh;

	base_params(&p);
	p.http_proxy = "http://a'b&c:1";
	root = build_ok(&p, NULL);
	sh = file_text(root, "/etc/profile.d/proxy.sh");
	assert_string_equal(sh, "export HTTP_PROXY='http://a'\\''b&c:1'\n"
				"export http_proxy='http://a'\\''b&c:1'\n");
	free(sh);
	assert_null(json_object_get(json_object_get(json_object_get(root, "ignition"), "proxy"),
				    "httpsProxy"));
	json_decref(root);
}

/* ---------- determinism ---------- */

static void test_deterministic(void **state)
{
	struct discovery_params p;
	char *a, *b, *c;
	json_t *r1, *r2, *r3;

	base_params(&p);
	set_proxy(&p);
	set_ssh(&p);
	set_bundle(&p);
	p.ignition_config_override = UPSTREAM_OVERRIDE;
	r1 = build_ok(&p, &a);
	r2 = build_ok(&p, &b);
	assert_string_equal(a, b);
	p.infra_env_id = "0b8e4d9a-5a64-4a3c-9c0e-2f1f0c6a1b12";
	r3 = build_ok(&p, &c);
	assert_string_not_equal(a, c);
	free(a);
	free(b);
	free(c);
	json_decref(r1);
	json_decref(r2);
	json_decref(r3);
}

/* ---------- secrets ---------- */

static void test_secrets_placement(void **state)
{
	struct discovery_params p;
	char *text, *rest, *ps;
	json_t *root, *files, *units, *f;
	size_t i;
	const char *src, *agent;

	base_params(&p);
	set_proxy(&p);
	root = build_ok(&p, &text);

	/* The pull secret is exactly the config.json data URL, escaped like Go's url.PathEscape. */
	f = file_at(root, "/root/.docker/config.json");
	src = json_string_value(json_object_get(json_object_get(f, "contents"), "source"));
	assert_string_equal(src, "data:,%7B%22auths%22:%7B%22cloud.openshift.com%22:%7B%22auth%22"
				 ":%22" PULL_SECRET_AUTH "%22%2C%22email%22:%22a@b.c%22%7D%7D%7D");
	assert_non_null(strstr(text, src));
	assert_null(strstr(text, PULL_SECRET));
	ps = file_text(root, "/root/.docker/config.json");
	assert_string_equal(ps, PULL_SECRET);
	free(ps);

	agent = unit_text(root, "agent.service");
	assert_non_null(strstr(agent, "Environment=PULL_SECRET_TOKEN=" AGENT_TOKEN "\n"));
	assert_null(strstr(strstr(agent, AGENT_TOKEN) + 1, AGENT_TOKEN));

	/* Remove the two carriers: neither secret may appear anywhere else. */
	files = json_object_get(json_object_get(root, "storage"), "files");
	json_array_foreach(files, i, f)
		if (strcmp(json_string_value(json_object_get(f, "path")), "/root/.docker/config.json") == 0) {
			json_array_remove(files, i);
			break;
		}
	units = json_object_get(json_object_get(root, "systemd"), "units");
	json_array_foreach(units, i, f)
		if (strcmp(json_string_value(json_object_get(f, "name")), "agent.service") == 0) {
			json_array_remove(units, i);
			break;
		}
	rest = json_dumps(root, JSON_COMPACT);
	assert_null(strstr(rest, PULL_SECRET_AUTH));
	assert_null(strstr(rest, AGENT_TOKEN));
	assert_null(strstr(rest, "s3cr3t"));
	free(rest);
	free(text);
	json_decref(root);
}

/* ---------- overrides ---------- */

struct ovr_row {
	const char *name;
	const char *override;
	int rc;
	const char *msg; /* substring of err.message when rc != 0 */
	void (*check)(json_t *root);
};

static void chk_upstream(json_t *root)
{
	char *t = file_text(root, "/etc/someconfig");

	assert_string_equal(t, "helpimtrappedinaswaggerspec");
	free(t);
	assert_string_equal(json_string_value(json_object_get(json_object_get(root, "ignition"), "version")), "3.1.0");
	assert_non_null(file_at(root, "/root/.docker/config.json"));
	assert_non_null(unit_named(root, "agent.service"));
}

static void chk_replace_file(json_t *root)
{
	json_t *f = file_at(root, "/etc/motd");

	assert_int_equal(count_path(root, "files", "/etc/motd"), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "contents"), "source")),
			    "data:,hello");
	/* Unset child fields keep the parent's values. */
	assert_int_equal(json_integer_value(json_object_get(f, "mode")), 420);
	assert_true(json_is_true(json_object_get(f, "overwrite")));
}

static void chk_v32(json_t *root)
{
	assert_string_equal(json_string_value(json_object_get(json_object_get(root, "ignition"), "version")), "3.2.0");
}

static void chk_unit_merge(json_t *root)
{
	json_t *u = unit_named(root, "agent.service");

	assert_true(json_is_false(json_object_get(u, "enabled")));
	assert_non_null(strstr(json_string_value(json_object_get(u, "contents")), "--infra-env-id"));
	assert_non_null(unit_named(root, "extra.service"));
}

static void chk_link_replaces_file(json_t *root)
{
	assert_int_equal(count_path(root, "files", "/etc/motd"), 0);
	assert_int_equal(count_path(root, "links", "/etc/motd"), 1);
}

static void chk_ssh_concat(json_t *root)
{
	json_t *users = json_object_get(json_object_get(root, "passwd"), "users");
	json_t *keys = json_object_get(json_array_get(users, 0), "sshAuthorizedKeys");

	assert_int_equal(json_array_size(users), 1);
	assert_int_equal(json_array_size(keys), 3);
	assert_string_equal(json_string_value(json_array_get(keys, 2)), "ssh-ed25519 EXTRA");
}

static void chk_no_override(json_t *root)
{
	assert_int_equal(json_array_size(json_object_get(json_object_get(root, "storage"), "files")), 8);
}

static const struct ovr_row ovr_rows[] = {
	{ "upstream-example", UPSTREAM_OVERRIDE, 0, NULL, chk_upstream },
	{ "replace-file",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"/etc/motd\","
	  "\"contents\":{\"source\":\"data:,hello\"}}]}}",
	  0, NULL, chk_replace_file },
	{ "version-3.2.0", "{\"ignition\":{\"version\":\"3.2.0\"}}", 0, NULL, chk_v32 },
	{ "unit-merge",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"systemd\":{\"units\":[{\"name\":\"agent.service\","
	  "\"enabled\":false},{\"name\":\"extra.service\",\"contents\":\"[Service]\\nExecStart=/bin/true\\n\"}]}}",
	  0, NULL, chk_unit_merge },
	{ "link-replaces-file",
	  "{\"ignition\":{\"version\":\"3.2.0\"},\"storage\":{\"links\":[{\"path\":\"/etc/motd\","
	  "\"target\":\"/etc/issue\"}]}}",
	  0, NULL, chk_link_replaces_file },
	{ "ssh-concat",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"passwd\":{\"users\":[{\"name\":\"core\","
	  "\"sshAuthorizedKeys\":[\"ssh-ed25519 EXTRA\"]}]}}",
	  0, NULL, chk_ssh_concat },
	{ "bad-json", "{\"ignition\": {\"version\": \"3.1.0\"", -EINVAL, "error parsing ignition: ", NULL },
	{ "not-object", "[1,2]", -EINVAL, "error parsing ignition: config is not a JSON object", NULL },
	{ "empty-is-none", "", 0, NULL, chk_no_override },
	{ "unsupported-version", "{\"ignition\":{\"version\":\"3.3.0\"}}", -EINVAL,
	  "error parsing ignition: ignition.version: unsupported config version", NULL },
	{ "old-version", "{\"ignition\":{\"version\":\"2.2.0\"}}", -EINVAL,
	  "unsupported config version", NULL },
	{ "unparsable-version", "{\"ignition\":{\"version\":\"3.2\"}}", -EINVAL,
	  "invalid config version (couldn't parse)", NULL },
	{ "missing-version", "{}", -EINVAL, "invalid config version (couldn't parse)", NULL },
	{ "relative-path",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"etc/x\"}]}}",
	  -EINVAL, "storage.files.0.path: path not absolute", NULL },
	{ "bad-scheme",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"/x\","
	  "\"contents\":{\"source\":\"ftp://h/x\"}}]}}",
	  -EINVAL, "storage.files.0.contents.source: invalid url scheme", NULL },
	{ "bad-mode",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"/x\",\"mode\":8192}]}}",
	  -EINVAL, "illegal file mode", NULL },
	{ "duplicate-path",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"/x\"}],"
	  "\"directories\":[{\"path\":\"/x\"}]}}",
	  -EINVAL, "duplicate entry defined", NULL },
	{ "bad-unit-ext",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"systemd\":{\"units\":[{\"name\":\"foo.txt\"}]}}",
	  -EINVAL, "systemd.units.0.name: invalid systemd unit extension", NULL },
	{ "bad-unit-ini",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"systemd\":{\"units\":[{\"name\":\"a.service\","
	  "\"contents\":\"[Service\\nExecStart=/bin/true\"}]}}",
	  -EINVAL, "unable to find end of section", NULL },
	{ "bad-proxy",
	  "{\"ignition\":{\"version\":\"3.1.0\",\"proxy\":{\"httpProxy\":\"socks5://p:1\"}}}",
	  -EINVAL, "ignition.proxy.httpProxy: proxies must be http(s)", NULL },
	{ "wrong-type",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":{\"path\":\"/x\"}}}",
	  -EINVAL, "storage.files: expected an array", NULL },
	{ "overwrite-no-source",
	  "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"/x\",\"overwrite\":true}]}}",
	  -EINVAL, "overwrite must be false if source is unspecified", NULL },
};

static void test_override_rows(void **state)
{
	for (size_t i = 0; i < sizeof(ovr_rows) / sizeof(ovr_rows[0]); i++) {
		const struct ovr_row *row = &ovr_rows[i];
		struct discovery_params p;
		ah_err err = { 0 };
		char *text = NULL;

		printf("row %s\n", row->name);
		base_params(&p);
		set_ssh(&p);
		p.ignition_config_override = row->override;
		if (row->rc == 0) {
			json_t *root = build_ok(&p, NULL);
			row->check(root);
			json_decref(root);
			assert_int_equal(ignition_validate_override(row->override, &err), 0);
			continue;
		}
		assert_int_equal(ignition_build_discovery(&p, &text, NULL, &err), row->rc);
		assert_null(text);
		assert_int_equal(err.status, 400);
		if (!strstr(err.message, row->msg))
			fprintf(stderr, "message: %s\n", err.message);
		assert_non_null(strstr(err.message, row->msg));
		assert_int_equal(strncmp(err.message, "error parsing ignition: ", 24), 0);
		memset(&err, 0, sizeof(err));
		assert_int_equal(ignition_validate_override(row->override, &err), row->rc);
		assert_non_null(strstr(err.message, row->msg));
	}
}

static void test_merge_headers_and_resources(void **state)
{
	json_t *parent = json_loads(
		"{\"ignition\":{\"version\":\"3.1.0\",\"config\":{\"merge\":[{\"source\":\"http://a/x\","
		"\"httpHeaders\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]}]}}}",
		0, NULL);
	json_t *child = json_loads(
		"{\"ignition\":{\"version\":\"3.2.0\",\"config\":{\"merge\":[{\"source\":\"http://a/x\","
		"\"httpHeaders\":[{\"name\":\"A\"},{\"name\":\"C\",\"value\":\"3\"}]},{\"source\":\"http://b/y\"}]}}}",
		0, NULL);
	json_t *merge, *headers;

	assert_int_equal(ignition_merge(parent, child), 0);
	merge = json_object_get(json_object_get(json_object_get(parent, "ignition"), "config"), "merge");
	assert_int_equal(json_array_size(merge), 2);
	headers = json_object_get(json_array_get(merge, 0), "httpHeaders");
	assert_int_equal(json_array_size(headers), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(headers, 0), "name")), "B");
	assert_string_equal(json_string_value(json_object_get(json_array_get(headers, 1), "name")), "C");
	assert_string_equal(json_string_value(json_object_get(json_object_get(parent, "ignition"), "version")), "3.2.0");
	assert_int_equal(ignition_merge(parent, NULL), -EINVAL);
	json_decref(parent);
	json_decref(child);
}

/* ---------- parameter errors ---------- */

static void test_param_errors(void **state)
{
	static const struct {
		const char *name;
		int which;
		const char *msg;
	} rows[] = {
		{ "no-id", 0, "infra_env_id: required" },
		{ "no-url", 1, "service_base_url: required" },
		{ "no-pull-secret", 2, "pull_secret: required" },
		{ "proxy-newline", 3, "proxy.httpProxy: must not contain control characters" },
		{ "image-space", 4, "agent_image: must not contain spaces" },
		{ "bad-ntp", 5, "additionalNTPSources: invalid NTP source \"a;rm -rf /\"" },
		{ "ntp-not-list", 6, "ntpSources: must be a list of strings" },
	};
	json_t *bad_ntp = json_pack("[s]", "a;rm -rf /"), *not_list = json_string("x");

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct discovery_params p;
		ah_err err = { 0 };
		char *text = NULL;

		base_params(&p);
		switch (rows[i].which) {
		case 0: p.infra_env_id = NULL; break;
		case 1: p.service_base_url = ""; break;
		case 2: p.pull_secret = NULL; break;
		case 3: p.http_proxy = "http://p:1\nExecStart=/bin/evil"; break;
		case 4: p.agent_image = "img --privileged"; break;
		case 5: p.additional_ntp_sources = bad_ntp; break;
		case 6: p.ntp_sources = not_list; break;
		}
		printf("row %s\n", rows[i].name);
		assert_int_equal(ignition_build_discovery(&p, &text, NULL, &err), -EINVAL);
		assert_null(text);
		assert_int_equal(err.status, 400);
		if (!strstr(err.message, rows[i].msg))
			fprintf(stderr, "message: %s\n", err.message);
		assert_non_null(strstr(err.message, rows[i].msg));
	}
	json_decref(bad_ntp);
	json_decref(not_list);
}

static void test_extra_files_units(void **state)
{
	struct discovery_params p;
	json_t *files = json_loads("[{\"path\":\"/etc/assisted/network/host0/mac_interface.ini\","
				   "\"mode\":384,\"overwrite\":true,\"user\":{\"name\":\"root\"},"
				   "\"contents\":{\"source\":\"data:text/plain;base64,YQ==\"}}]", 0, NULL);
	json_t *units = json_loads("[{\"name\":\"pre-network-manager-config.service\",\"enabled\":true,"
				   "\"contents\":\"[Unit]\\nBefore=NetworkManager.service\\n[Service]\\n"
				   "Type=oneshot\\nExecStart=/bin/true\\n[Install]\\nWantedBy=multi-user.target\\n\"}]",
				   0, NULL);
	json_t *root;

	base_params(&p);
	p.extra_files = files;
	p.extra_units = units;
	root = build_ok(&p, NULL);
	assert_non_null(file_at(root, "/etc/assisted/network/host0/mac_interface.ini"));
	assert_non_null(unit_named(root, "pre-network-manager-config.service"));
	json_decref(root);
	json_decref(files);

	/* An extra file clashing with a template file is an internal error. */
	ah_err err = { 0 };
	char *text = NULL;
	files = json_loads("[{\"path\":\"/etc/motd\",\"contents\":{\"source\":\"data:,x\"}}]", 0, NULL);
	p.extra_files = files;
	assert_int_equal(ignition_build_discovery(&p, &text, NULL, &err), -EINVAL);
	assert_null(text);
	assert_int_equal(err.status, 500);
	assert_non_null(strstr(err.message, "invalid discovery ignition: storage.files."));
	assert_non_null(strstr(err.message, ".path: duplicate entry defined"));
	json_decref(files);
	json_decref(units);
}

/* The static-network parts from nmstate.c land in the Ignition, valid; an
 * override may still replace one of their files (user's last word, as
 * upstream), and a clash with the template is our bug (500). */
static void test_static_network(void **state)
{
	json_t *cfg = json_pack("{s:[{s:s,s:s,s:{s:b,s:[{s:s,s:i}]}}]}", "interfaces", "name",
				"eth0", "type", "ethernet", "ipv4", "enabled", 1, "address", "ip",
				"192.0.2.10", "prefix-length", 24);
	json_t *ifaces = json_pack("[{s:s,s:s}]", "name", "eth0", "macAddress", "02:00:00:00:00:01");
	struct nmstate_host host = { "ns/one", cfg, ifaces };
	json_t *files = NULL, *units = NULL, *root, *clash;
	struct discovery_params p;
	ah_err err = { 0 };
	char *text = NULL;
	const json_t *f;

	assert_int_equal(nmstate_ignition_parts(&host, 1, &files, &units, &err), 0);
	base_params(&p);
	p.static_network_files = files;
	p.static_network_units = units;
	root = build_ok(&p, NULL);
	f = file_at(root, NMSTATE_BUNDLE_PATH);
	assert_non_null(f);
	assert_int_equal(json_integer_value(json_object_get(f, "mode")), 384);
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "contents"),
							      "compression")), "gzip");
	assert_non_null(file_at(root, NMSTATE_PRE_SCRIPT_PATH));
	assert_non_null(file_at(root, NMSTATE_COMMON_SCRIPT_PATH));
	assert_non_null(unit_named(root, NMSTATE_UNIT_NAME));
	json_decref(root);

	p.ignition_config_override = "{\"ignition\":{\"version\":\"3.2.0\"},\"storage\":{\"files\":"
				     "[{\"path\":\"" NMSTATE_PRE_SCRIPT_PATH "\",\"mode\":493,"
				     "\"contents\":{\"source\":\"data:,%23!/bin/true\"}}]}}";
	root = build_ok(&p, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
				    file_at(root, NMSTATE_PRE_SCRIPT_PATH), "contents"), "source")),
			    "data:,%23!/bin/true");
	json_decref(root);

	p.ignition_config_override = NULL;
	clash = json_pack("[{s:s,s:{s:s}}]", "path", NMSTATE_BUNDLE_PATH, "contents", "source",
			  "data:,x");
	p.extra_files = clash;
	assert_int_equal(ignition_build_discovery(&p, &text, NULL, &err), -EINVAL);
	assert_null(text);
	assert_int_equal(err.status, 500);
	json_decref(clash);
	json_decref(files);
	json_decref(units);
	json_decref(cfg);
	json_decref(ifaces);
}

static void test_override_order(void **state)
{
	struct discovery_params p;
	json_t *root;
	char *t;

	base_params(&p);
	p.internal_ignition_config_override =
		"{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[{\"path\":\"/etc/x\","
		"\"mode\":384,\"contents\":{\"source\":\"data:,internal\"}}]}}";
	p.ignition_config_override =
		"{\"ignition\":{\"version\":\"3.2.0\"},\"storage\":{\"files\":[{\"path\":\"/etc/x\","
		"\"contents\":{\"source\":\"data:,user\"}}]}}";
	root = build_ok(&p, NULL);
	t = file_text(root, "/etc/x");
	assert_string_equal(t, "user");
	free(t);
	assert_int_equal(json_integer_value(json_object_get(file_at(root, "/etc/x"), "mode")), 384);
	assert_string_equal(json_string_value(json_object_get(json_object_get(root, "ignition"), "version")), "3.2.0");
	json_decref(root);
}

/* ---------- kernel arguments ---------- */

static void test_kernel_args_rows(void **state)
{
	static const struct {
		const char *name, *kargs, *base, *want, *msg;
		int rc;
	} rows[] = {
		{ "none", NULL, "rw ignition.firstboot", "rw ignition.firstboot", NULL, 0 },
		{ "empty-list", "[]", "rw", "rw", NULL, 0 },
		{ "append", "[{\"operation\":\"append\",\"value\":\"console=ttyS0\"},"
			    "{\"operation\":\"append\",\"value\":\"rd.debug\"}]",
		  "rw", "rw console=ttyS0 rd.debug", NULL, 0 },
		{ "append-no-base", "[{\"operation\":\"append\",\"value\":\"a=b\"}]", NULL, "a=b", NULL, 0 },
		{ "quoted", "[{\"operation\":\"append\",\"value\":\"foo=\\\"a b\\\"\"}]", "rw",
		  "rw foo=\"a b\"", NULL, 0 },
		{ "replace", "[{\"operation\":\"replace\",\"value\":\"console=ttyS0\"}]", "rw", NULL,
		  "Only kernel argument operation append is supported.  Got replace", -EINVAL },
		{ "delete", "[{\"operation\":\"delete\",\"value\":\"rw\"}]", "rw", NULL,
		  "Only kernel argument operation append is supported.  Got delete", -EINVAL },
		{ "space", "[{\"operation\":\"append\",\"value\":\"a b\"}]", "rw", NULL,
		  "kernelArguments[0].value: Invalid value", -EINVAL },
		{ "unbalanced-quote", "[{\"operation\":\"append\",\"value\":\"a=\\\"b\"}]", "rw", NULL,
		  "Invalid value", -EINVAL },
		{ "missing-value", "[{\"operation\":\"append\"}]", "rw", NULL, "Required value", -EINVAL },
		{ "not-array", "{}", "rw", NULL, "expected an array", -EINVAL },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *k = rows[i].kargs ? json_loads(rows[i].kargs, 0, NULL) : NULL;
		ah_err err = { 0 };
		char *out = NULL;

		printf("row %s\n", rows[i].name);
		assert_int_equal(kernel_args_apply(k, rows[i].base, &out, &err), rows[i].rc);
		if (rows[i].rc == 0) {
			assert_string_equal(out, rows[i].want);
		} else {
			assert_null(out);
			assert_int_equal(err.status, 400);
			assert_non_null(strstr(err.message, rows[i].msg));
		}
		free(out);
		json_decref(k);
	}
}

/* ---------- iPXE ---------- */

#define IS "https://hub:8443"
static void test_ipxe_rows(void **state)
{
	static const struct {
		const char *name, *kernel, *initrd, *rootfs, *extra, *want;
	} rows[] = {
		{ "plain", IS "/boot-artifacts/kernel?arch=x86_64&version=4.18",
		  IS "/images/id/pxe-initrd?api_key=t&arch=x86_64&version=4.18",
		  IS "/boot-artifacts/rootfs?arch=x86_64&version=4.18", NULL,
		  "#!ipxe\n"
		  "initrd --name initrd " IS "/images/id/pxe-initrd?api_key=t&arch=x86_64&version=4.18\n"
		  "kernel " IS "/boot-artifacts/kernel?arch=x86_64&version=4.18 initrd=initrd "
		  "coreos.live.rootfs_url=" IS "/boot-artifacts/rootfs?arch=x86_64&version=4.18 "
		  "random.trust_cpu=on rd.luks.options=discard ignition.firstboot "
		  "ignition.platform.id=metal console=tty1 console=ttyS1,115200n8 "
		  "coreos.inst.persistent-kargs=\"console=tty1 console=ttyS1,115200n8\"\n"
		  "boot\n" },
		{ "kargs", "http://k", "http://i", "http://r", "a=1 b",
		  "#!ipxe\ninitrd --name initrd http://i\nkernel http://k initrd=initrd "
		  "coreos.live.rootfs_url=http://r random.trust_cpu=on rd.luks.options=discard "
		  "ignition.firstboot ignition.platform.id=metal console=tty1 console=ttyS1,115200n8 "
		  "coreos.inst.persistent-kargs=\"console=tty1 console=ttyS1,115200n8\" a=1 b\nboot\n" },
		{ "empty-kargs", "http://k", "http://i", "http://r", "", NULL },
		{ "space-in-url", "http://k x", "http://i", "http://r", NULL, NULL },
		{ "missing-url", NULL, "http://i", "http://r", NULL, NULL },
		{ "newline-karg", "http://k", "http://i", "http://r", "a\nchain http://evil", NULL },
	};
	char *s;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		printf("row %s\n", rows[i].name);
		errno = 0;
		s = ipxe_script(rows[i].kernel, rows[i].initrd, rows[i].rootfs, rows[i].extra);
		if (strcmp(rows[i].name, "empty-kargs") == 0) {
			assert_non_null(s);
			assert_non_null(strstr(s, "console=ttyS1,115200n8\"\nboot\n"));
		} else if (rows[i].want) {
			assert_string_equal(s, rows[i].want);
		} else {
			assert_null(s);
			assert_int_equal(errno, EINVAL);
		}
		free(s);
	}

	s = ipxe_redirect_script(IS "/api/assisted-install/v2/infra-envs/id/downloads/files?"
				    "api_key=t&file_name=ipxe-script");
	assert_string_equal(s, "#!ipxe\nchain " IS "/api/assisted-install/v2/infra-envs/id/downloads/"
			       "files?api_key=t&file_name=ipxe-script&mac=${net0/mac}\n");
	free(s);
	assert_null(ipxe_redirect_script("http://a b"));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_optional_rows),
		cmocka_unit_test(test_proxy_quoting),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_secrets_placement),
		cmocka_unit_test(test_override_rows),
		cmocka_unit_test(test_merge_headers_and_resources),
		cmocka_unit_test(test_param_errors),
		cmocka_unit_test(test_extra_files_units),
		cmocka_unit_test(test_static_network),
		cmocka_unit_test(test_override_order),
		cmocka_unit_test(test_kernel_args_rows),
		cmocka_unit_test(test_ipxe_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
