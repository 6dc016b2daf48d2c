/* testutil.h - small helpers shared by the unit tests. */
#ifndef AH_TESTS_UNIT_TESTUTIL_H
#define AH_TESTS_UNIT_TESTUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Make a fresh directory /tmp/<prefix>-XXXXXX into dir (at least 64 bytes).
 * Returns 0, or -1 when it cannot be made. */
static inline int tu_tmpdir(char *dir, size_t size, const char *prefix)
{
	if ((size_t)snprintf(dir, size, "/tmp/%s-XXXXXX", prefix) >= size)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
}

/* Remove a directory made by tu_tmpdir() and the files in it (tests keep
 * no subdirectories there). */
static inline void tu_tmpdir_remove(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char p[4096];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

#endif
