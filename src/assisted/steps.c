/* steps.c - next-step instructions per host status and the handling of
 * step replies (instruction_manager.go and the *_cmd.go handlers upstream). */
#include "assisted/steps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/host.h"
#include "assisted/inventory.h"
#include "assisted/validations.h"
#include "base/util.h"

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static bool in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

static void add_step(json_t *list, const struct steps_ctx *ctx, const char *type, json_t *args)
{
	uint32_t r = 0;
	char id[96];

	if (ctx && ctx->random32)
		r = ctx->random32(ctx->opaque);
	else
		util_random_bytes(&r, sizeof(r));
	snprintf(id, sizeof(id), "%s-%08x", type, r);
	json_array_append_new(list, json_pack("{s:s, s:s, s:o}", "step_type", type, "step_id", id, "args",
					      args ? args : json_array()));
}

/* args = [ "<compact JSON of v>" ] (v is consumed). */
static json_t *json_arg(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);
	json_t *a = json_pack("[s]", s ? s : "{}");

	free(s);
	json_decref(v);
	return a;
}

static void step_inventory(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	json_t *args = json_pack("[s]", sget(host, "id"));

	if (ctx && ctx->inventory_disk_min_size_gb > 0) {
		char b[64];

		snprintf(b, sizeof(b), "--disk-min-size=%lld", (long long)ctx->inventory_disk_min_size_gb);
		json_array_append_new(args, json_string(b));
	}
	add_step(l, ctx, "inventory", args);
}

static void step_ntp(json_t *l, const struct steps_ctx *ctx)
{
	add_step(l, ctx, "ntp-synchronizer",
		 json_arg(json_pack("{s:s}", "ntp_source", ctx && ctx->ntp_sources ? ctx->ntp_sources : "")));
}

/* The other hosts of the cluster with their NICs; nothing when alone. */
static void step_connectivity(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	json_t *hosts = json_array(), *h, *ifc;
	size_t i, j;

	json_array_foreach(ctx ? ctx->cluster_hosts : NULL, i, h) {
		json_t *inv, *nics;

		if (!strcmp(sget(h, "id"), sget(host, "id")) || !(inv = inventory_of_host(h)))
			continue;
		nics = json_array();
		json_array_foreach(json_object_get(inv, "interfaces"), j, ifc) {
			json_t *ips = json_array(), *a;
			size_t k;

			json_array_foreach(json_object_get(ifc, "ipv4_addresses"), k, a)
				if (json_is_string(a))
					json_array_append_new(ips, json_stringn(json_string_value(a),
										strcspn(json_string_value(a), "/")));
			json_array_foreach(json_object_get(ifc, "ipv6_addresses"), k, a)
				if (json_is_string(a))
					json_array_append_new(ips, json_stringn(json_string_value(a),
										strcspn(json_string_value(a), "/")));
			json_array_append_new(nics, json_pack("{s:s, s:s, s:o}", "name", sget(ifc, "name"), "mac",
							      sget(ifc, "mac_address"), "ip_addresses", ips));
		}
		json_array_append_new(hosts, json_pack("{s:s, s:o}", "host_id", sget(h, "id"), "nics", nics));
		json_decref(inv);
	}
	if (json_array_size(hosts) == 0) {
		json_decref(hosts);
		return;
	}
	add_step(l, ctx, "connectivity-check", json_arg(hosts));
}

static void step_domains(json_t *l, const struct steps_ctx *ctx, bool day2)
{
	const json_t *cl = ctx ? ctx->cluster : NULL;
	const char *name = sget(cl, "name"), *base = sget(cl, "base_dns_domain");
	json_t *d = json_array();
	char b[512];

	if (*name && *base) {
		static const char *pre[] = { "api", "api-int", "console-openshift-console.apps" };

		for (size_t i = 0; i < 3; i++) {
			snprintf(b, sizeof(b), "%s.%s.%s", pre[i], name, base);
			json_array_append_new(d, json_pack("{s:s}", "domain_name", b));
		}
		snprintf(b, sizeof(b), "validateNoWildcardDNS.%s.%s.", name, base);
		json_array_append_new(d, json_pack("{s:s}", "domain_name", b));
		snprintf(b, sizeof(b), "validateNoWildcardDNS.%s.%s", name, base);
		json_array_append_new(d, json_pack("{s:s}", "domain_name", b));
	}
	if (!day2 && ctx && ctx->release_image_host && *ctx->release_image_host)
		json_array_append_new(d, json_pack("{s:s}", "domain_name", ctx->release_image_host));
	if (json_array_size(d) == 0) {
		json_decref(d);
		return;
	}
	add_step(l, ctx, "domain-resolution", json_arg(json_pack("{s:o}", "domains", d)));
}

