/* cli.c - see cli.h. */
#include "cli.h"

#include <string.h>

#define CLI_MAXLEN 64

unsigned cli_edit_distance(const char *a, const char *b)
{
	unsigned prev[CLI_MAXLEN], cur[CLI_MAXLEN];
	size_t la = strnlen(a, CLI_MAXLEN - 1), lb = strnlen(b, CLI_MAXLEN - 1);

	for (size_t j = 0; j <= lb; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned del = prev[j] + 1, ins = cur[j - 1] + 1;
			unsigned sub = prev[j - 1] + (a[i - 1] != b[j - 1]);

			cur[j] = del < ins ? del : ins;
			if (sub < cur[j])
				cur[j] = sub;
		}
		memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
	}
	return prev[lb];
}

const char *cli_suggest(const char *word, const char *const *candidates)
{
	size_t len = strlen(word);
	unsigned limit = len / 3 > 2 ? (unsigned)(len / 3) : 2, best = limit + 1;
	const char *found = NULL;

	for (; candidates && *candidates; candidates++) {
		unsigned d = cli_edit_distance(word, *candidates);

		if (d < best) {
			best = d;
			found = *candidates;
		}
	}
	return found;
}

void cli_option_error(FILE *f, const char *prog, int c, char **argv, const struct option *longopts)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	const char *names[128];
	char flag[CLI_MAXLEN];
	size_t n = 0;

	/* An unknown short flag: optopt is its letter (argv may hold a cluster). */
	if (optopt > 0 && optopt < 128 && (strncmp(arg, "--", 2) != 0 || c == ':')) {
		const struct option *o = NULL;

		for (const struct option *p = longopts; p && p->name; p++)
			if (p->val == optopt)
				o = p;
		if (c == ':' && o && strncmp(arg, "--", 2) == 0)
			fprintf(f, "%s: flag --%s needs a value\n", prog, o->name);
		else if (c == ':')
			fprintf(f, "%s: flag -%c needs a value\n", prog, optopt);
		else
			fprintf(f, "%s: unknown flag -%c\n", prog, optopt);
		return;
	}
	if (c == ':') {
		for (const struct option *p = longopts; p && p->name; p++)
			if (p->val == optopt)
				arg = p->name;
		fprintf(f, "%s: flag --%s needs a value\n", prog, arg[0] == '-' ? arg + 2 : arg);
		return;
	}
	snprintf(flag, sizeof(flag), "%.*s", (int)strcspn(arg, "="), arg);
	for (const struct option *p = longopts; p && p->name && n < 127; p++)
		names[n++] = p->name;
	names[n] = NULL;
	{
		const char *bare = strncmp(flag, "--", 2) == 0 ? flag + 2 : flag[0] == '-' ? flag + 1 : flag;
		const char *s = cli_suggest(bare, names);

		if (s)
			fprintf(f, "%s: unknown flag %s; did you mean --%s?\n", prog, flag, s);
		else
			fprintf(f, "%s: unknown flag %s (see --help)\n", prog, flag);
	}
}
