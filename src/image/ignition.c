/* ignition.c - discovery Ignition builder, override validation and merge,
 * InfraEnv kernel arguments.  See ignition.h.
 *
 * The config is built as a jansson tree in a fixed insertion order and dumped
 * compact, which makes the output deterministic.  The unit and script texts
 * are our own; what they do follows spec/image.md section 3. */
#include "ignition.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/util.h"

#define IGN_ERR_PREFIX "error parsing ignition: "
#define ANCHORS "/etc/pki/ca-trust/source/anchors/"
#define SERVICE_CA_PATH "/etc/assisted-service/service-ca-cert.crt"

/* ---------- small helpers ---------- */

static bool is_set(const char *s)
{
	return s && *s;
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static bool has_ctl(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* Go's url.PathEscape, which upstream uses for "data:," sources. */
static int add_path_escaped(strbuf *sb, const char *s)
{
	static const char keep[] = "-_.~$&+:=@";
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int r;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    strchr(keep, c))
			r = strbuf_addch(sb, (char)c);
		else
			r = strbuf_addf(sb, "%%%c%c", hex[c >> 4], hex[c & 15]);
		if (r < 0)
			return r;
	}
	return 0;
}

static char *data_url_plain(const char *text)
{
	strbuf sb = STRBUF_INIT;

	if (strbuf_adds(&sb, "data:,") < 0 || add_path_escaped(&sb, text) < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

static char *data_url_base64(const char *mediatype, const char *text)
{
	char *b64 = util_base64_encode(text, strlen(text));
	char *out = NULL;

	if (b64 && asprintf(&out, "data:%s;base64,%s", mediatype, b64) < 0)
		out = NULL;
	free(b64);
	return out;
}

/* Append o to array a, taking the reference; -ENOMEM if o is NULL. */
static int push(json_t *a, json_t *o)
{
	if (!o || json_array_append_new(a, o) < 0)
		return -ENOMEM;
	return 0;
}

enum enc { ENC_PLAIN, ENC_B64_UTF8, ENC_B64_TEXT };

/* Append one storage.files entry.  overwrite < 0 omits the key. */
static int add_file(json_t *files, const char *path, int mode, int overwrite, enum enc enc,
		    const char *text)
{
	char *src;
	json_t *f;

	switch (enc) {
	case ENC_PLAIN:
		src = data_url_plain(text);
		break;
	case ENC_B64_UTF8:
		src = data_url_base64("text/plain;charset=utf-8", text);
		break;
	default:
		src = data_url_base64("text/plain", text);
		break;
	}
	if (!src)
		return -ENOMEM;
	if (overwrite >= 0)
		f = json_pack("{s:s, s:b, s:{s:s}, s:{s:s}, s:i}", "path", path, "overwrite",
			      overwrite, "user", "name", "root", "contents", "source", src, "mode",
			      mode);
	else
		f = json_pack("{s:s, s:{s:s}, s:{s:s}, s:i}", "path", path, "user", "name", "root",
			      "contents", "source", src, "mode", mode);
	free(src);
	return push(files, f);
}

static int add_unit(json_t *units, const char *name, bool enabled, const char *contents)
{
	json_t *u;

	if (contents)
		u = json_pack("{s:s, s:b, s:s}", "name", name, "enabled", enabled, "contents",
			      contents);
	else
		u = json_pack("{s:s, s:b}", "name", name, "enabled", enabled);
	return push(units, u);
}

/* Systemd expands %-specifiers in Environment=; a literal % is written %%. */
static int add_env_line(strbuf *sb, const char *name, const char *value, bool double_pct)
{
	int r = strbuf_addf(sb, "Environment=%s=", name);

	for (const char *s = value; r >= 0 && *s; s++)
		r = (*s == '%' && double_pct) ? strbuf_adds(sb, "%%") : strbuf_addch(sb, *s);
	return r < 0 ? r : strbuf_addch(sb, '\n');
}

/* ---------- fixed unit and file texts ---------- */

static const char SELINUX_UNIT[] =
	"[Unit]\n"
	"Description=Load the assisted SELinux policy module (lets chronyd reach the agent)\n"
	"\n"
	"[Service]\n"
	"Type=oneshot\n"
	"ExecStartPre=/usr/bin/checkmodule -M -m -o /root/assisted.mod /root/assisted.te\n"
	"ExecStartPre=/usr/bin/semodule_package -o /root/assisted.pp -m /root/assisted.mod\n"
	"ExecStart=/usr/sbin/semodule -i /root/assisted.pp\n"
	"\n"
	"[Install]\n"
	"WantedBy=multi-user.target\n";

static const char ISCSISTART_UNIT[] =
	"[Unit]\n"
	"Description=Log in to iSCSI targets described by the iBFT\n"
	"\n"
	"[Service]\n"
	"Type=oneshot\n"
	"ExecStart=-/usr/sbin/modprobe iscsi_ibft\n"
	"ExecStart=-/usr/sbin/iscsistart -f\n"
	"ExecStart=-/usr/sbin/iscsistart -b\n"
	"\n"
	"[Install]\n"
	"WantedBy=multi-user.target\n";

static const char OCI_UNIT[] =
	"[Unit]\n"
	"Description=Run the Oracle Cloud instance user data during discovery\n"
	"Wants=NetworkManager.service\n"
	"After=NetworkManager.service\n"
	"\n"
	"[Service]\n"
	"Type=oneshot\n"
	"Environment=ASSISTED_INSTALLER_DISCOVERY_ENV=1\n"
	"ExecStart=/usr/local/bin/oci-eval-user-data.sh\n"
	"Restart=on-failure\n"
	"RestartSec=30\n"
	"\n"
	"[Install]\n"
	"WantedBy=multi-user.target\n";

static const char NTP_UNIT[] =
	"[Unit]\n"
	"Description=Add the InfraEnv NTP sources to chrony\n"
	"Before=chronyd.service\n"
	"\n"
	"[Service]\n"
	"Type=oneshot\n"
	"ExecStart=/bin/sh -c \"if [ -e /usr/local/bin/add-ntp-sources.sh ]; then exec /bin/bash "
	"/usr/local/bin/add-ntp-sources.sh; else exec /bin/bash "
	"/var/usrlocal/bin/add-ntp-sources.sh; fi\"\n"
	"\n"
	"[Install]\n"
	"WantedBy=multi-user.target\n";

static const char FIX_BZ1964591[] =
	"#!/bin/sh\n"
	"# An interrupted pull can leave a local agent image whose layers are broken\n"
	"# (bz1964591): podman lists it but cannot run it.  Remove it so it is pulled again.\n"
	"img=\"$1\"\n"
	"if podman image exists \"$img\" && ! podman run --pull=never --rm --entrypoint /bin/true \"$img\"; then\n"
	"  podman rmi --force \"$img\"\n"
	"fi\n"
	"exit 0\n";

static const char PULL_IMAGE[] =
	"#!/bin/bash\n"
	"# Pull the agent image, retrying with back-off: 5 s, doubling, at most 300 s.\n"
	"img=\"$1\"\n"
	"delay=5\n"
	"until podman image exists \"$img\" || podman pull \"$img\"; do\n"
	"  echo \"pulling $img failed; retrying in ${delay}s\" >&2\n"
	"  sleep \"$delay\"\n"
	"  delay=$((delay * 2))\n"
	"  if [ \"$delay\" -gt 300 ]; then delay=300; fi\n"
	"done\n";

static const char MOTD[] =
	"** This host booted the discovery image of an agenthub InfraEnv. **\n"
	"The discovery agent runs as agent.service; follow it with:\n"
	"  sudo journalctl TAG=agent\n"
	"\n";

static const char MULTIPATH_CONF[] =
	"defaults {\n"
	"    user_friendly_names yes\n"
	"    find_multipaths yes\n"
	"}\n";

static const char OCI_SCRIPT[] =
	"#!/bin/bash\n"
	"# On Oracle Cloud instances (chassis asset tag OracleCloud.com) fetch the\n"
	"# instance user data from the metadata service and run it; elsewhere do nothing.\n"
	"tag=$(cat /sys/class/dmi/id/chassis_asset_tag 2>/dev/null)\n"
	"[ \"$tag\" = \"OracleCloud.com\" ] || exit 0\n"
	"dir=$(mktemp -d)\n"
	"curl -sSf -H \"Authorization: Bearer Oracle\" -o \"$dir/user_data\" \\\n"
	"  http://169.254.169.254/opc/v2/instance/metadata/user_data || exit 1\n"
	"base64 -d \"$dir/user_data\" > \"$dir/user_data.sh\" || exit 1\n"
	"exec /bin/bash \"$dir/user_data.sh\"\n";

static const char IPV6_CONF[] =
	"[connection]\n"
	"ipv6.dhcp-iaid=mac\n"
	"ipv6.dhcp-duid=ll\n";

/* SELinux module letting chronyd (NTP) talk to the containerised agent. */
static const char ASSISTED_TE[] =
	"module assisted 1.0;\n"
	"\n"
	"require {\n"
	"\ttype chronyd_t;\n"
	"\ttype container_file_t;\n"
	"\ttype spc_t;\n"
	"\tclass unix_dgram_socket sendto;\n"
	"\tclass dir search;\n"
	"\tclass sock_file write;\n"
	"}\n"
	"\n"
	"allow chronyd_t container_file_t:dir search;\n"
	"allow chronyd_t container_file_t:sock_file write;\n"
	"allow chronyd_t spc_t:unix_dgram_socket sendto;\n";

/* ---------- parameter checks ---------- */

static int bad_param(ah_err *err, const char *field, const char *why)
{
	return ah_err_set(err, -EINVAL, 400, "BadRequest", "%s: %s", field, why);
}

/* Values that land on a systemd unit line or a shell command line must not
 * be able to start a new line or word there. */
static int check_line(ah_err *err, const char *field, const char *v)
{
	if (v && has_ctl(v))
		return bad_param(err, field, "must not contain control characters");
	return 0;
}

static int check_word(ah_err *err, const char *field, const char *v)
{
	if (v && (has_ctl(v) || strpbrk(v, " \"'\\")))
		return bad_param(err, field, "must not contain spaces, quotes or control characters");
	return 0;
}

static bool ntp_source_ok(const char *s, size_t n)
{
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr(".-:_[]", c)))
			return false;
	}
	return true;
}

