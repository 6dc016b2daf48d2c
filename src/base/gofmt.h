/* gofmt.h - float64 formatting as Go's fmt and strconv print it, for
 * messages and table cells that must read exactly as the Kubernetes API
 * server's.  Pure and thread-safe. */
#ifndef AH_BASE_GOFMT_H
#define AH_BASE_GOFMT_H

#include "base/strbuf.h"

/* Shortest round-tripping decimal digits of a finite, non-zero v: the value
 * is 0.<digits> x 10^*ret_dp.  Returns the digit count. */
int gofmt_shortest_digits(double v, char digits[32], int *ret_dp);
/* Append digits in plain decimal form (strconv 'f', shortest). */
void gofmt_f(strbuf *sb, const char *digits, int nd, int dp);
/* Append fmt's %v of a float64 ("1e+06", "1.5", "0.0001", "NaN", "-0"). */
void gofmt_float_v(strbuf *sb, double v);

#endif
