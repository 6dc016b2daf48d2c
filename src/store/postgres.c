/* postgres.c - the PostgreSQL backend of the object store (libpq), for
 * several agenthub replicas on one database.
 *
 * Schema (created and migrated by the hub at open, under a session advisory
 * lock so that replicas starting together migrate once):
 *   ah_meta(k, v)      rows 'schema' (version), 'rev' (the newest committed
 *                      revision) and 'compacted' (events at or below are gone)
 *   ah_objects         the current text of every key, PRIMARY KEY
 *                      (resource, ns, name), all COLLATE "C" so that key order
 *                      is byte order as in SQLite
 *   ah_events          one row per write, keyed by its revision
 *
 * One global revision: every write transaction first locks the 'rev' row
 * (SELECT ... FOR UPDATE) and sets it to its last revision before COMMIT.
 * Writers of every replica are thus serialised on that row, so revisions
 * are contiguous and commit in revision order: a reader that sees revision
 * R in ah_meta sees every event up to R, and an event can never appear
 * behind a watch's position later (the gap problem kine solves with fill
 * rows cannot arise).  Within a replica writes are group-committed as in
 * sqlite.c: one writer thread takes every queued write and applies them in
 * one transaction, so the row lock is taken once per batch, not per write.
 * A write is acknowledged after COMMIT returned, i.e. after the server
 * flushed it (synchronous_commit is the server's durability setting).
 *
 * Reads: a pool of connections.  A get is one statement; list and events
 * run in one REPEATABLE READ READ ONLY transaction (one snapshot) which also
 * reads ah_meta for the revision the answer is at, and fetch through a
 * cursor in chunks so a caller that stops early does not pull the rest.
 *
 * Watches across replicas: each write transaction sends NOTIFY ah_rev with
 * its revision (delivered at COMMIT).  A listener thread per store LISTENs
 * and publishes the revision to store_wait() callers; it also re-reads
 * ah_meta at least every POLL_MS and after every reconnect, so a lost
 * notification only delays a wake-up, never loses an event: watches always
 * read the events themselves from ah_events by revision.
 *
 * Compaction deletes events in its own short transaction that locks only
 * the 'compacted' row (and a transaction advisory lock so that one replica
 * compacts at a time), never the 'rev' row: writers are not blocked.
 *
 * No object cache and no event ring: both assume that this process is the
 * only writer, which is not so here; every get, list and events call reads
 * PostgreSQL.  store_resource_stamp() changes on this replica's writes
 * before they are acknowledged, and on every other replica's write as soon
 * as this replica learns of it (notification, or the poll), so a cache
 * built on the stamp may lag another replica's write by that much. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/hubmetrics.h"
#include "store/store-internal.h"

#define SCHEMA_VERSION 1
#define BATCH_MAX 512
#define COMPACT_CHUNK 8192
#define READERS_IDLE_MAX 16
#define STAMP_SLOTS STORE__STAMP_SLOTS
#define FETCH_CHUNK 256
/* The listener re-reads the revision at least this often. */
#define POLL_MS 500
/* Advisory lock keys (0x61680001, 0x61680002): schema migration (held by
 * a session) and compaction (held by a transaction). */
#define LOCK_MIGRATE "1634205697"
#define LOCK_COMPACT "1634205698"
/* First key of the session locks (store_session_lock_new): 0x61680003. */
#define LOCK_SESSION "1634205699"

enum preq_kind { PREQ_WRITE, PREQ_COMPACT };

struct preq {
	struct preq *next;
	enum preq_kind kind;
	const struct store__write *w;
	size_t keep;
	int result;
	int64_t rev;
	bool done;
};

struct pconn {
	struct pconn *next;
	PGconn *c;
};

struct pg {
	struct store base;
	char *conninfo;
	struct store_options opts;

	/* write queue */
	pthread_mutex_t qmu;
	pthread_cond_t qcond;           /* the writer waits for work */
	pthread_cond_t dcond;           /* callers wait for their batch */
	struct preq *qhead, *qtail;
	size_t queued;
	bool stopping;
	pthread_t writer;
	bool writer_started;
	PGconn *wconn;

	/* readers */
	pthread_mutex_t rmu;
	struct pconn *idle;
	size_t nidle;

	/* listener */
	pthread_t listener;
	bool listener_started;
	int wake_pipe[2];

	/* published state */
	_Atomic int64_t rev, compacted;
	pthread_mutex_t wmu;
	pthread_cond_t wcond;
	uint64_t wake_gen;
	_Atomic uint64_t stamps[STAMP_SLOTS];

	_Atomic uint64_t commits, writes;
	_Atomic size_t max_batch;
};

static _Thread_local char open_error[256];

const char *store__pg_open_error(void)
{
	return open_error;
}

static struct pg *to_pg(store *s)
{
	return (struct pg *)s;
}

/* ---- libpq helpers ---------------------------------------------------- */

static int64_t get_i64(const PGresult *r, int row, int col)
{
	uint64_t v;

	if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8)
		return 0;
	memcpy(&v, PQgetvalue(r, row, col), 8);
	return (int64_t)be64toh(v);
}

static int get_i16(const PGresult *r, int row, int col)
{
	uint16_t v;

	if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 2)
		return 0;
	memcpy(&v, PQgetvalue(r, row, col), 2);
	return (int16_t)be16toh(v);
}

/* Run a statement with text parameters; results in binary. */
static PGresult *run(PGconn *c, const char *sql, int n, const char *const *vals,
		     const int *lens, const int *fmts)
{
	return PQexecParams(c, sql, n, NULL, vals, lens, fmts, 1);
}

