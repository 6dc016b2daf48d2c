/* Tests for src/controllers/events.c: events recorded as v1 Events over a
 * real SQLite store (fields, de-duplication with count, severities, the
 * status-change lines) and the signed eventsURLs. */
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

#include "controllers/hub-internal.h"
#include "kube/registry.h"
#include "store/store.h"

struct fixture {
	char dir[64];
	struct kube_registry *reg;
	struct hub h;
	const struct kube_kind *event;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct store_options so = { .event_log_keep = 1000, .sync_full = 0 };
	const struct kube_kind *nsk;
	json_t *ns, *ret = NULL;
	char db[128];
	ah_err err;

	snprintf(f->dir, sizeof(f->dir), "/tmp/ah-test-events-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(db, sizeof(db), "%s/db", f->dir);
	assert_int_equal(store_open(db, &so, &f->h.store), 0);
	assert_int_equal(kube_registry_new(&f->reg, &err), 0);
	assert_int_equal(kube_api_new(f->h.store, f->reg, &f->h.api, &err), 0);
	f->h.reg = f->reg;
	f->h.k_infraenv = kube_registry_by_kind(f->reg, "agent-install.openshift.io/v1beta1", "InfraEnv");
	f->h.k_agent = kube_registry_by_kind(f->reg, "agent-install.openshift.io/v1beta1", "Agent");
	f->h.service_url = strdup("https://hub.example:6443");
	assert_int_equal(jwt_keys_load_or_create(f->dir, &f->h.keys, &err), 0);
	f->event = kube_registry_by_kind(f->reg, "v1", "Event");
	assert_non_null(f->event);
	nsk = kube_registry_by_kind(f->reg, "v1", "Namespace");
	ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", "ns1");
	assert_int_equal(kube_create(f->h.api, nsk, "", ns, NULL, &ret, &err), 0);
	json_decref(ns);
	json_decref(ret);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	kube_api_free(f->h.api);
	kube_registry_free(f->reg);
	store_close(f->h.store);
	jwt_keys_free(f->h.keys);
	free(f->h.service_url);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", f->dir);
	free(f);
	return 0;
}

struct collect {
	json_t *all;
};

static int collect_visit(const store_obj *so, void *userdata)
{
	struct collect *c = userdata;

	json_array_append_new(c->all, json_loadb(so->json, so->len, 0, NULL));
	return 0;
}

static json_t *list_events(struct fixture *f)
{
	struct collect c = { json_array() };

	assert_int_equal(store_list(f->h.store, f->event->store_key, "ns1", NULL, NULL, collect_visit, &c, NULL), 0);
	return c.all;
}

static json_t *upstream_of(const json_t *ev)
{
	const char *a = json_string_value(json_object_get(
		json_object_get(json_object_get(ev, "metadata"), "annotations"), "agenthub.io/event"));

	assert_non_null(a);
	return json_loads(a, 0, NULL);
}

static json_t *agent_obj(void)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:[{s:s,s:s,s:s,s:s}]}}", "apiVersion",
			 "agent-install.openshift.io/v1beta1", "kind", "Agent", "metadata", "name",
			 "0479107b-3436-45d3-83a8-cb9a1dc4fb9e", "namespace", "ns1", "uid",
			 "568774a7-6a66-4117-9e1c-bb6fcaeaec55", "ownerReferences", "apiVersion",
			 "agent-install.openshift.io/v1beta1", "kind", "InfraEnv", "name", "ie", "uid",
			 "2757c211-aecc-4dbd-b160-22b2da726031");
}

