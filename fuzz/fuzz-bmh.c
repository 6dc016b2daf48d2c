/* fuzz-bmh.c - libFuzzer target for src/assisted/bmh.c: BMC addresses
 * (spec.bmc.address), the reboot/detached annotations, and the
 * hardwaredetails JSON built from an Agent inventory.  The first byte picks
 * the parser; the rest is its input.  Invariants (abort when one breaks):
 *   - an address is accepted with a base of http:// or https:// and a system
 *     path that is empty or absolute, or refused with a message naming
 *     spec.bmc.address;
 *   - a reboot counts outside provisioned only if it counts in provisioned;
 *   - hardwaredetails is JSON that reads back to an object whose first key
 *     is systemVendor and whose firmware is {"bios": {}}, and the same input
 *     gives the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/bmh.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;
	uint8_t mode;

	if (size < 1 || size > 65536)
		return 0;
	mode = data[0] % 3;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	if (mode == 0) {
		struct bmh_bmc b;
		ah_err err = { 0 };

		if (bmh_parse_bmc_address(text, &b, &err) == 0) {
			CHECK(strncmp(b.base, "http://", 7) == 0 || strncmp(b.base, "https://", 8) == 0);
			CHECK(b.system[0] == 0 || b.system[0] == '/');
		} else {
			CHECK(strstr(err.message, "spec.bmc.address") != NULL);
		}
	} else {
		json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);

		if (json_is_object(j) && mode == 1) {
			bool hard;

			if (bmh_reboot_requested(j, "available", &hard))
				CHECK(bmh_reboot_requested(j, "provisioned", &hard));
			(void)bmh_detached(j, "provisioning");
		} else if (json_is_object(j)) {
			char *a = NULL, *b = NULL;
			json_t *back;

			if (bmh_hardware_details(j, NULL, &a) == 0) {
				/* Go writes big floats without an exponent below 1e21. */
				back = json_loads(a, JSON_DECODE_INT_AS_REAL, NULL);
				CHECK(json_is_object(back));
				CHECK(strncmp(a, "{\"systemVendor\":{", 17) == 0);
				CHECK(json_object_size(json_object_get(back, "firmware")) == 1 &&
				      json_object_size(json_object_get(json_object_get(back, "firmware"), "bios")) == 0);
				CHECK(bmh_hardware_details(j, NULL, &b) == 0 && strcmp(a, b) == 0);
				json_decref(back);
			}
			free(a);
			free(b);
		}
		json_decref(j);
	}
	free(text);
	return 0;
}
