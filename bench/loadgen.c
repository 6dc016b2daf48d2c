/*
 * loadgen: a small closed-loop HTTP load generator used by bench/run.sh to
 * compare agenthub's Kubernetes REST API with etcd 3.4's HTTP/JSON gateway.
 *
 * --conc clients each issue one request at a time over a keep-alive
 * HTTP/1.1 connection of their own; a shared counter hands out operation
 * indexes until the fixed count (or the duration) is used up.  Three engines
 * run the same clients:
 *
 *   threads  one thread per client, blocking libcurl curl_easy_perform
 *            (default);
 *   multi    every client in one thread: a libcurl multi handle driven by
 *            epoll through curl_multi_socket_action, so the tool costs less
 *            CPU and adds no threads next to the server under test;
 *   raw      every client in one thread: an epoll loop over non-blocking
 *            sockets, HTTP/1.1 written and parsed here and TLS through
 *            OpenSSL directly (the server verified against --cacert and the
 *            URL's host), the cheapest client per operation.
 *
 * An operation is the same small state machine in all three (op_start, then
 * op_next after each response until it says the operation is over), so the
 * requests, checks and store contents do not depend on the engine; the
 * request is described once (w->method, w->url, the header list, w->body)
 * and each engine's transport sends it.  Every operation's latency is
 * recorded, and the run ends with one line:
 *
 *   target=agenthub op=create conc=64 n=20000 ops/s=12345 p50_ms=1.23 p99_ms=4.56 errors=0 conns=64 engine=threads
 *
 * Every response status is checked; a run with errors prints a banner on
 * stderr, marks its line FAILED and exits 1, so a broken server can never
 * pass for a fast one.
 *
 * It is built outside the main Meson build on purpose (see bench/README.md):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror bench/loadgen.c \
 *      -lcurl -lssl -lcrypto -lpthread -lm -o build/loadgen
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define AGENT_GROUP_PATH "/apis/agent-install.openshift.io/v1beta1"
/* The key layout kube-apiserver uses for a custom resource, so etcd sees
 * keys of the same length and shape as it would behind a real apiserver. */
#define ETCD_KEY_ROOT "/registry/agent-install.openshift.io/agents/"
#define URL_MAX 2048
#define BODY_MAX 1024
#define MAX_ERROR_REPORTS 10
/* A list that paginates must still end; no sane server needs more pages
 * than this for the object counts run.sh uses. */
#define MAX_LIST_PAGES 100000

enum target { TARGET_AGENTHUB, TARGET_ETCD };
enum op { OP_CREATE, OP_GET, OP_PATCH, OP_LIST };
enum engine { ENGINE_THREADS, ENGINE_MULTI, ENGINE_RAW };

static const char *const target_names[] = { "agenthub", "etcd" };
static const char *const op_names[] = { "create", "get", "patch", "list" };
static const char *const engine_names[] = { "threads", "multi", "raw" };

struct config {
        enum target target;
        enum op op;
        enum engine engine;
        char url[512];
        char *token;
        const char *cacert;
        const char *ns;
        long conc;
        long n;
        double duration;
        long base;
        long keys;
        long expect_items;
        size_t max_body;
        long req_timeout_ms;
        double max_seconds;
};

/* A response body buffer with a hard maximum; bytes past the maximum make
 * the transfer fail instead of growing without bound. */
struct buf {
        char *data;
        size_t len;
        size_t cap;
        size_t max;
        bool overflow;
};

struct raw_conn;

/* One closed-loop client: a thread of its own (threads engine) or a slot of
 * the event loop (multi and raw engines). */
struct worker {
        pthread_t thread;
        const struct config *cfg;
        CURL *curl;
        struct raw_conn *raw;   /* raw engine: the connection and its parser */
        struct curl_slist *hdr_plain;
        struct curl_slist *hdr_json;
        struct curl_slist *hdr_merge;
        struct buf resp;
        char errbuf[CURL_ERROR_SIZE];
        /* The next request, set by req_set, whatever the engine: curl
         * reads body until the transfer ends, so it lives here rather
         * than on a stack. */
        const char *method;
        struct curl_slist *req_headers;
        bool req_body;
        char url[URL_MAX];
        char body[BODY_MAX * 3];
        /* The operation in progress (op_start, op_next). */
        long op_idx;
        long op_seq;
        int op_step;            /* etcd patch: 0 range, 1 put; list: page */
        long op_items;          /* list: items over the pages so far */
        double op_t0;
        char op_name[64];
        char op_key64[512];
        char list_token[1024];
        /* Results. */
        double *lat_ms;
        size_t nlat;
        size_t caplat;
        long ops;
        long errors;
        long list_calls;
        long list_items;
        uint64_t list_bytes;
        long connects;
};

static atomic_long next_index;
static atomic_bool stop_all;
static atomic_long error_reports;

static void die(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        fputs("loadgen: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        exit(2);
}

static void *xmalloc(size_t n)
{
        void *p = malloc(n);

        if (!p)
                die("out of memory");
        return p;
}

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- pure helpers: base64, JSON scanning ---- */

static const char b64_alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Writes the base64 form of in[0..len) plus a NUL into out, which must hold
 * 4 * ((len + 2) / 3) + 1 bytes. */
static void b64_encode(const unsigned char *in, size_t len, char *out)
{
        size_t i, o = 0;

        for (i = 0; i + 2 < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
                out[o++] = b64_alphabet[v >> 18 & 63];
                out[o++] = b64_alphabet[v >> 12 & 63];
                out[o++] = b64_alphabet[v >> 6 & 63];
                out[o++] = b64_alphabet[v & 63];
        }
        if (len - i == 1) {
                uint32_t v = (uint32_t)in[i] << 16;
                out[o++] = b64_alphabet[v >> 18 & 63];
                out[o++] = b64_alphabet[v >> 12 & 63];
                out[o++] = '=';
                out[o++] = '=';
        } else if (len - i == 2) {
                uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
                out[o++] = b64_alphabet[v >> 18 & 63];
                out[o++] = b64_alphabet[v >> 12 & 63];
                out[o++] = b64_alphabet[v >> 6 & 63];
                out[o++] = '=';
        }
        out[o] = '\0';
}

static int b64_value(char c)
{
        const char *p = c ? strchr(b64_alphabet, c) : NULL;

        return p ? (int)(p - b64_alphabet) : -1;
}

/* Decodes len base64 characters into out (at most out_max bytes, then a NUL).
 * Returns the decoded length, or -1 on bad input or a too small out. */
static long b64_decode(const char *in, size_t len, char *out, size_t out_max)
{
        size_t o = 0;
        uint32_t acc = 0;
        int bits = 0;

        for (size_t i = 0; i < len; i++) {
                int v;

                if (in[i] == '=')
                        break;
                v = b64_value(in[i]);
                if (v < 0)
                        return -1;
                acc = acc << 6 | (uint32_t)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (o + 1 >= out_max)
                                return -1;
                        out[o++] = (char)(acc >> bits & 0xff);
                }
        }
        out[o] = '\0';
        return (long)o;
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Finds the value of the first member named key whose value starts with
 * want ('[' or '"'); returns a pointer to that character or NULL.  Only
 * member names are matched (a quoted string followed by ':'), which is
 * enough for the flat envelopes of a Kubernetes list and an etcd range. */
static const char *json_find_member(const char *doc, const char *key, char want)
{
        char quoted[64];
        size_t qlen;
        const char *p = doc;

        qlen = (size_t)snprintf(quoted, sizeof(quoted), "\"%s\"", key);
        if (qlen >= sizeof(quoted))
                return NULL;
        while ((p = strstr(p, quoted)) != NULL) {
                const char *q = p + qlen;

                while (is_json_space(*q))
                        q++;
                if (*q == ':') {
                        q++;
                        while (is_json_space(*q))
                                q++;
                        if (*q == want)
                                return q;
                }
                p += qlen;
        }
        return NULL;
}

/* Counts the elements of the JSON array at arr (which points at '[').
 * Strings are skipped with their escapes, so braces inside values do not
 * confuse the depth count.  Returns -1 for an unterminated array. */
static long json_array_count(const char *arr)
{
        long count = 0;
        int depth = 0;
        bool in_string = false, expect_value = true;

        for (const char *p = arr; *p; p++) {
                char c = *p;

                if (in_string) {
                        if (c == '\\' && p[1])
                                p++;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                if (is_json_space(c))
                        continue;
                if (c == ']' || c == '}') {
                        if (--depth == 0)
                                return count;
                        continue;
                }
                if (c == ',') {
                        if (depth == 1)
                                expect_value = true;
                        continue;
                }
                if (depth == 1 && expect_value) {
                        count++;
                        expect_value = false;
                }
                if (c == '"')
                        in_string = true;
                else if (c == '[' || c == '{')
                        depth++;
        }
        return -1;
}

/* Copies the JSON string value at str (pointing at its opening quote) into
 * out without unescaping; tokens and base64 never hold escapes.  Returns
 * the length, or -1 if it does not fit or is unterminated. */
static long json_string_copy(const char *str, char *out, size_t out_max)
{
        size_t n = 0;

        for (const char *p = str + 1; *p; p++) {
                if (*p == '"') {
                        out[n] = '\0';
                        return (long)n;
                }
                if (*p == '\\')
                        return -1;
                if (n + 1 >= out_max)
                        return -1;
                out[n++] = *p;
        }
        return -1;
}

/* ---- HTTP plumbing ---- */

static size_t buf_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct buf *b = userdata;
        size_t n = size * nmemb;

        if (b->len + n + 1 > b->max) {
                b->overflow = true;
                return 0;
        }
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 16384;
                char *data;

                while (cap < b->len + n + 1)
                        cap *= 2;
                if (cap > b->max)
                        cap = b->max;
                data = realloc(b->data, cap);
                if (!data)
                        return 0;
                b->data = data;
                b->cap = cap;
        }
        memcpy(b->data + b->len, ptr, n);
        b->len += n;
        b->data[b->len] = '\0';
        return n;
}

static struct curl_slist *headers_new(const struct config *cfg, const char *content_type)
{
        struct curl_slist *h = NULL, *t;
        char line[8192];

