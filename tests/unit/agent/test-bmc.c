/* test-bmc.c - the simulated Redfish BMC, request by request, without a socket: the
 * resources and their links, Basic auth, ETags and If-Match, the boot override and what a
 * power-on boots, virtual media, and the error answers sushy expects (bmc.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/bmc.h"

#define ID0 "11111111-1111-4111-8111-111111111111"
#define ID1 "22222222-2222-4222-8222-222222222222"
#define SYS0 "/redfish/v1/Systems/" ID0
#define VM0 "/redfish/v1/Managers/" ID0 "/VirtualMedia/Cd"
#define AUTH "Basic YWRtaW46c2VjcmV0" /* admin:secret */

static struct bmc *new_bmc(void)
{
	static const struct bmc_machine_def defs[] = {
		{ .id = ID0, .name = "sim-1-0", .mac = "02:01:00:00:00:00", .cpus = 8, .memory_gib = 32 },
		{ .id = ID1, .name = "sim-1-1", .mac = "02:01:00:00:00:01", .cpus = 8, .memory_gib = 32 },
	};
	struct bmc *b = NULL;
	ah_err err = { 0 };

	assert_int_equal(bmc_new(defs, 2, &(struct bmc_opts){ .user = "admin", .password = "secret" }, &b, &err), 0);
	return b;
}

/* One request; returns the status, *ret_body the parsed body (or NULL), etag the ETag. */
static unsigned req(struct bmc *b, const char *method, const char *path, const char *auth, const char *if_match,
		    const char *body, json_t **ret_body, char etag[24])
{
	struct bmc_request q = { .method = method, .path = path, .authorization = auth, .if_match = if_match,
				 .body = body ? body : "", .len = body ? strlen(body) : 0 };
	struct bmc_reply r;
	unsigned st;

	bmc_handle(b, &q, &r);
	st = r.status;
	if (ret_body)
		*ret_body = r.body ? json_loads(r.body, 0, NULL) : NULL;
	if (etag)
		memcpy(etag, r.etag, 24);
	bmc_reply_release(&r);
	return st;
}

static unsigned get(struct bmc *b, const char *path, json_t **ret)
{
	return req(b, "GET", path, AUTH, NULL, NULL, ret, NULL);
}

static const char *msg_id(const json_t *err)
{
	return json_string_value(json_object_get(
		json_array_get(json_object_get(json_object_get(err, "error"), "@Message.ExtendedInfo"), 0), "MessageId"));
}

static void expect_error(struct bmc *b, const char *method, const char *path, const char *body, unsigned status,
			 const char *id)
{
	json_t *j = NULL;

	assert_int_equal(req(b, method, path, AUTH, NULL, body, &j, NULL), status);
	assert_non_null(j);
	assert_string_equal(msg_id(j), id);
	json_decref(j);
}

