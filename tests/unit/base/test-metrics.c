/* Tests for src/base/metrics.c, the routes and upstream hooks of
 * src/base/hubmetrics.c, src/base/cli.c and log_redact_path(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/metrics.h"

static const char *const labels2[] = { "a", "b", NULL };
static const double buckets[] = { 1, 5, 10 };

static struct metric c = METRIC_COUNTER("t_count_total", "A \\ counter\nwith lines.", labels2);
static struct metric g = METRIC_GAUGE("t_gauge", "A gauge.", NULL);
static struct metric h = METRIC_HISTOGRAM("t_seconds", "A histogram.", labels2, buckets);

static char *render(void)
{
	strbuf sb = STRBUF_INIT;
	size_t len;

	assert_int_equal(metrics_render(&sb), 0);
	return strbuf_detach(&sb, &len);
}

static void test_exposition(void **state)
{
	char *out;

	metrics_reset();
	out = render();
	assert_string_equal(out, "");
	free(out);
	metric_inc(&c, METRIC_VALUES("x", "q\"uo\\te\n"));
	metric_add(&c, METRIC_VALUES("x", "q\"uo\\te\n"), 2);
	metric_add(&c, METRIC_VALUES("x", "q\"uo\\te\n"), -5); /* a counter never goes down */
	metric_set(&g, NULL, 0.1);
	metric_observe(&h, METRIC_VALUES("p", NULL), 0.5);
	metric_observe(&h, METRIC_VALUES("p", NULL), 7);
	metric_observe(&h, METRIC_VALUES("p", NULL), 100);
	out = render();
	assert_string_equal(out,
			    "# HELP t_count_total A \\\\ counter\\nwith lines.\n"
			    "# TYPE t_count_total counter\n"
			    "t_count_total{a=\"x\",b=\"q\\\"uo\\\\te\\n\"} 3\n"
			    "# HELP t_gauge A gauge.\n"
			    "# TYPE t_gauge gauge\n"
			    "t_gauge 0.1\n"
			    "# HELP t_seconds A histogram.\n"
			    "# TYPE t_seconds histogram\n"
			    "t_seconds_bucket{a=\"p\",b=\"\",le=\"1\"} 1\n"
			    "t_seconds_bucket{a=\"p\",b=\"\",le=\"5\"} 1\n"
			    "t_seconds_bucket{a=\"p\",b=\"\",le=\"10\"} 2\n"
			    "t_seconds_bucket{a=\"p\",b=\"\",le=\"+Inf\"} 3\n"
			    "t_seconds_sum{a=\"p\",b=\"\"} 107.5\n"
			    "t_seconds_count{a=\"p\",b=\"\"} 3\n");
	free(out);
	assert_true(metric_value(&h, METRIC_VALUES("p", "")) == 3);
	assert_true(metric_value(&c, METRIC_VALUES("x", "nope")) == 0);
	metric_clear(&g);
	out = render();
	assert_null(strstr(out, "t_gauge"));
	free(out);
	metrics_reset();
}

static void test_series_bound(void **state)
{
	char v[32];
	char *out;

	metrics_reset();
	for (int i = 0; i < METRIC_MAX_SERIES + 10; i++) {
		snprintf(v, sizeof(v), "%d", i);
		metric_inc(&c, METRIC_VALUES(v, "b"));
	}
	assert_true(metric_value(&c, METRIC_VALUES("0", "b")) == 1);
	assert_true(metric_value(&c, METRIC_VALUES("4100", "b")) == 0);
	out = render();
	assert_non_null(strstr(out, "agenthub_metrics_series_dropped_total{metric=\"t_count_total\"} 10\n"));
	free(out);
	metrics_reset();
}

static void *adder(void *arg)
{
	for (int i = 0; i < 10000; i++)
		metric_inc(&c, METRIC_VALUES("t", arg));
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[4];

	metrics_reset();
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, adder, i % 2 ? "odd" : "even");
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_true(metric_value(&c, METRIC_VALUES("t", "odd")) == 20000);
	assert_true(metric_value(&c, METRIC_VALUES("t", "even")) == 20000);
	metrics_reset();
}

static void test_routes(void **state)
{
	static const char *const cases[][2] = {
		{ "/apis/agent-install.openshift.io/v1beta1/namespaces/ns1/agents/0479107b-3436",
		  "/apis/agent-install.openshift.io/v1beta1/namespaces/{namespace}/agents/{name}" },
		{ "/apis/agent-install.openshift.io/v1beta1/namespaces/ns1/agents",
		  "/apis/agent-install.openshift.io/v1beta1/namespaces/{namespace}/agents" },
		{ "/apis/agent-install.openshift.io/v1beta1/agents", "/apis/agent-install.openshift.io/v1beta1/agents" },
		{ "/apis/agent-install.openshift.io/v1beta1/namespaces/a/agents/b/status",
		  "/apis/agent-install.openshift.io/v1beta1/namespaces/{namespace}/agents/{name}/status" },
		{ "/api/v1/namespaces", "/api/v1/namespaces" },
		{ "/api/v1/namespaces/demo", "/api/v1/namespaces/{name}" },
		{ "/api/v1/namespaces/demo/secrets/s", "/api/v1/namespaces/{namespace}/secrets/{name}" },
		{ "/api/assisted-install/v2/infra-envs/5d7c-11/hosts/0479107b/instructions",
		  "/api/assisted-install/v2/infra-envs/{infra_env_id}/hosts/{host_id}/instructions" },
		{ "/api/assisted-install/v2/infra-envs/5d7c/hosts", "/api/assisted-install/v2/infra-envs/{infra_env_id}/hosts" },
		{ "/api/assisted-install/v2/events", "/api/assisted-install/v2/events" },
		{ "/byapikey/eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.abc.def/4.19/x86_64/minimal.iso",
		  "/byapikey/{token}/4.19/x86_64/minimal.iso" },
		{ "/bytoken/abcdefgh/4.19/x86_64/minimal.iso", "/bytoken/{token}/4.19/x86_64/minimal.iso" },
		{ "/metrics", "/metrics" },
		{ "/healthz", "/healthz" },
		{ "/favicon.ico", "other" },
		{ "/../../etc/passwd", "other" },
	};
	char buf[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hm_route(cases[i][0], buf, sizeof(buf));
		assert_string_equal(buf, cases[i][1]);
	}
}

