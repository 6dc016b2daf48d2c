/* gofmt.c - Go's fmt formatting of float64 values; see gofmt.h. */
#include "gofmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double fabs_(double v)
{
	return v < 0 ? -v : v;
}

/* Shortest decimal digits that round-trip (strconv precision -1): the value is
 * 0.<digits> x 10^dp.  Returns the digit count; v must be finite and != 0. */
int gofmt_shortest_digits(double v, char digits[32], int *ret_dp)
{
	char buf[48];
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, fabs_(v));
		if (strtod(buf, NULL) == fabs_(v))
			break;
	}
	{
		char *e = strchr(buf, 'e');
		int nd = 0;
		const char *q;

		for (q = buf; q < e; q++)
			if (*q >= '0' && *q <= '9')
				digits[nd++] = *q;
		while (nd > 1 && digits[nd - 1] == '0')
			nd--;
		digits[nd] = '\0';
		*ret_dp = atoi(e + 1) + 1;
		return nd;
	}
}

static void fmt_e(strbuf *sb, const char *digits, int nd, int dp)
{
	int exp = dp - 1;

	strbuf_addch(sb, digits[0]);
	if (nd > 1) {
		strbuf_addch(sb, '.');
		strbuf_add(sb, digits + 1, nd - 1);
	}
	strbuf_addf(sb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

void gofmt_f(strbuf *sb, const char *digits, int nd, int dp)
{
	int i;

	if (dp <= 0) {
		strbuf_adds(sb, "0.");
		for (i = dp; i < 0; i++)
			strbuf_addch(sb, '0');
		strbuf_add(sb, digits, nd);
		return;
	}
	for (i = 0; i < dp; i++)
		strbuf_addch(sb, i < nd ? digits[i] : '0');
	if (nd > dp) {
		strbuf_addch(sb, '.');
		strbuf_add(sb, digits + dp, nd - dp);
	}
}

static bool float_special(strbuf *sb, double v)
{
	if (isnan(v)) {
		strbuf_adds(sb, "NaN");
		return true;
	}
	if (isinf(v)) {
		strbuf_adds(sb, v > 0 ? "+Inf" : "-Inf");
		return true;
	}
	if (v == 0) {
		strbuf_adds(sb, signbit(v) ? "-0" : "0");
		return true;
	}
	return false;
}

/* fmt's %v of a float64: %g with the shortest precision, which switches to
 * the exponent form from 1e+06 on ("1e+06", "1.5", "0.0001", "1e-05"). */
void gofmt_float_v(strbuf *sb, double v)
{
	char digits[32];
	int nd, dp;

	if (float_special(sb, v))
		return;
	if (v < 0)
		strbuf_addch(sb, '-');
	nd = gofmt_shortest_digits(v, digits, &dp);
	if (dp - 1 < -4 || dp - 1 >= 6)
		fmt_e(sb, digits, nd, dp);
	else
		gofmt_f(sb, digits, nd, dp);
}

