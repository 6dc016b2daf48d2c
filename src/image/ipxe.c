/* ipxe.c - iPXE boot and redirect scripts.  See ipxe.h. */
#include "ipxe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Kernel arguments the discovery boot always passes after the rootfs URL. */
static const char FIXED_KARGS[] =
	"random.trust_cpu=on rd.luks.options=discard ignition.firstboot ignition.platform.id=metal "
	"console=tty1 console=ttyS1,115200n8 "
	"coreos.inst.persistent-kargs=\"console=tty1 console=ttyS1,115200n8\"";

/* A URL goes on an iPXE command line: a space or newline would split it. */
static int url_ok(const char *u)
{
	if (!u || !*u)
		return 0;
	for (; *u; u++)
		if ((unsigned char)*u <= 0x20 || *u == 0x7f)
			return 0;
	return 1;
}

static int text_ok(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

char *ipxe_script(const char *kernel_url, const char *initrd_url, const char *rootfs_url,
		  const char *extra_kargs)
{
	char *out;
	int have_extra = extra_kargs && *extra_kargs;

	if (!url_ok(kernel_url) || !url_ok(initrd_url) || !url_ok(rootfs_url) ||
	    !text_ok(extra_kargs)) {
		errno = EINVAL;
		return NULL;
	}
	if (asprintf(&out,
		     "#!ipxe\n"
		     "initrd --name initrd %s\n"
		     "kernel %s initrd=initrd coreos.live.rootfs_url=%s %s%s%s\n"
		     "boot\n",
		     initrd_url, kernel_url, rootfs_url, FIXED_KARGS, have_extra ? " " : "",
		     have_extra ? extra_kargs : "") < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return out;
}

char *ipxe_redirect_script(const char *chain_url)
{
	char *out;

	if (!url_ok(chain_url)) {
		errno = EINVAL;
		return NULL;
	}
	if (asprintf(&out, "#!ipxe\nchain %s&mac=${net0/mac}\n", chain_url) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return out;
}