static void test_root_and_links(void **state)
{
	struct bmc *b = new_bmc();
	json_t *j;
	char etag[24];

	/* The service root needs no credentials; the rest does. */
	assert_int_equal(req(b, "GET", "/redfish/v1/", NULL, NULL, NULL, &j, NULL), 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "Systems"), "@odata.id")),
			    "/redfish/v1/Systems");
	json_decref(j);
	assert_int_equal(req(b, "GET", "/redfish/v1", NULL, NULL, NULL, NULL, NULL), 200);
	assert_int_equal(get(b, "/redfish/v1/Systems", &j), 200);
	assert_int_equal(json_integer_value(json_object_get(j, "Members@odata.count")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "Members"), 1),
							      "@odata.id")),
			    "/redfish/v1/Systems/" ID1);
	json_decref(j);
	assert_int_equal(req(b, "GET", SYS0, AUTH, NULL, NULL, &j, etag), 200);
	assert_string_equal(json_string_value(json_object_get(j, "@odata.id")), SYS0);
	assert_string_equal(json_string_value(json_object_get(j, "PowerState")), "Off");
	assert_string_equal(json_string_value(json_object_get(j, "@odata.etag")), etag);
	assert_memory_equal(etag, "W/\"", 3);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_object_get(j, "Actions"), "#ComputerSystem.Reset"), "target")),
			    SYS0 "/Actions/ComputerSystem.Reset");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(json_object_get(j, "Links"), "ManagedBy"), 0),
				    "@odata.id")),
			    "/redfish/v1/Managers/" ID0);
	json_decref(j);
	assert_int_equal(get(b, "/redfish/v1/Managers/" ID0, &j), 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "VirtualMedia"), "@odata.id")),
			    "/redfish/v1/Managers/" ID0 "/VirtualMedia");
	json_decref(j);
	assert_int_equal(get(b, "/redfish/v1/Managers/" ID0 "/VirtualMedia", &j), 200);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "Members"), 0),
							      "@odata.id")),
			    VM0);
	json_decref(j);
	assert_int_equal(get(b, VM0, &j), 200);
	assert_true(json_is_null(json_object_get(j, "Image")));
	assert_true(json_is_false(json_object_get(j, "Inserted")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "MediaTypes"), 0)), "CD");
	json_decref(j);
	assert_int_equal(get(b, SYS0 "/EthernetInterfaces/nic0", &j), 200);
	assert_string_equal(json_string_value(json_object_get(j, "MACAddress")), "02:01:00:00:00:00");
	json_decref(j);
	/* HEAD: the status without a body. */
	assert_int_equal(req(b, "HEAD", SYS0, AUTH, NULL, NULL, &j, NULL), 200);
	assert_null(j);
	bmc_free(b);
}

static void test_auth(void **state)
{
	struct bmc *b = new_bmc();
	static const char *const bad[] = { NULL, "", "Basic YWRtaW46d3Jvbmc=" /* admin:wrong */,
					   "Basic YWRtaW46c2VjcmV0eA==" /* admin:secretx */, "Bearer x", AUTH "x" };
	struct bmc_request q = { .method = "GET", .path = SYS0, .body = "" };
	struct bmc_reply r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q.authorization = bad[i];
		bmc_handle(b, &q, &r);
		assert_int_equal(r.status, 401);
		assert_true(r.authenticate);
		assert_non_null(strstr(r.body, "NoValidSession"));
		/* The password never appears in an answer. */
		assert_null(strstr(r.body, "secret"));
		bmc_reply_release(&r);
	}
	/* Unknown resources are 401 too without credentials (nothing leaks), 404 with. */
	assert_int_equal(req(b, "GET", "/redfish/v1/Systems/nope", NULL, NULL, NULL, NULL, NULL), 401);
	expect_error(b, "GET", "/redfish/v1/Systems/nope", NULL, 404, "Base.1.8.ResourceMissingAtURI");
	expect_error(b, "GET", SYS0 "/Bios", NULL, 404, "Base.1.8.ResourceMissingAtURI");
	expect_error(b, "GET", "/redfish/v1/Chassis", NULL, 404, "Base.1.8.ResourceMissingAtURI");
	bmc_free(b);
}

static const char *sysget(struct bmc *b, const char *key, json_t **hold)
{
	json_t *j;

	assert_int_equal(get(b, SYS0, &j), 200);
	json_decref(*hold);
	*hold = j;
	if (!strcmp(key, "PowerState"))
		return json_string_value(json_object_get(j, key));
	return json_string_value(json_object_get(json_object_get(j, "Boot"), key));
}

static void reset_to(struct bmc *b, const char *type)
{
	char body[64];

	snprintf(body, sizeof(body), "{\"ResetType\": \"%s\"}", type);
	assert_int_equal(req(b, "POST", SYS0 "/Actions/ComputerSystem.Reset", AUTH, NULL, body, NULL, NULL), 204);
}