        /* An empty Expect: stops curl from waiting for 100-continue. */
        t = curl_slist_append(h, "Expect:");
        if (!t)
                die("out of memory");
        h = t;
        t = curl_slist_append(h, "Accept: application/json");
        if (!t)
                die("out of memory");
        h = t;
        if (content_type) {
                snprintf(line, sizeof(line), "Content-Type: %s", content_type);
                t = curl_slist_append(h, line);
                if (!t)
                        die("out of memory");
                h = t;
        }
        if (cfg->token) {
                if ((size_t)snprintf(line, sizeof(line), "Authorization: Bearer %s", cfg->token) >= sizeof(line))
                        die("token too long");
                t = curl_slist_append(h, line);
                if (!t)
                        die("out of memory");
                h = t;
        }
        return h;
}

static void worker_init(struct worker *w, const struct config *cfg)
{
        memset(w, 0, sizeof(*w));
        w->cfg = cfg;
        w->resp.max = cfg->max_body;
        w->curl = curl_easy_init();
        if (!w->curl)
                die("curl_easy_init failed");
        w->hdr_plain = headers_new(cfg, NULL);
        w->hdr_json = headers_new(cfg, "application/json");
        w->hdr_merge = headers_new(cfg, "application/merge-patch+json");
        curl_easy_setopt(w->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, buf_write);
        curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, &w->resp);
        curl_easy_setopt(w->curl, CURLOPT_ERRORBUFFER, w->errbuf);
        curl_easy_setopt(w->curl, CURLOPT_TIMEOUT_MS, cfg->req_timeout_ms);
        curl_easy_setopt(w->curl, CURLOPT_TCP_NODELAY, 1L);
        /* Both targets are measured over HTTP/1.1 with one connection per
         * client, so concurrency means the same thing on each side. */
        curl_easy_setopt(w->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        if (cfg->cacert)
                curl_easy_setopt(w->curl, CURLOPT_CAINFO, cfg->cacert);
        /* The multi engine finds the client of a finished transfer here. */
        curl_easy_setopt(w->curl, CURLOPT_PRIVATE, w);
}

static void worker_release(struct worker *w)
{
        curl_easy_cleanup(w->curl);
        curl_slist_free_all(w->hdr_plain);
        curl_slist_free_all(w->hdr_json);
        curl_slist_free_all(w->hdr_merge);
        free(w->resp.data);
        free(w->lat_ms);
}

/* New connections the last transfer opened: a keep-alive run opens one per
 * client, so a larger total means the server closes connections and every
 * reconnect (a TLS handshake for agenthub) is inside the latencies. */
static long connects_made(CURL *curl)
{
        long n = 0;

        curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &n);
        return n;
}

/* Sets the next request of w: w->url, and w->body when body is true (a GET
 * otherwise). */
static void req_set(struct worker *w, const char *method, struct curl_slist *headers, bool body)
{
        w->method = method;
        w->req_headers = headers;
        w->req_body = body;
}

/* Empties w's response buffer and error message before a request. */
static void resp_reset(struct worker *w)
{
        w->resp.len = 0;
        w->resp.overflow = false;
        if (w->resp.data)
                w->resp.data[0] = '\0';
        w->errbuf[0] = '\0';
}

/* Keeps resp.data a valid string even for empty bodies. */
static void resp_terminate(struct worker *w)
{
        if (!w->resp.data) {
                w->resp.data = xmalloc(1);
                w->resp.data[0] = '\0';
                w->resp.cap = 1;
        }
}

/* Hands the request set by req_set to w's easy handle and empties the
 * response buffer; the transfer then runs in either engine. */
static void http_prepare(struct worker *w)
{
        resp_reset(w);
        curl_easy_setopt(w->curl, CURLOPT_URL, w->url);
        curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, w->req_headers);
        if (w->req_body) {
                curl_easy_setopt(w->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(w->body));
                curl_easy_setopt(w->curl, CURLOPT_POSTFIELDS, w->body);
                curl_easy_setopt(w->curl, CURLOPT_CUSTOMREQUEST,
                                 strcmp(w->method, "POST") == 0 ? NULL : w->method);
        } else {
                curl_easy_setopt(w->curl, CURLOPT_HTTPGET, 1L);
                curl_easy_setopt(w->curl, CURLOPT_CUSTOMREQUEST, NULL);
        }
}

/* Takes the result of a finished transfer of w: returns its HTTP status, or
 * -1 when no response arrived (the reason is then in w->errbuf). */
static long http_finish(struct worker *w, CURLcode rc)
{
        long status = 0;

        w->connects += connects_made(w->curl);
        if (rc != CURLE_OK) {
                if (w->resp.overflow)
                        snprintf(w->errbuf, sizeof(w->errbuf),
                                 "response larger than --max-body-mb");
                else if (!w->errbuf[0])
                        snprintf(w->errbuf, sizeof(w->errbuf), "%s", curl_easy_strerror(rc));
                return -1;
        }
        curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &status);
        resp_terminate(w);
        return status;
}

/* Performs w's request on the calling thread; the status as http_finish. */
static long http_perform(struct worker *w)
{
        http_prepare(w);
        return http_finish(w, curl_easy_perform(w->curl));
}

static void report_error(struct worker *w, const char *what, const char *name, long status)
{
        if (atomic_fetch_add(&error_reports, 1) >= MAX_ERROR_REPORTS)
                return;
        if (status < 0)
                fprintf(stderr, "loadgen: error: %s %s: %s\n", what, name, w->errbuf);
        else
                fprintf(stderr, "loadgen: error: %s %s: HTTP %ld: %.300s\n", what, name, status,
                        w->resp.data ? w->resp.data : "");
}

/* Returns true when status matches want; otherwise reports and counts. */
static bool expect_status(struct worker *w, const char *what, const char *name, long status, long want)
{
        if (status == want)
                return true;
        report_error(w, what, name, status);
        w->errors++;
        return false;
}

/* Counts an error found in a response with a good status; why goes to the
 * report in place of curl's message. */
static void fail_op(struct worker *w, const char *what, const char *name, const char *why)
{
        snprintf(w->errbuf, sizeof(w->errbuf), "%s", why);
        report_error(w, what, name, -1);
        w->errors++;
}

static void agent_body(char *out, size_t out_max, const char *name, const char *hostname)
{
        if (hostname)
                snprintf(out, out_max,
                         "{\"apiVersion\":\"agent-install.openshift.io/v1beta1\",\"kind\":\"Agent\","
                         "\"metadata\":{\"name\":\"%s\"},"
                         "\"spec\":{\"approved\":false,\"role\":\"\",\"hostname\":\"%s\"}}",
                         name, hostname);
        else
                snprintf(out, out_max,
                         "{\"apiVersion\":\"agent-install.openshift.io/v1beta1\",\"kind\":\"Agent\","
                         "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"approved\":false,\"role\":\"\"}}",
                         name);
}

/* A list op's total against --expect-items, once its last page is in. */
static void list_done(struct worker *w)
{
        const struct config *cfg = w->cfg;
        char why[128];

        w->list_items += w->op_items;
        if (cfg->expect_items >= 0 && w->op_items != cfg->expect_items) {
                snprintf(why, sizeof(why), "listed %ld items, expected %ld", w->op_items, cfg->expect_items);
                fail_op(w, "list", cfg->ns, why);
        }
}

/* ---- agenthub (Kubernetes REST) operations ---- */

