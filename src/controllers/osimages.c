/* osimages.c - the base ISOs of --os-images: local files, or http(s) URLs
 * downloaded once into <data-dir>/os-images/<sha256 of the URL>.iso.
 *
 * A download runs in one background thread (so start-up never waits on the
 * network, and at most one download runs at a time), writes <file>.part,
 * checks that the result is an ISO with an Ignition embed area, and only
 * then renames it into place: a crash leaves either nothing or a complete,
 * verified file.  A failed try is retried with exponential back-off; until
 * an image is ready its InfraEnvs report why on their ImageCreated condition.
 *
 * The OS image controller (on the runtime; its keys are CPU
 * architectures, cluster-scoped) carries the news: after each try the
 * download thread queues the image's architecture, and its reconcile
 * queues the InfraEnvs of that architecture, found through the cache's
 * IDX_IE_ARCH index, so that their condition follows.  The transfer itself
 * stays on its own thread: it may take minutes and must not hold a
 * reconcile worker. */
#include "hub-internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "image/iso.h"

#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS (5 * 60 * 1000)
/* No CoreOS live ISO comes near this; a bound keeps a wrong URL from
 * filling the disk. */
#define OS_IMAGE_MAX_BYTES (32ll * 1024 * 1024 * 1024)

static bool is_remote(const char *url)
{
	return strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0;
}

/* scheme://host[:port]/path of a URL: no user info, no query (either may
 * carry a credential), for messages and logs. */
static void url_redacted(const char *url, char *buf, size_t size)
{
	const char *host = strstr(url, "://"), *path, *at, *end;

	if (!host) {
		snprintf(buf, size, "%s", url);
		return;
	}
	host += 3;
	path = host + strcspn(host, "/?#");
	at = memchr(host, '@', (size_t)(path - host));
	if (at)
		host = at + 1;
	end = path + strcspn(path, "?#");
	snprintf(buf, size, "%.*s%.*s%.*s", (int)(strstr(url, "://") + 3 - url), url,
		 (int)(path - host), host, (int)(end - path), path);
}

/* The embed area length of the ISO at path; 0 and a message if it has none. */
static uint64_t check_iso(const char *path, ah_err *err)
{
	struct iso_area a;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		ah_err_set(err, errno, 500, "InternalError", "cannot open %s: %s", path, strerror(errno));
		return 0;
	}
	if (iso_find_embed_area(fd, &a, err) < 0 || a.length == 0) {
		close(fd);
		if (err && !err->message[0])
			ah_err_set(err, EINVAL, 500, "InternalError", "no Ignition embed area");
		return 0;
	}
	close(fd);
	return a.length;
}

static int cache_path(const char *data_dir, const char *url, char **ret)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	char hex[65];
	int i;

	if (!EVP_Digest(url, strlen(url), md, &mdlen, EVP_sha256(), NULL) || mdlen < 32)
		return -EIO;
	for (i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	return asprintf(ret, "%s/os-images/%s.iso", data_dir, hex) < 0 ? -ENOMEM : 0;
}

struct hub_os_images {
	struct os_image *images;
	size_t n;
	bool init, started, stop;
	pthread_mutex_t lock;      /* guards the download state of images */
	bool controllers_running;  /* h->rt started (the download thread may queue) */
	pthread_cond_t cond;
	pthread_t thread;
};

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* --- the list (--os-images) ----------------------------------------------- */

