/* testutil.h - small helpers shared by the unit tests. */
#ifndef AH_TESTS_UNIT_TESTUTIL_H
#define AH_TESTS_UNIT_TESTUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* Run fn(arg) in a forked child (for what must not touch the test process,
 * e.g. a file-size limit) and return its exit status, or -1 if it could not
 * run or did not exit normally. */
static inline int tu_run_child(int (*fn)(const char *), const char *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#endif