static void kube_list_request(struct worker *w)
{
        const struct config *cfg = w->cfg;

        if (w->list_token[0]) {
                char *esc = curl_easy_escape(w->curl, w->list_token, 0);

                if (!esc)
                        die("out of memory");
                snprintf(w->url, sizeof(w->url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents?continue=%s",
                         cfg->url, cfg->ns, esc);
                curl_free(esc);
        } else {
                snprintf(w->url, sizeof(w->url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents",
                         cfg->url, cfg->ns);
        }
        req_set(w, "GET", w->hdr_plain, false);
}

static void kube_start(struct worker *w)
{
        const struct config *cfg = w->cfg;

        switch (cfg->op) {
        case OP_CREATE:
                snprintf(w->url, sizeof(w->url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents", cfg->url, cfg->ns);
                agent_body(w->body, sizeof(w->body), w->op_name, NULL);
                req_set(w, "POST", w->hdr_json, true);
                break;
        case OP_GET:
                snprintf(w->url, sizeof(w->url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents/%s",
                         cfg->url, cfg->ns, w->op_name);
                req_set(w, "GET", w->hdr_plain, false);
                break;
        case OP_PATCH:
                snprintf(w->url, sizeof(w->url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents/%s",
                         cfg->url, cfg->ns, w->op_name);
                snprintf(w->body, sizeof(w->body), "{\"spec\":{\"hostname\":\"h%ld-%ld\"}}", w->op_idx, w->op_seq);
                req_set(w, "PATCH", w->hdr_merge, true);
                break;
        case OP_LIST:
                /* One list op is the whole collection: a server that pages
                 * on its own (continue token) is followed to the end. */
                kube_list_request(w);
                break;
        }
}

static bool kube_next(struct worker *w, long status)
{
        const struct config *cfg = w->cfg;
        const char *p;
        long n;

        switch (cfg->op) {
        case OP_CREATE:
                expect_status(w, "create", w->op_name, status, 201);
                return false;
        case OP_GET:
                expect_status(w, "get", w->op_name, status, 200);
                return false;
        case OP_PATCH:
                expect_status(w, "patch", w->op_name, status, 200);
                return false;
        case OP_LIST:
                w->list_calls++;
                if (!expect_status(w, "list", cfg->ns, status, 200))
                        return false;
                w->list_bytes += w->resp.len;
                p = json_find_member(w->resp.data, "items", '[');
                n = p ? json_array_count(p) : -1;
                if (n < 0) {
                        fail_op(w, "list", cfg->ns, "no items array in response");
                        return false;
                }
                w->op_items += n;
                p = json_find_member(w->resp.data, "continue", '"');
                if (p && json_string_copy(p, w->list_token, sizeof(w->list_token)) > 0 &&
                    ++w->op_step < MAX_LIST_PAGES) {
                        kube_list_request(w);
                        return true;
                }
                list_done(w);
                return false;
        }
        return false;
}

/* ---- etcd v3 JSON gateway operations ---- */

static void etcd_key_b64(const struct config *cfg, const char *name, char *out)
{
        char key[256];
        size_t len;

        len = (size_t)snprintf(key, sizeof(key), ETCD_KEY_ROOT "%s/%s", cfg->ns, name);
        b64_encode((const unsigned char *)key, len, out);
}

/* Sets a put of doc under the op's key as w's next request. */
static void etcd_put_request(struct worker *w, const char *doc)
{
        char val64[BODY_MAX * 2];

        b64_encode((const unsigned char *)doc, strlen(doc), val64);
        snprintf(w->url, sizeof(w->url), "%s/v3/kv/put", w->cfg->url);
        snprintf(w->body, sizeof(w->body), "{\"key\":\"%s\",\"value\":\"%s\"}", w->op_key64, val64);
        req_set(w, "POST", w->hdr_json, true);
}

/* Sets a range read of the op's key as w's next request. */
static void etcd_range_request(struct worker *w)
{
        snprintf(w->url, sizeof(w->url), "%s/v3/kv/range", w->cfg->url);
        snprintf(w->body, sizeof(w->body), "{\"key\":\"%s\"}", w->op_key64);
        req_set(w, "POST", w->hdr_json, true);
}

/* Checks the answer to etcd_range_request; on success copies the key's
 * decoded value into doc. */
static bool etcd_range_check(struct worker *w, long status, char *doc, size_t doc_max)
{
        char val64[BODY_MAX * 2];
        const char *kvs, *val;

        if (!expect_status(w, "range", w->op_name, status, 200))
                return false;
        /* The gateway answers 200 with no "kvs" for a missing key. */
        kvs = json_find_member(w->resp.data, "kvs", '[');
        val = kvs ? json_find_member(kvs, "value", '"') : NULL;
        if (!val || json_string_copy(val, val64, sizeof(val64)) < 0 ||
            b64_decode(val64, strlen(val64), doc, doc_max) < 0) {
                fail_op(w, "range", w->op_name, "key missing or value unreadable");
                return false;
        }
        return true;
}

static void etcd_start(struct worker *w)
{
        const struct config *cfg = w->cfg;
        char doc[BODY_MAX], prefix[256], end[256], p64[512], e64[512];
        size_t plen;

        etcd_key_b64(cfg, w->op_name, w->op_key64);
        switch (cfg->op) {
        case OP_CREATE:
                /* The value is the very Agent body agenthub receives, so both
                 * stores are handed the same number of bytes per object. */
                agent_body(doc, sizeof(doc), w->op_name, NULL);
                etcd_put_request(w, doc);
                break;
        case OP_GET:
        case OP_PATCH:
                /* A patch is a read-modify-write in two calls, as an
                 * apiserver would do over etcd: this range, then a put. */
                etcd_range_request(w);
                break;
        case OP_LIST:
                plen = (size_t)snprintf(prefix, sizeof(prefix), ETCD_KEY_ROOT "%s/", cfg->ns);
                memcpy(end, prefix, plen + 1);
                /* range_end = the prefix with its last byte incremented, which
                 * is how etcd spells "every key with this prefix". */
                end[plen - 1]++;
                b64_encode((const unsigned char *)prefix, plen, p64);
                b64_encode((const unsigned char *)end, plen, e64);
                snprintf(w->url, sizeof(w->url), "%s/v3/kv/range", cfg->url);
                snprintf(w->body, sizeof(w->body), "{\"key\":\"%s\",\"range_end\":\"%s\"}", p64, e64);
                req_set(w, "POST", w->hdr_json, true);
                break;
        }
}

static bool etcd_next(struct worker *w, long status)
{
        const struct config *cfg = w->cfg;
        char doc[BODY_MAX], needle[80], hostname[64];
        const char *kvs;
        long items;

        switch (cfg->op) {
        case OP_CREATE:
                expect_status(w, "put", w->op_name, status, 200);
                return false;
        case OP_GET:
                etcd_range_check(w, status, doc, sizeof(doc));
                return false;
        case OP_PATCH:
                if (w->op_step == 1) {
                        expect_status(w, "put", w->op_name, status, 200);
                        return false;
                }
                /* The read must return this object (checked) before the
                 * modified document is written back; building the new
                 * document is negligible next to the two round trips. */
                if (!etcd_range_check(w, status, doc, sizeof(doc)))
                        return false;
                snprintf(needle, sizeof(needle), "\"name\":\"%s\"", w->op_name);
                if (!strstr(doc, needle)) {
                        fail_op(w, "range", w->op_name, "range returned another object");
                        return false;
                }
                snprintf(hostname, sizeof(hostname), "h%ld-%ld", w->op_idx, w->op_seq);
                agent_body(doc, sizeof(doc), w->op_name, hostname);
                etcd_put_request(w, doc);
                w->op_step = 1;
                return true;
        case OP_LIST:
                w->list_calls++;
                if (!expect_status(w, "list", cfg->ns, status, 200))
                        return false;
                w->list_bytes += w->resp.len;
                kvs = json_find_member(w->resp.data, "kvs", '[');
                items = kvs ? json_array_count(kvs) : 0;
                if (items < 0) {
                        fail_op(w, "list", cfg->ns, "unterminated kvs array");
                        return false;
                }
                w->op_items = items;
                list_done(w);
                return false;
        }
        return false;
}

/* ---- operations, whatever the engine ---- */

/* Begins operation seq on object a-<idx>: sets its first request. */
static void op_start(struct worker *w, long idx, long seq)
{
        w->op_idx = idx;
        w->op_seq = seq;
        w->op_step = 0;
        w->op_items = 0;
        w->list_token[0] = '\0';
        snprintf(w->op_name, sizeof(w->op_name), "a-%ld", idx);
        if (w->cfg->target == TARGET_AGENTHUB)
                kube_start(w);
        else
                etcd_start(w);
}

/* Checks the answer (status as http_finish) to the op's current request.
 * Returns true when the op goes on with the next request it has set, false
 * when it is over (errors are counted and reported by then). */
static bool op_next(struct worker *w, long status)
{
        return w->cfg->target == TARGET_AGENTHUB ? kube_next(w, status) : etcd_next(w, status);
}

static void record_latency(struct worker *w, double ms)
{
        if (w->nlat == w->caplat) {
                size_t cap = w->caplat ? w->caplat * 2 : 4096;
                double *p = realloc(w->lat_ms, cap * sizeof(*p));

                if (!p)
                        die("out of memory");
                w->lat_ms = p;
                w->caplat = cap;
        }
        w->lat_ms[w->nlat++] = ms;
}

/* How long a run may go on: --duration, but never past --max-seconds. */
static double run_limit(const struct config *cfg)
{
        return cfg->duration > 0 && cfg->duration < cfg->max_seconds ? cfg->duration : cfg->max_seconds;
}

/* Claims the next operation for a client whose run began at start: sets
 * *ret_seq and *ret_idx and returns true, or returns false when the count
 * is used up or the time limit has passed (which stops every client). */
static bool op_claim(const struct config *cfg, double start, long *ret_seq, long *ret_idx)
{
        long seq;

        if (atomic_load(&stop_all))
                return false;
        seq = atomic_fetch_add(&next_index, 1);
        if (seq >= cfg->n)
                return false;
        if (now_s() - start >= run_limit(cfg)) {
                atomic_store(&stop_all, true);
                return false;
        }
        *ret_seq = seq;
        *ret_idx = cfg->base + (cfg->op == OP_CREATE ? seq : seq % cfg->keys);
        return true;
}

/* One untimed request per client so the TCP (and TLS) handshake is not
 * charged to its first measured operation: warm_up_start sets it,
 * warm_up_done takes its status. */
static void warm_up_start(struct worker *w)
{
        const struct config *cfg = w->cfg;

        if (cfg->target == TARGET_AGENTHUB)
                snprintf(w->url, sizeof(w->url), "%s/api/v1/namespaces/%s", cfg->url, cfg->ns);
        else
                snprintf(w->url, sizeof(w->url), "%s/version", cfg->url);
        req_set(w, "GET", w->hdr_plain, false);
}

static void warm_up_done(struct worker *w, long status)
{
        if (status < 0 && atomic_fetch_add(&error_reports, 1) < MAX_ERROR_REPORTS)
                fprintf(stderr, "loadgen: warm-up: %s: %s\n", w->url, w->errbuf);
}

/* ---- engine "threads": one blocking thread per client ---- */

static pthread_barrier_t start_barrier;

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        const struct config *cfg = w->cfg;
        long seq, idx, status;
        double start;

        warm_up_start(w);
        warm_up_done(w, http_perform(w));
        pthread_barrier_wait(&start_barrier);
        start = now_s();
        while (op_claim(cfg, start, &seq, &idx)) {
                double t0 = now_s();

                op_start(w, idx, seq);
                do
                        status = http_perform(w);
                while (op_next(w, status));
                record_latency(w, (now_s() - t0) * 1e3);
                w->ops++;
        }
        return NULL;
}

/* Runs the clients ws[0..conc) on threads; returns the wall time of the
 * measured part (after every client's warm-up). */
static double run_threads(const struct config *cfg, struct worker *ws)
{
        double t0;
        int rc;

        rc = pthread_barrier_init(&start_barrier, NULL, (unsigned)cfg->conc + 1);
        if (rc)
                die("pthread_barrier_init: %s", strerror(rc));
        for (long i = 0; i < cfg->conc; i++) {
                rc = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
                if (rc)
                        die("pthread_create: %s", strerror(rc));
        }
        pthread_barrier_wait(&start_barrier);
        t0 = now_s();
        for (long i = 0; i < cfg->conc; i++)
                pthread_join(ws[i].thread, NULL);
        pthread_barrier_destroy(&start_barrier);
        return now_s() - t0;
}

/* ---- engine "multi": every client in one thread, libcurl multi + epoll ---- */

struct event_loop {
        CURLM *multi;
        int epfd;
        double timer_at;        /* when curl wants its timeout action; < 0: never */
        long active;            /* clients with a transfer in the multi handle */
};

/* CURLMOPT_SOCKETFUNCTION: mirrors the sockets curl wants watched in epoll. */
static int loop_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
        struct event_loop *lp = userp;
        struct epoll_event ev = { 0 };

        (void)easy;
        (void)socketp;
        if (what == CURL_POLL_REMOVE) {
                /* curl may have closed s already, which removed it from
                 * the epoll set by itself; that failure is harmless. */
                epoll_ctl(lp->epfd, EPOLL_CTL_DEL, s, NULL);
                return 0;
        }
        ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
        ev.data.fd = s;
        if (epoll_ctl(lp->epfd, EPOLL_CTL_MOD, s, &ev) == 0)
                return 0;
        if (errno == ENOENT && epoll_ctl(lp->epfd, EPOLL_CTL_ADD, s, &ev) == 0)
                return 0;
        die("epoll_ctl on socket %d: %s", (int)s, strerror(errno));
        return -1;
}

/* CURLMOPT_TIMERFUNCTION: remembers when curl wants to run its timers. */
static int loop_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
        struct event_loop *lp = userp;

        (void)multi;
        lp->timer_at = timeout_ms < 0 ? -1 : now_s() + (double)timeout_ms / 1e3;
        return 0;
}

static void loop_action(struct event_loop *lp, curl_socket_t s, int flags)
{
        int running;
        CURLMcode mc = curl_multi_socket_action(lp->multi, s, flags, &running);

        if (mc != CURLM_OK)
                die("curl_multi_socket_action: %s", curl_multi_strerror(mc));
}

/* Starts w's prepared request: the transfer runs in the multi handle. */
static void loop_add(struct event_loop *lp, struct worker *w)
{
        CURLMcode mc;

        http_prepare(w);
        mc = curl_multi_add_handle(lp->multi, w->curl);
        if (mc != CURLM_OK)
                die("curl_multi_add_handle: %s", curl_multi_strerror(mc));
        lp->active++;
}

/* Waits for socket events or curl's timer and lets curl act on them. */
static void loop_wait(struct event_loop *lp)
{
        struct epoll_event evs[256];
        int timeout_ms = 1000, n;

        if (lp->timer_at >= 0) {
                double left = (lp->timer_at - now_s()) * 1e3;

                timeout_ms = left <= 0 ? 0 : left >= 1000 ? 1000 : (int)ceil(left);
        }
        n = epoll_wait(lp->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), timeout_ms);
        if (n < 0) {
                if (errno == EINTR)
                        return;
                die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++) {
                int flags = 0;

                if (evs[i].events & (EPOLLIN | EPOLLHUP))
                        flags |= CURL_CSELECT_IN;
                if (evs[i].events & EPOLLOUT)
                        flags |= CURL_CSELECT_OUT;
                if (evs[i].events & EPOLLERR)
                        flags |= CURL_CSELECT_ERR;
                loop_action(lp, evs[i].data.fd, flags);
        }
        if (lp->timer_at >= 0 && now_s() >= lp->timer_at) {
                lp->timer_at = -1;
                loop_action(lp, CURL_SOCKET_TIMEOUT, 0);
        }
}

/* Returns the next client whose transfer finished (removed from the multi
 * handle, its status as http_finish in *ret_status), or NULL for none. */
static struct worker *loop_done(struct event_loop *lp, long *ret_status)
{
        CURLMsg *msg;
        int left;

        while ((msg = curl_multi_info_read(lp->multi, &left)) != NULL) {
                struct worker *w = NULL;
                CURLcode rc = msg->data.result;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&w);
                curl_multi_remove_handle(lp->multi, msg->easy_handle);
                lp->active--;
                *ret_status = http_finish(w, rc);
                return w;
        }
        return NULL;
}

/* Gives client w its next operation, if the run is not over; an op's
 * latency starts when its first request enters the multi handle. */
static void loop_next_op(struct event_loop *lp, struct worker *w, double start)
{
        long seq, idx;

        if (!op_claim(w->cfg, start, &seq, &idx))
                return;
        op_start(w, idx, seq);
        w->op_t0 = now_s();
        loop_add(lp, w);
}

static void loop_setopt(CURLM *multi, CURLMoption opt, long v)
{
        CURLMcode mc = curl_multi_setopt(multi, opt, v);

        if (mc != CURLM_OK)
                die("curl_multi_setopt %d: %s", (int)opt, curl_multi_strerror(mc));
}

/* Runs the clients ws[0..conc) as transfers of one multi handle on this
 * thread; returns the wall time of the measured part, as run_threads. */
static double run_multi(const struct config *cfg, struct worker *ws)
{
        struct event_loop lp = { .timer_at = -1 };
        struct worker *w;
        long status;
        double start, elapsed;

        lp.multi = curl_multi_init();
        if (!lp.multi)
                die("curl_multi_init failed");
        lp.epfd = epoll_create1(EPOLL_CLOEXEC);
        if (lp.epfd < 0)
                die("epoll_create1: %s", strerror(errno));
        curl_multi_setopt(lp.multi, CURLMOPT_SOCKETFUNCTION, loop_socket_cb);
        curl_multi_setopt(lp.multi, CURLMOPT_SOCKETDATA, &lp);
        curl_multi_setopt(lp.multi, CURLMOPT_TIMERFUNCTION, loop_timer_cb);
        curl_multi_setopt(lp.multi, CURLMOPT_TIMERDATA, &lp);
        /* One request at a time per HTTP/1.1 connection and exactly --conc
         * connections, as the threads engine has: the multi handle pools
         * them, and a client whose transfer ends hands its connection back
         * before its next request takes an idle one, so after the warm-up
         * no connection is opened unless the server closes one (conns). */
        loop_setopt(lp.multi, CURLMOPT_PIPELINING, CURLPIPE_NOTHING);
        loop_setopt(lp.multi, CURLMOPT_MAX_HOST_CONNECTIONS, cfg->conc);
        loop_setopt(lp.multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, cfg->conc);
        loop_setopt(lp.multi, CURLMOPT_MAXCONNECTS, cfg->conc);

        for (long i = 0; i < cfg->conc; i++) {
                warm_up_start(&ws[i]);
                loop_add(&lp, &ws[i]);
        }
        while (lp.active > 0) {
                loop_wait(&lp);
                while ((w = loop_done(&lp, &status)) != NULL)
                        warm_up_done(w, status);
        }

        start = now_s();
        for (long i = 0; i < cfg->conc; i++)
                loop_next_op(&lp, &ws[i], start);
        while (lp.active > 0) {
                loop_wait(&lp);
                while ((w = loop_done(&lp, &status)) != NULL) {
                        if (op_next(w, status)) {
                                loop_add(&lp, w);
                                continue;
                        }
                        record_latency(w, (now_s() - w->op_t0) * 1e3);
                        w->ops++;
                        loop_next_op(&lp, w, start);
                }
        }
        elapsed = now_s() - start;

        curl_multi_cleanup(lp.multi);
        close(lp.epfd);
        return elapsed;
}

/* ---- engine "raw": every client in one thread, HTTP/1.1 and TLS by hand ---- */

/* The request (line, headers, body) is built in one buffer: the token is
 * under 4096 bytes, the URL under URL_MAX and the body under BODY_MAX * 3. */
#define RAW_OUT_MAX 16384
/* Reads land here; the status line and headers (and a chunk-size line)
 * must fit, body bytes go on to w->resp at once. */
#define RAW_IN_MAX 32768
/* How often the loop looks for requests past their --timeout. */
#define RAW_TIMEOUT_CHECK_S 0.1

enum raw_state {
        RAW_IDLE,               /* no request; connected or not (fd) */
        RAW_CONNECTING,         /* non-blocking connect in progress */
        RAW_HANDSHAKE,          /* TLS handshake */
        RAW_SENDING,
        RAW_RECEIVING,
};

enum raw_body {
        RB_HEADERS,             /* status line and header block */
        RB_LENGTH,              /* Content-Length bytes */
        RB_CHUNK_SIZE,          /* chunked: a size line */
        RB_CHUNK_DATA,
        RB_CHUNK_CRLF,          /* the CRLF after a chunk's data */
        RB_TRAILER,             /* after the last chunk: up to an empty line */
        RB_UNTIL_CLOSE,         /* no length: the body ends with the connection */
};

/* Outcome of one read or write on a connection. */
enum raw_io { IO_OK, IO_WAIT, IO_EOF, IO_ERR };

struct raw_conn {
        int fd;                 /* -1: not connected */
        SSL *ssl;
        enum raw_state state;
        bool busy;              /* a request is in progress */
        bool reused;            /* the connection already carried a response */
        bool retried;           /* the request was resent on a new connection */
        bool got_bytes;         /* some bytes of the response arrived */
        bool close_after;       /* Connection: close, HTTP/1.0 or no length */
        double deadline;
        enum raw_body body;
        long status;
        uint64_t remaining;     /* RB_LENGTH, RB_CHUNK_DATA: bytes still due */
        size_t out_len, out_off;
        size_t in_start, in_end;
        char out[RAW_OUT_MAX];
        char in[RAW_IN_MAX];
};

enum raw_phase { RAW_PHASE_SINGLE, RAW_PHASE_WARM_UP, RAW_PHASE_RUN };

struct raw_loop {
        const struct config *cfg;
        int epfd;
        SSL_CTX *ctx;           /* NULL for http:// */
        struct sockaddr_storage addr;
        socklen_t addrlen;
        char host[256];         /* the URL's host, brackets removed */
        char authority[300];    /* the Host header: host[:port] as in the URL */
        size_t path_off;        /* where the path starts in a request URL */
        bool host_is_ip;
        enum raw_phase phase;
        double start;           /* RAW_PHASE_RUN: when the measured part began */
        long active;            /* clients with a request in progress */
        long single_status;     /* RAW_PHASE_SINGLE: the one answer */
};

/* Sets the reason of a failed request in w->errbuf. */
static void raw_why(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void raw_why(struct worker *w, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(w->errbuf, sizeof(w->errbuf), fmt, ap);
        va_end(ap);
}

/* The first queued OpenSSL error as text, or fallback when there is none;
 * empties the queue. */
static const char *raw_ssl_error(char *out, size_t out_max, const char *fallback)
{
        unsigned long e = ERR_get_error();

        if (e)
                ERR_error_string_n(e, out, out_max);
        else
                snprintf(out, out_max, "%s", fallback);
        ERR_clear_error();
        return out;
}

/* Splits cfg->url (http:// or https://, host or [v6], optional port and
 * path prefix) and resolves the host once for every connection. */
static void raw_parse_url(struct raw_loop *lp, const struct config *cfg)
{
        const char *u = cfg->url, *auth, *end, *host, *host_end, *port = NULL;
        char portbuf[16];
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
        unsigned char ipbuf[sizeof(struct in6_addr)];
        bool tls;
        size_t hlen, alen;
        int rc;

        if (strncasecmp(u, "https://", 8) == 0)
                tls = true;
        else if (strncasecmp(u, "http://", 7) == 0)
                tls = false;
        else
                die("--url %s: --engine raw wants http:// or https://", u);
        auth = u + (tls ? 8 : 7);
        end = auth + strcspn(auth, "/?#");
        if (memchr(auth, '@', (size_t)(end - auth)))
                die("--url: --engine raw does not take user info in the URL");
        if (*auth == '[') {
                host = auth + 1;
                host_end = memchr(host, ']', (size_t)(end - host));
                if (!host_end)
                        die("--url %s: unterminated [IPv6 address]", u);
                if (host_end + 1 < end) {
                        if (host_end[1] != ':')
                                die("--url %s: junk after ]", u);
                        port = host_end + 2;
                }
        } else {
                host = auth;
                host_end = memchr(auth, ':', (size_t)(end - auth));
                if (host_end)
                        port = host_end + 1;
                else
                        host_end = end;
        }
        hlen = (size_t)(host_end - host);
        alen = (size_t)(end - auth);
        if (hlen == 0 || hlen >= sizeof(lp->host) || alen >= sizeof(lp->authority))
                die("--url %s: bad or too long host", u);
        memcpy(lp->host, host, hlen);
        lp->host[hlen] = '\0';
        memcpy(lp->authority, auth, alen);
        lp->authority[alen] = '\0';
        if (port && (end - port == 0 || end - port >= (long)sizeof(portbuf) ||
                     strspn(port, "0123456789") < (size_t)(end - port)))
                die("--url %s: bad port", u);
        if (port) {
                memcpy(portbuf, port, (size_t)(end - port));
                portbuf[end - port] = '\0';
        } else {
                strcpy(portbuf, tls ? "443" : "80");
        }
        lp->path_off = (size_t)(end - u);
        lp->host_is_ip = inet_pton(AF_INET, lp->host, ipbuf) == 1 || inet_pton(AF_INET6, lp->host, ipbuf) == 1;
        rc = getaddrinfo(lp->host, portbuf, &hints, &ai);
        if (rc)
                die("--url %s: %s: %s", u, lp->host, gai_strerror(rc));
        memcpy(&lp->addr, ai->ai_addr, ai->ai_addrlen);
        lp->addrlen = ai->ai_addrlen;
        freeaddrinfo(ai);
        if (!tls)
                return;

        lp->ctx = SSL_CTX_new(TLS_client_method());
        if (!lp->ctx)
                die("SSL_CTX_new failed");
        SSL_CTX_set_min_proto_version(lp->ctx, TLS1_2_VERSION);
        SSL_CTX_set_verify(lp->ctx, SSL_VERIFY_PEER, NULL);
        if (cfg->cacert) {
                if (SSL_CTX_load_verify_locations(lp->ctx, cfg->cacert, NULL) != 1) {
                        char why[256];

                        die("--cacert %s: %s", cfg->cacert, raw_ssl_error(why, sizeof(why), "unreadable"));
                }
        } else if (SSL_CTX_set_default_verify_paths(lp->ctx) != 1) {
                die("cannot load the system CA certificates");
        }
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
        /* A peer that closes without close_notify reads as an EOF, which
         * the HTTP layer judges (a body that ends with the connection). */
        SSL_CTX_set_options(lp->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
        /* As libcurl offers for HTTP/1.1. */
        SSL_CTX_set_alpn_protos(lp->ctx, (const unsigned char *)"\x08http/1.1", 9);
}

static void raw_loop_init(struct raw_loop *lp, const struct config *cfg)
{
        memset(lp, 0, sizeof(*lp));
        lp->cfg = cfg;
        raw_parse_url(lp, cfg);
        lp->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (lp->epfd < 0)
                die("epoll_create1: %s", strerror(errno));
        /* SSL_write on a socket the server reset must not kill the tool. */
        signal(SIGPIPE, SIG_IGN);
}

static void raw_loop_release(struct raw_loop *lp)
{
        close(lp->epfd);
        SSL_CTX_free(lp->ctx);
}

static struct raw_conn *raw_conn_new(void)
{
        struct raw_conn *c = xmalloc(sizeof(*c));

        c->fd = -1;
        c->ssl = NULL;
        c->state = RAW_IDLE;
        c->busy = false;
        c->reused = false;
        return c;
}

/* Closes c's connection; clean says the TLS session ended between
 * requests, so a close_notify is worth sending (best effort). */
static void raw_close(struct raw_conn *c, bool clean)
{
        if (c->ssl) {
                if (clean)
                        SSL_shutdown(c->ssl);
                SSL_free(c->ssl);
                c->ssl = NULL;
                ERR_clear_error();
        }
        if (c->fd >= 0)
                close(c->fd);   /* which also takes it out of the epoll set */
        c->fd = -1;
        c->state = RAW_IDLE;
        c->reused = false;
}

static void raw_conn_free(struct worker *w)
{
        if (!w->raw)
                return;
        raw_close(w->raw, w->raw->state == RAW_IDLE);
        free(w->raw);
        w->raw = NULL;
}

/* Opens a new connection for w's request (counted in w->connects); the
 * loop then drives the connect, the handshake and the request. */
static bool raw_connect(struct raw_loop *lp, struct worker *w)
{
        struct raw_conn *c = w->raw;
        struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = w };
        int one = 1;

        c->fd = socket(lp->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
                raw_why(w, "socket: %s", strerror(errno));
                return false;
        }
        w->connects++;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(c->fd, (struct sockaddr *)&lp->addr, lp->addrlen) < 0 && errno != EINPROGRESS) {
                raw_why(w, "connect to %s: %s", lp->authority, strerror(errno));
                raw_close(c, false);
                return false;
        }
        /* Edge-triggered: each state below reads or writes until the
         * socket would block, so no event is lost and the interest set
         * never changes while the connection lives. */
        if (epoll_ctl(lp->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
                die("epoll_ctl: %s", strerror(errno));
        c->state = RAW_CONNECTING;
        return true;
}

/* Turns the outcome of an SSL call (rc) into an raw_io; errors and TLS
 * verification failures are explained in w->errbuf. */
static enum raw_io raw_ssl_io(struct worker *w, int rc, const char *what)
{
        struct raw_conn *c = w->raw;
        int err = SSL_get_error(c->ssl, rc);
        char why[200];
        long vr;

        switch (err) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE:
                return IO_WAIT;
        case SSL_ERROR_ZERO_RETURN:
                return IO_EOF;
        case SSL_ERROR_SYSCALL:
                if (ERR_peek_error() == 0 && (rc == 0 || errno == ECONNRESET || errno == EPIPE)) {
                        ERR_clear_error();
                        return IO_EOF;
                }
                raw_why(w, "TLS %s: %s", what,
                        raw_ssl_error(why, sizeof(why), errno ? strerror(errno) : "I/O error"));
                return IO_ERR;
        default:
                vr = SSL_get_verify_result(c->ssl);
                if (vr != X509_V_OK) {
                        ERR_clear_error();
                        raw_why(w, "TLS: server certificate verification failed: %s",
                                X509_verify_cert_error_string(vr));
                        return IO_ERR;
                }
                raw_why(w, "TLS %s: %s", what, raw_ssl_error(why, sizeof(why), "protocol error"));
                return IO_ERR;
        }
}

static enum raw_io raw_write(struct worker *w, size_t *done)
{
        struct raw_conn *c = w->raw;
        const char *p = c->out + c->out_off;
        size_t n = c->out_len - c->out_off;
        ssize_t rc;

        if (c->ssl) {
                int r = SSL_write(c->ssl, p, (int)n);

                if (r > 0) {
                        *done = (size_t)r;
                        return IO_OK;
                }
                return raw_ssl_io(w, r, "write");
        }
        rc = send(c->fd, p, n, MSG_NOSIGNAL);
        if (rc >= 0) {
                *done = (size_t)rc;
                return IO_OK;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return IO_WAIT;
        if (errno == ECONNRESET || errno == EPIPE)
                return IO_EOF;
        raw_why(w, "send: %s", strerror(errno));
        return IO_ERR;
}

static enum raw_io raw_read(struct worker *w, size_t *got)
{
        struct raw_conn *c = w->raw;
        char *p = c->in + c->in_end;
        size_t n = sizeof(c->in) - c->in_end;
        ssize_t rc;

        if (c->ssl) {
                int r = SSL_read(c->ssl, p, (int)n);

                if (r > 0) {
                        *got = (size_t)r;
                        return IO_OK;
                }
                return raw_ssl_io(w, r, "read");
        }
        rc = recv(c->fd, p, n, 0);
        if (rc > 0) {
                *got = (size_t)rc;
                return IO_OK;
        }
        if (rc == 0)
                return IO_EOF;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return IO_WAIT;
        if (errno == ECONNRESET)
                return IO_EOF;
        raw_why(w, "recv: %s", strerror(errno));
        return IO_ERR;
}

static bool raw_out(struct raw_conn *c, const char *s, size_t n)
{
        if (c->out_len + n > sizeof(c->out))
                return false;
        memcpy(c->out + c->out_len, s, n);
        c->out_len += n;
        return true;
}

/* Writes w's request (req_set's method, URL, header list and body) as
 * HTTP/1.1 bytes into its connection's output buffer. */
static bool raw_build_request(struct raw_loop *lp, struct worker *w)
{
        struct raw_conn *c = w->raw;
        const char *path = w->url + lp->path_off;
        size_t blen = w->req_body ? strlen(w->body) : 0;
        bool ok;

        c->out_len = 0;
        c->out_off = 0;
        ok = raw_out(c, w->method, strlen(w->method)) && raw_out(c, " ", 1);
        if (*path != '/')
                ok = ok && raw_out(c, "/", 1);
        ok = ok && raw_out(c, path, strlen(path)) &&
             raw_out(c, " HTTP/1.1\r\nHost: ", 17) &&
             raw_out(c, lp->authority, strlen(lp->authority)) && raw_out(c, "\r\n", 2);
        for (const struct curl_slist *h = w->req_headers; h && ok; h = h->next) {
                const char *colon = strchr(h->data, ':');

                /* "Name:" with no value removes a header in libcurl (our
                 * "Expect:"), so it is not sent here either. */
                if (!colon || colon[1 + strspn(colon + 1, " \t")] == '\0')
                        continue;
                ok = raw_out(c, h->data, strlen(h->data)) && raw_out(c, "\r\n", 2);
        }
        if (w->req_body && ok) {
                char line[48];
                int n = snprintf(line, sizeof(line), "Content-Length: %zu\r\n", blen);

                ok = raw_out(c, line, (size_t)n);
        }
        ok = ok && raw_out(c, "\r\n", 2) && raw_out(c, w->body, blen);
        if (!ok)
                raw_why(w, "request larger than %d bytes", RAW_OUT_MAX);
        return ok;
}

/* Appends body bytes to w->resp under the --max-body-mb rule. */
static bool raw_body_bytes(struct worker *w, const char *p, size_t n)
{
        if (n == 0 || buf_write((char *)p, 1, n, &w->resp) == n)
                return true;
        raw_why(w, w->resp.overflow ? "response larger than --max-body-mb" : "out of memory for the response");
        return false;
}

/* Matches header name (case-insensitive) at line; returns its value with
 * blanks trimmed in *val and *vlen. */
static bool raw_header_is(const char *line, size_t len, const char *name, const char **val, size_t *vlen)
{
        size_t nlen = strlen(name);
        const char *v, *e = line + len;

        if (len <= nlen || line[nlen] != ':' || strncasecmp(line, name, nlen) != 0)
                return false;
        v = line + nlen + 1;
        while (v < e && (*v == ' ' || *v == '\t'))
                v++;
        while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
        *val = v;
        *vlen = (size_t)(e - v);
        return true;
}

/* Does the comma-separated value hold token (case-insensitive)? */
static bool raw_value_has(const char *v, size_t vlen, const char *token)
{
        size_t tlen = strlen(token);

        for (size_t i = 0; i + tlen <= vlen; i++)
                if (strncasecmp(v + i, token, tlen) == 0 &&
                    (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ' || v[i - 1] == '\t') &&
                    (i + tlen == vlen || v[i + tlen] == ',' || v[i + tlen] == ' ' ||
                     v[i + tlen] == '\t' || v[i + tlen] == ';'))
                        return true;
        return false;
}

/* Parses the status line and headers in c->in[in_start..hend) (hend just
 * past the blank line) and picks how the body is delimited. */
static bool raw_parse_head(struct worker *w, const char *head, size_t hlen)
{
        struct raw_conn *c = w->raw;
        const char *p = head, *end = head + hlen, *eol, *v;
        bool chunked = false, have_len = false;
        uint64_t len = 0;
        size_t vlen;

        if (hlen < 14 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
            p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
            (p[12] != ' ' && p[12] != '\r' && p[12] != '\n')) {
                size_t show = strcspn(p, "\r\n");

                /* The head always ends in a line end, so that is bounded. */
                raw_why(w, "malformed HTTP status line: %.*s", (int)(show > 60 ? 60 : show), p);
                return false;
        }
        c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
        c->close_after = p[7] == '0';
        p = (const char *)memchr(p, '\n', (size_t)(end - p)) + 1;
        while (p < end) {
                size_t llen;

                eol = (const char *)memchr(p, '\n', (size_t)(end - p));
                llen = (size_t)(eol - p);
                if (llen > 0 && p[llen - 1] == '\r')
                        llen--;
                if (llen == 0)
                        break;
                if (raw_header_is(p, llen, "Content-Length", &v, &vlen)) {
                        uint64_t n = 0;

                        if (vlen == 0 || vlen > 18 || strspn(v, "0123456789") < vlen) {
                                raw_why(w, "malformed Content-Length: %.*s", (int)(vlen > 40 ? 40 : vlen), v);
                                return false;
                        }
                        for (size_t i = 0; i < vlen; i++)
                                n = n * 10 + (uint64_t)(v[i] - '0');
                        if (have_len && n != len) {
                                raw_why(w, "conflicting Content-Length headers");
                                return false;
                        }
                        have_len = true;
                        len = n;
                } else if (raw_header_is(p, llen, "Transfer-Encoding", &v, &vlen)) {
                        if (!raw_value_has(v, vlen, "chunked")) {
                                raw_why(w, "unsupported Transfer-Encoding: %.*s", (int)(vlen > 40 ? 40 : vlen), v);
                                return false;
                        }
                        chunked = true;
                } else if (raw_header_is(p, llen, "Connection", &v, &vlen)) {
                        if (raw_value_has(v, vlen, "close"))
                                c->close_after = true;
                        else if (raw_value_has(v, vlen, "keep-alive"))
                                c->close_after = false;
                }
                p = eol + 1;
        }
        if (c->status == 204 || c->status == 304 || (c->status >= 100 && c->status < 200)) {
                c->remaining = 0;
                c->body = RB_LENGTH;
        } else if (chunked) {
                c->body = RB_CHUNK_SIZE;
        } else if (have_len) {
                c->remaining = len;
                c->body = RB_LENGTH;
        } else {
                c->body = RB_UNTIL_CLOSE;
                c->close_after = true;
        }
        return true;
}

/* Takes a CRLF- (or LF-) ended line from c->in: its length without the
 * line end in *len, or false when it is not complete yet. */
static const char *raw_take_line(struct raw_conn *c, size_t *len)
{
        char *p = c->in + c->in_start, *nl = memchr(p, '\n', c->in_end - c->in_start);

        if (!nl)
                return NULL;
        c->in_start = (size_t)(nl + 1 - c->in);
        *len = (size_t)(nl - p);
        if (*len > 0 && p[*len - 1] == '\r')
                (*len)--;
        return p;
}

/* Parses what has arrived of w's response: 1 when it is complete, 0 when
 * more is due, -1 when it is malformed (why in w->errbuf). */
static int raw_parse(struct worker *w)
{
        struct raw_conn *c = w->raw;
        const char *line;
        size_t len, avail;

        for (;;) {
                avail = c->in_end - c->in_start;
                switch (c->body) {
                case RB_HEADERS: {
                        char *p = c->in + c->in_start, *hend = memmem(p, avail, "\r\n\r\n", 4);
                        size_t hlen;

                        if (!hend) {
                                /* Tolerate bare LF line ends as well. */
                                hend = memmem(p, avail, "\n\n", 2);
                                if (!hend)
                                        return 0;
                                hlen = (size_t)(hend - p) + 2;
                        } else {
                                hlen = (size_t)(hend - p) + 4;
                        }
                        if (!raw_parse_head(w, p, hlen))
                                return -1;
                        c->in_start += hlen;
                        if (c->status < 200) {
                                /* An interim answer (100 Continue): the real
                                 * one follows. */
                                c->body = RB_HEADERS;
                                continue;
                        }
                        break;
                }
                case RB_LENGTH:
                case RB_CHUNK_DATA:
                        len = avail < c->remaining ? avail : (size_t)c->remaining;
                        if (!raw_body_bytes(w, c->in + c->in_start, len))
                                return -1;
                        c->in_start += len;
                        c->remaining -= len;
                        if (c->remaining > 0)
                                return 0;
                        if (c->body == RB_LENGTH)
                                return 1;
                        c->body = RB_CHUNK_CRLF;
                        break;
                case RB_CHUNK_SIZE: {
                        uint64_t n = 0;
                        size_t i;

                        line = raw_take_line(c, &len);
                        if (!line)
                                return 0;
                        for (i = 0; i < len && isxdigit((unsigned char)line[i]); i++) {
                                if (n >> 56) {
                                        raw_why(w, "chunk size too large");
                                        return -1;
                                }
                                n = n * 16 + (uint64_t)(isdigit((unsigned char)line[i]) ? line[i] - '0' :
                                                        (tolower((unsigned char)line[i]) - 'a' + 10));
                        }
                        if (i == 0 || (i < len && line[i] != ';' && line[i] != ' ' && line[i] != '\t')) {
                                raw_why(w, "malformed chunk size line: %.*s", (int)(len > 40 ? 40 : len), line);
                                return -1;
                        }
                        c->remaining = n;
                        c->body = n ? RB_CHUNK_DATA : RB_TRAILER;
                        break;
                }
                case RB_CHUNK_CRLF:
                        line = raw_take_line(c, &len);
                        if (!line) {
                                if (avail >= 2) {
                                        raw_why(w, "malformed chunked body: no line end after a chunk");
                                        return -1;
                                }
                                return 0;
                        }
                        if (len != 0) {
                                raw_why(w, "malformed chunked body: data past the chunk size");
                                return -1;
                        }
                        c->body = RB_CHUNK_SIZE;
                        break;
                case RB_TRAILER:
                        line = raw_take_line(c, &len);
                        if (!line)
                                return 0;
                        if (len == 0)
                                return 1;
                        break;
                case RB_UNTIL_CLOSE:
                        if (!raw_body_bytes(w, c->in + c->in_start, avail))
                                return -1;
                        c->in_start = c->in_end;
                        return 0;
                }
        }
}

/* Ends w's request in error: the reason is in w->errbuf already. */
static bool raw_fail(struct worker *w, long *status)
{
        raw_close(w->raw, false);
        *status = -1;
        return true;
}

/* The connection broke (eof) before the response began: a reused
 * keep-alive connection the server had closed is replaced once and the
 * request resent, as libcurl does; anything else fails the request. */
static bool raw_retry(struct raw_loop *lp, struct worker *w, const char *why)
{
        struct raw_conn *c = w->raw;

        if (c->reused && !c->got_bytes && !c->retried) {
                raw_close(c, false);
                c->retried = true;
                c->out_off = 0;
                c->in_start = c->in_end = 0;
                if (raw_connect(lp, w))
                        return true;
                return false;
        }
        raw_why(w, "%s", why);
        return false;
}

/* Advances w's request as far as the socket allows (events: what epoll
 * reported, 0 when called outside an event).  Returns true when the
 * request is over, with its status (HTTP status, or -1 and a reason in
 * w->errbuf) in *status. */
static bool raw_drive(struct raw_loop *lp, struct worker *w, uint32_t events, long *status)
{
        struct raw_conn *c = w->raw;
        enum raw_io io;
        size_t n = 0;
        int rc, err;
        socklen_t elen = sizeof(err);

        for (;;) {
                switch (c->state) {
                case RAW_IDLE:
                        /* Between requests only a close by the server is
                         * expected; drop the connection, the next request
                         * opens another. */
                        if (c->fd >= 0 && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                                raw_close(c, false);
                        return false;
                case RAW_CONNECTING:
                        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
                                return false;
                        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
                                err = errno;
                        if (err) {
                                raw_why(w, "connect to %s: %s", lp->authority, strerror(err));
                                return raw_fail(w, status);
                        }
                        if (!lp->ctx) {
                                c->state = RAW_SENDING;
                                break;
                        }
                        c->ssl = SSL_new(lp->ctx);
                        if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1)
                                die("SSL_new failed");
                        if (lp->host_is_ip) {
                                if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), lp->host) != 1)
                                        die("TLS: cannot verify against IP address %s", lp->host);
                        } else if (SSL_set1_host(c->ssl, lp->host) != 1 ||
                                   SSL_set_tlsext_host_name(c->ssl, lp->host) != 1) {
                                die("TLS: cannot verify against host name %s", lp->host);
                        }
                        SSL_set_connect_state(c->ssl);
                        c->state = RAW_HANDSHAKE;
                        break;
                case RAW_HANDSHAKE:
                        rc = SSL_do_handshake(c->ssl);
                        if (rc == 1) {
                                c->state = RAW_SENDING;
                                break;
                        }
                        io = raw_ssl_io(w, rc, "handshake");
                        if (io == IO_WAIT)
                                return false;
                        if (io == IO_EOF) {
                                raw_why(w, "TLS handshake with %s: connection closed by the server", lp->authority);
                        } else {
                                char why[CURL_ERROR_SIZE];

                                memcpy(why, w->errbuf, sizeof(why));
                                raw_why(w, "%.200s (server %s)", why, lp->authority);
                        }
                        return raw_fail(w, status);
                case RAW_SENDING:
                        io = raw_write(w, &n);
                        if (io == IO_WAIT)
                                return false;
                        if (io == IO_EOF) {
                                if (!raw_retry(lp, w, "connection closed by the server while sending the request"))
                                        return raw_fail(w, status);
                                events = 0;
                                break;
                        }
                        if (io == IO_ERR)
                                return raw_fail(w, status);
                        c->out_off += n;
                        if (c->out_off < c->out_len)
                                break;
                        c->state = RAW_RECEIVING;
                        /* The answer cannot be there yet: wait for its
                         * EPOLLIN edge (any data that arrives after the
                         * last epoll_wait raises one) rather than spend a
                         * read that would say EAGAIN. */
                        if (!c->ssl || !SSL_has_pending(c->ssl))
                                return false;
                        break;
                case RAW_RECEIVING:
                        rc = raw_parse(w);
                        if (rc < 0)
                                return raw_fail(w, status);
                        if (rc > 0) {
                                /* Bytes past the response mean the stream is
                                 * out of step: never reuse it. */
                                if (c->close_after || c->in_start != c->in_end) {
                                        raw_close(c, true);
                                } else {
                                        c->state = RAW_IDLE;
                                        c->reused = true;
                                }
                                *status = c->status;
                                return true;
                        }
                        if (c->in_start == c->in_end) {
                                c->in_start = c->in_end = 0;
                        } else if (c->in_end == sizeof(c->in)) {
                                if (c->in_start == 0) {
                                        raw_why(w, "response header or chunk line longer than %d bytes", RAW_IN_MAX);
                                        return raw_fail(w, status);
                                }
                                memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
                                c->in_end -= c->in_start;
                                c->in_start = 0;
                        }
                        io = raw_read(w, &n);
                        if (io == IO_OK) {
                                c->in_end += n;
                                c->got_bytes = true;
                                break;
                        }
                        if (io == IO_WAIT)
                                return false;
                        if (io == IO_ERR)
                                return raw_fail(w, status);
                        if (c->body == RB_UNTIL_CLOSE) {
                                raw_close(c, false);
                                *status = c->status;
                                return true;
                        }
                        if (!raw_retry(lp, w, c->got_bytes ?
                                       "connection closed by the server in the middle of the response" :
                                       "connection closed by the server before any response"))
                                return raw_fail(w, status);
                        events = 0;
                        break;
                }
        }
}

/* Starts the request req_set described for w (its connection opens first
 * if it has none); raw_progress then drives it. */
static void raw_begin(struct raw_loop *lp, struct worker *w)
{
        struct raw_conn *c = w->raw;

        resp_reset(w);
        c->busy = true;
        lp->active++;
        c->retried = false;
        c->got_bytes = false;
        c->body = RB_HEADERS;
        c->status = 0;
        c->in_start = c->in_end = 0;
        c->deadline = now_s() + (double)lp->cfg->req_timeout_ms / 1e3;
        if (!raw_build_request(lp, w)) {
                raw_close(c, false);
                return;         /* raw_progress finds it failed */
        }
        if (c->fd < 0) {
                if (!raw_connect(lp, w))
                        return;
        } else {
                c->state = RAW_SENDING;
        }
}

static bool raw_next_op(struct raw_loop *lp, struct worker *w)
{
        long seq, idx;

        if (!op_claim(lp->cfg, lp->start, &seq, &idx))
                return false;
        op_start(w, idx, seq);
        w->op_t0 = now_s();
        raw_begin(lp, w);
        return true;
}

/* Takes the answer to w's request; returns true when w has started
 * another one. */
static bool raw_request_over(struct raw_loop *lp, struct worker *w, long status)
{
        w->raw->busy = false;
        lp->active--;
        resp_terminate(w);
        switch (lp->phase) {
        case RAW_PHASE_SINGLE:
                lp->single_status = status;
                return false;
        case RAW_PHASE_WARM_UP:
                warm_up_done(w, status);
                return false;
        case RAW_PHASE_RUN:
                break;
        }
        if (op_next(w, status)) {
                raw_begin(lp, w);
                return true;
        }
        record_latency(w, (now_s() - w->op_t0) * 1e3);
        w->ops++;
        return raw_next_op(lp, w);
}

/* Drives w after an event (or a fresh start, events 0) through as many
 * requests as complete without waiting. */
static void raw_progress(struct raw_loop *lp, struct worker *w, uint32_t events)
{
        struct raw_conn *c = w->raw;
        long status;

        for (;;) {
                if (c->busy && c->state == RAW_IDLE && c->fd < 0) {
                        /* raw_begin failed to build or connect. */
                        if (!raw_request_over(lp, w, -1))
                                return;
                } else if (c->busy && raw_drive(lp, w, events, &status)) {
                        if (!raw_request_over(lp, w, status))
                                return;
                } else {
                        if (!c->busy)
                                raw_drive(lp, w, events, &status);
                        return;
                }
                events = 0;
        }
}

/* Runs the loop until no client has a request in progress. */
static void raw_run_loop(struct raw_loop *lp, struct worker *ws, long nws)
{
        struct epoll_event evs[256];
        double next_check = now_s() + RAW_TIMEOUT_CHECK_S;

        while (lp->active > 0) {
                int n = epoll_wait(lp->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
                                   (int)(RAW_TIMEOUT_CHECK_S * 1000));
                double now;

                if (n < 0 && errno != EINTR)
                        die("epoll_wait: %s", strerror(errno));
                for (int i = 0; i < n; i++)
                        raw_progress(lp, evs[i].data.ptr, evs[i].events);
                now = now_s();
                if (now < next_check)
                        continue;
                next_check = now + RAW_TIMEOUT_CHECK_S;
                for (long i = 0; i < nws; i++) {
                        struct worker *w = &ws[i];

                        if (!w->raw->busy || now < w->raw->deadline)
                                continue;
                        raw_why(w, "no complete response within %ld ms", lp->cfg->req_timeout_ms);
                        raw_close(w->raw, false);
                        if (raw_request_over(lp, w, -1))
                                raw_progress(lp, w, 0);
                }
        }
}

/* Performs w's request alone on a loop of its own (the namespace set-up);
 * the status as http_finish. */
static long raw_perform(struct worker *w)
{
        struct raw_loop lp;
        long status;

        raw_loop_init(&lp, w->cfg);
        lp.phase = RAW_PHASE_SINGLE;
        w->raw = raw_conn_new();
        raw_begin(&lp, w);
        raw_progress(&lp, w, 0);
        raw_run_loop(&lp, w, 1);
        status = lp.single_status;
        raw_conn_free(w);
        raw_loop_release(&lp);
        return status;
}

/* Runs the clients ws[0..conc) on this thread over connections of their
 * own; returns the wall time of the measured part, as run_threads. */
static double run_raw(const struct config *cfg, struct worker *ws)
{
        struct raw_loop lp;
        double elapsed;

        raw_loop_init(&lp, cfg);
        lp.phase = RAW_PHASE_WARM_UP;
        for (long i = 0; i < cfg->conc; i++) {
                ws[i].raw = raw_conn_new();
                warm_up_start(&ws[i]);
                raw_begin(&lp, &ws[i]);
                raw_progress(&lp, &ws[i], 0);
        }
        raw_run_loop(&lp, ws, cfg->conc);

        lp.phase = RAW_PHASE_RUN;
        lp.start = now_s();
        for (long i = 0; i < cfg->conc; i++)
                if (raw_next_op(&lp, &ws[i]))
                        raw_progress(&lp, &ws[i], 0);
        raw_run_loop(&lp, ws, cfg->conc);
        elapsed = now_s() - lp.start;

        for (long i = 0; i < cfg->conc; i++)
                raw_conn_free(&ws[i]);
        raw_loop_release(&lp);
        return elapsed;
}

/* ---- the run ---- */

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* Nearest-rank percentile over a sorted array. */
static double percentile(const double *sorted, size_t n, double p)
{
        size_t rank;

        if (n == 0)
                return 0;
        rank = (size_t)ceil(p * (double)n);
        if (rank < 1)
                rank = 1;
        return sorted[rank - 1];
}

static void ensure_namespace(const struct config *cfg)
{
        struct worker *w = xmalloc(sizeof(*w));
        long status;

        worker_init(w, cfg);
        snprintf(w->url, sizeof(w->url), "%s/api/v1/namespaces", cfg->url);
        snprintf(w->body, sizeof(w->body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", cfg->ns);
        req_set(w, "POST", w->hdr_json, true);
        status = cfg->engine == ENGINE_RAW ? raw_perform(w) : http_perform(w);
        if (status != 201 && status != 409) {
                if (status < 0)
                        die("creating namespace %s: %s", cfg->ns, w->errbuf);
                die("creating namespace %s: HTTP %ld: %.300s", cfg->ns, status, w->resp.data);
        }
        worker_release(w);
        free(w);
}

static long parse_long(const char *opt, const char *s, long min)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < min)
                die("--%s: want an integer >= %ld, got '%s'", opt, min, s);
        return v;
}

static double parse_double(const char *opt, const char *s)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v > 0))
                die("--%s: want a positive number, got '%s'", opt, s);
        return v;
}