static void test_boot_override_and_power(void **state)
{
	struct bmc *b = new_bmc();
	json_t *hold = NULL;
	struct bmc_power p;
	unsigned idx[4];
	char etag[24];

	/* PATCH Boot: each property round-trips. */
	assert_int_equal(req(b, "GET", SYS0, AUTH, NULL, NULL, NULL, etag), 200);
	assert_int_equal(req(b, "PATCH", SYS0, AUTH, etag,
			     "{\"Boot\": {\"BootSourceOverrideTarget\": \"Cd\", \"BootSourceOverrideEnabled\": "
			     "\"Continuous\", \"BootSourceOverrideMode\": \"UEFI\"}}",
			     NULL, NULL),
			 204);
	assert_string_equal(sysget(b, "BootSourceOverrideTarget", &hold), "Cd");
	assert_string_equal(sysget(b, "BootSourceOverrideEnabled", &hold), "Continuous");
	assert_string_equal(sysget(b, "BootSourceOverrideMode", &hold), "UEFI");
	assert_int_equal(req(b, "PATCH", SYS0, AUTH, NULL, "{\"Boot\": {\"BootSourceOverrideMode\": \"Legacy\"}}",
			     NULL, NULL),
			 204);
	assert_string_equal(sysget(b, "BootSourceOverrideMode", &hold), "Legacy");
	assert_string_equal(sysget(b, "BootSourceOverrideTarget", &hold), "Cd");
	/* A stale ETag is refused, weak or strong; the current one in either form and * pass. */
	assert_int_equal(req(b, "PATCH", SYS0, AUTH, etag, "{\"Boot\": {\"BootSourceOverrideMode\": \"UEFI\"}}", NULL,
			     NULL),
			 412);
	assert_int_equal(req(b, "GET", SYS0, AUTH, NULL, NULL, NULL, etag), 200);
	{
		char strong[24];
		snprintf(strong, sizeof(strong), "%s", etag + 2);
		assert_int_equal(req(b, "PATCH", SYS0, AUTH, strong, "{\"Boot\": {\"BootSourceOverrideMode\": \"UEFI\"}}",
				     NULL, NULL),
				 204);
	}
	assert_int_equal(req(b, "PATCH", SYS0, AUTH, "*", "{\"Boot\": {}}", NULL, NULL), 204);

	/* Bad writes: 400 with the reason, and nothing changes. */
	expect_error(b, "PATCH", SYS0, "{\"Boot\": {\"BootSourceOverrideTarget\": \"Floppy\", "
		     "\"BootSourceOverrideMode\": \"Legacy\"}}", 400, "Base.1.8.PropertyValueNotInList");
	assert_string_equal(sysget(b, "BootSourceOverrideMode", &hold), "UEFI");
	expect_error(b, "PATCH", SYS0, "{\"Boot\": {\"BootSourceOverrideEnabled\": \"Always\"}}", 400,
		     "Base.1.8.PropertyValueNotInList");
	expect_error(b, "PATCH", SYS0, "{\"Boot\": {\"BootSourceOverrideTarget\": 3}}", 400,
		     "Base.1.8.PropertyValueNotInList");
	expect_error(b, "PATCH", SYS0, "{\"Boot\": {\"Bogus\": 1}}", 400, "Base.1.8.PropertyUnknown");
	expect_error(b, "PATCH", SYS0, "{\"PowerState\": \"On\"}", 400, "Base.1.8.PropertyNotWritable");
	expect_error(b, "PATCH", SYS0, "{\"Boot\": ", 400, "Base.1.8.MalformedJSON");
	expect_error(b, "PATCH", SYS0, "[1]", 400, "Base.1.8.MalformedJSON");
	expect_error(b, "PATCH", SYS0, "", 400, "Base.1.8.MalformedJSON");
	expect_error(b, "DELETE", SYS0, NULL, 405, "Base.1.8.OperationNotAllowed");
	expect_error(b, "GET", SYS0 "/Actions/ComputerSystem.Reset", NULL, 405, "Base.1.8.OperationNotAllowed");

	/* Resets: validation, then power. */
	expect_error(b, "POST", SYS0 "/Actions/ComputerSystem.Reset", "{}", 400, "Base.1.8.ActionParameterMissing");
	expect_error(b, "POST", SYS0 "/Actions/ComputerSystem.Reset", "{\"ResetType\": \"Nmi\"}", 400,
		     "Base.1.8.PropertyValueNotInList");
	expect_error(b, "POST", SYS0 "/Actions/ComputerSystem.Reset", "{\"ResetType\": \"On\", \"X\": 1}", 400,
		     "Base.1.8.ActionParameterUnknown");
	assert_int_equal(bmc_take_changed(b, idx, 4), 0);
	assert_string_equal(sysget(b, "PowerState", &hold), "Off");

	/* Cd continuous but nothing inserted and no install: on with nothing to boot. */
	reset_to(b, "On");
	assert_string_equal(sysget(b, "PowerState", &hold), "On");
	assert_int_equal(bmc_take_changed(b, idx, 4), 1);
	assert_int_equal(idx[0], 0);
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_true(p.on);
	assert_int_equal(p.boot, BMC_BOOT_NONE);
	/* On when on changes nothing; ForceOff and GracefulShutdown power off. */
	reset_to(b, "On");
	assert_int_equal(bmc_take_changed(b, idx, 4), 0);
	reset_to(b, "ForceOff");
	assert_string_equal(sysget(b, "PowerState", &hold), "Off");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_false(p.on);
	reset_to(b, "GracefulShutdown");
	assert_int_equal(bmc_take_changed(b, idx, 4), 1);

	/* The live-ISO sequence: eject, insert, Cd continuous, on -> boots the image, and
	 * every restart boots it again. */
	assert_int_equal(req(b, "POST", VM0 "/Actions/VirtualMedia.EjectMedia", AUTH, NULL, "{}", NULL, NULL), 204);
	assert_int_equal(req(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia", AUTH, NULL,
			     "{\"Image\": \"https://hub:8443/images/x/discovery.iso\"}", NULL, NULL),
			 204);
	reset_to(b, "On");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(p.boot, BMC_BOOT_CD);
	assert_string_equal(p.image, "https://hub:8443/images/x/discovery.iso");
	free(p.image);
	{
		unsigned gen = p.gen;
		reset_to(b, "ForceRestart");
		assert_int_equal(bmc_machine_power(b, 0, &p), 0);
		assert_true(p.gen > gen);
		assert_int_equal(p.boot, BMC_BOOT_CD);
		free(p.image);
	}
	assert_string_equal(sysget(b, "BootSourceOverrideEnabled", &hold), "Continuous");

	/* After an install: Hdd boots the disk; a Once Cd override boots the image once and
	 * is then cleared, so the next restart boots the disk. */
	bmc_set_disk_installed(b, 0, true);
	assert_int_equal(req(b, "PATCH", SYS0, AUTH, NULL,
			     "{\"Boot\": {\"BootSourceOverrideTarget\": \"Hdd\", \"BootSourceOverrideEnabled\": "
			     "\"Continuous\"}}",
			     NULL, NULL),
			 204);
	reset_to(b, "GracefulRestart");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(p.boot, BMC_BOOT_HDD);
	assert_int_equal(req(b, "PATCH", SYS0, AUTH, NULL,
			     "{\"Boot\": {\"BootSourceOverrideTarget\": \"Cd\", \"BootSourceOverrideEnabled\": \"Once\"}}",
			     NULL, NULL),
			 204);
	reset_to(b, "ForceRestart");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(p.boot, BMC_BOOT_CD);
	free(p.image);
	assert_string_equal(sysget(b, "BootSourceOverrideEnabled", &hold), "Disabled");
	assert_string_equal(sysget(b, "BootSourceOverrideTarget", &hold), "None");
	reset_to(b, "ForceRestart");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(p.boot, BMC_BOOT_HDD);
	/* Pxe: there is no PXE server, so the default order (the disk) boots. */
	assert_int_equal(req(b, "PATCH", SYS0, AUTH, NULL,
			     "{\"Boot\": {\"BootSourceOverrideTarget\": \"Pxe\", \"BootSourceOverrideEnabled\": \"Once\"}}",
			     NULL, NULL),
			 204);
	reset_to(b, "ForceRestart");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(p.boot, BMC_BOOT_HDD);
	/* Machine 1 never moved. */
	assert_int_equal(bmc_machine_power(b, 1, &p), 0);
	assert_false(p.on);
	assert_int_equal(p.gen, 0);
	json_decref(hold);
	bmc_free(b);
}