static void test_upstream_hooks(void **state)
{
	json_t *prev = json_pack("{s:s,s:I}", "current_stage", "Rebooting", "stage_started_at", (json_int_t)100);
	json_t *host = json_pack("{s:s,s:b,s:s,s:{s:s}}", "role", "master", "bootstrap", 1, "inventory",
				 "{\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},"
				 "\"disks\":[{\"drive_type\":\"SSD\",\"size_bytes\":128849018880},"
				 "{\"drive_type\":\"HDD\",\"size_bytes\":1099511627776}],"
				 "\"interfaces\":[{\"speed_mbps\":1000}]}",
				 "progress", "current_stage", "Done");
	json_t *before = json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "hardware", "id", "has-cpu-cores-for-role", "status",
				   "success", "id", "has-memory", "status", "failure");
	json_t *after = json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "hardware", "id", "has-cpu-cores-for-role", "status",
				  "failure", "id", "has-memory", "status", "failure");
	char *out;

	metrics_reset();
	am_host_stage_changed(prev, host, 130);
	am_cluster_status("preparing-for-installation", "installing", 0, 10);
	am_cluster_status("finalizing", "installed", 1000, 1601);
	am_validations_changed(true, before, after);
	out = render();
	assert_non_null(strstr(out, "service_assisted_installer_cluster_hosts{role=\"bootstrap\",result=\"Done\"} 1\n"));
	assert_non_null(strstr(out, "service_assisted_installer_cluster_host_cores_sum{role=\"bootstrap\",result=\"Done\"} 8\n"));
	assert_non_null(strstr(out, "service_assisted_installer_cluster_host_ram_gb_sum{role=\"bootstrap\",result=\"Done\"} 32\n"));
	assert_non_null(strstr(out, "service_assisted_installer_cluster_host_disk_gb_sum{diskType=\"HDD\",role=\"bootstrap\",result=\"Done\"} 1024\n"));
	assert_non_null(strstr(out, "service_assisted_installer_cluster_host_nic_gb_sum{role=\"bootstrap\",result=\"Done\"} 1000\n"));
	assert_non_null(strstr(out, "service_assisted_installer_host_installation_phase_seconds_sum{phase=\"Rebooting\",result=\"Done\"} 30\n"));
	assert_non_null(strstr(out, "service_assisted_installer_cluster_installation_started 1\n"));
	assert_non_null(strstr(out, "service_assisted_installer_cluster_installation_seconds_bucket{result=\"installed\",le=\"600\"} 0\n"));
	assert_non_null(strstr(out, "service_assisted_installer_cluster_installation_seconds_bucket{result=\"installed\",le=\"900\"} 1\n"));
	assert_non_null(strstr(out, "service_assisted_installer_host_validation_failed_after_success_before_installation{hostValidationType=\"has-cpu-cores-for-role\"} 1\n"));
	assert_null(strstr(out, "hostValidationType=\"has-memory\""));
	free(out);
	json_decref(prev);
	json_decref(host);
	json_decref(before);
	json_decref(after);
	metrics_reset();
}

static void test_suggest(void **state)
{
	static const char *const flags[] = { "listen", "data-dir", "store", "help", NULL };

	assert_int_equal(cli_edit_distance("lsten", "listen"), 1);
	assert_int_equal(cli_edit_distance("", "abc"), 3);
	assert_string_equal(cli_suggest("lsten", flags), "listen");
	assert_string_equal(cli_suggest("data-dri", flags), "data-dir");
	assert_null(cli_suggest("zzzzzzzz", flags));
}

static void test_redact(void **state)
{
	char buf[256];

	log_redact_path("/images/abc/bytoken/eyJhbGciOi.x.y/minimal.iso", "arch=x86_64&api_key=SECRET&token=T2",
			buf, sizeof(buf));
	assert_string_equal(buf, "/images/abc/bytoken/REDACTED/minimal.iso?arch=x86_64&api_key=REDACTED&token=REDACTED");
	log_redact_path("/apis", NULL, buf, sizeof(buf));
	assert_string_equal(buf, "/apis");
	log_redact_path("/x", "watch=true", buf, 5);
	assert_string_equal(buf, "/x?"); /* bounded: a part that does not fit is left out */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition), cmocka_unit_test(test_series_bound),
		cmocka_unit_test(test_threads),    cmocka_unit_test(test_routes),
		cmocka_unit_test(test_upstream_hooks), cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_redact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