static char *read_token_file(const char *path)
{
        FILE *f = fopen(path, "r");
        char *tok = xmalloc(4096);
        size_t n;

        if (!f)
                die("%s: %s", path, strerror(errno));
        n = fread(tok, 1, 4095, f);
        fclose(f);
        tok[n] = '\0';
        while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
                tok[--n] = '\0';
        if (n == 0)
                die("%s: empty token", path);
        return tok;
}

static void usage(FILE *f)
{
        fputs("usage: loadgen --target agenthub|etcd --url URL --op create|get|patch|list\n"
              "               [--conc N] [--n N] [--duration SECONDS]\n"
              "               [--token T | --token-file FILE] [--cacert FILE]\n"
              "               [--namespace NS] [--base I] [--keys K] [--expect-items N]\n"
              "               [--timeout SECONDS] [--max-seconds SECONDS] [--max-body-mb MB]\n"
              "               [--engine threads|multi|raw]\n"
              "Runs --n operations (default 20000; for list, 10) at concurrency --conc\n"
              "on objects a-<base>..a-<base+keys-1> and prints ops/s and p50/p99 latency.\n"
              "--engine threads (default) runs each client on a thread of its own,\n"
              "--engine multi runs them all on one thread (libcurl multi, epoll),\n"
              "--engine raw runs them all on one thread with HTTP/1.1 and TLS\n"
              "(OpenSSL) written here over non-blocking sockets: the least CPU.\n",
              f);
}