int hub_os_images_load(struct hub *h, ah_err *err)
{
	json_error_t jerr;
	json_t *list, *e;
	size_t i;

	h->osi = calloc(1, sizeof(*h->osi));
	if (!h->osi)
		return -ENOMEM;
	if (!h->cfg.os_images_file) {
		h->osi->images = calloc(1, sizeof(*h->osi->images));
		if (!h->osi->images)
			return -ENOMEM;
		h->osi->images[0].openshift_version = strdup("4.19");
		h->osi->images[0].cpu_architecture = strdup("x86_64");
		h->osi->images[0].url = strdup(h->default_iso ? h->default_iso : "");
		h->osi->images[0].version = strdup("419.96.202510010000-0");
		h->osi->n = 1;
		return hub_os_images_start(h, err);
	}
	list = json_load_file(h->cfg.os_images_file, 0, &jerr);
	if (!json_is_array(list) || json_array_size(list) == 0) {
		json_decref(list);
		return ah_err_set(err, EINVAL, 0, "", "--os-images %s: expected a non-empty JSON array: %s",
				  h->cfg.os_images_file, jerr.text);
	}
	h->osi->images = calloc(json_array_size(list), sizeof(*h->osi->images));
	if (!h->osi->images) {
		json_decref(list);
		return -ENOMEM;
	}
	json_array_foreach(list, i, e) {
		const char *keys[] = { "openshift_version", "cpu_architecture", "url", "version" };
		size_t k;

		for (k = 0; k < 4; k++) {
			if (!jstr(e, keys[k]) || !*jstr(e, keys[k])) {
				json_decref(list);
				return ah_err_set(err, EINVAL, 0, "",
						  "--os-images %s: entry %zu has no \"%s\"", h->cfg.os_images_file,
						  i, keys[k]);
			}
		}
		/* Besides local paths, http(s) URLs are downloaded once (osimages.c). */
		if (strstr(jstr(e, "url"), "://") && strncmp(jstr(e, "url"), "file://", 7) != 0 &&
		    strncmp(jstr(e, "url"), "http://", 7) != 0 && strncmp(jstr(e, "url"), "https://", 8) != 0) {
			json_decref(list);
			return ah_err_set(err, EINVAL, 0, "",
					  "--os-images %s: entry %zu: \"url\" must be a local path or a file, http or https URL",
					  h->cfg.os_images_file, i);
		}
		h->osi->images[i].openshift_version = strdup(jstr(e, "openshift_version"));
		h->osi->images[i].cpu_architecture = strdup(jstr(e, "cpu_architecture"));
		h->osi->images[i].url = strdup(strncmp(jstr(e, "url"), "file://", 7) == 0 ?
					     jstr(e, "url") + 7 : jstr(e, "url"));
		h->osi->images[i].version = strdup(jstr(e, "version"));
		h->osi->n++;
	}
	json_decref(list);
	return hub_os_images_start(h, err);
}

/* Compare dotted versions numerically ("4.10" > "4.9"). */
static int version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);

		if (x != y)
			return x < y ? -1 : 1;
		while (*a && (*a < '0' || *a > '9'))
			a++;
		while (*b && (*b < '0' || *b > '9'))
			b++;
	}
	return 0;
}

size_t hub_os_images_count(struct hub *h)
{
	return h->osi ? h->osi->n : 0;
}

const struct os_image *hub_os_image_at(struct hub *h, size_t i)
{
	return h->osi && i < h->osi->n ? &h->osi->images[i] : NULL;
}

const struct os_image *hub_pick_os_image(struct hub *h, const char *version, const char *arch)
{
	const struct os_image *best = NULL;
	size_t i;

	/* Upstream's OS image lists and InfraEnvs spell an architecture
	 * either way (arm64 or aarch64, x86_64 or amd64). */
	arch = hub_norm_arch(arch);
	for (i = 0; i < h->osi->n; i++) {
		const struct os_image *o = &h->osi->images[i];

		if (strcmp(hub_norm_arch(o->cpu_architecture), arch) != 0)
			continue;
		if (version && *version) {
			if (strcmp(o->version, version) == 0 || strcmp(o->openshift_version, version) == 0)
				return o;
			continue;
		}
		if (!best || version_cmp(o->openshift_version, best->openshift_version) > 0)
			best = o;
	}
	return best;
}

/* --- one download ------------------------------------------------------------ */

struct fetch {
	struct hub *h;
	int fd;
	int write_errno;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct fetch *f = userdata;
	size_t len = size * nmemb, done = 0;

	while (done < len) {
		ssize_t n = write(f->fd, ptr + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			f->write_errno = n < 0 ? errno : EIO;
			return 0; /* curl aborts with CURLE_WRITE_ERROR */
		}
		done += (size_t)n;
	}
	return len;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct fetch *f = userdata;
	bool stop;

	pthread_mutex_lock(&f->h->osi->lock);
	stop = f->h->osi->stop;
	pthread_mutex_unlock(&f->h->osi->lock);
	return stop ? 1 : 0;
}