static void test_virtual_media(void **state)
{
	struct bmc *b = new_bmc();
	json_t *j;
	char etag[24];

	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia", "{}", 400, "Base.1.8.ActionParameterMissing");
	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia", "{\"Image\": \"ftp://x/y.iso\"}", 400,
		     "Base.1.8.ActionParameterValueFormatError");
	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia", "{\"Image\": 7}", 400,
		     "Base.1.8.ActionParameterValueFormatError");
	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia",
		     "{\"Image\": \"http://x/y.iso\", \"UserName\": \"none\"}", 400, "Base.1.8.ActionParameterMissing");
	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia", "{\"Image\": \"http://x/y.iso\", \"Foo\": 1}",
		     400, "Base.1.8.ActionParameterUnknown");
	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia",
		     "{\"Image\": \"http://x/y.iso\", \"TransferProtocolType\": \"HTTPS\"}", 400,
		     "Base.1.8.ActionParameterValueConflict");
	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia", "{\"Image\": \"http://x/y.iso\", \"Inserted\": 1}",
		     400, "Base.1.8.PropertyValueTypeError");
	assert_int_equal(get(b, VM0, &j), 200);
	assert_true(json_is_null(json_object_get(j, "Image")));
	json_decref(j);
	/* sushy's retries: the extra parameters are accepted. */
	assert_int_equal(req(b, "POST", VM0 "/Actions/VirtualMedia.InsertMedia", AUTH, NULL,
			     "{\"Image\": \"http://hub/a.iso\", \"TransferProtocolType\": \"HTTP\", \"TransferMethod\": "
			     "\"Stream\", \"UserName\": \"none\", \"Password\": \"none\"}",
			     NULL, NULL),
			 204);
	/* The System's VirtualMedia is the same device. */
	assert_int_equal(get(b, SYS0 "/VirtualMedia/Cd", &j), 200);
	assert_string_equal(json_string_value(json_object_get(j, "Image")), "http://hub/a.iso");
	assert_string_equal(json_string_value(json_object_get(j, "ImageName")), "a.iso");
	assert_true(json_is_true(json_object_get(j, "Inserted")));
	assert_string_equal(json_string_value(json_object_get(j, "ConnectedVia")), "URI");
	json_decref(j);
	/* Eject with no body, or {} (sushy's retry). */
	assert_int_equal(req(b, "POST", VM0 "/Actions/VirtualMedia.EjectMedia", AUTH, NULL, NULL, NULL, NULL), 204);
	assert_int_equal(get(b, VM0, &j), 200);
	assert_true(json_is_false(json_object_get(j, "Inserted")));
	assert_true(json_is_null(json_object_get(j, "Image")));
	json_decref(j);
	expect_error(b, "POST", VM0 "/Actions/VirtualMedia.EjectMedia", "{\"x\": 1}", 400,
		     "Base.1.8.ActionParameterUnknown");
	/* PATCH variant, with If-Match. */
	assert_int_equal(req(b, "GET", VM0, AUTH, NULL, NULL, NULL, etag), 200);
	assert_int_equal(req(b, "PATCH", VM0, AUTH, etag,
			     "{\"Image\": \"https://hub/b.iso\", \"Inserted\": true, \"WriteProtected\": true}", NULL,
			     NULL),
			 204);
	assert_int_equal(req(b, "PATCH", VM0, AUTH, etag, "{\"Image\": null, \"Inserted\": false}", NULL, NULL), 412);
	assert_int_equal(get(b, VM0, &j), 200);
	assert_string_equal(json_string_value(json_object_get(j, "Image")), "https://hub/b.iso");
	assert_string_equal(json_string_value(json_object_get(j, "TransferProtocolType")), "HTTPS");
	json_decref(j);
	assert_int_equal(req(b, "PATCH", VM0, AUTH, NULL, "{\"Image\": null, \"Inserted\": false}", NULL, NULL), 204);
	assert_int_equal(get(b, VM0, &j), 200);
	assert_true(json_is_null(json_object_get(j, "Image")));
	json_decref(j);
	bmc_free(b);
}