static void parse_args(int argc, char **argv, struct config *cfg)
{
        static const struct option opts[] = {
                { "target", required_argument, NULL, 't' },
                { "url", required_argument, NULL, 'u' },
                { "token", required_argument, NULL, 'T' },
                { "token-file", required_argument, NULL, 'F' },
                { "cacert", required_argument, NULL, 'C' },
                { "op", required_argument, NULL, 'o' },
                { "conc", required_argument, NULL, 'c' },
                { "n", required_argument, NULL, 'n' },
                { "duration", required_argument, NULL, 'd' },
                { "namespace", required_argument, NULL, 's' },
                { "base", required_argument, NULL, 'b' },
                { "keys", required_argument, NULL, 'k' },
                { "expect-items", required_argument, NULL, 'e' },
                { "timeout", required_argument, NULL, 'w' },
                { "max-seconds", required_argument, NULL, 'm' },
                { "max-body-mb", required_argument, NULL, 'M' },
                { "engine", required_argument, NULL, 'E' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool have_target = false, have_op = false, have_n = false;
        const char *url = NULL;
        int c;

        *cfg = (struct config){
                .ns = "bench", .conc = 1, .keys = 0, .expect_items = -1,
                .max_body = 256u << 20, .req_timeout_ms = 30000, .max_seconds = 900,
                .engine = ENGINE_THREADS,
        };
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 't':
                        if (strcmp(optarg, "agenthub") == 0)
                                cfg->target = TARGET_AGENTHUB;
                        else if (strcmp(optarg, "etcd") == 0)
                                cfg->target = TARGET_ETCD;
                        else
                                die("--target: want agenthub or etcd");
                        have_target = true;
                        break;
                case 'u':
                        url = optarg;
                        break;
                case 'T':
                        cfg->token = strdup(optarg);
                        if (!cfg->token)
                                die("out of memory");
                        break;
                case 'F':
                        cfg->token = read_token_file(optarg);
                        break;
                case 'C':
                        cfg->cacert = optarg;
                        break;
                case 'o': {
                        size_t i;

                        for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
                                if (strcmp(optarg, op_names[i]) == 0)
                                        break;
                        if (i == sizeof(op_names) / sizeof(op_names[0]))
                                die("--op: want create, get, patch or list");
                        cfg->op = (enum op)i;
                        have_op = true;
                        break;
                }
                case 'c':
                        cfg->conc = parse_long("conc", optarg, 1);
                        if (cfg->conc > 4096)
                                die("--conc: at most 4096");
                        break;
                case 'n':
                        cfg->n = parse_long("n", optarg, 1);
                        have_n = true;
                        break;
                case 'd':
                        cfg->duration = parse_double("duration", optarg);
                        break;
                case 's':
                        cfg->ns = optarg;
                        if (strlen(cfg->ns) > 63)
                                die("--namespace: at most 63 characters");
                        break;
                case 'b':
                        cfg->base = parse_long("base", optarg, 0);
                        break;
                case 'k':
                        cfg->keys = parse_long("keys", optarg, 1);
                        break;
                case 'e':
                        cfg->expect_items = parse_long("expect-items", optarg, 0);
                        break;
                case 'w':
                        cfg->req_timeout_ms = (long)(parse_double("timeout", optarg) * 1000);
                        break;
                case 'm':
                        cfg->max_seconds = parse_double("max-seconds", optarg);
                        break;
                case 'M':
                        cfg->max_body = (size_t)parse_long("max-body-mb", optarg, 1) << 20;
                        break;
                case 'E':
                        if (strcmp(optarg, "threads") == 0)
                                cfg->engine = ENGINE_THREADS;
                        else if (strcmp(optarg, "multi") == 0)
                                cfg->engine = ENGINE_MULTI;
                        else if (strcmp(optarg, "raw") == 0)
                                cfg->engine = ENGINE_RAW;
                        else
                                die("--engine: want threads, multi or raw");
                        break;
                case 'h':
                        usage(stdout);
                        exit(0);
                default:
                        usage(stderr);
                        exit(2);
                }
        }
        if (optind != argc || !have_target || !have_op || !url) {
                usage(stderr);
                exit(2);
        }
        if (strlen(url) >= sizeof(cfg->url))
                die("--url too long");
        strcpy(cfg->url, url);
        for (size_t len = strlen(cfg->url); len > 0 && cfg->url[len - 1] == '/'; len--)
                cfg->url[len - 1] = '\0';
        if (!have_n)
                /* A duration run is bounded by time; the count then only
                 * caps the memory the latency samples may take. */
                cfg->n = cfg->duration > 0 ? 10000000 : cfg->op == OP_LIST ? 10 : 20000;
        if (cfg->keys == 0 && cfg->duration > 0 && (cfg->op == OP_GET || cfg->op == OP_PATCH))
                die("--duration with --op %s needs --keys (how many objects exist)", op_names[cfg->op]);
        if (cfg->keys == 0)
                cfg->keys = cfg->n;
        if (cfg->target == TARGET_AGENTHUB && !cfg->token)
                die("--target agenthub needs --token or --token-file");
}

