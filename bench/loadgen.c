/*
 * loadgen: a small closed-loop HTTP load generator used by bench/run.sh to
 * compare agenthub's Kubernetes REST API with etcd 3.4's HTTP/JSON gateway.
 *
 * N worker threads each own one libcurl easy handle, so each worker keeps one
 * keep-alive connection and issues one request at a time; a shared atomic
 * counter hands out operation indexes until the fixed count (or the
 * duration) is used up.  Every operation's latency is recorded, and the run
 * ends with one line per run:
 *
 *   target=agenthub op=create conc=64 n=20000 ops/s=12345 p50_ms=1.23 p99_ms=4.56 errors=0
 *
 * Every response status is checked; a run with errors prints a banner on
 * stderr, marks its line FAILED and exits 1, so a broken server can never
 * pass for a fast one.
 *
 * It is built outside the main Meson build on purpose (see bench/README.md):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror bench/loadgen.c \
 *      -lcurl -lpthread -lm -o build/loadgen
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static const char *const target_names[] = { "agenthub", "etcd" };
static const char *const op_names[] = { "create", "get", "patch", "list" };

struct config {
        enum target target;
        enum op op;
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

struct worker {
        pthread_t thread;
        const struct config *cfg;
        CURL *curl;
        struct curl_slist *hdr_plain;
        struct curl_slist *hdr_json;
        struct curl_slist *hdr_merge;
        struct buf resp;
        char errbuf[CURL_ERROR_SIZE];
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
static pthread_barrier_t start_barrier;

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
         * worker, so concurrency means the same thing on each side. */
        curl_easy_setopt(w->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        if (cfg->cacert)
                curl_easy_setopt(w->curl, CURLOPT_CAINFO, cfg->cacert);
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
 * worker, so a larger total means the server closes connections and every
 * reconnect (a TLS handshake for agenthub) is inside the latencies. */
static long connects_made(CURL *curl)
{
        long n = 0;

        curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &n);
        return n;
}

/* Performs one request and returns its HTTP status, or -1 when no response
 * arrived (the reason is in w->errbuf).  body may be NULL for a GET. */