static void fsync_dir(const char *file)
{
	char dir[4096];
	int fd;

	snprintf(dir, sizeof(dir), "%s", file);
	if (strrchr(dir, '/'))
		*strrchr(dir, '/') = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Download url into path (through path.part); 0, or a message in err. */
static int download(struct hub *h, const char *url, const char *path, uint64_t *ret_area_len,
		    ah_err *err)
{
	struct fetch f = { .h = h, .fd = -1 };
	char curl_msg[CURL_ERROR_SIZE] = "", shown[1024], *part = NULL;
	long code = 0;
	CURL *c;
	CURLcode cr;
	int r = 0;

	url_redacted(url, shown, sizeof(shown));
	if (asprintf(&part, "%s.part", path) < 0)
		return -ENOMEM;
	f.fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (f.fd < 0) {
		r = ah_err_set(err, errno, 500, "InternalError", "cannot create %s: %s", part, strerror(errno));
		free(part);
		return r;
	}
	c = curl_easy_init();
	if (!c) {
		close(f.fd);
		unlink(part);
		free(part);
		return -ENOMEM;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_msg);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	/* A stalled transfer (under 1 KiB/s for a minute) is a failed try. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)OS_IMAGE_MAX_BYTES);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &f);
	cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (cr == CURLE_OK && fsync(f.fd) < 0)
		f.write_errno = errno;
	close(f.fd);
	if (cr != CURLE_OK) {
		if (f.write_errno)
			r = ah_err_set(err, EIO, 500, "InternalError", "download of %s failed: writing %s: %s",
				       shown, part, strerror(f.write_errno));
		else
			r = ah_err_set(err, EIO, 502, "InternalError", "download of %s failed: %s", shown,
				       curl_msg[0] ? curl_msg : curl_easy_strerror(cr));
	} else if (f.write_errno) {
		r = ah_err_set(err, EIO, 500, "InternalError", "download of %s failed: writing %s: %s", shown,
			       part, strerror(f.write_errno));
	} else {
		ah_err e2;

		ah_err_clear(&e2);
		*ret_area_len = check_iso(part, &e2);
		if (!*ret_area_len)
			r = ah_err_set(err, EINVAL, 502, "InternalError",
				       "%s is not a CoreOS live ISO with an Ignition embed area: %s", shown,
				       e2.message);
		else if (rename(part, path) < 0)
			r = ah_err_set(err, errno, 500, "InternalError", "rename %s: %s", part, strerror(errno));
		else
			fsync_dir(path);
	}
	if (r < 0)
		unlink(part);
	free(part);
	return r;
}

/* --- the download thread ----------------------------------------------------- */

/* The architecture an InfraEnv's image is built for, as --os-images names
 * it (hub_pick_os_image()). */
static const char *arch_of(const char *arch)
{
	if (!arch || !*arch)
		return "x86_64";
	return strcmp(arch, "arm64") == 0 ? "aarch64" : arch;
}

#define IDX_IE_ARCH "cpuArchitecture"
static void infraenv_arch_index(const json_t *ie, json_t *out)
{
	json_array_append_new(out, json_string(arch_of(json_string_value(
		json_object_get(json_object_get(ie, "spec"), "cpuArchitecture")))));
}

static int requeue_visit(const char *ns, const char *name, void *userdata)
{
	json_array_append_new(userdata, json_pack("[ss]", ns, name));
	return 0;
}

/* An image of architecture key->name moved (downloaded, or a try failed):
 * its InfraEnvs show the news. */
static struct rt_result reconcile(void *ctx, const struct rt_key *key)
{
	struct hub *h = ctx;
	json_t *keys = json_array(), *k;
	size_t i;
	int r;

	if (!keys)
		return rt_error(-ENOMEM);
	r = rt_cache_keys_by(h->rt, h->k_infraenv->store_key, IDX_IE_ARCH, key->name, requeue_visit, keys);
	json_array_foreach(keys, i, k)
		rt_enqueue(h->c_infraenv, json_string_value(json_array_get(k, 0)),
			   json_string_value(json_array_get(k, 1)));
	json_decref(keys);
	return rt_from_errno(r);
}

int hub_osimages_register(struct hub *h)
{
	struct rt_controller_def d = {
		.name = "OSImage",
		.reconcile = reconcile,
		.ctx = h,
	};
	int r = rt_register(h->rt, &d, &h->c_osimage);

	if (r == 0)
		r = rt_cache_index(h->rt, h->k_infraenv->store_key, IDX_IE_ARCH, infraenv_arch_index);
	return r;
}

static void *fetch_main(void *arg)
{
	struct hub *h = arg;

	pthread_setname_np(pthread_self(), "ah-os-images");
	pthread_mutex_lock(&h->osi->lock);
	while (!h->osi->stop) {
		int64_t now = util_mono_ms(), next = INT64_MAX;
		bool running;
		struct os_image *due = NULL;
		uint64_t area_len = 0;
		char *url, *path;
		ah_err err;
		size_t i;
		int r;

		for (i = 0; i < h->osi->n && !due; i++) {
			struct os_image *o = &h->osi->images[i];

			if (!o->remote || o->ready)
				continue;
			if (o->retry_at_ms <= now)
				due = o;
			else if (o->retry_at_ms < next)
				next = o->retry_at_ms;
		}
		if (!due && next == INT64_MAX)
			break; /* all downloaded */
		if (!due) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (next - now) / 1000;
			ts.tv_nsec += ((next - now) % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&h->osi->cond, &h->osi->lock, &ts);
			continue;
		}
		url = strdup(due->url);
		path = strdup(due->path);
		pthread_mutex_unlock(&h->osi->lock);

		ah_err_clear(&err);
		if (!url || !path)
			r = ah_err_set(&err, ENOMEM, 500, "InternalError", "out of memory");
		else
			r = download(h, url, path, &area_len, &err);

		pthread_mutex_lock(&h->osi->lock);
		if (h->osi->stop) {
			free(url);
			free(path);
			break;
		}
		/* Entries naming the same URL share the file. */
		for (i = 0; i < h->osi->n; i++) {
			struct os_image *o = &h->osi->images[i];
			int64_t delay;

			if (!o->remote || o->ready || (o != due && (!url || strcmp(o->url, url) != 0)))
				continue;
			free(o->fetch_error);
			o->fetch_error = NULL;
			if (r == 0) {
				o->ready = true;
				o->area_len = area_len;
				continue;
			}
			o->attempts++;
			delay = RETRY_MIN_MS;
			for (int k = 1; k < o->attempts && delay < RETRY_MAX_MS; k++)
				delay *= 2;
			if (delay > RETRY_MAX_MS)
				delay = RETRY_MAX_MS;
			o->retry_at_ms = util_mono_ms() + delay;
			o->fetch_error = strdup(err.message);
		}
		running = h->osi->controllers_running;
		pthread_mutex_unlock(&h->osi->lock);
		if (r == 0)
			log_info("OS image %s downloaded into %s", due->version, path);
		else
			log_warn("OS image %s: %s", due->version, err.message);
		free(url);
		free(path);
		/* Before the controllers run, their first pass sees it anyway. */
		if (running && h->c_osimage)
			for (i = 0; i < h->osi->n; i++)
				if (&h->osi->images[i] == due || strcmp(h->osi->images[i].url, due->url) == 0)
					rt_enqueue(h->c_osimage, "", h->osi->images[i].cpu_architecture);
		pthread_mutex_lock(&h->osi->lock);
	}
	pthread_mutex_unlock(&h->osi->lock);
	return NULL;
}

int hub_os_images_start(struct hub *h, ah_err *err)
{
	pthread_condattr_t ca;
	bool pending = false;
	char dir[4096];
	size_t i;
	int r;

	pthread_mutex_init(&h->osi->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->osi->cond, &ca);
	pthread_condattr_destroy(&ca);
	h->osi->init = true;
	for (i = 0; i < h->osi->n; i++) {
		struct os_image *o = &h->osi->images[i];
		ah_err e2;

		if (!o->url)
			return -ENOMEM;
		ah_err_clear(&e2);
		if (!is_remote(o->url)) {
			o->path = strdup(o->url);
			if (!o->path)
				return -ENOMEM;
			/* A local file is read as it is at each download; an
			 * unreadable one is reported there. */
			o->area_len = check_iso(o->path, &e2);
			continue;
		}
		o->remote = true;
		if (!h->cfg.data_dir)
			return ah_err_set(err, EINVAL, 0, "", "OS image %s: a URL needs a data directory",
					  o->version);
		r = cache_path(h->cfg.data_dir, o->url, &o->path);
		if (r < 0)
			return r;
		o->area_len = check_iso(o->path, &e2);
		if (o->area_len) {
			o->ready = true; /* downloaded by an earlier run */
			continue;
		}
		if (access(o->path, F_OK) == 0)
			unlink(o->path); /* not ours, or damaged: fetch it again */
		pending = true;
	}
	if (!pending)
		return 0;
	snprintf(dir, sizeof(dir), "%s/os-images", h->cfg.data_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return ah_err_set(err, errno, 0, "", "cannot create %s: %s", dir, strerror(errno));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return ah_err_set(err, EIO, 0, "", "libcurl initialisation failed");
	if (pthread_create(&h->osi->thread, NULL, fetch_main, h) != 0) {
		curl_global_cleanup();
		return ah_err_set(err, EAGAIN, 0, "", "cannot start the OS image download thread");
	}
	h->osi->started = true;
	return 0;
}

void hub_os_images_stop(struct hub *h)
{
	size_t i;

	if (h->osi->started) {
		pthread_mutex_lock(&h->osi->lock);
		h->osi->stop = true;
		pthread_cond_signal(&h->osi->cond);
		pthread_mutex_unlock(&h->osi->lock);
		pthread_join(h->osi->thread, NULL);
		curl_global_cleanup();
		h->osi->started = false;
	}
	for (i = 0; i < h->osi->n; i++) {
		free(h->osi->images[i].path);
		free(h->osi->images[i].fetch_error);
		h->osi->images[i].path = h->osi->images[i].fetch_error = NULL;
	}
	if (h->osi->init) {
		pthread_mutex_destroy(&h->osi->lock);
		pthread_cond_destroy(&h->osi->cond);
		h->osi->init = false;
	}
}

int hub_os_image_ready(struct hub *h, const struct os_image *os, uint64_t *ret_area_len, char *msg,
		       size_t size)
{
	char shown[1024];

	if (!os->remote) {
		if (ret_area_len)
			*ret_area_len = os->area_len;
		if (!os->path)
			snprintf(msg, size, "OS image %s (%s) has no file", os->version, os->cpu_architecture);
		return os->path ? 0 : -ENOENT;
	}
	pthread_mutex_lock(&h->osi->lock);
	if (os->ready) {
		if (ret_area_len)
			*ret_area_len = os->area_len;
		pthread_mutex_unlock(&h->osi->lock);
		return 0;
	}
	url_redacted(os->url, shown, sizeof(shown));
	if (!os->fetch_error) {
		snprintf(msg, size, "OS image %s (%s) is being downloaded from %s", os->version,
			 os->cpu_architecture, shown);
	} else {
		/* No countdown: the message changes only when a try ends, so
		 * reconciling in between writes nothing. */
		snprintf(msg, size,
			 "OS image %s (%s) is being downloaded from %s: attempt %d failed: %s; retrying with back-off",
			 os->version, os->cpu_architecture, shown, os->attempts, os->fetch_error);
	}
	pthread_mutex_unlock(&h->osi->lock);
	return -EAGAIN;
}

void hub_os_images_controllers_running(struct hub *h)
{
	if (!h->osi || !h->osi->init)
		return;
	pthread_mutex_lock(&h->osi->lock);
	h->osi->controllers_running = true;
	pthread_mutex_unlock(&h->osi->lock);
}

void hub_os_images_free(struct hub *h)
{
	if (!h->osi)
		return;
	hub_os_images_stop(h);
	for (size_t i = 0; i < h->osi->n; i++) {
		free(h->osi->images[i].openshift_version);
		free(h->osi->images[i].cpu_architecture);
		free(h->osi->images[i].url);
		free(h->osi->images[i].version);
	}
	free(h->osi->images);
	free(h->osi);
	h->osi = NULL;
}