static bool ok(const PGresult *r)
{
	ExecStatusType st = PQresultStatus(r);

	return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

/* Run and check; 0 or -EIO. */
static int exec0(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	int rc = ok(r) ? 0 : -EIO;

	PQclear(r);
	return rc;
}

/* Server notices (e.g. "relation already exists, skipping") are not
 * errors and must not land on the hub's stderr. */
static void quiet_notice(void *arg, const char *message)
{
}

static PGconn *connect_db(const struct pg *p)
{
	/* Defaults first: what the URL says wins.  TCP keepalives find a dead
	 * server (or path) in about 25 s instead of the kernel's hours. */
	const char *keys[] = { "connect_timeout", "client_encoding", "application_name",
			       "keepalives_idle", "keepalives_interval", "keepalives_count",
			       "dbname", NULL };
	const char *vals[] = { "10", "UTF8", "agenthub", "10", "5", "3", p->conninfo, NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);

	if (c && PQstatus(c) == CONNECTION_OK) {
		PGresult *r;

		PQsetNoticeProcessor(c, quiet_notice, NULL);
		/* A replica stopped mid-transaction (SIGSTOP, a lost network)
		 * must not hold the revision lock, and so every writer, for
		 * long: its session ends after 15 s idle in a transaction. */
		r = PQexec(c, "SET default_transaction_isolation = 'read committed'; "
			   "SET idle_in_transaction_session_timeout = '15s'");

		PQclear(r);
		return c;
	}
	if (c)
		snprintf(open_error, sizeof(open_error), "%s", PQerrorMessage(c));
	else
		snprintf(open_error, sizeof(open_error), "out of memory");
	/* One line: libpq ends its messages with a newline. */
	open_error[strcspn(open_error, "\n")] = '\0';
	PQfinish(c);
	return NULL;
}

/* ---- published state -------------------------------------------------- */

static size_t stamp_slot(const char *resource)
{
	return store__stamp_slot(resource);
}

static void publish(struct pg *p, int64_t rev, int64_t compacted, bool foreign)
{
	int64_t c = atomic_load(&p->compacted);
	size_t i;

	while (compacted > c && !atomic_compare_exchange_weak(&p->compacted, &c, compacted))
		;
	if (rev <= atomic_load(&p->rev))
		return;
	/* Another replica wrote something this one cannot name: every
	 * stamp changes, before the revision is published. */
	if (foreign)
		for (i = 0; i < STAMP_SLOTS; i++)
			atomic_fetch_add(&p->stamps[i], 1);
	pthread_mutex_lock(&p->wmu);
	if (rev > atomic_load(&p->rev))
		atomic_store(&p->rev, rev);
	pthread_cond_broadcast(&p->wcond);
	pthread_mutex_unlock(&p->wmu);
}

static int read_meta(PGconn *c, int64_t *rev, int64_t *compacted)
{
	PGresult *r = run(c, "SELECT (SELECT v FROM ah_meta WHERE k = 'rev'), "
			  "(SELECT v FROM ah_meta WHERE k = 'compacted')", 0, NULL, NULL, NULL);
	int rc = -EIO;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
		*rev = get_i64(r, 0, 0);
		*compacted = get_i64(r, 0, 1);
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/* ---- writes ----------------------------------------------------------- */

static void fmt_i64(char *buf, size_t n, int64_t v)
{
	snprintf(buf, n, "%" PRId64, v);
}

/* Read one pipeline query's results (a result, then NULL); 0 when it was
 * ok (and, with want_one, changed exactly one row), else -EIO.  *ret gets
 * the result when ret is non-NULL (the caller clears it). */
static int pipe_result(PGconn *c, bool want_one, PGresult **ret)
{
	PGresult *r = PQgetResult(c), *x;
	int rc = r && ok(r) && (!want_one || strcmp(PQcmdTuples(r), "1") == 0) ? 0 : -EIO;

	while ((x = PQgetResult(c)))
		PQclear(x);
	if (ret)
		*ret = r;
	else
		PQclear(r);
	return rc;
}

/* After a pipeline's last query: up to and including its sync point. */
static int pipe_sync_end(PGconn *c)
{
	PGresult *r;
	int rc = -EIO;

	while ((r = PQgetResult(c))) {
		ExecStatusType st = PQresultStatus(r);

		PQclear(r);
		if (st == PGRES_PIPELINE_SYNC) {
			rc = 0;
			break;
		}
	}
	return rc;
}

/* Make sure the writer's connection is usable. */
static int writer_conn(struct pg *p)
{
	if (p->wconn && PQstatus(p->wconn) == CONNECTION_OK)
		return 0;
	if (p->wconn) {
		PQreset(p->wconn);
		if (PQstatus(p->wconn) == CONNECTION_OK)
			return 0;
		PQfinish(p->wconn);
	}
	p->wconn = connect_db(p);
	return p->wconn ? 0 : -EIO;
}

/* One transaction for the writes in batch[0..n), in two round trips
 * whatever n: BEGIN, the revision lock and the current revision of every
 * key the batch touches (pipelined); then every write (its object row and
 * event in one statement), the new revision, its NOTIFY and COMMIT
 * (pipelined).  Each write's precondition is decided here, in order, from
 * what was read and what earlier writes of the batch did.  Returns 0 when
 * the transaction committed (each request's own result set), -EIO when it
 * did not (or may not have); *retry when a statement failed on a live
 * connection (then the caller applies each write alone). */
static int run_txn(struct pg *p, struct preq **batch, size_t n, int64_t *ret_rev, bool *retry)
{
	static const char *const sql_write[] = {
		[STORE__CREATE] = "WITH o AS (INSERT INTO ah_objects (resource, ns, name, rev, json) "
			"VALUES ($1, $2, $3, $4::bigint, $5::bytea) RETURNING 1) "
			"INSERT INTO ah_events (rev, resource, ns, name, type, json) "
			"SELECT $4::bigint, $1, $2, $3, $6::smallint, $5::bytea FROM o",
		[STORE__UPDATE] = "WITH o AS (UPDATE ah_objects SET rev = $4::bigint, json = $5::bytea "
			"WHERE resource = $1 AND ns = $2 AND name = $3 RETURNING 1) "
			"INSERT INTO ah_events (rev, resource, ns, name, type, json) "
			"SELECT $4::bigint, $1, $2, $3, $6::smallint, $5::bytea FROM o",
		[STORE__DELETE] = "WITH o AS (DELETE FROM ah_objects "
			"WHERE resource = $1 AND ns = $2 AND name = $3 RETURNING 1) "
			"INSERT INTO ah_events (rev, resource, ns, name, type, json) "
			"SELECT $4::bigint, $1, $2, $3, $6::smallint, $5::bytea FROM o",
	};
	PGconn *c = p->wconn;
	PGresult *r;
	int64_t cur = 0, *krev = NULL;
	bool *kex = NULL, pipe = false, failed = false;
	size_t i, j, applied = 0, sent = 0, pending = 0;  /* pending: sent, not read */
	char revs[24];

	*retry = false;
	for (i = 0; i < n; i++)
		batch[i]->result = -EIO;
	krev = calloc(n, sizeof(*krev));
	kex = calloc(n, sizeof(*kex));
	if (!krev || !kex)
		goto fail;
	/* BEGIN, the revision lock and the current revision of every key, in
	 * one round trip: the reads queue behind the lock on the server. */
	if (!PQenterPipelineMode(c))
		goto fail;
	pipe = true;
	if (!PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) ||
	    !PQsendQueryParams(c, "SELECT v FROM ah_meta WHERE k = 'rev' FOR UPDATE", 0, NULL, NULL, NULL,
			       NULL, 0))
		goto fail;
	pending += 2;
	for (i = 0; i < n; i++) {
		const char *key[3] = { batch[i]->w->resource, batch[i]->w->ns, batch[i]->w->name };

		if (!PQsendQueryParams(c, "SELECT rev FROM ah_objects "
				       "WHERE resource = $1 AND ns = $2 AND name = $3",
				       3, NULL, key, NULL, NULL, 1))
			goto fail;
		pending++;
	}
	if (!PQpipelineSync(c))
		goto fail;
	pending--;
	if (pipe_result(c, false, NULL) < 0)
		failed = true;
	pending--;
	if (pipe_result(c, false, &r) < 0 || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		failed = true;
	else
		cur = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	for (i = 0; i < n; i++) {
		pending--;
		if (pipe_result(c, false, &r) < 0) {
			PQclear(r);
			failed = true;
			continue;
		}
		kex[i] = PQntuples(r) == 1;
		krev[i] = kex[i] ? get_i64(r, 0, 0) : 0;
		PQclear(r);
	}
	if (pipe_sync_end(c) < 0 || failed)
		goto fail;

	for (i = 0; i < n; i++) {
		struct preq *q = batch[i];
		const struct store__write *w = q->w;
		bool exists = kex[i];
		int64_t kr = krev[i];
		size_t len = SIZE_MAX;
		char *text, types[8];
		const char *vals[6];
		int lens[6] = { 0 }, fmts[6] = { 0 }, type;

		/* The latest earlier write of this batch to the same key wins. */
		for (j = i; j-- > 0;)
			if (batch[j]->result == 0 && strcmp(batch[j]->w->name, w->name) == 0 &&
			    strcmp(batch[j]->w->ns, w->ns) == 0 &&
			    strcmp(batch[j]->w->resource, w->resource) == 0) {
				exists = batch[j]->w->op != STORE__DELETE;
				kr = batch[j]->rev;
				break;
			}
		if (w->op == STORE__CREATE && exists) {
			q->result = -EEXIST;
			continue;
		}
		if (w->op != STORE__CREATE && !exists) {
			q->result = -ENOENT;
			continue;
		}
		if (w->op != STORE__CREATE && w->expect_rev > 0 && w->expect_rev != kr) {
			q->result = -ESTALE;
			continue;
		}
		text = w->render(cur + 1, &len, w->userdata);
		if (!text) {
			q->result = -ECANCELED;
			continue;
		}
		if (len == SIZE_MAX)
			len = strlen(text);
		if (len > STORE_MAX_JSON) {
			free(text);
			q->result = -EFBIG;
			continue;
		}
		type = w->op == STORE__CREATE ? STORE_ADDED :
		       w->op == STORE__UPDATE ? STORE_MODIFIED : STORE_DELETED;
		fmt_i64(revs, sizeof(revs), cur + 1);
		snprintf(types, sizeof(types), "%d", type);
		vals[0] = w->resource;
		vals[1] = w->ns;
		vals[2] = w->name;
		vals[3] = revs;
		vals[4] = text;
		vals[5] = types;
		lens[4] = (int)len;
		fmts[4] = 1;
		/* libpq copies the parameters into its buffer here. */
		if (!PQsendQueryParams(c, sql_write[w->op], 6, NULL, vals, lens, fmts, 1)) {
			free(text);
			goto fail;
		}
		free(text);
		sent++;
		pending++;
		q->rev = ++cur;
		q->result = 0;
		applied++;
	}
	if (applied) {
		const char *vals[1] = { revs };

		fmt_i64(revs, sizeof(revs), cur);
		if (!PQsendQueryParams(c, "UPDATE ah_meta SET v = $1 WHERE k = 'rev'", 1, NULL, vals,
				       NULL, NULL, 1) ||
		    !PQsendQueryParams(c, "SELECT pg_notify('ah_rev', $1)", 1, NULL, vals, NULL, NULL, 1))
			goto fail;
		pending += 2;
	}
	if (!PQsendQueryParams(c, "COMMIT", 0, NULL, NULL, NULL, NULL, 1))
		goto fail;
	pending++;
	if (!PQpipelineSync(c))
		goto fail;
	/* The writes (one row each), the revision, the notification, COMMIT. */
	for (i = 0; i < sent; i++, pending--)
		if (pipe_result(c, true, NULL) < 0)
			failed = true;
	for (i = 0; i < (applied ? 3u : 1u); i++, pending--)
		if (pipe_result(c, false, NULL) < 0)
			failed = true;
	if (pipe_sync_end(c) < 0)
		failed = true;
	PQexitPipelineMode(c);
	pipe = false;
	if (failed || PQtransactionStatus(c) != PQTRANS_IDLE) {
		/* Something failed before COMMIT took: an aborted transaction is
		 * rolled back and the batch tried write by write. */
		*retry = n > 1 && PQstatus(c) == CONNECTION_OK;
		goto fail;
	}
	free(krev);
	free(kex);
	*ret_rev = applied ? cur : 0;
	return 0;
fail:
	if (pipe && PQstatus(c) == CONNECTION_OK) {
		/* Discard what the pipeline still holds, then leave it. */
		if (pending && PQpipelineSync(c)) {
			for (; pending; pending--)
				pipe_result(c, false, NULL);
			pipe_sync_end(c);
		}
		if (!PQexitPipelineMode(c)) {
			/* Cannot tell where the stream is: start afresh. */
			PQfinish(p->wconn);
			p->wconn = c = NULL;
		}
	}
	if (c && PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
		PQclear(PQexec(c, "ROLLBACK"));
	for (i = 0; i < n; i++)
		batch[i]->result = -EIO;
	free(krev);
	free(kex);
	return -EIO;
}

/* Delete events so that at most `keep` remain (at most `limit` of them in
 * this call when limit > 0).  Returns the compacted revision or -EIO. */
static int64_t compact_conn(PGconn *c, size_t keep, int64_t limit)
{
	PGresult *r;
	int64_t rev, compacted, target;
	char ts[24], cs[24];
	const char *vals[2];

	if (exec0(c, "BEGIN") < 0)
		return -EIO;
	r = run(c, "SELECT pg_try_advisory_xact_lock(" LOCK_COMPACT ")", 0, NULL, NULL, NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
	    PQgetlength(r, 0, 0) != 1 || PQgetvalue(r, 0, 0)[0] != 1) {
		/* Another replica compacts right now: its answer will do. */
		PQclear(r);
		if (exec0(c, "COMMIT") < 0 || read_meta(c, &rev, &compacted) < 0)
			return -EIO;
		return compacted;
	}
	PQclear(r);
	r = run(c, "SELECT v FROM ah_meta WHERE k = 'compacted' FOR UPDATE", 0, NULL, NULL, NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		PQclear(r);
		goto fail;
	}
	compacted = get_i64(r, 0, 0);
	PQclear(r);
	r = run(c, "SELECT v FROM ah_meta WHERE k = 'rev'", 0, NULL, NULL, NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		PQclear(r);
		goto fail;
	}
	rev = get_i64(r, 0, 0);
	PQclear(r);
	target = (int64_t)keep >= rev ? 0 : rev - (int64_t)keep;
	if (limit > 0 && target > compacted + limit)
		target = compacted + limit;
	if (target > compacted) {
		fmt_i64(ts, sizeof(ts), target);
		fmt_i64(cs, sizeof(cs), compacted);
		vals[0] = ts;
		vals[1] = cs;
		r = run(c, "UPDATE ah_meta SET v = $1 WHERE k = 'compacted'", 1, vals, NULL, NULL);
		if (!ok(r)) {
			PQclear(r);
			goto fail;
		}
		PQclear(r);
		r = run(c, "DELETE FROM ah_events WHERE rev <= $1 AND rev > $2", 2, vals, NULL, NULL);
		if (!ok(r)) {
			PQclear(r);
			goto fail;
		}
		PQclear(r);
		compacted = target;
	}
	if (exec0(c, "COMMIT") < 0)
		return -EIO;
	return compacted;
fail:
	PQclear(PQexec(c, "ROLLBACK"));
	return -EIO;
}

static void run_batch(struct pg *p, struct preq **batch, size_t n)
{
	int64_t rev = 0, comp;
	bool retry = false;
	size_t i;
	int rc;

	double t0 = hm_now();

	if (writer_conn(p) < 0) {
		for (i = 0; i < n; i++)
			batch[i]->result = -EIO;
		return;
	}
	rc = run_txn(p, batch, n, &rev, &retry);
	if (rc < 0 && retry) {
		/* A statement failed on a live connection: one of the writes is
		 * bad; apply each alone so that only it fails. */
		for (i = 0; i < n; i++) {
			int64_t r1 = 0;
			bool again;

			if (writer_conn(p) == 0 && run_txn(p, &batch[i], 1, &r1, &again) == 0) {
				atomic_fetch_add(&p->commits, 1);
				if (r1 > rev)
					rev = r1;
			}
		}
	} else if (rc == 0) {
		atomic_fetch_add(&p->commits, 1);
	}
	if (rc == 0)
		hm_store_commit(hm_now() - t0, n);
	/* Every request moves its stamp, refused or not: it may have raced
	 * with a write that landed. */
	for (i = 0; i < n; i++) {
		atomic_fetch_add(&p->stamps[stamp_slot(batch[i]->w->resource)], 1);
		if (batch[i]->result == 0)
			atomic_fetch_add(&p->writes, 1);
	}
	if (rev > 0) {
		publish(p, rev, 0, false);
		comp = atomic_load(&p->compacted);
		if (rev - comp > (int64_t)(p->opts.event_log_keep + p->opts.event_log_keep / 16) &&
		    writer_conn(p) == 0) {
			comp = compact_conn(p->wconn, p->opts.event_log_keep, COMPACT_CHUNK);
			if (comp >= 0)
				publish(p, rev, comp, false);
		}
	}
}

static void *writer_main(void *arg)
{
	struct pg *p = arg;
	struct preq *batch[BATCH_MAX];

	for (;;) {
		size_t n = 0, i;
		struct preq *cq = NULL;

		pthread_mutex_lock(&p->qmu);
		while (!p->qhead && !p->stopping)
			pthread_cond_wait(&p->qcond, &p->qmu);
		if (!p->qhead && p->stopping) {
			pthread_mutex_unlock(&p->qmu);
			break;
		}
		if (p->qhead->kind == PREQ_COMPACT) {
			cq = p->qhead;
			p->qhead = cq->next;
		} else {
			while (p->qhead && p->qhead->kind == PREQ_WRITE && n < BATCH_MAX) {
				batch[n++] = p->qhead;
				p->qhead = p->qhead->next;
			}
		}
		if (!p->qhead)
			p->qtail = NULL;
		p->queued -= cq ? 1 : n;
		pthread_mutex_unlock(&p->qmu);

		if (cq) {
			int64_t comp = writer_conn(p) < 0 ? -EIO :
				       compact_conn(p->wconn, cq->keep, 0);

			cq->rev = comp;
			if (comp >= 0)
				publish(p, 0, comp, false);
		} else {
			size_t mb = atomic_load(&p->max_batch);

			if (n > mb)
				atomic_store(&p->max_batch, n);
			run_batch(p, batch, n);
		}
		pthread_mutex_lock(&p->qmu);
		if (cq)
			cq->done = true;
		for (i = 0; i < n; i++)
			batch[i]->done = true;
		pthread_cond_broadcast(&p->dcond);
		pthread_mutex_unlock(&p->qmu);
	}
	return NULL;
}

static void submit(struct pg *p, struct preq *r)
{
	pthread_mutex_lock(&p->qmu);
	r->next = NULL;
	if (p->qtail)
		p->qtail->next = r;
	else
		p->qhead = r;
	p->qtail = r;
	p->queued++;
	pthread_cond_signal(&p->qcond);
	while (!r->done)
		pthread_cond_wait(&p->dcond, &p->qmu);
	pthread_mutex_unlock(&p->qmu);
}

static int pg_write(store *s, const struct store__write *w, int64_t *ret_rev)
{
	struct preq r = { .kind = PREQ_WRITE, .w = w };

	submit(to_pg(s), &r);
	if (r.result == 0 && ret_rev)
		*ret_rev = r.rev;
	return r.result;
}

static int64_t pg_compact(store *s, size_t keep)
{
	struct preq r = { .kind = PREQ_COMPACT, .keep = keep };

	submit(to_pg(s), &r);
	return r.rev < 0 ? atomic_load(&to_pg(s)->compacted) : r.rev;
}

/* ---- reads ------------------------------------------------------------ */

static int reader_take(struct pg *p, PGconn **ret)
{
	struct pconn *e;

	pthread_mutex_lock(&p->rmu);
	e = p->idle;
	if (e) {
		p->idle = e->next;
		p->nidle--;
	}
	pthread_mutex_unlock(&p->rmu);
	if (e) {
		*ret = e->c;
		free(e);
		return 0;
	}
	*ret = connect_db(p);
	return *ret ? 0 : -EIO;
}

static void reader_put(struct pg *p, PGconn *c)
{
	struct pconn *e;

	if (PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) {
		PQfinish(c);
		return;
	}
	e = malloc(sizeof(*e));
	pthread_mutex_lock(&p->rmu);
	if (e && p->nidle < READERS_IDLE_MAX) {
		e->c = c;
		e->next = p->idle;
		p->idle = e;
		p->nidle++;
		c = NULL;
		e = NULL;
	}
	pthread_mutex_unlock(&p->rmu);
	free(e);
	if (c)
		PQfinish(c);
}

static int pg_get(store *s, const char *resource, const char *ns, const char *name,
		  store_obj **ret)
{
	struct pg *p = to_pg(s);
	const char *key[3] = { resource, ns, name };
	PGconn *c;
	PGresult *r;
	store_obj *o;
	int rc;

	rc = reader_take(p, &c);
	if (rc)
		return rc;
	r = run(c, "SELECT rev, json FROM ah_objects WHERE resource = $1 AND ns = $2 AND name = $3",
		3, key, NULL, NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = -EIO;
	} else if (PQntuples(r) != 1) {
		rc = -ENOENT;
	} else {
		o = calloc(1, sizeof(*o));
		if (o) {
			o->resource = strdup(resource);
			o->ns = strdup(ns);
			o->name = strdup(name);
			o->rev = get_i64(r, 0, 0);
			o->len = (size_t)PQgetlength(r, 0, 1);
			o->json = malloc(o->len + 1);
		}
		if (!o || !o->resource || !o->ns || !o->name || !o->json) {
			store_obj_free(o);
			rc = -ENOMEM;
		} else {
			memcpy(o->json, PQgetvalue(r, 0, 1), o->len);
			o->json[o->len] = '\0';
			*ret = o;
		}
	}
	PQclear(r);
	reader_put(p, c);
	return rc;
}

/* Open a snapshot and read the revision it is at. */
static int snap_begin(PGconn *c, int64_t *rev, int64_t *compacted)
{
	if (exec0(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") < 0)
		return -EIO;
	if (read_meta(c, rev, compacted) < 0) {
		PQclear(PQexec(c, "ROLLBACK"));
		return -EIO;
	}
	return 0;
}

/* Declare cursor ah_cur for sql and hand its rows (resource, ns, name, rev,
 * [type,] json) to visit.  Returns 0 when rows ran out, 1 when visit
 * stopped, negative errno.  Leaves the transaction open. */
static int visit_cursor(PGconn *c, const char *sql, int n, const char *const *vals,
			bool with_type, size_t max, store_visit_fn visit, void *userdata,
			size_t *ret_count, int64_t *ret_last)
{
	char decl[1024];
	PGresult *r;
	int j = with_type ? 5 : 4;

	snprintf(decl, sizeof(decl), "DECLARE ah_cur NO SCROLL CURSOR FOR %s", sql);
	r = run(c, decl, n, vals, NULL, NULL);
	if (!ok(r)) {
		PQclear(r);
		return -EIO;
	}
	PQclear(r);
	for (;;) {
		char fetch[64];
		size_t want = FETCH_CHUNK;
		int i, rows;

		if (max && max - *ret_count < want)
			want = max - *ret_count;
		if (want == 0)
			return 0;
		snprintf(fetch, sizeof(fetch), "FETCH %zu FROM ah_cur", want);
		r = run(c, fetch, 0, NULL, NULL, NULL);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			PQclear(r);
			return -EIO;
		}
		rows = PQntuples(r);
		for (i = 0; i < rows; i++) {
			store_obj o = {
				.resource = PQgetvalue(r, i, 0),
				.ns = PQgetvalue(r, i, 1),
				.name = PQgetvalue(r, i, 2),
				.rev = get_i64(r, i, 3),
				.type = with_type ? (enum store_event_type)get_i16(r, i, 4) : 0,
				.len = (size_t)PQgetlength(r, i, j),
			};
			int v;

			/* libpq keeps a NUL after every value, binary too. */
			o.json = PQgetvalue(r, i, j);
			v = visit(&o, userdata);
			(*ret_count)++;
			*ret_last = o.rev;
			if (v) {
				PQclear(r);
				return v < 0 ? v : 1;
			}
		}
		PQclear(r);
		if ((size_t)rows < want)
			return 0;
	}
}

static int snap_end(PGconn *c)
{
	return exec0(c, "COMMIT");
}

static int pg_list(store *s, const char *resource, const char *ns, const char *after_ns,
		   const char *after_name, store_visit_fn visit, void *userdata, int64_t *ret_rev)
{
	struct pg *p = to_pg(s);
	char sql[512];
	const char *vals[4];
	const char *sep = " WHERE ";
	int64_t rev, compacted, last = 0;
	size_t count = 0;
	PGconn *c;
	int n = 0, len, rc, res;

	len = snprintf(sql, sizeof(sql), "SELECT resource, ns, name, rev, json FROM ah_objects");
	if (resource) {
		vals[n++] = resource;
		len += snprintf(sql + len, sizeof(sql) - len, "%sresource = $%d", sep, n);
		sep = " AND ";
	}
	if (ns) {
		vals[n++] = ns;
		len += snprintf(sql + len, sizeof(sql) - len, "%sns = $%d", sep, n);
		sep = " AND ";
	}
	if (after_name) {
		vals[n++] = after_ns;
		vals[n++] = after_name;
		len += snprintf(sql + len, sizeof(sql) - len, "%s(ns, name) > ($%d, $%d)", sep,
				n - 1, n);
	}
	snprintf(sql + len, sizeof(sql) - len, " ORDER BY resource, ns, name");

	rc = reader_take(p, &c);
	if (rc)
		return rc;
	rc = snap_begin(c, &rev, &compacted);
	if (rc) {
		reader_put(p, c);
		return rc;
	}
	res = visit_cursor(c, sql, n, vals, false, 0, visit, userdata, &count, &last);
	if (res == -EIO) {
		PQclear(PQexec(c, "ROLLBACK"));
		reader_put(p, c);
		return -EIO;
	}
	rc = snap_end(c);
	reader_put(p, c);
	if (res < 0)
		return res;
	if (rc)
		return rc;
	if (ret_rev)
		*ret_rev = rev;
	return 0;
}

static int pg_events(store *s, const char *resource, const char *ns, int64_t after_rev,
		     size_t max, store_visit_fn visit, void *userdata, int64_t *ret_last)
{
	struct pg *p = to_pg(s);
	char sql[512], afters[24];
	const char *vals[3];
	int64_t rev, compacted, last = 0;
	size_t count = 0;
	PGconn *c;
	int n = 0, len, rc, res;

	fmt_i64(afters, sizeof(afters), after_rev);
	vals[n++] = afters;
	len = snprintf(sql, sizeof(sql),
		       "SELECT resource, ns, name, rev, type, json FROM ah_events WHERE rev > $1");
	if (resource) {
		vals[n++] = resource;
		len += snprintf(sql + len, sizeof(sql) - len, " AND resource = $%d", n);
	}
	if (ns) {
		vals[n++] = ns;
		len += snprintf(sql + len, sizeof(sql) - len, " AND ns = $%d", n);
	}
	snprintf(sql + len, sizeof(sql) - len, " ORDER BY rev");

	rc = reader_take(p, &c);
	if (rc)
		return rc;
	rc = snap_begin(c, &rev, &compacted);
	if (rc) {
		reader_put(p, c);
		return rc;
	}
	publish(p, rev, compacted, true);
	if (after_rev < compacted) {
		snap_end(c);
		reader_put(p, c);
		return -ERANGE;
	}
	res = visit_cursor(c, sql, n, vals, true, max, visit, userdata, &count, &last);
	if (res == -EIO) {
		PQclear(PQexec(c, "ROLLBACK"));
		reader_put(p, c);
		return -EIO;
	}
	rc = snap_end(c);
	reader_put(p, c);
	if (res < 0)
		return res;
	if (rc)
		return rc;
	if (ret_last) {
		if (res == 1 || (max && count == max))
			*ret_last = last;
		else
			*ret_last = rev > after_rev ? rev : after_rev;
	}
	return 0;
}

/* ---- the listener ----------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *listener_main(void *arg)
{
	struct pg *p = arg;
	PGconn *c = NULL;
	int64_t last_poll = 0;

	for (;;) {
		struct pollfd pfd[2];
		int64_t rev, compacted, t;
		PGnotify *nt;
		int nfd = 1;

		pthread_mutex_lock(&p->qmu);
		if (p->stopping) {
			pthread_mutex_unlock(&p->qmu);
			break;
		}
		pthread_mutex_unlock(&p->qmu);
		if (!c || PQstatus(c) != CONNECTION_OK) {
			PQfinish(c);
			c = connect_db(p);
			if (c && exec0(c, "LISTEN ah_rev") < 0) {
				PQfinish(c);
				c = NULL;
			}
			last_poll = 0;  /* read the revision once (re)connected */
		}
		t = now_ms();
		if (c && t - last_poll >= POLL_MS) {
			if (read_meta(c, &rev, &compacted) == 0)
				publish(p, rev, compacted, true);
			last_poll = t;
		}
		pfd[0].fd = p->wake_pipe[0];
		pfd[0].events = POLLIN;
		if (c) {
			pfd[1].fd = PQsocket(c);
			pfd[1].events = POLLIN;
			nfd = 2;
		}
		if (poll(pfd, nfd, c ? POLL_MS : 200) < 0)
			continue;
		if (pfd[0].revents)
			continue;       /* woken to look at `stopping` */
		if (!c || !(pfd[1].revents))
			continue;
		if (!PQconsumeInput(c))
			continue;       /* broken: reconnect next round */
		rev = 0;
		while ((nt = PQnotifies(c))) {
			int64_t v = strtoll(nt->extra, NULL, 10);

			if (v > rev)
				rev = v;
			PQfreemem(nt);
		}
		if (rev > 0)
			publish(p, rev, 0, true);
	}
	PQfinish(c);
	return NULL;
}

/* ---- waiting, stats, close -------------------------------------------- */

static int64_t pg_current_rev(store *s)
{
	return atomic_load(&to_pg(s)->rev);
}

static int64_t pg_compacted_rev(store *s)
{
	return atomic_load(&to_pg(s)->compacted);
}

static int64_t pg_wait(store *s, int64_t after_rev, int timeout_ms)
{
	struct pg *p = to_pg(s);

	return store__wait_rev(&p->rev, &p->wmu, &p->wcond, &p->wake_gen, after_rev, timeout_ms);
}

static void pg_wake_all(store *s)
{
	struct pg *p = to_pg(s);

	store__wake_all(&p->wmu, &p->wcond, &p->wake_gen);
}

static uint64_t pg_resource_stamp(store *s, const char *resource)
{
	return atomic_load(&to_pg(s)->stamps[stamp_slot(resource)]);
}

static void pg_stats(store *s, struct store_stats *ret)
{
	struct pg *p = to_pg(s);

	memset(ret, 0, sizeof(*ret));
	ret->commits = atomic_load(&p->commits);
	ret->writes = atomic_load(&p->writes);
	ret->max_batch = atomic_load(&p->max_batch);
	pthread_mutex_lock(&p->qmu);
	ret->queued = p->queued;
	pthread_mutex_unlock(&p->qmu);
}

static void pg_free(struct pg *p)
{
	struct pconn *e;

	pthread_mutex_lock(&p->qmu);
	p->stopping = true;
	pthread_cond_broadcast(&p->qcond);
	pthread_mutex_unlock(&p->qmu);
	if (p->wake_pipe[1] >= 0 && write(p->wake_pipe[1], "x", 1) < 0) {
		/* the listener still wakes within POLL_MS */
	}
	if (p->writer_started)
		pthread_join(p->writer, NULL);
	if (p->listener_started)
		pthread_join(p->listener, NULL);
	PQfinish(p->wconn);
	while ((e = p->idle)) {
		p->idle = e->next;
		PQfinish(e->c);
		free(e);
	}
	if (p->wake_pipe[0] >= 0)
		close(p->wake_pipe[0]);
	if (p->wake_pipe[1] >= 0)
		close(p->wake_pipe[1]);
	pthread_mutex_destroy(&p->qmu);
	pthread_cond_destroy(&p->qcond);
	pthread_cond_destroy(&p->dcond);
	pthread_mutex_destroy(&p->rmu);
	pthread_mutex_destroy(&p->wmu);
	pthread_cond_destroy(&p->wcond);
	free(p->conninfo);
	free(p);
}

static void pg_close(store *s)
{
	pg_free(to_pg(s));
}

/* ---- copying another store in (agenthub migrate) ----------------------- */

struct copy_ctx {
	PGconn *c;
	size_t n;
	int rc;
};

static int copy_visit(const store_obj *o, void *userdata)
{
	struct copy_ctx *cc = userdata;
	char revs[24];
	const char *vals[5] = { o->resource, o->ns, o->name, revs, o->json };
	int lens[5] = { 0, 0, 0, 0, (int)o->len }, fmts[5] = { 0, 0, 0, 0, 1 };
	PGresult *r;

	fmt_i64(revs, sizeof(revs), o->rev);
	r = run(cc->c, "INSERT INTO ah_objects (resource, ns, name, rev, json) "
		"VALUES ($1, $2, $3, $4, $5)", 5, vals, lens, fmts);
	if (!ok(r)) {
		PQclear(r);
		cc->rc = -EIO;
		return -EIO;
	}
	PQclear(r);
	cc->n++;
	return 0;
}

static int pg_copy_from(store *dst, store *src, size_t *ret_count, int64_t *ret_rev)
{
	struct pg *p = to_pg(dst);
	struct copy_ctx cc = { 0 };
	PGresult *r;
	int64_t cur, rev = 0;
	char revs[24];
	const char *vals[1] = { revs };
	int rc;

	rc = reader_take(p, &cc.c);
	if (rc)
		return rc;
	if (exec0(cc.c, "BEGIN") < 0)
		goto fail;
	r = run(cc.c, "SELECT v, (SELECT count(*) FROM ah_objects) FROM ah_meta WHERE k = 'rev' "
		"FOR UPDATE", 0, NULL, NULL, NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		PQclear(r);
		goto fail;
	}
	cur = get_i64(r, 0, 0);
	if (cur != 0 || get_i64(r, 0, 1) != 0) {
		PQclear(r);
		PQclear(PQexec(cc.c, "ROLLBACK"));
		reader_put(p, cc.c);
		return -ENOTEMPTY;
	}
	PQclear(r);
	rc = store_list(src, NULL, NULL, NULL, NULL, copy_visit, &cc, &rev);
	if (rc < 0 || cc.rc < 0) {
		PQclear(PQexec(cc.c, "ROLLBACK"));
		reader_put(p, cc.c);
		return rc < 0 ? rc : cc.rc;
	}
	fmt_i64(revs, sizeof(revs), rev);
	r = run(cc.c, "UPDATE ah_meta SET v = $1 WHERE k IN ('rev', 'compacted')", 1, vals, NULL, NULL);
	rc = ok(r) ? 0 : -EIO;
	PQclear(r);
	if (!rc)
		r = run(cc.c, "SELECT pg_notify('ah_rev', $1)", 1, vals, NULL, NULL), PQclear(r);
	if (rc || exec0(cc.c, "COMMIT") < 0)
		goto fail;
	reader_put(p, cc.c);
	publish(p, rev, rev, false);
	if (ret_count)
		*ret_count = cc.n;
	if (ret_rev)
		*ret_rev = rev;
	return 0;
fail:
	PQclear(PQexec(cc.c, "ROLLBACK"));
	reader_put(p, cc.c);
	return -EIO;
}

/* ---- session locks ----------------------------------------------------- */

/* An advisory lock (LOCK_SESSION, hash of the name) held by a connection of
 * its own.  The server releases it when that session ends; with TCP
 * keepalives set on the server side of the session too, a holder whose
 * host vanished (no RST) is noticed in about 11 s, not hours. */
struct pg_session_lock {
	struct store_session_lock base;
	struct pg *p;
	PGconn *c;
	char key[16];
	bool held;
};

/* One statement with a deadline: libpq's asynchronous calls and poll(), as
 * a blocking PQexec() could wait for a dead server for the kernel's
 * retransmission time.  The last result, or NULL (timeout, error). */
static PGresult *exec_timed(PGconn *c, const char *sql, int n, const char *const *vals,
			    int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	PGresult *last = NULL, *r;

	/* Several statements in one string go only by the simple protocol. */
	if (!(n ? PQsendQueryParams(c, sql, n, NULL, vals, NULL, NULL, 0) : PQsendQuery(c, sql)))
		return NULL;
	for (;;) {
		struct pollfd pfd = { .fd = PQsocket(c), .events = POLLIN };
		int64_t left;

		if (!PQconsumeInput(c))
			goto fail;
		while (!PQisBusy(c)) {
			r = PQgetResult(c);
			if (!r)
				return last;
			PQclear(last);
			last = r;
		}
		left = deadline - now_ms();
		if (left <= 0 || pfd.fd < 0)
			goto fail;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			goto fail;
	}
fail:
	PQclear(last);
	return NULL;
}

static void session_lock_drop(struct pg_session_lock *l)
{
	PQfinish(l->c);
	l->c = NULL;
	l->held = false;
}

static int pg_session_lock_try(store_session_lock *base, int timeout_ms)
{
	struct pg_session_lock *l = (struct pg_session_lock *)base;
	const char *vals[] = { l->key };
	PGresult *r;
	int rc;

	if (!l->c) {
		if (!(l->c = connect_db(l->p)))
			return -ECONNREFUSED;
		r = exec_timed(l->c, "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; "
			       "SET tcp_keepalives_count = 3", 0, NULL, timeout_ms);
		rc = r && ok(r) ? 0 : -EIO;
		PQclear(r);
		if (rc < 0) {
			session_lock_drop(l);
			return rc;
		}
	}
	/* Held: a round trip proves the session (and so the lock) is alive;
	 * pg_try_advisory_lock() again would stack a second hold. */
	r = l->held ? exec_timed(l->c, "SELECT true", 0, NULL, timeout_ms)
		    : exec_timed(l->c, "SELECT pg_try_advisory_lock(" LOCK_SESSION ", $1::int4)", 1, vals,
				 timeout_ms);
	if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		PQclear(r);
		session_lock_drop(l);
		return -EIO;
	}
	l->held = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return l->held ? 1 : 0;
}