static void test_bounds_and_oddities(void **state)
{
	struct bmc *b = new_bmc();
	struct bmc_request q = { .method = "PATCH", .path = SYS0, .authorization = AUTH, .body = "", .too_big = true };
	struct bmc_reply r;
	char longpath[2048];

	bmc_handle(b, &q, &r);
	assert_int_equal(r.status, 413);
	bmc_reply_release(&r);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(req(b, "GET", longpath, AUTH, NULL, NULL, NULL, NULL), 404);
	/* Trailing slashes name the same resource. */
	assert_int_equal(req(b, "GET", SYS0 "/", AUTH, NULL, NULL, NULL, NULL), 200);
	/* Duplicate keys are malformed JSON. */
	expect_error(b, "PATCH", SYS0, "{\"Boot\": {}, \"Boot\": {}}", 400, "Base.1.8.MalformedJSON");
	bmc_free(b);
	{
		struct bmc *x = NULL;
		ah_err err = { 0 };
		assert_int_equal(bmc_new(NULL, 0, &(struct bmc_opts){ .user = "a:b", .password = "p" }, &x, &err), -EINVAL);
		assert_int_equal(bmc_new(NULL, 0, &(struct bmc_opts){ .user = "a", .password = "" }, &x, &err), -EINVAL);
	}
}

