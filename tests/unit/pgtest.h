/* pgtest.h - a real PostgreSQL server for unit tests, from Debian's
 * binaries (/usr/lib/postgresql/VERSION/bin/initdb and postgres): a fresh
 * cluster on a temporary directory, listening only on a unix socket there,
 * trust authentication, fsync off (the tests kill clients, not the server).
 * When run as root the server runs as the `postgres` user (it refuses root).
 * Needs libpq (the test links the store, which links it). */
#ifndef AH_TESTS_UNIT_PGTEST_H
#define AH_TESTS_UNIT_PGTEST_H

#include <errno.h>
#include <glob.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct tu_pg {
	char dir[64];           /* the temporary directory (socket and data/) */
	char bin[256];          /* the directory holding initdb and postgres */
	int port;
	pid_t pid;
	int dbs;                /* databases made so far */
};

/* Run argv (as `postgres` when we are root); returns its exit status. */
static inline int tu_pg_run(const char *const *argv, uid_t uid, gid_t gid, int quiet)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (getuid() == 0 && (setgid(gid) < 0 || setuid(uid) < 0))
			_exit(126);
		if (quiet) {
			FILE *nul = freopen("/dev/null", "w", stdout);

			(void)nul;
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Start a server.  Returns 0, 1 when Debian's binaries are absent (the
 * caller skips, saying so), -1 when they are present but it failed. */
static inline int tu_pg_start(struct tu_pg *pg)
{
	glob_t g;
	char data[128], sock_opt[160], port_s[16], log[128];
	const char *initdb[16], *serve[16];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int i;

	memset(pg, 0, sizeof(*pg));
	if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0 || g.gl_pathc == 0) {
		globfree(&g);
		return 1;
	}
	snprintf(pg->bin, sizeof(pg->bin), "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	*strrchr(pg->bin, '/') = '\0';
	if (getuid() == 0) {
		struct passwd *pw = getpwnam("postgres");

		if (!pw) {
			fprintf(stderr, "pgtest: running as root and no `postgres` user\n");
			return -1;
		}
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	snprintf(pg->dir, sizeof(pg->dir), "/tmp/ah-pg-XXXXXX");
	if (!mkdtemp(pg->dir))
		return -1;
	if (chown(pg->dir, uid, gid) < 0)
		return -1;
	snprintf(data, sizeof(data), "%s/data", pg->dir);
	snprintf(log, sizeof(log), "%s/initdb.log", pg->dir);
	i = 0;
	{
		char ib[300];

		snprintf(ib, sizeof(ib), "%s/initdb", pg->bin);
		initdb[i++] = strdup(ib);
	}
	initdb[i++] = "-D";
	initdb[i++] = data;
	initdb[i++] = "-A";
	initdb[i++] = "trust";
	initdb[i++] = "-U";
	initdb[i++] = "postgres";
	initdb[i++] = "-E";
	initdb[i++] = "UTF8";
	initdb[i++] = "--no-sync";
	initdb[i++] = "--no-instructions";
	initdb[i] = NULL;
	if (tu_pg_run(initdb, uid, gid, 1) != 0) {
		fprintf(stderr, "pgtest: initdb failed\n");
		free((void *)initdb[0]);
		return -1;
	}
	free((void *)initdb[0]);
	/* A port number only names the socket file here, but keep it away
	 * from the usual 5432 of a system server. */
	srand((unsigned)(time(NULL) ^ getpid()));
	pg->port = 20000 + rand() % 30000;
	snprintf(port_s, sizeof(port_s), "%d", pg->port);
	snprintf(sock_opt, sizeof(sock_opt), "unix_socket_directories=%s", pg->dir);
	pg->pid = fork();
	if (pg->pid < 0)
		return -1;
	if (pg->pid == 0) {
		char sb[300];

		if (getuid() == 0 && (setgid(gid) < 0 || setuid(uid) < 0))
			_exit(126);
		snprintf(sb, sizeof(sb), "%s/postgres", pg->bin);
		i = 0;
		serve[i++] = sb;
		serve[i++] = "-D";
		serve[i++] = data;
		serve[i++] = "-p";
		serve[i++] = port_s;
		serve[i++] = "-c";
		serve[i++] = "listen_addresses=";
		serve[i++] = "-c";
		serve[i++] = sock_opt;
		serve[i++] = "-c";
		serve[i++] = "fsync=off";
		serve[i++] = "-c";
		serve[i++] = "max_connections=300";
		serve[i] = NULL;
		if (!freopen("/dev/null", "w", stderr))
			_exit(125);
		execv(sb, (char *const *)serve);
		_exit(127);
	}
	for (i = 0; i < 300; i++) {
		char conn[200];

		snprintf(conn, sizeof(conn), "host=%s port=%d user=postgres dbname=postgres",
			 pg->dir, pg->port);
		if (PQping(conn) == PQPING_OK)
			return 0;
		if (waitpid(pg->pid, NULL, WNOHANG) == pg->pid) {
			fprintf(stderr, "pgtest: postgres exited at start\n");
			pg->pid = 0;
			return -1;
		}
		usleep(50 * 1000);
	}
	fprintf(stderr, "pgtest: postgres did not come up\n");
	return -1;
}

/* Create a fresh database; its URL into url.  Returns 0 or -1. */
static inline int tu_pg_createdb(struct tu_pg *pg, char *url, size_t size)
{
	char conn[200], sql[64], name[32];
	PGconn *c;
	PGresult *r;
	int rc;

	snprintf(conn, sizeof(conn), "host=%s port=%d user=postgres dbname=postgres", pg->dir,
		 pg->port);
	c = PQconnectdb(conn);
	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return -1;
	}
	snprintf(name, sizeof(name), "t%d", ++pg->dbs);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	r = PQexec(c, sql);
	rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
	PQclear(r);
	PQfinish(c);
	snprintf(url, size, "postgres://postgres@/%s?host=%s&port=%d", name, pg->dir, pg->port);
	return rc;
}

static inline void tu_pg_stop(struct tu_pg *pg)
{
	if (pg->pid > 0) {
		kill(pg->pid, SIGINT);  /* fast shutdown */
		waitpid(pg->pid, NULL, 0);
		pg->pid = 0;
	}
	if (pg->dir[0]) {
		const char *rm[] = { "/bin/rm", "-rf", pg->dir, NULL };

		tu_pg_run(rm, getuid(), getgid(), 0);
		pg->dir[0] = '\0';
	}
}

#endif
