/* fuzz-common.h - what the libFuzzer targets share: CHECK aborts (a
 * finding) when an invariant breaks.  Built by meson -Dfuzz=true; see
 * scripts/run-fuzz.sh. */
#ifndef AH_FUZZ_COMMON_H
#define AH_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                                    \
			abort();                                                     \
		}                                                                    \
	} while (0)

#endif
