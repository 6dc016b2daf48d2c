/* cidr.h - an IP address or network as bytes, and prefix comparisons.
 * Shared by the host validations and the cluster logic (assisted layer
 * only); each parses addresses with the strictness its input needs. */
#ifndef AH_ASSISTED_CIDR_H
#define AH_ASSISTED_CIDR_H

#include <stdbool.h>
#include <string.h>

struct cidr {
	int family; /* 4 or 6 */
	unsigned char addr[16];
	int prefix;
};

/* Whether the first `prefix` bits of a and b agree. */
static inline bool prefix_eq(const unsigned char *a, const unsigned char *b, int prefix)
{
	int full = prefix / 8, rem = prefix % 8;

	if (memcmp(a, b, (size_t)full) != 0)
		return false;
	if (rem) {
		unsigned char m = (unsigned char)(0xff << (8 - rem));

		return (a[full] & m) == (b[full] & m);
	}
	return true;
}

static inline bool cidr_contains(const struct cidr *net, const struct cidr *ip)
{
	return net->family == ip->family && prefix_eq(net->addr, ip->addr, net->prefix);
}

static inline bool cidr_overlap(const struct cidr *a, const struct cidr *b)
{
	int p = a->prefix < b->prefix ? a->prefix : b->prefix;

	return a->family == b->family && prefix_eq(a->addr, b->addr, p);
}

#endif