static void test_manifests(void **state)
{
	struct bmc *b = new_bmc();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_int_equal(bmc_write_manifests(b, f, "10.0.0.1:8000", false, "ztp", "pool"), 0);
	fclose(f);
	assert_non_null(strstr(text, "kind: BareMetalHost\nmetadata:\n  name: sim-1-0\n  namespace: ztp\n"));
	assert_non_null(strstr(text, "    inspect.metal3.io: disabled\n"));
	assert_non_null(strstr(text, "    infraenvs.agent-install.openshift.io: \"pool\"\n"));
	assert_non_null(strstr(text, "  bootMACAddress: \"02:01:00:00:00:01\"\n"));
	assert_non_null(strstr(text, "    address: redfish-virtualmedia+http://10.0.0.1:8000/redfish/v1/Systems/" ID1 "\n"));
	assert_non_null(strstr(text, "    credentialsName: sim-1-1-bmc-secret\n"));
	assert_non_null(strstr(text, "  online: true\n  bootMACAddress"));
	assert_non_null(strstr(text, "  bootMode: UEFI\n  automatedCleaningMode: disabled\n"));
	assert_non_null(strstr(text, "  username: YWRtaW4=\n  password: c2VjcmV0\n"));
	assert_null(strstr(text, "disableCertificateVerification"));
	free(text);
	text = NULL;
	f = open_memstream(&text, &len);
	assert_int_equal(bmc_write_manifests(b, f, "bmc.example:443", true, "default", NULL), 0);
	fclose(f);
	assert_non_null(strstr(text, "    address: redfish-virtualmedia://bmc.example:443/redfish/v1/Systems/" ID0 "\n"));
	assert_non_null(strstr(text, "    disableCertificateVerification: true\n"));
	assert_null(strstr(text, "infraenvs.agent-install.openshift.io"));
	free(text);
	bmc_free(b);
}

static unsigned ipa_req(struct bmc *b, const char *method, const char *path, const char *token, const char *body,
			json_t **ret)
{
	struct bmc_request q = { .method = method, .path = path, .agent_token = token, .body = body ? body : "",
				 .len = body ? strlen(body) : 0 };
	struct bmc_reply r;
	unsigned st;

	bmc_handle(b, &q, &r);
	st = r.status;
	if (ret)
		*ret = r.body ? json_loads(r.body, 0, NULL) : NULL;
	bmc_reply_release(&r);
	return st;
}

