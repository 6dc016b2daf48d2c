/* fuzz-bmc.c - libFuzzer target for src/agent/bmc.c (the simulated Redfish BMC and the
 * ironic agent's commands API, whose requests come from the network).  The first input
 * byte picks a method and a resource, the rest is the body.  Checks:
 *   - every answer has a status from the set the BMC uses, and a body that is a JSON
 *     object when it has one;
 *   - an answer that is not 2xx changes nothing: the System and its virtual media read
 *     the same before and after;
 *   - a 2xx write keeps the resources readable (GET still answers 200). */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "agent/bmc.h"
#include "fuzz-common.h"

#define ID "11111111-1111-4111-8111-111111111111"
#define AUTH "Basic YWRtaW46c2VjcmV0"

static struct bmc *b;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const struct bmc_machine_def def = { .id = ID, .name = "sim-1-0", .mac = "02:01:00:00:00:00",
						    .cpus = 8, .memory_gib = 32 };
	ah_err err;

	CHECK(bmc_new(&def, 1, &(struct bmc_opts){ .user = "admin", .password = "secret" }, &b, &err) == 0);
	bmc_ipa_begin(b, 0, 0, NULL); /* off: the agent API answers 503 until a boot */
	return 0;
}

static char *get(const char *path)
{
	struct bmc_request q = { .method = "GET", .path = path, .authorization = AUTH, .body = "" };
	struct bmc_reply r;
	char *body;

	bmc_handle(b, &q, &r);
	CHECK(r.status == 200 && r.body);
	body = r.body;
	r.body = NULL;
	return body;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		const char *method, *path;
	} reqs[] = {
		{ "PATCH", "/redfish/v1/Systems/" ID },
		{ "POST", "/redfish/v1/Systems/" ID "/Actions/ComputerSystem.Reset" },
		{ "POST", "/redfish/v1/Managers/" ID "/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia" },
		{ "POST", "/redfish/v1/Systems/" ID "/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia" },
		{ "PATCH", "/redfish/v1/Managers/" ID "/VirtualMedia/Cd" },
		{ "POST", "/ipa/" ID "/v1/commands" },
		{ "GET", "/redfish/v1/Systems/" ID },
		{ "DELETE", "/redfish/v1/Systems/" ID },
	};
	static const unsigned statuses[] = { 200, 204, 400, 401, 404, 405, 409, 412, 413, 500, 503 };
	struct bmc_request q = { .authorization = AUTH };
	struct bmc_reply r;
	char *sys_before, *vm_before, *sys_after, *vm_after;
	bool known = false;

	if (size < 1)
		return 0;
	q.method = reqs[data[0] % (sizeof(reqs) / sizeof(reqs[0]))].method;
	q.path = reqs[data[0] % (sizeof(reqs) / sizeof(reqs[0]))].path;
	q.body = (const char *)data + 1;
	q.len = size - 1;
	q.too_big = (data[0] & 0x80) && size > 64;
	sys_before = get("/redfish/v1/Systems/" ID);
	vm_before = get("/redfish/v1/Managers/" ID "/VirtualMedia/Cd");
	bmc_handle(b, &q, &r);
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		known |= r.status == statuses[i];
	CHECK(known);
	if (r.body) {
		json_t *j = json_loads(r.body, 0, NULL);
		CHECK(json_is_object(j));
		json_decref(j);
	}
	sys_after = get("/redfish/v1/Systems/" ID);
	vm_after = get("/redfish/v1/Managers/" ID "/VirtualMedia/Cd");
	if (r.status >= 300) {
		CHECK(!strcmp(sys_before, sys_after));
		CHECK(!strcmp(vm_before, vm_after));
	}
	bmc_reply_release(&r);
	{
		unsigned idx[4];
		while (bmc_take_changed(b, idx, 4) > 0)
			;
	}
	free(sys_before);
	free(vm_before);
	free(sys_after);
	free(vm_after);
	return 0;
}