static int pg_session_lock_break(store_session_lock *base, int timeout_ms)
{
	struct pg_session_lock *l = (struct pg_session_lock *)base;
	const char *vals[] = { l->key };
	PGresult *r;
	int rc;

	if (!l->c && !(l->c = connect_db(l->p)))
		return -ECONNREFUSED;
	r = exec_timed(l->c, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_locks "
		       "WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() "
		       "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
		       "AND classid = " LOCK_SESSION "::bigint::oid AND objid = $1::int4::bigint::oid "
		       "AND objsubid = 2", 1, vals, timeout_ms);
	if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		PQclear(r);
		session_lock_drop(l);
		return -EIO;
	}
	rc = atoi(PQgetvalue(r, 0, 0)) > 0 ? 1 : 0;
	PQclear(r);
	/* A terminated backend frees its locks as it exits, a moment later:
	 * wait for that (within the deadline), so the caller's next try can
	 * take the lock. */
	for (int64_t deadline = now_ms() + timeout_ms; rc == 1 && now_ms() < deadline;) {
		bool gone;

		r = exec_timed(l->c, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
			       "AND pid <> pg_backend_pid() "
			       "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
			       "AND classid = " LOCK_SESSION "::bigint::oid AND objid = $1::int4::bigint::oid "
			       "AND objsubid = 2", 1, vals, timeout_ms);
		gone = r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && atoi(PQgetvalue(r, 0, 0)) == 0;
		PQclear(r);
		if (gone)
			break;
		usleep(20 * 1000);
	}
	return rc;
}

