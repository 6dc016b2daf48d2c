/* fuzz-agentapi.c - libFuzzer target for the bodies the agent API takes
 * from hosts (src/assisted/): step replies of every type, the inventory in
 * an inventory reply's output, install progress, and the register body's
 * host id.  The first byte picks the host's status, role and whether it is
 * in a cluster; the second what the rest is:
 *   0 a whole step reply {"step_type","step_id","exit_code","output",...}
 *   1 the output of an inventory reply (the inventory JSON)
 *   2 the output of a reply of the step type named by the third byte
 *   3 a progress body {"current_stage","progress_info"}
 *   4 a register body {"host_id","discovery_agent_version"}
 * Checks:
 *   - a refusal carries a message and a 4xx status;
 *   - a host model stays an object whose "status" is a string, and the
 *     next steps for it are an object with an instructions array;
 *   - applying the same reply twice to equal hosts gives equal hosts
 *     (replies are deterministic for a fixed clock). */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "assisted/host.h"
#include "assisted/steps.h"
#include "base/util.h"
#include "fuzz-common.h"

static const char *const statuses[] = { "discovering", "known", "insufficient", "pending-for-input",
					"preparing-for-installation", "installing", "installing-in-progress",
					"error", "discovering-unbound", "known-unbound", "disconnected",
					"binding", "installed", "reclaiming", "added-to-existing-cluster",
					"cancelled" };
static const char *const roles[] = { "master", "worker", "auto-assign", "bootstrap" };
static const char *const types[] = { "inventory", "connectivity-check", "free-network-addresses",
				     "dhcp-lease-allocate", "ntp-synchronizer", "domain-resolution",
				     "installation-disk-speed-check", "container-image-availability",
				     "api-vip-connectivity-check", "tang-connectivity-check", "verify-vips",
				     "install", "logs-gather", "stop-installation", "upgrade-agent",
				     "download-boot-artifacts", "reboot-for-reclaim" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char CLUSTER[] =
	"{\"id\":\"c1\",\"name\":\"c\",\"base_dns_domain\":\"example.com\",\"status\":\"installing\","
	"\"api_vips\":[{\"ip\":\"192.168.1.100\"}],\"ingress_vips\":[{\"ip\":\"192.168.1.101\"}],"
	"\"machine_networks\":[{\"cidr\":\"192.168.1.0/24\"}],\"openshift_version\":\"4.14\","
	"\"control_plane_count\":3}";

static json_t *host_for(uint8_t b)
{
	json_t *h = json_pack("{s:s,s:s,s:s,s:s}", "id", "11111111-2222-4333-8444-555555555555", "infra_env_id",
			      "99999999-2222-4333-8444-555555555555", "status", statuses[b % N(statuses)], "role",
			      roles[(b / N(statuses)) % N(roles)]);

	if (h && (b & 0x80))
		json_object_set_new(h, "cluster_id", json_string("c1"));
	return h;
}

static void check_refusal(int r, const ah_err *err)
{
	CHECK(r == -ENOMEM || (err->message[0] && err->status >= 400 && err->status < 500));
}

static void check_host(const json_t *host, const json_t *cluster)
{
	struct steps_ctx ctx = { 0 };
	json_t *steps;

	CHECK(json_is_object(host));
	CHECK(json_is_string(json_object_get(host, "status")));
	ctx.cluster = cluster;
	ctx.infra_env_id = "99999999-2222-4333-8444-555555555555";
	ctx.installer_image = "quay.io/installer:1";
	ctx.controller_image = "quay.io/controller:1";
	steps = host_next_steps(host, false, &ctx);
	CHECK(json_is_object(steps) && json_is_array(json_object_get(steps, "instructions")));
	json_decref(steps);
}

static void apply_twice(uint8_t hb, const json_t *reply)
{
	json_t *cluster = (hb & 0x80) ? json_loads(CLUSTER, 0, NULL) : NULL;
	json_t *a = host_for(hb), *b = host_for(hb);
	ah_err e1 = { 0 }, e2 = { 0 };
	int r1, r2;

	CHECK(a && b);
	r1 = host_apply_step_reply_now(a, reply, cluster, 1700000000, &e1);
	r2 = host_apply_step_reply_now(b, reply, cluster, 1700000000, &e2);
	CHECK(r1 == r2);
	if (r1 < 0) {
		check_refusal(r1, &e1);
	} else {
		CHECK(json_equal(a, b));
		check_host(a, cluster);
	}
	json_decref(a);
	json_decref(b);
	json_decref(cluster);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hb, what;
	json_t *body, *reply;
	const char *rest;
	size_t rlen;

	if (size < 3)
		return 0;
	hb = data[0];
	what = data[1] % 5;
	rest = (const char *)data + 3;
	rlen = size - 3;
	switch (what) {
	case 0:
		body = json_loadb(rest, rlen, JSON_REJECT_DUPLICATES, NULL);
		if (json_is_object(body))
			apply_twice(hb, body);
		json_decref(body);
		break;
	case 1:
	case 2:
		reply = json_pack("{s:s,s:s,s:i,s:s%}", "step_type", what == 1 ? "inventory" : types[data[2] % N(types)],
				  "step_id", "x-00000000", "exit_code", data[2] & 0x40 ? 1 : 0, "output", rest, rlen);
		/* Output that is not UTF-8 cannot be a JSON string: not a reply. */
		if (reply)
			apply_twice(hb, reply);
		json_decref(reply);
		break;
	case 3: {
		json_t *cluster = (hb & 0x80) ? json_loads(CLUSTER, 0, NULL) : NULL, *host = host_for(hb);
		ah_err err = { 0 };
		bool changed = false;
		int r;

		body = json_loadb(rest, rlen, JSON_REJECT_DUPLICATES, NULL);
		if (json_is_object(body)) {
			r = host_progress_changed(host, body, cluster, 1700000000, &changed, &err);
			if (r < 0)
				check_refusal(r, &err);
			else
				check_host(host, cluster);
		}
		json_decref(body);
		json_decref(host);
		json_decref(cluster);
		break;
	}
	default:
		/* The register body: a host id is a UUID or refused; the
		 * agent's version string goes back JSON-encoded, never pasted. */
		body = json_loadb(rest, rlen, JSON_REJECT_DUPLICATES, NULL);
		if (json_is_object(body)) {
			const char *id = json_string_value(json_object_get(body, "host_id"));
			const char *ver = json_string_value(json_object_get(body, "discovery_agent_version"));

			if (id && util_is_uuid(id)) {
				json_t *a = json_pack("{s:s,s:s,s:s}", "infra_env_id", "i", "host_id", id,
						      "agent_version", ver ? ver : "");
				char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
				json_t *back = text ? json_loads(text, 0, NULL) : NULL;

				CHECK(!a || (text && json_equal(a, back)));
				json_decref(back);
				free(text);
				json_decref(a);
			}
		}
		json_decref(body);
		break;
	}
	return 0;
}
