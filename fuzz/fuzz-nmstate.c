/* fuzz-nmstate.c - libFuzzer target for src/image/nmstate.c (nmstate YAML to
 * NetworkManager keyfiles, the MAC map, the bundle and its tar download).
 * Not built by default; build and run it from the repository root with:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *     fuzz/fuzz-nmstate.c src/image/nmstate.c src/base/yamljson.c src/base/strbuf.c \
 *     src/base/util.c src/base/error.c -ljansson -lyaml -lz -lcrypto -o fuzz-nmstate
 *   ./fuzz-nmstate -max_len=4096 -max_total_time=60 [corpus-dir]
 *
 * Good seeds are the keyfile rows of tests/unit/image/test-nmstate.c and
 * the spec.config of conformance/upstream-crs/nmstate.yaml.  The input is
 * the nmstate YAML; if it holds a NUL byte, the text after it is
 * spec.interfaces as JSON, else every named interface of the document gets
 * a MAC of its own (so the valid paths are reached too).  The raw input is
 * also read as a bundle.  Besides crashes and leaks it checks invariants,
 * and aborts when one breaks:
 *   - every failure carries a message (and HTTP status 400);
 *   - conversion is deterministic;
 *   - every keyfile is named <interface>.nmconnection and is INI-like text:
 *     '\n'-terminated lines, the first "[connection]", then "[section]"
 *     headers, "key=value" lines with a plain key, or empty lines; no NUL, no
 *     CR, and no line starting with a bundle marker ('@', '>', '#');
 *   - the MAC map has one sorted "MAC=name" line per listed interface;
 *   - a host that converts and maps builds a bundle, whose tar download
 *     holds exactly its MAC map and keyfiles; the same MACs twice are refused;
 *   - nmstate_bundle_tar on arbitrary text either fails with a message or
 *     gives whole 512-byte blocks ending in two zero blocks. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/nmstate.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond,     \
				__FILE__, __LINE__);                                 \
			abort();                                                     \
		}                                                                    \
	} while (0)

static void check_failure(int r, const ah_err *err)
{
	CHECK(r < 0);
	if (r == -ENOMEM)
		return;
	CHECK(err->message[0] != '\0');
	CHECK(err->status == 400);
}

static bool key_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* INI-like keyfile text, as the host script and NetworkManager read it. */
static void check_keyfile(const char *text)
{
	const char *line = text;
	bool first = true;

	CHECK(*text);
	CHECK(text[strlen(text) - 1] == '\n');
	CHECK(!strchr(text, '\r'));
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t n = (size_t)(nl - line), k;

		CHECK(nl);
		if (first)
			CHECK(n == 12 && memcmp(line, "[connection]", 12) == 0);
		first = false;
		if (n > 0) {
			CHECK(line[0] != '@' && line[0] != '>' && line[0] != '#');
			if (line[0] == '[') {
				CHECK(n > 2 && line[n - 1] == ']');
				for (k = 1; k < n - 1; k++)
					CHECK(key_char(line[k]));
			} else {
				for (k = 0; k < n && line[k] != '='; k++)
					CHECK(key_char(line[k]));
				CHECK(k > 0 && k < n);
			}
		}
		line = nl + 1;
	}
}

/* A tar made by nmstate_bundle_tar: whole blocks, two zero blocks last.
 * With want (a bundle's host 0 as {name: contents}, in order), the entries
 * must be exactly those files. */
static void check_tar(const char *tar, size_t len, const json_t *want)
{
	size_t pos = 0, i, n = 0;

	CHECK(len % 512 == 0 && len >= 1024);
	for (i = len - 1024; i < len; i++)
		CHECK(tar[i] == 0);
	while (pos + 1024 < len) {
		char num[13], path[300];
		size_t sz;
		const json_t *w = json_array_get(want, n);

		memcpy(num, tar + pos + 124, 12);
		num[12] = '\0';
		sz = strtoul(num, NULL, 8);
		CHECK(memcmp(tar + pos + 257, "ustar", 6) == 0);
		if (tar[pos + 345])
			snprintf(path, sizeof(path), "%.155s/%.100s", tar + pos + 345, tar + pos);
		else
			snprintf(path, sizeof(path), "%.100s", tar + pos);
		CHECK(strncmp(path, NMSTATE_NETWORK_DIR "/host", strlen(NMSTATE_NETWORK_DIR "/host")) == 0);
		pos += 512;
		CHECK(sz <= len - 1024 - pos);
		if (want) {
			const char *name = json_string_value(json_array_get(w, 0));
			const char *body = json_string_value(json_array_get(w, 1));
			char expect[300];

			CHECK(name && body);
			snprintf(expect, sizeof(expect), NMSTATE_NETWORK_DIR "/host0/%s", name);
			CHECK(strcmp(path, expect) == 0);
			CHECK(sz == strlen(body) && memcmp(tar + pos, body, sz) == 0);
		}
		pos += (sz + 511) / 512 * 512;
		n++;
	}
	CHECK(pos + 1024 == len);
	if (want)
		CHECK(n == json_array_size(want));
}

/* spec.interfaces for a document: a MAC of its own for each named
 * interface. */