/* Collect NTP sources from a JSON string array, splitting each element on
 * ',' and trimming blanks, into *out (a new array of strings). */
static int ntp_collect(const json_t *list, const char *field, json_t *out, ah_err *err)
{
	size_t i;
	json_t *v;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list))
		return bad_param(err, field, "must be a list of strings");
	json_array_foreach(list, i, v) {
		const char *s = json_string_value(v);

		if (!s)
			return bad_param(err, field, "must be a list of strings");
		while (*s) {
			const char *end = strchr(s, ',');
			size_t n = end ? (size_t)(end - s) : strlen(s);
			const char *a = s, *b = s + n;

			while (a < b && (*a == ' ' || *a == '\t'))
				a++;
			while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
				b--;
			if (b > a) {
				if (!ntp_source_ok(a, (size_t)(b - a)))
					return ah_err_set(err, -EINVAL, 400, "BadRequest",
							  "%s: invalid NTP source \"%.*s\"", field,
							  (int)(b - a), a);
				if (push(out, json_stringn(a, (size_t)(b - a))) < 0)
					return -ENOMEM;
			}
			s += n;
			if (*s == ',')
				s++;
		}
	}
	return 0;
}

/* ---------- section builders ---------- */

static char *agent_unit(const struct discovery_params *p, const char *img)
{
	strbuf sb = STRBUF_INIT;
	unsigned timeout = p->agent_timeout_start_sec ? p->agent_timeout_start_sec
						      : IGNITION_DEFAULT_AGENT_TIMEOUT_SEC;
	int r = 0;

	r |= strbuf_adds(&sb, "[Unit]\n"
			      "Description=agenthub discovery agent\n"
			      "Wants=network-online.target\n"
			      "After=network-online.target\n"
			      "\n"
			      "[Service]\n"
			      "Type=simple\n"
			      "Restart=always\n"
			      "RestartSec=3\n"
			      "StartLimitInterval=0\n");
	r |= add_env_line(&sb, "HTTP_PROXY", or_empty(p->http_proxy), true);
	r |= add_env_line(&sb, "http_proxy", or_empty(p->http_proxy), true);
	r |= add_env_line(&sb, "HTTPS_PROXY", or_empty(p->https_proxy), true);
	r |= add_env_line(&sb, "https_proxy", or_empty(p->https_proxy), true);
	r |= add_env_line(&sb, "NO_PROXY", or_empty(p->no_proxy), false);
	r |= add_env_line(&sb, "no_proxy", or_empty(p->no_proxy), false);
	if (is_set(p->agent_token))
		r |= add_env_line(&sb, "PULL_SECRET_TOKEN", p->agent_token, true);
	r |= strbuf_addf(&sb, "TimeoutStartSec=%u\n", timeout);
	r |= strbuf_addf(&sb, "ExecStartPre=/usr/local/bin/agent-fix-bz1964591 %s\n", img);
	r |= strbuf_addf(&sb, "ExecStartPre=/usr/local/bin/agent-pull-image %s\n", img);
	r |= strbuf_addf(&sb,
			 "ExecStartPre=/usr/bin/podman run --pull=never --privileged --rm "
			 "-v /usr/local/bin:/hostbin %s cp /usr/bin/agent /hostbin\n",
			 img);
	r |= strbuf_addf(&sb,
			 "ExecStart=/usr/local/bin/agent --url %s --infra-env-id %s "
			 "--agent-version %s --insecure=%s",
			 p->service_base_url, p->infra_env_id, img,
			 p->skip_cert_verification ? "true" : "false");
	if (is_set(p->hub_ca_pem))
		r |= strbuf_adds(&sb, " --cacert " SERVICE_CA_PATH);
	r |= strbuf_adds(&sb, "\n\n[Install]\nWantedBy=multi-user.target\n");
	if (r < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

static char *proxy_script(const struct discovery_params *p)
{
	const char *names[] = { "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
				"NO_PROXY", "no_proxy" };
	const char *vals[] = { p->http_proxy, p->http_proxy, p->https_proxy, p->https_proxy,
			       p->no_proxy, p->no_proxy };
	strbuf sb = STRBUF_INIT;
	int r = 0;

	/* Upstream writes the values bare; a URL holding '&' or ';' would then
	 * run as shell, so we single-quote them. */
	for (size_t i = 0; i < 6; i++) {
		if (!is_set(vals[i]))
			continue;
		r |= strbuf_addf(&sb, "export %s='", names[i]);
		for (const char *s = vals[i]; *s; s++)
			r |= *s == '\'' ? strbuf_adds(&sb, "'\\''") : strbuf_addch(&sb, *s);
		r |= strbuf_adds(&sb, "'\n");
	}
	if (r < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

static char *ntp_script(const json_t *servers, bool exclusive)
{
	strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *v;
	int r = 0;

	r |= strbuf_adds(&sb, "#!/bin/bash\n"
			      "# Point chronyd at the InfraEnv's NTP servers before it starts.\n"
			      "conf=/etc/chrony.conf\n");
	if (exclusive) {
		r |= strbuf_adds(&sb, "cat > \"$conf\" <<'EOF'\n");
		json_array_foreach(servers, i, v)
			r |= strbuf_addf(&sb, "server %s iburst\n", json_string_value(v));
		r |= strbuf_adds(&sb, "driftfile /var/lib/chrony/drift\n"
				      "makestep 1.0 -1\n"
				      "rtcsync\n"
				      "logdir /var/log/chrony\n"
				      "EOF\n");
	} else {
		r |= strbuf_adds(&sb, "for s in");
		json_array_foreach(servers, i, v)
			r |= strbuf_addf(&sb, " %s", json_string_value(v));
		r |= strbuf_adds(&sb,
				 "; do\n"
				 "  grep -q \"^server $s \" \"$conf\" || echo \"server $s iburst\" >> \"$conf\"\n"
				 "done\n"
				 "if grep -q '^makestep' \"$conf\"; then\n"
				 "  sed -i 's/^makestep.*/makestep 1.0 -1/' \"$conf\"\n"
				 "else\n"
				 "  echo 'makestep 1.0 -1' >> \"$conf\"\n"
				 "fi\n");
	}
	if (r < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

static json_t *build_ignition_section(const struct discovery_params *p)
{
	json_t *ign = json_pack("{s:s}", "version", "3.1.0");
	json_t *proxy, *np;

	if (!ign || (!is_set(p->http_proxy) && !is_set(p->https_proxy)))
		return ign;
	proxy = json_object();
	np = json_array();
	if (!proxy || !np)
		goto oom;
	/* Upstream pastes these into its template unescaped; we escape them. */
	if (is_set(p->http_proxy) && json_object_set_new(proxy, "httpProxy",
							 json_string(p->http_proxy)) < 0)
		goto oom;
	if (is_set(p->https_proxy) && json_object_set_new(proxy, "httpsProxy",
							  json_string(p->https_proxy)) < 0)
		goto oom;
	for (const char *s = or_empty(p->no_proxy); *s;) {
		size_t n = strcspn(s, ",");

		if (push(np, json_stringn(s, n)) < 0)
			goto oom;
		s += n;
		if (*s == ',')
			s++;
	}
	if (json_object_set_new(proxy, "noProxy", np) < 0) {
		np = NULL;
		goto oom;
	}
	np = NULL;
	if (json_object_set_new(ign, "proxy", proxy) < 0) {
		proxy = NULL;
		goto oom;
	}
	return ign;
oom:
	json_decref(np);
	json_decref(proxy);
	json_decref(ign);
	return NULL;
}

static json_t *build_passwd(const char *keys)
{
	json_t *passwd = json_pack("{s:[]}", "users");
	json_t *list, *user;

	if (!passwd || !is_set(keys))
		return passwd;
	list = json_array();
	if (!list)
		goto oom;
	for (const char *s = keys; *s;) {
		size_t n = strcspn(s, "\n");
		const char *a = s, *b = s + n;

		while (a < b && strchr(" \t\r", *a))
			a++;
		while (b > a && strchr(" \t\r", b[-1]))
			b--;
		if (b > a && push(list, json_stringn(a, (size_t)(b - a))) < 0)
			goto oom;
		s += n;
		if (*s)
			s++;
	}
	if (json_array_size(list) == 0) {
		json_decref(list);
		return passwd;
	}
	/* Keys in the order Go's json.Marshal sorts them. */
	user = json_pack("{s:[s], s:s, s:s, s:o}", "groups", "sudo", "name", "core",
			 "passwordHash", "!", "sshAuthorizedKeys", list);
	list = NULL;
	if (push(json_object_get(passwd, "users"), user) < 0)
		goto oom;
	return passwd;
oom:
	json_decref(list);
	json_decref(passwd);
	return NULL;
}

static int append_all(json_t *dst, const json_t *src, const char *field, ah_err *err)
{
	size_t i;
	json_t *v;

	if (!src || json_is_null(src))
		return 0;
	if (!json_is_array(src))
		return bad_param(err, field, "must be an array");
	json_array_foreach(src, i, v) {
		if (!json_is_object(v))
			return bad_param(err, field, "entries must be objects");
		if (push(dst, json_deep_copy(v)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int check_params(const struct discovery_params *p, ah_err *err)
{
	int r;

	if (!is_set(p->service_base_url))
		return bad_param(err, "service_base_url", "required");
	if (!is_set(p->infra_env_id))
		return bad_param(err, "infra_env_id", "required");
	if (!p->pull_secret)
		return bad_param(err, "pull_secret", "required");
	if ((r = check_word(err, "service_base_url", p->service_base_url)) < 0 ||
	    (r = check_word(err, "infra_env_id", p->infra_env_id)) < 0 ||
	    (r = check_word(err, "agent_image", p->agent_image)) < 0 ||
	    (r = check_word(err, "agent_token", p->agent_token)) < 0 ||
	    (r = check_line(err, "proxy.httpProxy", p->http_proxy)) < 0 ||
	    (r = check_line(err, "proxy.httpsProxy", p->https_proxy)) < 0 ||
	    (r = check_line(err, "proxy.noProxy", p->no_proxy)) < 0)
		return r;
	return 0;
}

/* Build the template part (before any override). */
static int build_base(const struct discovery_params *p, json_t **ret, ah_err *err)
{
	const char *img = is_set(p->agent_image) ? p->agent_image : IGNITION_DEFAULT_AGENT_IMAGE;
	json_t *root = NULL, *units, *files, *ntp = NULL;
	char *text = NULL;
	bool exclusive;
	int r;

	if ((r = check_params(p, err)) < 0)
		return r;
	ntp = json_array();
	if (!ntp)
		return -ENOMEM;
	r = ntp_collect(p->ntp_sources, "ntpSources", ntp, err);
	exclusive = json_array_size(ntp) > 0;
	if (r >= 0 && !exclusive)
		r = ntp_collect(p->additional_ntp_sources, "additionalNTPSources", ntp, err);
	if (r < 0)
		goto out;

	r = -ENOMEM;
	root = json_object();
	if (!root || json_object_set_new(root, "ignition", build_ignition_section(p)) < 0 ||
	    json_object_set_new(root, "passwd", build_passwd(p->ssh_authorized_key)) < 0 ||
	    json_object_set_new(root, "systemd", json_pack("{s:[]}", "units")) < 0 ||
	    json_object_set_new(root, "storage", json_pack("{s:[]}", "files")) < 0)
		goto out;
	units = json_object_get(json_object_get(root, "systemd"), "units");
	files = json_object_get(json_object_get(root, "storage"), "files");

	text = agent_unit(p, img);
	if (!text || add_unit(units, "agent.service", !is_set(p->internal_ignition_config_override),
			      text) < 0)
		goto out;
	if (add_unit(units, "selinux.service", true, SELINUX_UNIT) < 0 ||
	    add_unit(units, "multipathd.service", true, NULL) < 0 ||
	    add_unit(units, "iscsistart.service", true, ISCSISTART_UNIT) < 0 ||
	    add_unit(units, "oci-eval-user-data.service", true, OCI_UNIT) < 0)
		goto out;
	if (json_array_size(ntp) && add_unit(units, "add-ntp-sources.service", true, NTP_UNIT) < 0)
		goto out;

	if (add_file(files, "/usr/local/bin/agent-fix-bz1964591", 493, 1, ENC_PLAIN,
		     FIX_BZ1964591) < 0 ||
	    add_file(files, "/usr/local/bin/agent-pull-image", 493, 1, ENC_PLAIN, PULL_IMAGE) < 0 ||
	    add_file(files, "/etc/motd", 420, 1, ENC_PLAIN, MOTD) < 0 ||
	    add_file(files, "/etc/multipath.conf", 420, 1, ENC_B64_UTF8, MULTIPATH_CONF) < 0 ||
	    add_file(files, "/usr/local/bin/oci-eval-user-data.sh", 493, -1, ENC_B64_UTF8,
		     OCI_SCRIPT) < 0 ||
	    add_file(files, "/etc/NetworkManager/conf.d/01-ipv6.conf", 420, 1, ENC_PLAIN,
		     IPV6_CONF) < 0 ||
	    add_file(files, "/root/.docker/config.json", 420, 1, ENC_PLAIN, p->pull_secret) < 0 ||
	    add_file(files, "/root/assisted.te", 420, 1, ENC_B64_TEXT, ASSISTED_TE) < 0)
		goto out;
	if (is_set(p->hub_ca_pem) &&
	    add_file(files, SERVICE_CA_PATH, 420, 1, ENC_B64_UTF8, p->hub_ca_pem) < 0)
		goto out;
	if (is_set(p->additional_trust_bundle) &&
	    add_file(files, ANCHORS "assisted-infraenv-additional-trust-bundle.pem", 420, 1,
		     ENC_B64_UTF8, p->additional_trust_bundle) < 0)
		goto out;
	if (is_set(p->registries_conf) &&
	    add_file(files, "/etc/containers/registries.conf", 420, 1, ENC_B64_TEXT,
		     p->registries_conf) < 0)
		goto out;
	if (is_set(p->mirror_ca_bundle) &&
	    add_file(files, ANCHORS "domain.crt", 420, 1, ENC_B64_TEXT, p->mirror_ca_bundle) < 0)
		goto out;
	if (is_set(p->http_proxy) || is_set(p->https_proxy)) {
		free(text);
		text = proxy_script(p);
		/* Upstream writes decimal 644 here (sticky bit, owner write-only);
		 * we write the 0644 it meant. */
		if (!text || add_file(files, "/etc/profile.d/proxy.sh", 420, -1, ENC_B64_UTF8,
				      text) < 0)
			goto out;
	}
	if (json_array_size(ntp)) {
		free(text);
		text = ntp_script(ntp, exclusive);
		if (!text || add_file(files, "/usr/local/bin/add-ntp-sources.sh", 493, -1,
				      ENC_B64_UTF8, text) < 0)
			goto out;
	}
	if ((r = append_all(files, p->static_network_files, "static_network_files", err)) < 0 ||
	    (r = append_all(units, p->static_network_units, "static_network_units", err)) < 0 ||
	    (r = append_all(files, p->extra_files, "extra_files", err)) < 0 ||
	    (r = append_all(units, p->extra_units, "extra_units", err)) < 0)
		goto out;
	*ret = root;
	root = NULL;
	r = 0;
out:
	free(text);
	json_decref(ntp);
	json_decref(root);
	return r;
}

/* ---------- override validation ---------- */

/* Errors carry a JSON path such as "storage.files.0.path". */
static int verr(ah_err *err, const char *prefix, const char *path, const char *msg)
{
	if (path && *path)
		return ah_err_set(err, -EINVAL, 400, "BadRequest", "%s%s: %s", prefix, path, msg);
	return ah_err_set(err, -EINVAL, 400, "BadRequest", "%s%s", prefix, msg);
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static const char *check_url(const char *u)
{
	static const char *const schemes[] = { "data:", "http://", "https://", "tftp://", "s3://",
					       "gs://" };
	bool ok = false;

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(u, schemes[i], strlen(schemes[i])) == 0)
			ok = true;
	if (!ok)
		return "invalid url scheme";
	for (const char *s = u; *s; s++)
		if (*s == '%' && !(is_hex(s[1]) && is_hex(s[2])))
			return "invalid percent escape in url";
	if (strncmp(u, "data:", 5) == 0 && !strchr(u, ','))
		return "invalid data url (missing ',')";
	return NULL;
}

/* A systemd unit file: sections, key=value lines, comments, continuations. */
static const char *check_unit_text(const char *t)
{
	bool in_section = false, cont = false;

	while (*t) {
		size_t n = strcspn(t, "\n");
		const char *a = t, *b = t + n;

		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
			b--;
		if (cont) {
			cont = b > a && b[-1] == '\\';
		} else if (a == b || *a == '#' || *a == ';') {
			/* blank or comment */
		} else if (*a == '[') {
			if (b[-1] != ']')
				return "invalid unit content: unable to find end of section";
			in_section = true;
		} else {
			if (!in_section)
				return "invalid unit content: key outside of a section";
			if (!memchr(a, '=', (size_t)(b - a)))
				return "invalid unit content: line without '='";
			cont = b[-1] == '\\';
		}
		t += n;
		if (*t)
			t++;
	}
	return NULL;
}

static bool unit_suffix_ok(const char *name)
{
	static const char *const sufs[] = { ".service", ".socket", ".device", ".mount",
					    ".automount", ".swap", ".target", ".path",
					    ".timer", ".snapshot", ".slice", ".scope" };

	for (size_t i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++)
		if (has_suffix(name, sufs[i]) && strlen(name) > strlen(sufs[i]))
			return true;
	return false;
}

struct vctx {
	const char *prefix;
	ah_err *err;
	char path[256];
};

static int vtype(struct vctx *c, const json_t *v, json_type want, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Check v (if present and not null) has type want; the path is formatted. */
static int vtype(struct vctx *c, const json_t *v, json_type want, const char *fmt, ...)
{
	static const char *const names[] = { "an object", "an array", "a string", "an integer",
					     "a number", "a boolean", "a boolean", "null" };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->path, sizeof(c->path), fmt, ap);
	va_end(ap);
	if (!v || json_is_null(v) || json_typeof(v) == want)
		return 0;
	if (want == JSON_TRUE && json_is_boolean(v))
		return 0;
	char msg[64];
	snprintf(msg, sizeof(msg), "expected %s", names[want]);
	return verr(c->err, c->prefix, c->path, msg);
}

static int validate_nodes(struct vctx *c, const json_t *storage, json_t *seen)
{
	static const char *const kinds[] = { "files", "directories", "links" };
	int r;

	for (size_t k = 0; k < 3; k++) {
		const json_t *list = json_object_get(storage, kinds[k]);
		size_t i;
		json_t *n;

		if ((r = vtype(c, list, JSON_ARRAY, "storage.%s", kinds[k])) < 0)
			return r;
		json_array_foreach(list, i, n) {
			const json_t *pathv = json_object_get(n, "path");
			const json_t *mode = json_object_get(n, "mode");
			const json_t *contents = json_object_get(n, "contents");
			const json_t *src = json_object_get(contents, "source");
			const json_t *ow = json_object_get(n, "overwrite");
			const char *path;

			if ((r = vtype(c, n, JSON_OBJECT, "storage.%s.%zu", kinds[k], i)) < 0 ||
			    (r = vtype(c, pathv, JSON_STRING, "storage.%s.%zu.path", kinds[k], i)) < 0)
				return r;
			path = json_string_value(pathv);
			if (!path || path[0] != '/')
				return verr(c->err, c->prefix, c->path, "path not absolute");
			if (json_object_get(seen, path))
				return verr(c->err, c->prefix, c->path, "duplicate entry defined");
			if (json_object_set_new(seen, path, json_true()) < 0)
				return -ENOMEM;
			if ((r = vtype(c, mode, JSON_INTEGER, "storage.%s.%zu.mode", kinds[k], i)) < 0)
				return r;
			if (mode && json_is_integer(mode) &&
			    (json_integer_value(mode) < 0 || json_integer_value(mode) > 07777))
				return verr(c->err, c->prefix, c->path, "illegal file mode");
			if ((r = vtype(c, ow, JSON_TRUE, "storage.%s.%zu.overwrite", kinds[k], i)) < 0)
				return r;
			if (k == 0) {
				if ((r = vtype(c, contents, JSON_OBJECT, "storage.files.%zu.contents",
					       i)) < 0 ||
				    (r = vtype(c, src, JSON_STRING,
					       "storage.files.%zu.contents.source", i)) < 0)
					return r;
				if (json_is_string(src)) {
					const char *why = check_url(json_string_value(src));
					if (why)
						return verr(c->err, c->prefix, c->path, why);
				}
				if (json_is_true(ow) && !json_is_string(src)) {
					snprintf(c->path, sizeof(c->path), "storage.files.%zu.overwrite",
						 i);
					return verr(c->err, c->prefix, c->path,
						    "overwrite must be false if source is unspecified");
				}
			}
			if (k == 2) {
				const json_t *target = json_object_get(n, "target");
				if ((r = vtype(c, target, JSON_STRING, "storage.links.%zu.target",
					       i)) < 0)
					return r;
				if (!json_is_string(target))
					return verr(c->err, c->prefix, c->path, "target is required");
			}
		}
	}
	return 0;
}

static int validate_units(struct vctx *c, const json_t *systemd, json_t *seen)
{
	const json_t *units = json_object_get(systemd, "units");
	size_t i;
	json_t *u;
	int r;

	if ((r = vtype(c, units, JSON_ARRAY, "systemd.units")) < 0)
		return r;
	json_array_foreach(units, i, u) {
		const json_t *name = json_object_get(u, "name");
		const json_t *contents = json_object_get(u, "contents");
		const json_t *dropins = json_object_get(u, "dropins");
		size_t j;
		json_t *d;
		const char *why;

		if ((r = vtype(c, u, JSON_OBJECT, "systemd.units.%zu", i)) < 0 ||
		    (r = vtype(c, name, JSON_STRING, "systemd.units.%zu.name", i)) < 0)
			return r;
		if (!json_is_string(name) || !unit_suffix_ok(json_string_value(name)))
			return verr(c->err, c->prefix, c->path, "invalid systemd unit extension");
		if (json_object_get(seen, json_string_value(name)))
			return verr(c->err, c->prefix, c->path, "duplicate entry defined");
		if (json_object_set_new(seen, json_string_value(name), json_true()) < 0)
			return -ENOMEM;
		if ((r = vtype(c, json_object_get(u, "enabled"), JSON_TRUE,
			       "systemd.units.%zu.enabled", i)) < 0 ||
		    (r = vtype(c, json_object_get(u, "mask"), JSON_TRUE, "systemd.units.%zu.mask",
			       i)) < 0 ||
		    (r = vtype(c, contents, JSON_STRING, "systemd.units.%zu.contents", i)) < 0)
			return r;
		if (json_is_string(contents) && (why = check_unit_text(json_string_value(contents))))
			return verr(c->err, c->prefix, c->path, why);
		if ((r = vtype(c, dropins, JSON_ARRAY, "systemd.units.%zu.dropins", i)) < 0)
			return r;
		json_array_foreach(dropins, j, d) {
			const json_t *dn = json_object_get(d, "name");
			const json_t *dc = json_object_get(d, "contents");

			if ((r = vtype(c, d, JSON_OBJECT, "systemd.units.%zu.dropins.%zu", i, j)) < 0 ||
			    (r = vtype(c, dn, JSON_STRING, "systemd.units.%zu.dropins.%zu.name", i,
				       j)) < 0)
				return r;
			if (!json_is_string(dn) || !has_suffix(json_string_value(dn), ".conf"))
				return verr(c->err, c->prefix, c->path, "invalid systemd unit dropin extension");
			if ((r = vtype(c, dc, JSON_STRING, "systemd.units.%zu.dropins.%zu.contents", i,
				       j)) < 0)
				return r;
			if (json_is_string(dc) && (why = check_unit_text(json_string_value(dc))))
				return verr(c->err, c->prefix, c->path, why);
		}
	}
	return 0;
}

static int validate_passwd(struct vctx *c, const json_t *passwd)
{
	static const char *const lists[] = { "users", "groups" };
	int r;

	for (size_t k = 0; k < 2; k++) {
		const json_t *list = json_object_get(passwd, lists[k]);
		size_t i;
		json_t *u;

		if ((r = vtype(c, list, JSON_ARRAY, "passwd.%s", lists[k])) < 0)
			return r;
		json_array_foreach(list, i, u) {
			if ((r = vtype(c, u, JSON_OBJECT, "passwd.%s.%zu", lists[k], i)) < 0 ||
			    (r = vtype(c, json_object_get(u, "name"), JSON_STRING,
				       "passwd.%s.%zu.name", lists[k], i)) < 0)
				return r;
			if (k == 0 && (r = vtype(c, json_object_get(u, "sshAuthorizedKeys"),
						 JSON_ARRAY, "passwd.users.%zu.sshAuthorizedKeys",
						 i)) < 0)
				return r;
		}
	}
	return 0;
}

static int validate_ignition_section(struct vctx *c, const json_t *ign)
{
	const json_t *proxy = json_object_get(ign, "proxy");
	static const char *const keys[] = { "httpProxy", "httpsProxy" };
	int r;

	if ((r = vtype(c, proxy, JSON_OBJECT, "ignition.proxy")) < 0)
		return r;
	for (size_t k = 0; k < 2; k++) {
		const json_t *v = json_object_get(proxy, keys[k]);
		const char *s;

		if ((r = vtype(c, v, JSON_STRING, "ignition.proxy.%s", keys[k])) < 0)
			return r;
		s = json_string_value(v);
		if (s && *s && strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0)
			return verr(c->err, c->prefix, c->path, "proxies must be http(s)");
	}
	return vtype(c, json_object_get(proxy, "noProxy"), JSON_ARRAY, "ignition.proxy.noProxy");
}

/* Accept only the versions upstream parses (3.2.0, falling back to 3.1.0),
 * with Ignition's two error texts for the rest. */
static int validate_version(struct vctx *c, const json_t *cfg)
{
	const char *v = json_string_value(json_object_get(json_object_get(cfg, "ignition"), "version"));
	unsigned a, b, d;
	int n = 0;

	snprintf(c->path, sizeof(c->path), "ignition.version");
	if (!v || sscanf(v, "%u.%u.%u%n", &a, &b, &d, &n) != 3 || (v[n] && v[n] != '-'))
		return verr(c->err, c->prefix, c->path, "invalid config version (couldn't parse)");
	if (strcmp(v, "3.1.0") != 0 && strcmp(v, "3.2.0") != 0)
		return verr(c->err, c->prefix, c->path, "unsupported config version");
	return 0;
}

/* Structural checks over a whole config object. */
static int validate_config(const json_t *cfg, const char *prefix, bool check_version, ah_err *err)
{
	struct vctx c = { .prefix = prefix, .err = err, .path = "" };
	json_t *seen_nodes = json_object(), *seen_units = json_object();
	int r;

	if (!seen_nodes || !seen_units) {
		r = -ENOMEM;
		goto out;
	}
	if (!json_is_object(cfg)) {
		r = verr(err, prefix, "", "config is not a JSON object");
		goto out;
	}
	if ((r = vtype(&c, json_object_get(cfg, "ignition"), JSON_OBJECT, "ignition")) < 0 ||
	    (check_version && (r = validate_version(&c, cfg)) < 0) ||
	    (r = validate_ignition_section(&c, json_object_get(cfg, "ignition"))) < 0 ||
	    (r = vtype(&c, json_object_get(cfg, "storage"), JSON_OBJECT, "storage")) < 0 ||
	    (r = validate_nodes(&c, json_object_get(cfg, "storage"), seen_nodes)) < 0 ||
	    (r = vtype(&c, json_object_get(cfg, "systemd"), JSON_OBJECT, "systemd")) < 0 ||
	    (r = validate_units(&c, json_object_get(cfg, "systemd"), seen_units)) < 0 ||
	    (r = vtype(&c, json_object_get(cfg, "passwd"), JSON_OBJECT, "passwd")) < 0 ||
	    (r = validate_passwd(&c, json_object_get(cfg, "passwd"))) < 0)
		goto out;
	r = 0;
out:
	json_decref(seen_nodes);
	json_decref(seen_units);
	return r;
}

static int parse_override(const char *text, json_t **ret, ah_err *err)
{
	json_error_t jerr;
	json_t *cfg;
	int r;

	/* Text that is not JSON at all is what Ignition's parser calls an
	 * invalid config, with no detail (upstream's message, exactly). */
	cfg = json_loads(text, 0, &jerr);
	if (!cfg)
		return ah_err_set(err, -EINVAL, 400, "BadRequest", IGN_ERR_PREFIX "config is not valid");
	if ((r = validate_config(cfg, IGN_ERR_PREFIX, true, err)) < 0) {
		json_decref(cfg);
		return r;
	}
	*ret = cfg;
	return 0;
}

int ignition_validate_override(const char *override_json, ah_err *err)
{
	json_t *cfg = NULL;
	int r;

	if (!is_set(override_json))
		return 0; /* "" means no override, as upstream */
	r = parse_override(override_json, &cfg, err);
	json_decref(cfg);
	return r;
}

/* ---------- merge ---------- */

/* How the entries of the list at ctx (a dotted path without indices) are
 * keyed; NULL = not keyed (concatenate). */
static const char *list_key(const char *ctx)
{
	static const struct {
		const char *ctx, *key;
	} table[] = {
		{ "storage.files", "path" },
		{ "storage.directories", "path" },
		{ "storage.links", "path" },
		{ "storage.disks", "device" },
		{ "storage.filesystems", "device" },
		{ "storage.raid", "name" },
		{ "storage.luks", "name" },
		{ "systemd.units", "name" },
		{ "systemd.units.dropins", "name" },
		{ "passwd.users", "name" },
		{ "passwd.groups", "name" },
		{ "ignition.config.merge", "source" },
		{ "ignition.security.tls.certificateAuthorities", "source" },
		{ "storage.files.append", "source" },
		{ "storage.disks.partitions", "number" },
	};

	if (has_suffix(ctx, "httpHeaders"))
		return "name";
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(ctx, table[i].ctx) == 0)
			return table[i].key;
	return NULL;
}

static bool same_key(const json_t *a, const json_t *b, const char *key)
{
	const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);

	/* Partitions without a number are keyed by label, as Ignition does. */
	if (strcmp(key, "number") == 0 && (!json_integer_value(x) || !json_integer_value(y)))
		return json_integer_value(x) == json_integer_value(y) &&
		       json_equal(json_object_get(a, "label"), json_object_get(b, "label"));
	return x && y && json_equal(x, y);
}

static int merge_object(json_t *parent, const json_t *child, const char *ctx);

static int merge_list(json_t *parent, const json_t *child, const char *ctx)
{
	const char *key = list_key(ctx);
	bool headers = has_suffix(ctx, "httpHeaders");
	size_t i, j;
	json_t *c, *p;
	int r;

	json_array_foreach(child, i, c) {
		json_t *match = NULL;
		size_t at = 0;

		if (key && json_is_object(c))
			json_array_foreach(parent, j, p)
				if (json_is_object(p) && same_key(p, c, key)) {
					match = p;
					at = j;
					break;
				}
		if (match && headers && !json_is_string(json_object_get(c, "value"))) {
			/* A child header without a value deletes the parent's. */
			if (json_array_remove(parent, at) < 0)
				return -ENOMEM;
			continue;
		}
		if (match) {
			if ((r = merge_object(match, c, ctx)) < 0)
				return r;
			continue;
		}
		if (push(parent, json_deep_copy(c)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Files, directories and links share one key space: a child entry replaces a
 * parent entry with the same path in another of the three lists. */
static void drop_cross_kind(json_t *pstorage, const json_t *cstorage)
{
	static const char *const kinds[] = { "files", "directories", "links" };

	for (size_t ck = 0; ck < 3; ck++) {
		const json_t *clist = json_object_get(cstorage, kinds[ck]);
		size_t i;
		json_t *c;

		json_array_foreach(clist, i, c) {
			for (size_t pk = 0; pk < 3; pk++) {
				json_t *plist = json_object_get(pstorage, kinds[pk]);

				if (pk == ck || !json_is_array(plist))
					continue;
				for (size_t j = 0; j < json_array_size(plist);) {
					if (same_key(json_array_get(plist, j), c, "path"))
						json_array_remove(plist, j);
					else
						j++;
				}
			}
		}
	}
}

static int merge_object(json_t *parent, const json_t *child, const char *ctx)
{
	const char *k;
	json_t *cv;
	int r;

	if (strcmp(ctx, "storage") == 0)
		drop_cross_kind(parent, child);
	json_object_foreach((json_t *)child, k, cv) {
		json_t *pv = json_object_get(parent, k);
		char sub[256];

		if (json_is_null(cv))
			continue; /* an unset pointer in Go: the parent's value stays */
		snprintf(sub, sizeof(sub), "%s%s%s", ctx, *ctx ? "." : "", k);
		if (json_is_object(cv) && json_is_object(pv)) {
			if ((r = merge_object(pv, cv, sub)) < 0)
				return r;
		} else if (json_is_array(cv) && json_is_array(pv)) {
			if ((r = merge_list(pv, cv, sub)) < 0)
				return r;
		} else if (json_object_set_new(parent, k, json_deep_copy(cv)) < 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

int ignition_merge(json_t *parent, const json_t *child)
{
	if (!json_is_object(parent) || !json_is_object(child))
		return -EINVAL;
	return merge_object(parent, child, "");
}

static int apply_override(json_t *base, const char *text, ah_err *err)
{
	json_t *cfg = NULL;
	int r;

	if (!is_set(text))
		return 0;
	if ((r = parse_override(text, &cfg, err)) < 0)
		return r;
	r = ignition_merge(base, cfg);
	json_decref(cfg);
	if (r < 0)
		return r;
	return validate_config(base, "merged ignition config is invalid: ", true, err);
}

int ignition_build_discovery(const struct discovery_params *p, char **ret_json, size_t *ret_len,
			     ah_err *err)
{
	json_t *root = NULL;
	char *out;
	int r;

	if ((r = build_base(p, &root, err)) < 0)
		return r;
	/* Extra files and units come from our own modules (static network); a
	 * clash with the template is our bug, hence 500, not the user's 400. */
	if ((p->extra_files || p->extra_units || p->static_network_files ||
	     p->static_network_units) &&
	    (r = validate_config(root, "invalid discovery ignition: ", true, err)) < 0) {
		if (err)
			err->status = 500;
		json_decref(root);
		return r;
	}
	if ((r = apply_override(root, p->internal_ignition_config_override, err)) < 0 ||
	    (r = apply_override(root, p->ignition_config_override, err)) < 0) {
		json_decref(root);
		return r;
	}
	out = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (!out)
		return -ENOMEM;
	if (ret_len)
		*ret_len = strlen(out);
	*ret_json = out;
	return 0;
}

/* ---------- kernel arguments ---------- */

/* ^(?:(?:[^ \t\n\r"]+)|(?:"[^"]*"))+$ */
static bool karg_value_ok(const char *s)
{
	if (!*s)
		return false;
	while (*s) {
		if (*s == '"') {
			const char *end = strchr(s + 1, '"');
			if (!end)
				return false;
			s = end + 1;
		} else if (strchr(" \t\n\r", *s)) {
			return false;
		} else {
			s++;
		}
	}
	return true;
}

int kernel_args_apply(const json_t *kernel_arguments, const char *base_args, char **ret,
		      ah_err *err)
{
	strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *ka;
	int r;

	if (kernel_arguments && !json_is_null(kernel_arguments) && !json_is_array(kernel_arguments))
		return ah_err_set(err, -EINVAL, 400, "BadRequest",
				  "kernelArguments: expected an array");
	if ((r = strbuf_adds(&sb, or_empty(base_args))) < 0)
		return r;
	json_array_foreach(kernel_arguments, i, ka) {
		const char *op = json_string_value(json_object_get(ka, "operation"));
		const char *val = json_string_value(json_object_get(ka, "value"));

		if (!json_is_object(ka) || !val) {
			r = ah_err_set(err, -EINVAL, 400, "BadRequest",
				       "kernelArguments[%zu].value: Required value", i);
			goto fail;
		}
		if (!op || strcmp(op, "append") != 0) {
			r = ah_err_set(err, -EINVAL, 400, "BadRequest",
				       "Only kernel argument operation append is supported.  Got %s",
				       op ? op : "");
			goto fail;
		}
		if (!karg_value_ok(val)) {
			r = ah_err_set(err, -EINVAL, 400, "BadRequest",
				       "kernelArguments[%zu].value: Invalid value: \"%s\": should "
				       "match '^(?:(?:[^ \\t\\n\\r\"]+)|(?:\"[^\"]*\"))+$'",
				       i, val);
			goto fail;
		}
		if ((sb.len && (r = strbuf_addch(&sb, ' ')) < 0) || (r = strbuf_adds(&sb, val)) < 0)
			goto fail;
	}
	*ret = strbuf_detach(&sb, NULL);
	return 0;
fail:
	strbuf_release(&sb);
	return r;
}