static void pg_session_lock_free(store_session_lock *base)
{
	struct pg_session_lock *l = (struct pg_session_lock *)base;

	/* Closing the session releases the lock, but only once the server
	 * has seen the connection go: a held lock is given back first, so
	 * another session can take it at once. */
	if (l->c && l->held) {
		const char *vals[] = { l->key };

		PQclear(exec_timed(l->c, "SELECT pg_advisory_unlock(" LOCK_SESSION ", $1::int4)", 1, vals, 1000));
	}
	PQfinish(l->c);
	free(l);
}

static int pg_session_lock_new(store *s, const char *name, store_session_lock **ret)
{
	struct pg_session_lock *l = calloc(1, sizeof(*l));
	uint32_t h = 2166136261u;

	if (!l)
		return -ENOMEM;
	for (const char *q = name; *q; q++)
		h = (h ^ (unsigned char)*q) * 16777619u;
	/* int4 range, as the two-key form takes it. */
	snprintf(l->key, sizeof(l->key), "%d", (int)(h & 0x7fffffff));
	l->base.try_lock = pg_session_lock_try;
	l->base.break_lock = pg_session_lock_break;
	l->base.free = pg_session_lock_free;
	l->p = to_pg(s);
	*ret = &l->base;
	return 0;
}

static const struct store_ops pg_ops = {
	.close = pg_close,
	.current_rev = pg_current_rev,
	.compacted_rev = pg_compacted_rev,
	.get = pg_get,
	.write = pg_write,
	.list = pg_list,
	.events = pg_events,
	.wait = pg_wait,
	.wake_all = pg_wake_all,
	.compact = pg_compact,
	.resource_stamp = pg_resource_stamp,
	.stats = pg_stats,
	.copy_from = pg_copy_from,
	.session_lock_new = pg_session_lock_new,
};

