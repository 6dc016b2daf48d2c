/* nmstate-bench.c - how long one InfraEnv with N NMStateConfigs (the
 * upstream sample's shape: two static NICs, one DNS server, two default
 * routes) takes to become a discovery ignition and an ISO, in process.
 *
 * Phases, as the hub runs them for one reconcile: parse the N stored
 * objects (JSON text, as the store hands them over), convert and bundle
 * them (nmstate_ignition_parts: keyfiles, MAC maps, gzip), render the
 * discovery ignition, build the embed-area payload (gzip'd cpio), and,
 * given an ISO, overlay the payload and stream the whole image once.
 * Prints one line per phase (best of the runs) and the total.
 *
 * Usage: nmstate-bench [N (10000)] [runs (3)] [iso path] */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "image/ignition.h"
#include "image/iso.h"
#include "image/nmstate.h"

static char *stored_object(size_t i)
{
	char m0[18], m1[18], ip0[16], ip1[16];
	json_t *o;
	char *text;

	snprintf(m0, sizeof(m0), "02:00:%02X:%02X:%02X:%02X", (unsigned)(2 * i >> 24) & 255,
		 (unsigned)(2 * i >> 16) & 255, (unsigned)(2 * i >> 8) & 255, (unsigned)(2 * i) & 255);
	snprintf(m1, sizeof(m1), "02:00:%02X:%02X:%02X:%02X", (unsigned)((2 * i + 1) >> 24) & 255,
		 (unsigned)((2 * i + 1) >> 16) & 255, (unsigned)((2 * i + 1) >> 8) & 255,
		 (unsigned)(2 * i + 1) & 255);
	snprintf(ip0, sizeof(ip0), "10.126.%zu.%zu", i / 250 % 256, i % 250 + 1);
	snprintf(ip1, sizeof(ip1), "10.140.%zu.%zu", i / 250 % 256, i % 250 + 1);
	o = json_pack(
		"{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:{s:[{s:s,s:s,s:s,s:s,s:{s:b,s:b,s:[{s:s,s:i}]}},"
		"{s:s,s:s,s:s,s:s,s:{s:b,s:b,s:[{s:s,s:i}]}}],s:{s:{s:[s]}},"
		"s:{s:[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i,s:i}]}},"
		"s:[{s:s,s:s},{s:s,s:s}]}}",
		"apiVersion", "agent-install.openshift.io/v1beta1", "kind", "NMStateConfig",
		"metadata", "name", "host", "namespace", "bench", "labels", "bench", "yes",
		"spec", "config", "interfaces",
		"name", "eth0", "type", "ethernet", "state", "up", "mac-address", m0, "ipv4",
		"enabled", 1, "dhcp", 0, "address", "ip", ip0, "prefix-length", 16,
		"name", "eth1", "type", "ethernet", "state", "up", "mac-address", m1, "ipv4",
		"enabled", 1, "dhcp", 0, "address", "ip", ip1, "prefix-length", 16,
		"dns-resolver", "config", "server", "10.126.0.1",
		"routes", "config", "destination", "0.0.0.0/0", "next-hop-address", "10.126.0.1",
		"next-hop-interface", "eth0", "table-id", 254, "destination", "0.0.0.0/0",
		"next-hop-address", "10.140.0.1", "next-hop-interface", "eth1", "table-id", 254,
		"metric", 100,
		"interfaces", "name", "eth0", "macAddress", m0, "name", "eth1", "macAddress", m1);
	if (!o) {
		fprintf(stderr, "json_pack failed\n");
		exit(1);
	}
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

static double ms_since(int64_t t0)
{
	return (double)(util_mono_us() - t0) / 1000.0;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	const char *iso = argc > 3 ? argv[3] : NULL;
	const char *names[] = { "parse stored objects", "convert + bundle + gzip",
				"render discovery ignition", "embed payload (gzip cpio)",
				"ISO overlay + stream" };
	double best[5] = { 1e30, 1e30, 1e30, 1e30, 1e30 }, total_best = 1e30;
	char **texts = calloc(n, sizeof(*texts));
	size_t ign_len = 0, plen = 0;
	uint64_t iso_size = 0;

	if (!texts || n == 0 || runs < 1) {
		fprintf(stderr, "usage: %s [N] [runs] [iso]\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < n; i++)
		texts[i] = stored_object(i);
	for (int run = 0; run < runs; run++) {
		json_t **objs = calloc(n, sizeof(*objs)), *files = NULL, *units = NULL;
		struct nmstate_host *hosts = calloc(n, sizeof(*hosts));
		struct discovery_params p = { 0 };
		unsigned char *payload = NULL;
		double t[5] = { 0 }, total;
		char *ign = NULL;
		ah_err err;
		int64_t t0;

		t0 = util_mono_us();
		for (size_t i = 0; i < n; i++) {
			objs[i] = json_loads(texts[i], 0, NULL);
			hosts[i].label = "bench/host";
			hosts[i].config = json_object_get(json_object_get(objs[i], "spec"), "config");
			hosts[i].interfaces =
				json_object_get(json_object_get(objs[i], "spec"), "interfaces");
		}
		t[0] = ms_since(t0);
		t0 = util_mono_us();
		if (nmstate_ignition_parts(hosts, n, &files, &units, &err) < 0) {
			fprintf(stderr, "nmstate: %s\n", err.message);
			return 1;
		}
		t[1] = ms_since(t0);
		p.service_base_url = "https://192.0.2.1:6443";
		p.infra_env_id = "0b8e4d9a-5a64-4a3c-9c0e-2f1f0c6a1b11";
		p.pull_secret = "{\"auths\":{}}";
		p.static_network_files = files;
		p.static_network_units = units;
		t0 = util_mono_us();
		if (ignition_build_discovery(&p, &ign, &ign_len, &err) < 0) {
			fprintf(stderr, "ignition: %s\n", err.message);
			return 1;
		}
		t[2] = ms_since(t0);
		t0 = util_mono_us();
		if (ignition_payload_build(ign, ign_len, &payload, &plen, &err) < 0 ||
		    ignition_payload_check_size(plen, &err) < 0) {
			fprintf(stderr, "payload: %s\n", err.message);
			return 1;
		}
		t[3] = ms_since(t0);
		if (iso) {
			struct iso_overlay *ov = NULL;
			static char buf[1 << 20];
			uint64_t off = 0;
			ssize_t got;

			t0 = util_mono_us();
			if (iso_overlay_open(iso, payload, plen, &ov, &err) < 0) {
				fprintf(stderr, "iso: %s\n", err.message);
				return 1;
			}
			while ((got = iso_overlay_read(ov, off, buf, sizeof(buf))) > 0)
				off += (uint64_t)got;
			iso_size = iso_overlay_size(ov);
			iso_overlay_free(ov);
			t[4] = ms_since(t0);
		}
		total = t[0] + t[1] + t[2] + t[3] + t[4];
		for (int k = 0; k < 5; k++)
			if (t[k] < best[k])
				best[k] = t[k];
		if (total < total_best)
			total_best = total;
		free(payload);
		free(ign);
		json_decref(files);
		json_decref(units);
		for (size_t i = 0; i < n; i++)
			json_decref(objs[i]);
		free(objs);
		free(hosts);
	}
	printf("NMStateConfigs: %zu, runs: %d (best of each phase)\n", n, runs);
	for (int k = 0; k < (iso ? 5 : 4); k++)
		printf("  %-28s %9.1f ms\n", names[k], best[k]);
	printf("  ignition %zu bytes, embed payload %zu of %d bytes", ign_len, plen,
	       ISO_IGNITION_AREA_SIZE);
	if (iso)
		printf(", ISO %llu bytes", (unsigned long long)iso_size);
	printf("\nTOTAL ignition + ISO for %zu NMStateConfigs: %.1f ms (target < 1000 ms)\n", n,
	       total_best);
	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	free(texts);
	return 0;
}