/* The ironic agent's commands API: only while the boot runs the agent, with its token;
 * the deploy step starts the assisted agent and ends when the simulator says so. */
static void test_ipa_commands(void **state)
{
	struct bmc *b = new_bmc();
	struct bmc_power p;
	unsigned idx[4];
	json_t *j;
	const char *cmds = "/ipa/" ID0 "/v1/commands";
	const char *step = "{\"name\": \"deploy.execute_deploy_step\", \"params\": {\"step\": {\"interface\": "
			   "\"deploy\", \"step\": \"start_assisted_install\", \"args\": {}, \"priority\": 80}}}";
	char cid[40];

	/* Off, or on but not running the agent: 503. */
	assert_int_equal(ipa_req(b, "GET", cmds, NULL, NULL, NULL), 503);
	reset_to(b, "On");
	assert_int_equal(bmc_take_changed(b, idx, 4), 1);
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(ipa_req(b, "GET", cmds, NULL, NULL, NULL), 503);
	/* A stale boot cannot start the agent. */
	bmc_ipa_begin(b, 0, p.gen - 1, "tok");
	assert_int_equal(ipa_req(b, "GET", cmds, NULL, NULL, NULL), 503);
	bmc_ipa_begin(b, 0, p.gen, "tok");
	assert_int_equal(ipa_req(b, "GET", cmds, NULL, NULL, NULL), 401);
	assert_int_equal(ipa_req(b, "GET", cmds, "bad", NULL, NULL), 401);
	assert_int_equal(ipa_req(b, "GET", cmds, "tok", NULL, &j), 200);
	assert_int_equal(json_array_size(json_object_get(j, "commands")), 0);
	json_decref(j);
	assert_int_equal(ipa_req(b, "GET", "/ipa/nope/v1/commands", "tok", NULL, NULL), 404);
	/* Bad commands. */
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", "{\"name\": \"nodot\"}", NULL), 400);
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", "{\"name\": \"x.y\"}", NULL), 400);
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", "{", NULL), 400);
	/* The deploy steps the agent offers. */
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", "{\"name\": \"deploy.get_deploy_steps\", \"params\": {}}", &j),
			 200);
	assert_string_equal(json_string_value(json_object_get(j, "command_status")), "SUCCEEDED");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(
		json_object_get(j, "command_result"), "deploy_steps"), "CoreOSInstallHardwareManager"), 1), "step")),
		"start_assisted_install");
	json_decref(j);
	assert_false(p.start_assisted);
	/* start_assisted_install: RUNNING, the machine is told, a second one is refused. */
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", step, &j), 200);
	assert_string_equal(json_string_value(json_object_get(j, "command_status")), "RUNNING");
	snprintf(cid, sizeof(cid), "%s", json_string_value(json_object_get(j, "id")));
	json_decref(j);
	assert_int_equal(bmc_take_changed(b, idx, 4), 1);
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_true(p.start_assisted);
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", step, NULL), 409);
	/* The assisted agent exits: SUCCEEDED, seen in the list and by id. */
	bmc_ipa_step_done(b, 0, p.gen, true, NULL);
	{
		char path[160];
		snprintf(path, sizeof(path), "%s/%s", cmds, cid);
		assert_int_equal(ipa_req(b, "GET", path, "tok", NULL, &j), 200);
		assert_string_equal(json_string_value(json_object_get(j, "command_status")), "SUCCEEDED");
		json_decref(j);
	}
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", step, NULL), 409); /* once per boot */
	assert_int_equal(ipa_req(b, "GET", cmds, "tok", NULL, &j), 200);
	assert_int_equal(json_array_size(json_object_get(j, "commands")), 2);
	json_decref(j);
	/* An unknown step fails; standby.power_off powers the machine off, and the agent is gone. */
	assert_int_equal(ipa_req(b, "POST", cmds, "tok",
				 "{\"name\": \"deploy.execute_deploy_step\", \"params\": {\"step\": {\"step\": \"x\"}}}", &j),
			 200);
	assert_string_equal(json_string_value(json_object_get(j, "command_status")), "FAILED");
	json_decref(j);
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", "{\"name\": \"standby.power_off\", \"params\": {}}", NULL), 200);
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_false(p.on);
	assert_false(p.start_assisted);
	assert_int_equal(ipa_req(b, "GET", cmds, "tok", NULL, NULL), 503);
	bmc_free(b);
}