static void test_severity(void **state)
{
	/* Upstream's GetEventSeverityFromHostStatus: the -unbound states are info. */
	static const char *const rows[][2] = {
		{ "discovering", "info" },         { "known", "info" },
		{ "insufficient", "warning" },     { "disconnected", "warning" },
		{ "installing-pending-user-action", "warning" },
		{ "error", "error" },              { "installed", "info" },
		{ "installing-in-progress", "info" }, { "known-unbound", "info" },
		{ "insufficient-unbound", "info" },   { "disconnected-unbound", "info" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_string_equal(hub_event_host_status_severity(rows[i][0]), rows[i][1]);
}

static void test_ref_agent(void **state)
{
	json_t *a = agent_obj();
	struct hub_event_ref ref;

	(void)state;
	hub_event_ref_agent(a, "c1", &ref);
	assert_string_equal(ref.kind, "Agent");
	assert_string_equal(ref.ns, "ns1");
	assert_string_equal(ref.host_id, "0479107b-3436-45d3-83a8-cb9a1dc4fb9e");
	assert_string_equal(ref.infra_env_id, "2757c211-aecc-4dbd-b160-22b2da726031");
	assert_string_equal(ref.cluster_id, "c1");
	hub_event_ref_agent(a, "", &ref);
	assert_null(ref.cluster_id);
	json_decref(a);
}

static void test_record_and_dedup(void **state)
{
	struct fixture *f = *state;
	json_t *a = agent_obj(), *evs, *ev, *up, *io;
	struct hub_event_ref ref;

	hub_event_ref_agent(a, NULL, &ref);
	hub_event_host_status(&f->h, &ref, "okd-5", "discovering", "insufficient", "Host cannot be installed");
	evs = list_events(f);
	assert_int_equal(json_array_size(evs), 1);
	ev = json_array_get(evs, 0);
	assert_string_equal(json_string_value(json_object_get(ev, "message")),
			    "Host okd-5: updated status from discovering to insufficient (Host cannot be installed)");
	assert_string_equal(json_string_value(json_object_get(ev, "reason")), "HostStatusUpdated");
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "Warning");
	assert_int_equal(json_integer_value(json_object_get(ev, "count")), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "source"), "component")), "agenthub");
	io = json_object_get(ev, "involvedObject");
	assert_string_equal(json_string_value(json_object_get(io, "kind")), "Agent");
	assert_string_equal(json_string_value(json_object_get(io, "name")), "0479107b-3436-45d3-83a8-cb9a1dc4fb9e");
	assert_string_equal(json_string_value(json_object_get(io, "uid")), "568774a7-6a66-4117-9e1c-bb6fcaeaec55");
	assert_string_equal(json_string_value(json_object_get(io, "apiVersion")), "agent-install.openshift.io/v1beta1");
	up = upstream_of(ev);
	assert_string_equal(json_string_value(json_object_get(up, "name")), "host_status_updated");
	assert_string_equal(json_string_value(json_object_get(up, "severity")), "warning");
	assert_string_equal(json_string_value(json_object_get(up, "category")), "user");
	assert_string_equal(json_string_value(json_object_get(up, "host_id")), "0479107b-3436-45d3-83a8-cb9a1dc4fb9e");
	assert_string_equal(json_string_value(json_object_get(up, "infra_env_id")), "2757c211-aecc-4dbd-b160-22b2da726031");
	assert_null(json_object_get(up, "cluster_id"));
	/* "2024-04-30T20:47:57.256Z" */
	assert_int_equal(strlen(json_string_value(json_object_get(up, "event_time"))), 24);
	json_decref(up);
	json_decref(evs);

	/* The same event again: one Event, count 2. */
	hub_event_host_status(&f->h, &ref, "okd-5", "discovering", "insufficient", "Host cannot be installed");
	evs = list_events(f);
	assert_int_equal(json_array_size(evs), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 0), "count")), 2);
	json_decref(evs);

	/* No change, no event; a different one is a new Event. */
	hub_event_host_status(&f->h, &ref, "okd-5", "known", "known", "");
	hub_event_host_status(&f->h, &ref, "okd-5", "insufficient", "known", "Host is ready to be installed");
	evs = list_events(f);
	assert_int_equal(json_array_size(evs), 2);
	json_decref(evs);
	json_decref(a);
}

static void test_cluster_status_and_props(void **state)
{
	struct fixture *f = *state;
	struct hub_event_ref ref = { .ns = "ns1", .kind = "AgentClusterInstall", .name = "aci",
				     .cluster_id = "4afb3f44-0f0f-453a-8ba9-067f8ae4bad5" };
	json_t *evs, *up, *props;

	hub_event_cluster_status(&f->h, &ref, "ready", "preparing-for-installation", "Preparing cluster for installation");
	hub_event(&f->h, &ref, HUB_EV_CRITICAL, "cluster_installation_failed", "Failed installing cluster %s. Reason: %s",
		  "sno", "timeout");
	/* No object to attach to: dropped, not crashed. */
	hub_event(&f->h, &(struct hub_event_ref){ .kind = "Agent" }, HUB_EV_INFO, NULL, "lost");
	evs = list_events(f);
	assert_int_equal(json_array_size(evs), 2);
	up = NULL;
	for (size_t i = 0; i < 2; i++) {
		json_t *u = upstream_of(json_array_get(evs, i));

		if (strcmp(json_string_value(json_object_get(u, "name")), "cluster_status_updated") == 0) {
			up = u;
			assert_string_equal(json_string_value(json_object_get(json_array_get(evs, i), "message")),
					    "Updated status of the cluster to preparing-for-installation");
			assert_string_equal(json_string_value(json_object_get(json_array_get(evs, i), "type")), "Normal");
		} else {
			assert_string_equal(json_string_value(json_object_get(u, "severity")), "critical");
			assert_string_equal(json_string_value(json_object_get(json_array_get(evs, i), "type")), "Warning");
			assert_string_equal(json_string_value(json_object_get(json_array_get(evs, i), "reason")),
					    "ClusterInstallationFailed");
			json_decref(u);
		}
	}
	assert_non_null(up);
	assert_string_equal(json_string_value(json_object_get(up, "cluster_id")), "4afb3f44-0f0f-453a-8ba9-067f8ae4bad5");
	props = json_loads(json_string_value(json_object_get(up, "props")), 0, NULL);
	assert_string_equal(json_string_value(json_object_get(props, "status")), "preparing-for-installation");
	assert_string_equal(json_string_value(json_object_get(props, "status_info")), "Preparing cluster for installation");
	json_decref(props);
	json_decref(up);
	json_decref(evs);
}

