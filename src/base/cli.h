/* cli.h - helpers shared by the command lines (agenthub, agenthub-agent):
 * "did you mean" suggestions by edit distance and getopt error messages that
 * name the flag.  Pure, thread-safe, nothing allocated. */
#ifndef AH_BASE_CLI_H
#define AH_BASE_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* Levenshtein distance between a and b, capped at 64 (longer inputs compare
 * their first 63 bytes). */
unsigned cli_edit_distance(const char *a, const char *b);

/* The candidate closest to word when it is close enough to be a likely typo
 * (distance at most 2, or a third of the word's length when longer), else
 * NULL.  candidates is NULL-terminated; the result points into it. */
const char *cli_suggest(const char *word, const char *const *candidates);

/* After getopt_long() returned '?' or ':' (call it with an optstring that
 * starts with ':' and with opterr = 0): print to f "PROG: unknown flag --x;
 * did you mean --y?" or "PROG: flag --x needs a value", the suggestion drawn
 * from longopts.  argv and optind are getopt's. */
void cli_option_error(FILE *f, const char *prog, int c, char **argv, const struct option *longopts);

#endif