/* write_image puts the image and config drive on the disk (the URL only recorded);
 * a boot from the disk hands the config drive's user_data and meta_data over; a
 * metadata clean wipes the disk. */
static void test_ipa_write_image_and_clean(void **state)
{
	struct bmc *b = new_bmc();
	struct bmc_power p;
	unsigned idx[4];
	json_t *j;
	const char *cmds = "/ipa/" ID0 "/v1/commands/";
	const char *write = "{\"name\": \"deploy.execute_deploy_step\", \"params\": {\"step\": {\"interface\": \"deploy\", "
			    "\"step\": \"write_image\", \"args\": {\"image_info\": {\"urls\": [\"https://img.example/x.qcow2\"]}, "
			    "\"configdrive\": {\"meta_data\": {\"name\": \"m0\"}, \"user_data\": \"{\\\"ignition\\\": {}}\"}}}}}";

	reset_to(b, "On");
	assert_int_equal(bmc_take_changed(b, idx, 4), 1);
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	bmc_ipa_begin(b, 0, p.gen, "tok");
	/* No URL: refused, nothing written. */
	assert_int_equal(ipa_req(b, "POST", cmds, "tok",
				 "{\"name\": \"deploy.execute_deploy_step\", \"params\": {\"step\": {\"step\": \"write_image\", "
				 "\"args\": {\"image_info\": {\"urls\": []}}}}}", &j), 200);
	assert_string_equal(json_string_value(json_object_get(j, "command_status")), "FAILED");
	json_decref(j);
	assert_int_equal(ipa_req(b, "POST", cmds, "tok", write, &j), 200);
	assert_string_equal(json_string_value(json_object_get(j, "command_status")), "SUCCEEDED");
	json_decref(j);
	/* Off, boot Hdd, on: the disk's config drive. */
	reset_to(b, "ForceOff");
	assert_int_equal(req(b, "PATCH", "/redfish/v1/Systems/" ID0, AUTH, NULL,
			     "{\"Boot\": {\"BootSourceOverrideTarget\": \"Hdd\", \"BootSourceOverrideEnabled\": \"Continuous\"}}",
			     NULL, NULL), 204);
	reset_to(b, "On");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(p.boot, BMC_BOOT_HDD);
	assert_non_null(p.disk_user_data);
	assert_string_equal(p.disk_user_data, "{\"ignition\": {}}");
	assert_non_null(p.disk_meta_data);
	assert_non_null(strstr(p.disk_meta_data, "\"m0\""));
	free(p.disk_user_data);
	free(p.disk_meta_data);
	free(p.image);
	/* A clean step wipes it: the next boot finds nothing. */
	bmc_ipa_begin(b, 0, p.gen, "tok");
	assert_int_equal(ipa_req(b, "POST", cmds, "tok",
				 "{\"name\": \"clean.execute_clean_step\", \"params\": {\"step\": {\"step\": \"erase_devices_metadata\"}}}",
				 &j), 200);
	assert_string_equal(json_string_value(json_object_get(j, "command_status")), "SUCCEEDED");
	json_decref(j);
	reset_to(b, "ForceRestart");
	assert_int_equal(bmc_machine_power(b, 0, &p), 0);
	assert_int_equal(p.boot, BMC_BOOT_NONE);
	assert_null(p.disk_user_data);
	free(p.image);
	bmc_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_and_links),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_boot_override_and_power),
		cmocka_unit_test(test_virtual_media),
		cmocka_unit_test(test_bounds_and_oddities),
		cmocka_unit_test(test_manifests),
		cmocka_unit_test(test_ipa_commands),
		cmocka_unit_test(test_ipa_write_image_and_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