static void test_long_message_truncated(void **state)
{
	struct fixture *f = *state;
	struct hub_event_ref ref = { .ns = "ns1", .kind = "InfraEnv", .name = "ie" };
	char *big = malloc(10000);
	json_t *evs;

	memset(big, 'x', 9999);
	big[9999] = '\0';
	hub_event(&f->h, &ref, "bogus-severity", "image_info_updated", "%s", big);
	evs = list_events(f);
	assert_int_equal(json_array_size(evs), 1);
	assert_int_equal(strlen(json_string_value(json_object_get(json_array_get(evs, 0), "message"))), 4096);
	assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "type")), "Normal");
	json_decref(evs);
	free(big);
}

static void test_events_urls(void **state)
{
	struct fixture *f = *state;
	char *u1 = NULL, *u2 = NULL, *tok;
	const char *p;
	json_t *claims = NULL, *ie;
	ah_err err;

	assert_int_equal(hub_cluster_events_url(&f->h, "4afb3f44-0f0f-453a-8ba9-067f8ae4bad5", &u1, &err), 0);
	assert_int_equal(hub_cluster_events_url(&f->h, "4afb3f44-0f0f-453a-8ba9-067f8ae4bad5", &u2, &err), 0);
	/* Minted once: the URL is stable. */
	assert_string_equal(u1, u2);
	p = "https://hub.example:6443/api/assisted-install/v2/events?api_key=";
	assert_int_equal(strncmp(u1, p, strlen(p)), 0);
	assert_non_null(strstr(u1, "&cluster_id=4afb3f44-0f0f-453a-8ba9-067f8ae4bad5"));
	tok = strndup(u1 + strlen(p), (size_t)(strstr(u1, "&cluster_id=") - (u1 + strlen(p))));
	assert_int_equal(jwt_verify(f->h.keys, tok, &claims, &err), 0);
	assert_string_equal(json_string_value(json_object_get(claims, "cluster_id")), "4afb3f44-0f0f-453a-8ba9-067f8ae4bad5");
	json_decref(claims);
	free(tok);
	free(u1);
	free(u2);
	assert_int_equal(hub_cluster_events_url(&f->h, "", &u1, &err), -EINVAL);

	ie = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", "ie", "namespace", "ns1", "uid",
		       "2757c211-aecc-4dbd-b160-22b2da726031");
	assert_int_equal(hub_host_events_url(&f->h, ie, "0479107b-3436-45d3-83a8-cb9a1dc4fb9e", &u1, &err), 0);
	assert_non_null(strstr(u1, "&host_id=0479107b-3436-45d3-83a8-cb9a1dc4fb9e"));
	tok = strndup(u1 + strlen(p), (size_t)(strstr(u1, "&host_id=") - (u1 + strlen(p))));
	assert_int_equal(jwt_verify(f->h.keys, tok, &claims, &err), 0);
	assert_string_equal(json_string_value(json_object_get(claims, "infra_env_id")), "2757c211-aecc-4dbd-b160-22b2da726031");
	json_decref(claims);
	free(tok);
	free(u1);
	json_decref(ie);
}

/* The messages of the events one Agent write implies, in order. */
static json_t *messages(struct fixture *f)
{
	json_t *evs = list_events(f), *out = json_array(), *e;
	size_t i;

	json_array_foreach(evs, i, e)
		json_array_append_new(out, json_pack("[s,s,s]", json_string_value(json_object_get(e, "reason")),
						     json_string_value(json_object_get(e, "type")),
						     json_string_value(json_object_get(e, "message"))));
	json_decref(evs);
	return out;
}

static bool has_message(const json_t *msgs, const char *reason, const char *type, const char *msg)
{
	const json_t *m;
	size_t i;

	json_array_foreach(msgs, i, m)
		if (!strcmp(json_string_value(json_array_get(m, 0)), reason) &&
		    !strcmp(json_string_value(json_array_get(m, 1)), type) &&
		    !strcmp(json_string_value(json_array_get(m, 2)), msg))
			return true;
	return false;
}