static long http_do(struct worker *w, const char *method, const char *url,
                    const char *body, struct curl_slist *headers)
{
        CURLcode rc;
        long status = 0;

        w->resp.len = 0;
        w->resp.overflow = false;
        if (w->resp.data)
                w->resp.data[0] = '\0';
        w->errbuf[0] = '\0';
        curl_easy_setopt(w->curl, CURLOPT_URL, url);
        curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, headers);
        if (body) {
                curl_easy_setopt(w->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
                curl_easy_setopt(w->curl, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(w->curl, CURLOPT_CUSTOMREQUEST,
                                 strcmp(method, "POST") == 0 ? NULL : method);
        } else {
                curl_easy_setopt(w->curl, CURLOPT_HTTPGET, 1L);
                curl_easy_setopt(w->curl, CURLOPT_CUSTOMREQUEST, NULL);
        }
        rc = curl_easy_perform(w->curl);
        if (rc != CURLE_OK) {
                w->connects += connects_made(w->curl);
                if (w->resp.overflow)
                        snprintf(w->errbuf, sizeof(w->errbuf),
                                 "response larger than --max-body-mb");
                else if (!w->errbuf[0])
                        snprintf(w->errbuf, sizeof(w->errbuf), "%s", curl_easy_strerror(rc));
                return -1;
        }
        curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &status);
        w->connects += connects_made(w->curl);
        if (!w->resp.data) {
                /* Keep resp.data a valid string even for empty bodies. */
                w->resp.data = xmalloc(1);
                w->resp.data[0] = '\0';
                w->resp.cap = 1;
        }
        return status;
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

/* ---- agenthub (Kubernetes REST) operations ---- */

static void kube_op(struct worker *w, long idx, long seq)
{
        const struct config *cfg = w->cfg;
        char url[URL_MAX], name[64], body[BODY_MAX];
        long status;

        snprintf(name, sizeof(name), "a-%ld", idx);
        switch (cfg->op) {
        case OP_CREATE:
                snprintf(url, sizeof(url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents", cfg->url, cfg->ns);
                agent_body(body, sizeof(body), name, NULL);
                status = http_do(w, "POST", url, body, w->hdr_json);
                expect_status(w, "create", name, status, 201);
                break;
        case OP_GET:
                snprintf(url, sizeof(url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents/%s", cfg->url, cfg->ns, name);
                status = http_do(w, "GET", url, NULL, w->hdr_plain);
                expect_status(w, "get", name, status, 200);
                break;
        case OP_PATCH:
                snprintf(url, sizeof(url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents/%s", cfg->url, cfg->ns, name);
                snprintf(body, sizeof(body), "{\"spec\":{\"hostname\":\"h%ld-%ld\"}}", idx, seq);
                status = http_do(w, "PATCH", url, body, w->hdr_merge);
                expect_status(w, "patch", name, status, 200);
                break;
        case OP_LIST: {
                char token[1024] = "";
                long items = 0;

                /* One list op is the whole collection: a server that pages
                 * on its own (continue token) is followed to the end. */
                for (int page = 0; page < MAX_LIST_PAGES; page++) {
                        const char *p;
                        long n;

                        if (token[0]) {
                                char *esc = curl_easy_escape(w->curl, token, 0);

                                if (!esc)
                                        die("out of memory");
                                snprintf(url, sizeof(url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents?continue=%s",
                                         cfg->url, cfg->ns, esc);
                                curl_free(esc);
                        } else {
                                snprintf(url, sizeof(url), "%s" AGENT_GROUP_PATH "/namespaces/%s/agents",
                                         cfg->url, cfg->ns);
                        }
                        status = http_do(w, "GET", url, NULL, w->hdr_plain);
                        w->list_calls++;
                        if (!expect_status(w, "list", cfg->ns, status, 200))
                                return;
                        w->list_bytes += w->resp.len;
                        p = json_find_member(w->resp.data, "items", '[');
                        n = p ? json_array_count(p) : -1;
                        if (n < 0) {
                                snprintf(w->errbuf, sizeof(w->errbuf), "no items array in response");
                                report_error(w, "list", cfg->ns, -1);
                                w->errors++;
                                return;
                        }
                        items += n;
                        p = json_find_member(w->resp.data, "continue", '"');
                        if (!p || json_string_copy(p, token, sizeof(token)) <= 0)
                                break;
                }
                w->list_items += items;
                if (cfg->expect_items >= 0 && items != cfg->expect_items) {
                        snprintf(w->errbuf, sizeof(w->errbuf), "listed %ld items, expected %ld",
                                 items, cfg->expect_items);
                        report_error(w, "list", cfg->ns, -1);
                        w->errors++;
                }
                break;
        }
        }
}

/* ---- etcd v3 JSON gateway operations ---- */

static void etcd_key_b64(const struct config *cfg, const char *name, char *out)
{
        char key[256];
        size_t len;

        len = (size_t)snprintf(key, sizeof(key), ETCD_KEY_ROOT "%s/%s", cfg->ns, name);
        b64_encode((const unsigned char *)key, len, out);
}

static bool etcd_put(struct worker *w, const char *name, const char *key64, const char *doc)
{
        char url[URL_MAX], val64[BODY_MAX * 2], body[BODY_MAX * 3];
        long status;

        b64_encode((const unsigned char *)doc, strlen(doc), val64);
        snprintf(url, sizeof(url), "%s/v3/kv/put", w->cfg->url);
        snprintf(body, sizeof(body), "{\"key\":\"%s\",\"value\":\"%s\"}", key64, val64);
        status = http_do(w, "POST", url, body, w->hdr_json);
        return expect_status(w, "put", name, status, 200);
}

/* Reads one key; on success copies its decoded value into doc. */
static bool etcd_get(struct worker *w, const char *name, const char *key64, char *doc, size_t doc_max)
{
        char url[URL_MAX], body[BODY_MAX], val64[BODY_MAX * 2];
        const char *kvs, *val;
        long status;

        snprintf(url, sizeof(url), "%s/v3/kv/range", w->cfg->url);
        snprintf(body, sizeof(body), "{\"key\":\"%s\"}", key64);
        status = http_do(w, "POST", url, body, w->hdr_json);
        if (!expect_status(w, "range", name, status, 200))
                return false;
        /* The gateway answers 200 with no "kvs" for a missing key. */
        kvs = json_find_member(w->resp.data, "kvs", '[');
        val = kvs ? json_find_member(kvs, "value", '"') : NULL;
        if (!val || json_string_copy(val, val64, sizeof(val64)) < 0 ||
            b64_decode(val64, strlen(val64), doc, doc_max) < 0) {
                snprintf(w->errbuf, sizeof(w->errbuf), "key missing or value unreadable");
                report_error(w, "range", name, -1);
                w->errors++;
                return false;
        }
        return true;
}

static void etcd_op(struct worker *w, long idx, long seq)
{
        const struct config *cfg = w->cfg;
        char name[64], key64[512], doc[BODY_MAX], needle[80], hostname[64];

        snprintf(name, sizeof(name), "a-%ld", idx);
        etcd_key_b64(cfg, name, key64);
        switch (cfg->op) {
        case OP_CREATE:
                /* The value is the very Agent body agenthub receives, so both
                 * stores are handed the same number of bytes per object. */
                agent_body(doc, sizeof(doc), name, NULL);
                etcd_put(w, name, key64, doc);
                break;
        case OP_GET:
                etcd_get(w, name, key64, doc, sizeof(doc));
                break;
        case OP_PATCH:
                /* Read-modify-write in two calls, as an apiserver would do
                 * over etcd.  The read must return this object (checked)
                 * before the modified document is written back; building the
                 * new document is negligible next to the two round trips. */
                if (!etcd_get(w, name, key64, doc, sizeof(doc)))
                        break;
                snprintf(needle, sizeof(needle), "\"name\":\"%s\"", name);
                if (!strstr(doc, needle)) {
                        snprintf(w->errbuf, sizeof(w->errbuf), "range returned another object");
                        report_error(w, "range", name, -1);
                        w->errors++;
                        break;
                }
                snprintf(hostname, sizeof(hostname), "h%ld-%ld", idx, seq);
                agent_body(doc, sizeof(doc), name, hostname);
                etcd_put(w, name, key64, doc);
                break;
        case OP_LIST: {
                char prefix[256], end[256], p64[512], e64[512], url[URL_MAX], body[BODY_MAX * 2];
                const char *kvs;
                size_t plen;
                long status, items;

                plen = (size_t)snprintf(prefix, sizeof(prefix), ETCD_KEY_ROOT "%s/", cfg->ns);
                memcpy(end, prefix, plen + 1);
                /* range_end = the prefix with its last byte incremented, which
                 * is how etcd spells "every key with this prefix". */
                end[plen - 1]++;
                b64_encode((const unsigned char *)prefix, plen, p64);
                b64_encode((const unsigned char *)end, plen, e64);
                snprintf(url, sizeof(url), "%s/v3/kv/range", cfg->url);
                snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\"}", p64, e64);
                status = http_do(w, "POST", url, body, w->hdr_json);
                w->list_calls++;
                if (!expect_status(w, "list", cfg->ns, status, 200))
                        break;
                w->list_bytes += w->resp.len;
                kvs = json_find_member(w->resp.data, "kvs", '[');
                items = kvs ? json_array_count(kvs) : 0;
                if (items < 0) {
                        snprintf(w->errbuf, sizeof(w->errbuf), "unterminated kvs array");
                        report_error(w, "list", cfg->ns, -1);
                        w->errors++;
                        break;
                }
                w->list_items += items;
                if (cfg->expect_items >= 0 && items != cfg->expect_items) {
                        snprintf(w->errbuf, sizeof(w->errbuf), "listed %ld items, expected %ld",
                                 items, cfg->expect_items);
                        report_error(w, "list", cfg->ns, -1);
                        w->errors++;
                }
                break;
        }
        }
}

/* ---- workers and the run ---- */

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

/* One untimed request so the TCP (and TLS) handshake is not charged to the
 * first measured operation of each worker. */
static void warm_up(struct worker *w)
{
        const struct config *cfg = w->cfg;
        char url[URL_MAX];

        if (cfg->target == TARGET_AGENTHUB)
                snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s", cfg->url, cfg->ns);
        else
                snprintf(url, sizeof(url), "%s/version", cfg->url);
        if (http_do(w, "GET", url, NULL, w->hdr_plain) < 0 &&
            atomic_fetch_add(&error_reports, 1) < MAX_ERROR_REPORTS)
                fprintf(stderr, "loadgen: warm-up: %s: %s\n", url, w->errbuf);
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        const struct config *cfg = w->cfg;
        double start, limit;

        warm_up(w);
        pthread_barrier_wait(&start_barrier);
        start = now_s();
        limit = cfg->duration > 0 && cfg->duration < cfg->max_seconds ? cfg->duration : cfg->max_seconds;
        while (!atomic_load(&stop_all)) {
                long seq = atomic_fetch_add(&next_index, 1);
                long idx;
                double t0, t1;

                if (seq >= cfg->n)
                        break;
                t0 = now_s();
                if (t0 - start >= limit) {
                        atomic_store(&stop_all, true);
                        break;
                }
                idx = cfg->base + (cfg->op == OP_CREATE ? seq : seq % cfg->keys);
                if (cfg->target == TARGET_AGENTHUB)
                        kube_op(w, idx, seq);
                else
                        etcd_op(w, idx, seq);
                t1 = now_s();
                record_latency(w, (t1 - t0) * 1e3);
                w->ops++;
        }
        return NULL;
}

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
        struct worker w;
        char url[URL_MAX], body[256];
        long status;

        worker_init(&w, cfg);
        snprintf(url, sizeof(url), "%s/api/v1/namespaces", cfg->url);
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", cfg->ns);
        status = http_do(&w, "POST", url, body, w.hdr_json);
        if (status != 201 && status != 409) {
                if (status < 0)
                        die("creating namespace %s: %s", cfg->ns, w.errbuf);
                die("creating namespace %s: HTTP %ld: %.300s", cfg->ns, status, w.resp.data);
        }
        worker_release(&w);
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
              "Runs --n operations (default 20000; for list, 10) at concurrency --conc\n"
              "on objects a-<base>..a-<base+keys-1> and prints ops/s and p50/p99 latency.\n",
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
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool have_target = false, have_op = false, have_n = false;
        const char *url = NULL;
        int c;

        *cfg = (struct config){
                .ns = "bench", .conc = 1, .keys = 0, .expect_items = -1,
                .max_body = 256u << 20, .req_timeout_ms = 30000, .max_seconds = 900,
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
        double *all, t0, elapsed;
        int rc;

        parse_args(argc, argv, &cfg);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                die("curl_global_init failed");
        if (cfg.target == TARGET_AGENTHUB)
                ensure_namespace(&cfg);

        workers = calloc((size_t)cfg.conc, sizeof(*workers));
        if (!workers)
                die("out of memory");
        rc = pthread_barrier_init(&start_barrier, NULL, (unsigned)cfg.conc + 1);
        if (rc)
                die("pthread_barrier_init: %s", strerror(rc));
        for (long i = 0; i < cfg.conc; i++) {
                worker_init(&workers[i], &cfg);
                rc = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
                if (rc)
                        die("pthread_create: %s", strerror(rc));
        }
        pthread_barrier_wait(&start_barrier);
        t0 = now_s();
        for (long i = 0; i < cfg.conc; i++)
                pthread_join(workers[i].thread, NULL);
        elapsed = now_s() - t0;

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
        printf("\n");
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
        pthread_barrier_destroy(&start_barrier);
        curl_global_cleanup();
        return errors || (ops < cfg.n && cfg.duration <= 0) ? 1 : 0;
}
