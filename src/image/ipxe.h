/* ipxe.h - iPXE scripts served at downloads/files?file_name=ipxe-script.
 *
 * Two shapes (spec/image.md 5.1, 5.2): the boot script that loads the
 * discovery kernel and initrd, and the boot-order-control redirect that
 * chains back to the hub with the booting NIC's MAC so the hub can decide
 * per host whether to boot discovery again.  Pure and thread-safe. */
#ifndef AH_IMAGE_IPXE_H
#define AH_IMAGE_IPXE_H

/* The discovery boot script:
 *   #!ipxe
 *   initrd --name initrd <initrd_url>
 *   kernel <kernel_url> initrd=initrd coreos.live.rootfs_url=<rootfs_url> ... [ <extra_kargs>]
 *   boot
 * extra_kargs (may be NULL or "") is the InfraEnv kernel arguments as
 * kernel_args_apply() renders them.  Returns a malloc'd string the caller
 * frees, or NULL with errno ENOMEM, or EINVAL when a URL is missing or holds
 * whitespace/control characters, or extra_kargs holds control characters. */
char *ipxe_script(const char *kernel_url, const char *initrd_url, const char *rootfs_url,
		  const char *extra_kargs);

/* The boot-order-control redirect: "#!ipxe\nchain <chain_url>&mac=${net0/mac}\n".
 * chain_url is the hub's ipxe-script URL with its query (file_name=ipxe-script
 * and any signature) already present.  Same ownership and errors as above. */
char *ipxe_redirect_script(const char *chain_url);

#endif