/* ---- schema ----------------------------------------------------------- */

/* Create or check the schema, holding the migration lock so that replicas
 * starting at once do it one at a time. */
static int migrate(PGconn *c)
{
	static const char *const create[] = {
		"CREATE TABLE IF NOT EXISTS ah_meta (k text PRIMARY KEY, v bigint NOT NULL)",
		"CREATE TABLE IF NOT EXISTS ah_objects ("
		" resource text COLLATE \"C\" NOT NULL, ns text COLLATE \"C\" NOT NULL,"
		" name text COLLATE \"C\" NOT NULL, rev bigint NOT NULL, json bytea NOT NULL,"
		" PRIMARY KEY (resource, ns, name))",
		"CREATE TABLE IF NOT EXISTS ah_events ("
		" rev bigint PRIMARY KEY, resource text COLLATE \"C\" NOT NULL,"
		" ns text COLLATE \"C\" NOT NULL, name text COLLATE \"C\" NOT NULL,"
		" type smallint NOT NULL, json bytea NOT NULL)",
		"INSERT INTO ah_meta (k, v) VALUES ('rev', 0), ('compacted', 0) "
		"ON CONFLICT (k) DO NOTHING",
		NULL,
	};
	PGresult *r;
	int64_t version = -1;
	int rc = 0;
	size_t i;

	if (exec0(c, "SET client_min_messages = warning") < 0)
		return -EIO;
	r = PQexec(c, "SELECT pg_advisory_lock(" LOCK_MIGRATE ")");
	if (!ok(r)) {
		PQclear(r);
		return -EIO;
	}
	PQclear(r);
	r = run(c, "SELECT v FROM ah_meta WHERE k = 'schema'", 0, NULL, NULL, NULL);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		version = get_i64(r, 0, 0);
	PQclear(r);
	if (version > SCHEMA_VERSION) {
		snprintf(open_error, sizeof(open_error),
			 "the database holds agenthub schema version %" PRId64
			 ", newer than this build's %d", version, SCHEMA_VERSION);
		rc = -EPROTO;
	} else if (version < SCHEMA_VERSION) {
		/* Version 1 is the first: create it.  Later versions add their
		 * steps here, each from the version before. */
		rc = exec0(c, "BEGIN");
		for (i = 0; !rc && create[i]; i++)
			rc = exec0(c, create[i]);
		if (!rc)
			rc = exec0(c, "INSERT INTO ah_meta (k, v) VALUES ('schema', 1) "
				   "ON CONFLICT (k) DO UPDATE SET v = 1");
		if (!rc)
			rc = exec0(c, "COMMIT");
		if (rc) {
			snprintf(open_error, sizeof(open_error), "creating the schema: %s",
				 PQerrorMessage(c));
			open_error[strcspn(open_error, "\n")] = '\0';
			PQclear(PQexec(c, "ROLLBACK"));
		}
	}
	PQclear(PQexec(c, "SELECT pg_advisory_unlock(" LOCK_MIGRATE ")"));
	return rc;
}