static void step_verify_vips(json_t *l, const struct steps_ctx *ctx)
{
	const json_t *cl = ctx ? ctx->cluster : NULL;
	json_t *vips = json_array(), *x;
	size_t i;

	json_array_foreach(json_object_get(cl, "api_vips"), i, x)
		if (*sget(x, "ip"))
			json_array_append_new(vips, json_pack("{s:s, s:s}", "vip", sget(x, "ip"), "vip_type", "api"));
	json_array_foreach(json_object_get(cl, "ingress_vips"), i, x)
		if (*sget(x, "ip"))
			json_array_append_new(vips, json_pack("{s:s, s:s}", "vip", sget(x, "ip"), "vip_type", "ingress"));
	if (json_array_size(vips) == 0 || json_is_true(json_object_get(cl, "user_managed_networking"))) {
		json_decref(vips);
		return;
	}
	add_step(l, ctx, "verify-vips", json_arg(vips));
}

json_t *host_next_steps(const json_t *host, bool day2, const struct steps_ctx *ctx)
{
	static const char *const upgradable[] = { "binding", "discovering", "discovering-unbound", "insufficient",
						  "insufficient-unbound", "known", "pending-for-input",
						  "known-unbound", NULL };
	const char *st = sget(host, "status");
	json_t *l = json_array();
	int secs = 60;
	const char *post = "continue";

	if (ctx && ctx->service_agent_image && in(st, upgradable) &&
	    strcmp(ctx->service_agent_image, sget(host, "discovery_agent_version")) != 0) {
		add_step(l, ctx, "upgrade-agent", json_arg(json_pack("{s:s}", "agent_image", ctx->service_agent_image)));
	} else if (!strcmp(st, "binding") || !strcmp(st, "unbinding") ||
		   !strcmp(st, "unbinding-pending-user-action")) {
		secs = 0;
		post = "exit";
	} else if (!strcmp(st, "discovering-unbound") || !strcmp(st, "insufficient-unbound") ||
		   !strcmp(st, "known-unbound")) {
		step_inventory(l, host, ctx);
		step_ntp(l, ctx);
	} else if (!strcmp(st, "disconnected-unbound") || !strcmp(st, "disconnected")) {
		step_inventory(l, host, ctx);
		secs = 120;
	} else if (!day2 && (!strcmp(st, "known") || !strcmp(st, "insufficient") || !strcmp(st, "pending-for-input"))) {
		/* tang-connectivity-check, free-network-addresses (not in kube-api
		 * mode) and dhcp-lease-allocate emit nothing unless configured;
		 * see the module report for what is modelled. */
		step_inventory(l, host, ctx);
		step_connectivity(l, host, ctx);
		step_ntp(l, ctx);
		step_domains(l, ctx, false);
		step_verify_vips(l, ctx);
	} else if (!strcmp(st, "discovering")) {
		step_inventory(l, host, ctx);
		if (day2) {
			step_ntp(l, ctx);
			step_domains(l, ctx, true);
		}
	} else if (day2 && (!strcmp(st, "known") || !strcmp(st, "insufficient"))) {
		step_inventory(l, host, ctx);
		step_connectivity(l, host, ctx);
		step_ntp(l, ctx);
		step_domains(l, ctx, true);
	} else if (day2 && !strcmp(st, "pending-for-input")) {
		step_inventory(l, host, ctx);
		step_connectivity(l, host, ctx);
	} else if (!strcmp(st, "disabled") || !strcmp(st, "resetting")) {
		secs = 120;
	}
	return json_pack("{s:i, s:s, s:o}", "next_instruction_seconds", secs, "post_step_action", post,
			 "instructions", l);
}

static int bad(ah_err *err, const char *type, const char *why)
{
	return ah_err_set(err, EINVAL, 400, "BadRequest", "step %s: %s", type, why);
}

/* Parse output text into an object (or array when want_array). */
static int parse_output(const json_t *reply, const char *type, json_t **ret, ah_err *err)
{
	const char *out = sget(reply, "output");
	json_t *v;

	*ret = NULL;
	if (!*out)
		return 0;
	v = json_loads(out, JSON_DECODE_ANY, NULL);
	if (!json_is_object(v)) {
		json_decref(v);
		return bad(err, type, "output is not a JSON object");
	}
	*ret = v;
	return 0;
}