static void test_host_events_of_a_write(void **state)
{
	struct fixture *f = *state;
	json_t *a = agent_obj(), *host, *msgs;

	/* A host's first state: registration, named by its id (no inventory yet). */
	host = json_pack("{s:s,s:s,s:s}", "id", "0479107b-3436-45d3-83a8-cb9a1dc4fb9e", "status", "discovering-unbound",
			 "status_info", "Waiting for host to send hardware details");
	hub_host_events(&f->h, a, host);
	msgs = messages(f);
	assert_int_equal(json_array_size(msgs), 1);
	assert_true(has_message(msgs, "HostRegistrationSucceeded", "Normal",
				"Host 0479107b-3436-45d3-83a8-cb9a1dc4fb9e: Successfully registered"));
	json_decref(msgs);

	/* Then: validations moved (pending → failure, success → failure,
	 * failure → success; a new one and an unchanged one say nothing), and
	 * the status with an empty info keeps upstream's trailing space. */
	json_object_set_new(a, "status",
			    json_pack("{s:{s:s},s:{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]}}", "debugInfo", "state",
				      "known-unbound", "validationsInfo", "hardware", "id", "has-min-memory", "status",
				      "success", "id", "ntp-synced", "status", "pending", "id", "has-inventory", "status",
				      "failure", "id", "has-min-cpu-cores", "status", "success"));
	json_decref(host);
	host = json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", "0479107b-3436-45d3-83a8-cb9a1dc4fb9e", "status",
			 "insufficient", "status_info", "", "inventory", "{\"hostname\":\"okd-5\"}", "validations_info",
			 "{\"hardware\":[{\"id\":\"has-min-memory\",\"status\":\"failure\"},"
			 "{\"id\":\"ntp-synced\",\"status\":\"failure\"},{\"id\":\"has-inventory\",\"status\":\"success\"},"
			 "{\"id\":\"has-min-cpu-cores\",\"status\":\"success\"},{\"id\":\"new-one\",\"status\":\"failure\"}]}");
	hub_host_events(&f->h, a, host);
	msgs = messages(f);
	assert_int_equal(json_array_size(msgs), 5);
	assert_true(has_message(msgs, "HostValidationFailed", "Warning",
				"Host okd-5: validation 'has-min-memory' that used to succeed is now failing"));
	assert_true(has_message(msgs, "HostValidationFailed", "Warning", "Host okd-5: validation 'ntp-synced' failed"));
	assert_true(has_message(msgs, "HostValidationFixed", "Normal", "Host okd-5: validation 'has-inventory' is now fixed"));
	assert_true(has_message(msgs, "HostStatusUpdated", "Warning",
				"Host okd-5: updated status from known-unbound to insufficient "));
	json_decref(msgs);
	json_decref(host);
	json_decref(a);
}

static void test_rate_limit_per_entity(void **state)
{
	struct fixture *f = *state;
	json_t *a = agent_obj(), *evs;
	struct hub_event_ref ref, other;
	ah_err err;

	f->h.cfg.event_rate_limits = "{\"host_status_updated\":\"1h\"}";
	assert_int_equal(hub_events_init(&f->h, &err), 0);
	hub_event_ref_agent(a, NULL, &ref);
	other = ref;
	other.host_id = "5f6c7d8e-0000-4000-8000-000000000001";
	/* A flapping host: one event in the hour, the first. */
	for (int i = 0; i < 5; i++) {
		hub_event_host_status(&f->h, &ref, "okd-5", "known", "insufficient", "");
		hub_event_host_status(&f->h, &ref, "okd-5", "insufficient", "known", "");
	}
	/* Another host has its own window; other names are not limited. */
	hub_event_host_status(&f->h, &other, "okd-6", "known", "insufficient", "");
	hub_event(&f->h, &ref, HUB_EV_INFO, "host_validation_fixed", "one");
	hub_event(&f->h, &ref, HUB_EV_INFO, "host_validation_fixed", "two");
	evs = list_events(f);
	assert_int_equal(json_array_size(evs), 4);
	for (size_t i = 0; i < json_array_size(evs); i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, i), "count")), 1);
	json_decref(evs);
	hub_events_release(&f->h);
	/* A bad value is refused at set-up, naming the event. */
	f->h.cfg.event_rate_limits = "{\"host_status_updated\":\"often\"}";
	assert_int_equal(hub_events_init(&f->h, &err), -EINVAL);
	assert_non_null(strstr(err.message, "host_status_updated"));
	hub_events_release(&f->h);
	json_decref(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_severity),
		cmocka_unit_test(test_ref_agent),
		cmocka_unit_test_setup_teardown(test_record_and_dedup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cluster_status_and_props, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_message_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_urls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_events_of_a_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limit_per_entity, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