int store__pg_open(const char *url, const struct store_options *opts, store **ret)
{
	struct pg *p = calloc(1, sizeof(*p));
	int64_t rev = 0, compacted = 0;
	int rc;

	open_error[0] = '\0';
	if (!p)
		return -ENOMEM;
	p->base.ops = &pg_ops;
	p->opts = *opts;
	p->wake_pipe[0] = p->wake_pipe[1] = -1;
	pthread_mutex_init(&p->qmu, NULL);
	pthread_cond_init(&p->qcond, NULL);
	pthread_cond_init(&p->dcond, NULL);
	pthread_mutex_init(&p->rmu, NULL);
	pthread_mutex_init(&p->wmu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->wcond, &ca);
		pthread_condattr_destroy(&ca);
	}
	p->conninfo = strdup(url);
	if (!p->conninfo) {
		pg_free(p);
		return -ENOMEM;
	}
	p->wconn = connect_db(p);
	if (!p->wconn) {
		pg_free(p);
		return -ECONNREFUSED;
	}
	rc = migrate(p->wconn);
	if (!rc)
		rc = read_meta(p->wconn, &rev, &compacted);
	if (rc) {
		if (!open_error[0])
			snprintf(open_error, sizeof(open_error), "reading the schema failed");
		pg_free(p);
		return rc;
	}
	atomic_store(&p->rev, rev);
	atomic_store(&p->compacted, compacted);
	if (pipe2(p->wake_pipe, O_CLOEXEC) < 0) {
		pg_free(p);
		return -errno;
	}
	if (pthread_create(&p->writer, NULL, writer_main, p) != 0) {
		pg_free(p);
		return -ENOMEM;
	}
	p->writer_started = true;
	if (pthread_create(&p->listener, NULL, listener_main, p) != 0) {
		pg_free(p);
		return -ENOMEM;
	}
	p->listener_started = true;
	*ret = &p->base;
	return 0;
}