int host_apply_step_reply(json_t *host, const json_t *reply, ah_err *err)
{
	return host_apply_step_reply_cluster(host, reply, NULL, err);
}

int host_apply_step_reply_cluster(json_t *host, const json_t *reply, const json_t *cluster, ah_err *err)
{
	static const char *const pre_binding[] = { "discovering", "known", "disconnected", "insufficient",
						   "pending-for-input", "binding", NULL };
	static const char *const unb[] = { "discovering-unbound", "insufficient-unbound", "known-unbound",
					   "disconnected-unbound", "unbinding", NULL };
	const char *type = sget(reply, "step_type");
	json_t *ec = json_object_get(reply, "exit_code"), *out = NULL, *empty = NULL;
	json_int_t code;
	int r;

	if (!json_is_object(reply) || !*type)
		return bad(err, "?", "reply must be an object with step_type");
	if (ec && !json_is_integer(ec))
		return bad(err, type, "exit_code must be an integer");
	code = ec ? json_integer_value(ec) : 0;
	if (json_object_get(reply, "output") && !json_is_string(json_object_get(reply, "output")))
		return bad(err, type, "output must be a string");
	if (code == 256) {
		const char *st = sget(host, "status");

		json_object_set_new(host, "media_status", json_string("disconnected"));
		if (in(st, pre_binding) || in(st, unb)) {
			json_object_set_new(host, "status", json_string(in(st, unb) ? "disconnected-unbound" : "disconnected"));
			json_object_set_new(host, "status_info", json_string(HOST_INFO_MEDIA_DISCONNECTED));
		}
		return 0;
	}
	if (code == 0)
		json_object_set_new(host, "media_status", json_string("connected"));
	if (!strcmp(type, "installation-disk-speed-check")) {
		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		const char *path = sget(out, "path");
		json_t *di = json_object_get(host, "disks_info");

		if (!*path) {
			json_decref(out);
			return bad(err, type, "output has no path");
		}
		if (json_is_string(di))
			di = json_loads(json_string_value(di), 0, NULL);
		else
			di = json_is_object(di) ? json_deep_copy(di) : NULL;
		if (!json_is_object(di)) {
			json_decref(di);
			di = json_object();
		}
		json_object_set_new(di, path, json_pack("{s:s, s:{s:b, s:I, s:I}}", "path", path, "disk_speed",
							"tested", 1, "exit_code", code, "speed_ms",
							(json_int_t)json_number_value(json_object_get(out, "io_sync_duration"))));
		json_object_set_new(host, "disks_info", di);
		json_decref(out);
		return 0;
	}
	if (code != 0)
		return 0;
	if (!strcmp(type, "inventory")) {
		const json_t *cl = cluster;

		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return bad(err, type, "empty output");
		if ((r = inventory_validate(out, err)) < 0) {
			json_decref(out);
			return r;
		}
		if (!cl && *sget(host, "cluster_id"))
			cl = empty = json_object();
		inventory_apply_eligibility(out, host, cl);
		host_choose_installation_disk(host, out);
		json_object_set_new(host, "inventory", out);
		json_decref(empty);
		return 0;
	}
	if (!strcmp(type, "ntp-synchronizer")) {
		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		json_t *src = json_object_get(out, "ntp_sources");

		if (src && !json_is_array(src)) {
			json_decref(out);
			return bad(err, type, "ntp_sources must be an array");
		}
		json_object_set_new(host, "ntp_sources", src ? json_incref(src) : json_array());
		json_decref(out);
		return 0;
	}
	if (!strcmp(type, "connectivity-check") || !strcmp(type, "domain-resolution")) {
		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		json_object_set_new(host, !strcmp(type, "connectivity-check") ? "connectivity" : "domain_resolutions", out);
		return 0;
	}
	if (!strcmp(type, "container-image-availability")) {
		json_t *imgs, *im, *st;
		size_t i;

		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		imgs = json_object_get(out, "images");
		if (imgs && !json_is_array(imgs)) {
			json_decref(out);
			return bad(err, type, "images must be an array");
		}
		st = json_object_get(host, "images_status");
		if (json_is_string(st))
			st = json_loads(json_string_value(st), 0, NULL);
		else
			st = json_is_object(st) ? json_deep_copy(st) : NULL;
		if (!json_is_object(st)) {
			json_decref(st);
			st = json_object();
		}
		json_array_foreach(imgs, i, im)
			if (json_is_object(im) && *sget(im, "name"))
				json_object_set(st, sget(im, "name"), im);
		json_object_set_new(host, "images_status", st);
		json_decref(out);
		return 0;
	}
	return 0;
}
