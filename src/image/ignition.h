/* ignition.h - the discovery Ignition a host boots from, and InfraEnv kernel arguments.
 *
 * ignition_build_discovery() renders the Ignition (spec 3.1.0) that turns a
 * live CoreOS boot into a discovery host: it pulls and runs the agent, which
 * registers with the hub's agent API.  The shape follows assisted-service's
 * discovery template (spec/image.md section 3): the agent, SELinux, multipath,
 * iSCSI, OCI user-data and NTP units, the pull secret, proxy, trust bundles
 * and the core user's SSH keys; then the InfraEnv's ignitionConfigOverride is
 * merged in with Ignition's own merge rules.
 *
 * Everything here is pure (no I/O) and thread-safe: no shared state.
 * Output is deterministic: the same parameters give byte-identical JSON, so
 * the hub can tell when a discovery image changed by comparing bytes.
 *
 * Static networking (the bundle, the two host scripts and
 * pre-network-manager-config.service) comes from image/nmstate.h through
 * static_network_files/static_network_units.
 *
 * Not covered: OKD-only units, the ironic internal override's extra content
 * beyond the generic merge. */
#ifndef AH_IMAGE_IGNITION_H
#define AH_IMAGE_IGNITION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define IGNITION_DEFAULT_AGENT_IMAGE "quay.io/edge-infrastructure/assisted-installer-agent:latest"
#define IGNITION_DEFAULT_AGENT_TIMEOUT_SEC 600

/* Inputs of the discovery Ignition.  Every pointer is borrowed for the call
 * only; NULL or "" means "not set" unless noted. */
struct discovery_params {
	const char *service_base_url;   /* required: the hub's agent API base, "https://host:port" */
	const char *infra_env_id;       /* required: InfraEnv UUID */
	const char *agent_token;        /* PULL_SECRET_TOKEN env of agent.service (secret) */
	const char *pull_secret;        /* required: .dockerconfigjson text (secret) */
	const char *ssh_authorized_key; /* one or more keys, newline separated */
	const char *http_proxy;
	const char *https_proxy;
	const char *no_proxy;           /* comma separated */
	const json_t *ntp_sources;      /* array of strings: replaces chrony's servers */
	const json_t *additional_ntp_sources; /* array of strings: added to chrony's servers;
					       * ignored when ntp_sources is non-empty.  An
					       * element may itself be comma separated. */
	const char *additional_trust_bundle; /* PEM, added to the system anchors */
	const char *hub_ca_pem;         /* PEM of the hub's CA: written to
					 * /etc/assisted-service/service-ca-cert.crt and
					 * passed to the agent as --cacert */
	bool skip_cert_verification;    /* agent --insecure=true */
	const char *agent_image;        /* default IGNITION_DEFAULT_AGENT_IMAGE */
	unsigned agent_timeout_start_sec; /* 0 = IGNITION_DEFAULT_AGENT_TIMEOUT_SEC */
	const char *registries_conf;    /* mirror registries.conf text */
	const char *mirror_ca_bundle;   /* mirror registries' CA (PEM) */
	const json_t *extra_files;      /* array of Ignition file objects appended to
					 * storage.files (e.g. static network) */
	const json_t *extra_units;      /* array of Ignition unit objects appended to
					 * systemd.units */
	const json_t *static_network_files; /* storage.files entries from
					     * nmstate_ignition_parts() (NULL = no
					     * static network) */
	const json_t *static_network_units; /* systemd.units entries from the same */
	const char *internal_ignition_config_override; /* JSON text merged first; when
							* set agent.service is disabled
							* (ironic boots the agent itself) */
	const char *ignition_config_override; /* JSON text (InfraEnv spec), merged last */
	/* Carried for callers and future use: the upstream template renders the
	 * same Ignition for every architecture and OS image version. */
	const char *cpu_architecture;
	const char *os_image_version;
};

/* Render the discovery Ignition.  On success returns 0 and stores a malloc'd
 * NUL-terminated compact JSON text in *ret_json (caller frees) and its length
 * in *ret_len (may be NULL).  Errors: -EINVAL with err->status 400 for bad
 * parameters or an invalid override (message "error parsing ignition: ..."
 * or "merged ignition config is invalid: ..."), -ENOMEM. */
int ignition_build_discovery(const struct discovery_params *p, char **ret_json, size_t *ret_len,
			     ah_err *err);

/* Check an ignitionConfigOverride text as the InfraEnv admission does:
 * JSON object ("" or NULL = no override, accepted), ignition.version "3.1.0"
 * or "3.2.0", and the structural rules ignition-validate enforces for files, directories, links, units, users and
 * the proxy.  0, or -EINVAL with err->status 400 ("error parsing ignition: ..."). */
int ignition_validate_override(const char *override_json, ah_err *err);

/* Merge child into parent with Ignition's config merge rules (spec/image.md
 * 3.6): scalars replace, objects merge recursively, keyed lists merge entries
 * with the same key and append new ones, other lists concatenate.  parent is
 * modified in place; child is only read.  0 or -ENOMEM. */
int ignition_merge(json_t *parent, const json_t *child);

/* Apply InfraEnv spec.kernelArguments ([{operation, value}], may be NULL) to
 * base_args (space separated, may be NULL).  Only "append" is accepted, as
 * upstream ("Only kernel argument operation append is supported.  Got X");
 * each value must match ^(?:(?:[^ \t\n\r"]+)|(?:"[^"]*"))+$.  On success *ret
 * is a malloc'd string: base_args followed by each value, space separated.
 * -EINVAL with err->status 400, or -ENOMEM. */
int kernel_args_apply(const json_t *kernel_arguments, const char *base_args, char **ret,
		      ah_err *err);

#endif