int main(int argc, char **argv)
{
        struct config cfg;
        struct worker *workers;
        size_t total = 0;
        long ops = 0, errors = 0, list_calls = 0, list_items = 0, connects = 0;
        uint64_t list_bytes = 0;
        double *all, elapsed;

        parse_args(argc, argv, &cfg);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                die("curl_global_init failed");
        if (cfg.target == TARGET_AGENTHUB)
                ensure_namespace(&cfg);

        workers = calloc((size_t)cfg.conc, sizeof(*workers));
        if (!workers)
                die("out of memory");
        for (long i = 0; i < cfg.conc; i++)
                worker_init(&workers[i], &cfg);
        if (cfg.engine == ENGINE_MULTI)
                elapsed = run_multi(&cfg, workers);
        else if (cfg.engine == ENGINE_RAW)
                elapsed = run_raw(&cfg, workers);
        else
                elapsed = run_threads(&cfg, workers);

        for (long i = 0; i < cfg.conc; i++) {
                ops += workers[i].ops;
                errors += workers[i].errors;
                connects += workers[i].connects;
                list_calls += workers[i].list_calls;
                list_items += workers[i].list_items;
                list_bytes += workers[i].list_bytes;
                total += workers[i].nlat;
        }
        all = xmalloc((total ? total : 1) * sizeof(*all));
        total = 0;
        for (long i = 0; i < cfg.conc; i++) {
                memcpy(all + total, workers[i].lat_ms, workers[i].nlat * sizeof(*all));
                total += workers[i].nlat;
                worker_release(&workers[i]);
        }
        qsort(all, total, sizeof(*all), cmp_double);

        printf("target=%s op=%s conc=%ld n=%ld ops/s=%.0f p50_ms=%.2f p99_ms=%.2f errors=%ld",
               target_names[cfg.target], op_names[cfg.op], cfg.conc, ops,
               elapsed > 0 ? (double)ops / elapsed : 0.0,
               percentile(all, total, 0.50), percentile(all, total, 0.99), errors);
        printf(" conns=%ld", connects);
        if (cfg.target == TARGET_ETCD && cfg.op == OP_PATCH)
                printf(" calls_per_op=2(range+put)");
        if (cfg.op == OP_LIST && ops > 0)
                printf(" items=%ld bytes=%llu calls_per_op=%.1f", list_items / ops,
                       (unsigned long long)(list_bytes / (uint64_t)ops), (double)list_calls / (double)ops);
        if (errors || (ops < cfg.n && cfg.duration <= 0))
                printf(" FAILED");
        printf(" engine=%s\n", engine_names[cfg.engine]);
        fflush(stdout);

        if (errors)
                fprintf(stderr,
                        "\n!!! loadgen: %ld of %ld %s operations against %s FAILED; these numbers are not valid !!!\n\n",
                        errors, ops, op_names[cfg.op], target_names[cfg.target]);
        if (ops < cfg.n && cfg.duration <= 0)
                fprintf(stderr, "\n!!! loadgen: only %ld of %ld operations ran before the %.0f s limit !!!\n\n",
                        ops, cfg.n, cfg.max_seconds);

        free(all);
        free(workers);
        free(cfg.token);
        curl_global_cleanup();
        return errors || (ops < cfg.n && cfg.duration <= 0) ? 1 : 0;
}
