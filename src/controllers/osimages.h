/* osimages.h - the base ISOs of --os-images (osimages.c): local files, or
 * http(s) URLs downloaded once into the data dir, and the OSImage
 * controller that tells the InfraEnvs of an architecture when one moved. */
#ifndef AH_CONTROLLERS_OSIMAGES_H
#define AH_CONTROLLERS_OSIMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct hub;

struct os_image {
	char *openshift_version;
	char *cpu_architecture;
	char *url;      /* a local path (or file:// URL) to the base ISO, or an
			 * http(s) URL that osimages.c downloads into the data dir */
	char *version;  /* RHCOS build */
	/* Set by hub_os_images_start() and freed by hub_os_images_stop(). */
	char *path;             /* the base ISO to read: url, or the cache file */
	bool remote;            /* url is http(s) */
	uint64_t area_len;      /* its Ignition embed area; 0 = unknown (not read yet) */
	/* Remote images only; guarded by the lock of h->osi (osimages.c). */
	bool ready;             /* path holds the verified download */
	int attempts;           /* failed downloads so far */
	int64_t retry_at_ms;    /* util_mono_ms() of the next try */
	char *fetch_error;      /* why the last try failed (no secrets), or NULL */
};

/* load: read --os-images (or the built-in entry for --default-iso) into
 * h->osi, then start: fill path/remote/area_len of every image, and start
 * the download thread when a remote image is not cached yet (never blocks
 * on the network).  Errors name the file, the entry and the field.
 * free: stop the thread and free everything (safe after a failed load).
 * controllers_running: the runtime runs; from now on a finished try is
 * announced through the OSImage controller. */
int hub_os_images_load(struct hub *h, ah_err *err);
void hub_os_images_free(struct hub *h);
void hub_os_images_controllers_running(struct hub *h);
/* The image for an InfraEnv's osImageVersion (an OpenShift version or an
 * RHCOS build; NULL/"" = the newest) and cpuArchitecture in either
 * upstream spelling ("" and amd64 = x86_64, aarch64 = arm64), or NULL. */
const struct os_image *hub_pick_os_image(struct hub *h, const char *version, const char *arch);
/* The configured images, in --os-images order (the hub's release list). */
size_t hub_os_images_count(struct hub *h);
const struct os_image *hub_os_image_at(struct hub *h, size_t i);
/* Register the OSImage controller (keys: CPU architectures) and its
 * InfraEnv index.  Before the runtime starts. */
int hub_osimages_register(struct hub *h);

/* OS images (osimages.c).  start: fill path/remote/area_len of every image,
 * and start the download thread when a remote image is not cached yet
 * (never blocks on the network).  stop: join it and free what start made;
 * safe when start never ran.  ready: 0 when os->path may be read, with
 * *ret_area_len (may be NULL) its embed area length or 0 if unknown;
 * -EAGAIN while a remote image is still downloading, with a message for
 * the InfraEnv condition (why, last failure) in msg.  Thread-safe. */
int hub_os_images_start(struct hub *h, ah_err *err);
void hub_os_images_stop(struct hub *h);
int hub_os_image_ready(struct hub *h, const struct os_image *os, uint64_t *ret_area_len,
		       char *msg, size_t size);

#endif