static json_t *derived_interfaces(const json_t *doc)
{
	json_t *out = json_array(), *f;
	size_t i;

	json_array_foreach(json_object_get(doc, "interfaces"), i, f) {
		const char *name = json_string_value(json_object_get(f, "name"));
		char mac[18];

		if (!name)
			continue;
		snprintf(mac, sizeof(mac), "02:00:00:00:%02X:%02X", (unsigned)(i >> 8 & 255),
			 (unsigned)(i & 255));
		json_array_append_new(out, json_pack("{s:s,s:s}", "name", name, "macAddress", mac));
	}
	return out;
}

static void check_mac_map(const char *ini, const json_t *ifaces)
{
	const char *line = ini, *prev = NULL;
	size_t n = 0;

	while (*line) {
		const char *nl = strchr(line, '\n'), *eq = strchr(line, '=');

		CHECK(nl && eq && eq < nl);
		CHECK(eq - line == 17);
		if (prev)
			CHECK(strncmp(prev, line, (size_t)(nl - line) + 1) <= 0);
		prev = line;
		line = nl + 1;
		n++;
	}
	CHECK(n == json_array_size(ifaces));
}

static void check_host(const json_t *doc, const json_t *ifaces, const json_t *files, const char *ini)
{
	struct nmstate_host hosts[2] = { { "fuzz/a", doc, ifaces }, { "fuzz/b", doc, ifaces } };
	char *bundle = NULL, *tar = NULL;
	size_t blen = 0, tlen = 0, i;
	json_t *want = json_array(), *f, *parts = NULL, *units = NULL;
	ah_err err = { 0 };
	int r;

	r = nmstate_bundle_build(hosts, 1, &bundle, &blen, &err);
	if (r == -ENOMEM) {
		json_decref(want);
		return;
	}
	CHECK(r == 0);
	CHECK(blen == strlen(bundle));
	json_array_append_new(want, json_pack("[s,s]", "mac_interface.ini", ini));
	json_array_foreach(files, i, f)
		json_array_append_new(want, json_pack("[O,O]", json_object_get(f, "name"),
						      json_object_get(f, "contents")));
	r = nmstate_bundle_tar(bundle, blen, &tar, &tlen, &err);
	CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		check_tar(tar, tlen, want);
	free(tar);
	free(bundle);
	json_decref(want);

	/* One host's MACs twice: refused, naming both configs. */
	bundle = NULL;
	memset(&err, 0, sizeof(err));
	r = nmstate_bundle_build(hosts, 2, &bundle, &blen, &err);
	CHECK(r < 0 && !bundle);
	if (r != -ENOMEM)
		CHECK(strstr(err.message, "is also listed by NMStateConfig fuzz/a"));

	r = nmstate_ignition_parts(hosts, 1, &parts, &units, &err);
	CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		CHECK(json_array_size(parts) == 3 && json_array_size(units) == 1);
	json_decref(parts);
	json_decref(units);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t ylen = nul ? (size_t)(nul - data) : size;
	json_t *doc = NULL, *files = NULL, *files2 = NULL, *ifaces = NULL, *f;
	char *text, *ini = NULL, *tar = NULL;
	size_t i, tlen = 0;
	ah_err err = { 0 };
	int r;

	/* The raw input as a bundle. */
	r = nmstate_bundle_tar((const char *)data, size, &tar, &tlen, &err);
	if (r == 0) {
		check_tar(tar, tlen, NULL);
		free(tar);
	} else {
		check_failure(r, &err);
	}

	/* An exact-size copy, so reading past the text is caught. */
	text = malloc(ylen ? ylen : 1);
	if (!text)
		return 0;
	memcpy(text, data, ylen);
	memset(&err, 0, sizeof(err));
	r = nmstate_parse_yaml(text, ylen, &doc, &err);
	free(text);
	if (r < 0) {
		check_failure(r, &err);
		return 0;
	}
	CHECK(json_is_object(doc));

	memset(&err, 0, sizeof(err));
	r = nmstate_to_keyfiles(doc, &files, &err);
	if (r < 0) {
		check_failure(r, &err);
	} else {
		CHECK(json_is_array(files));
		json_array_foreach(files, i, f) {
			const char *name = json_string_value(json_object_get(f, "name"));
			const char *contents = json_string_value(json_object_get(f, "contents"));
			size_t nl;

			CHECK(name && contents);
			nl = strlen(name);
			CHECK(nl > 13 && strcmp(name + nl - 13, ".nmconnection") == 0);
			CHECK(!strchr(name, '/'));
			CHECK(json_string_length(json_object_get(f, "contents")) == strlen(contents));
			check_keyfile(contents);
		}
		CHECK(nmstate_to_keyfiles(doc, &files2, &err) == 0);
		CHECK(json_equal(files, files2));
		json_decref(files2);
	}

	if (nul)
		ifaces = json_loadb((const char *)nul + 1, size - ylen - 1, JSON_DECODE_ANY, NULL);
	if (!ifaces)
		ifaces = derived_interfaces(doc);
	memset(&err, 0, sizeof(err));
	r = nmstate_mac_interface_ini(doc, ifaces, &ini, &err);
	if (r < 0) {
		check_failure(r, &err);
	} else {
		check_mac_map(ini, ifaces);
		if (files)
			check_host(doc, ifaces, files, ini);
	}
	free(ini);
	json_decref(ifaces);
	json_decref(files);
	json_decref(doc);
	return 0;
}
