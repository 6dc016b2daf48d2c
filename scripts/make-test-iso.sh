#!/usr/bin/env bash
# make-test-iso.sh OUTDIR - build OUTDIR/discovery-test.iso, a small TEST ARTIFACT
# laid out like a CoreOS live ISO (see spec/image.md section 1), for the unit
# tests, the agent simulator and `make run`.  It is not bootable: the kernel,
# initrd and rootfs are placeholder files a few KiB long.
#
# Layout (Rock Ridge names; the plain ISO9660 names are the 8.3 forms):
#   /coreos/igninfo.json        {"file": "images/ignition.img"}
#   /coreos/kargs.json          kernel-argument embed areas (default, files[], size)
#   /images/ignition.img        262144 zero bytes: the Ignition embed area
#   /images/pxeboot/vmlinuz     placeholder kernel
#   /images/pxeboot/initrd.img  gzip newc cpio holding etc/coreos-live-initramfs
#   /images/pxeboot/rootfs.img  placeholder rootfs
#   /EFI/fedora/grub.cfg        grub config with a kargs embed area
#   /isolinux/isolinux.cfg      isolinux config with a kargs embed area
#
# The output is deterministic: every date is fixed (SOURCE_DATE_EPOCH or
# 2024-01-01), so two runs give byte-identical ISOs.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
outdir=$1
epoch=${SOURCE_DATE_EPOCH:-1704067200}
export SOURCE_DATE_EPOCH=$epoch
volid="rhcos-test-discovery"
# Same karg area size as the FCOS x86_64 fixture coreos-installer ships.
karg_size=1139
default_kargs="mitigations=auto,nosmt coreos.liveiso=${volid} ignition.firstboot ignition.platform.id=metal"

mkdir -p "$outdir"
stage=$(mktemp -d)
chmod 755 "$stage"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/coreos" "$stage/images/pxeboot" "$stage/EFI/fedora" "$stage/isolinux"

# A placeholder file: a text banner then a repeated pattern, `size` bytes.
# Written whole and then truncated: cutting a pipe short with `head` would
# kill the writer with SIGPIPE, which `pipefail` turns into a random failure.
placeholder() { # path label size
	local path=$1 label=$2 size=$3
	{
		printf 'AGENTHUB TEST ARTIFACT: placeholder %s, not a real CoreOS file.\n' "$label"
		local i=0
		while [ $i -lt $((size / 64 + 1)) ]; do
			printf '%s %08d ----------------------------------------------\n' \
				"${label:0:8}" $i
			i=$((i + 1))
		done
	} >"$path"
	truncate -s "$size" "$path"
}

# One newc cpio entry for a regular file or directory, written to stdout.
newc_entry() { # name mode ino datafile-or-empty
	local name=$1 mode=$2 ino=$3 data=${4:-}
	local size=0
	[ -n "$data" ] && size=$(stat -c %s "$data")
	local namesize=$((${#name} + 1))
	printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
		"$ino" "$mode" 0 0 1 "$epoch" "$size" 0 0 0 0 "$namesize" 0
	printf '%s\0' "$name"
	local hdr=$((110 + namesize))
	head -c $(((4 - hdr % 4) % 4)) /dev/zero
	if [ -n "$data" ]; then
		cat "$data"
		head -c $(((4 - size % 4) % 4)) /dev/zero
	fi
}

placeholder "$stage/images/pxeboot/vmlinuz" vmlinuz 4096
placeholder "$stage/images/pxeboot/rootfs.img" rootfs 8192
placeholder "$stage/marker" coreos-live-initramfs 200
{
	newc_entry etc $((0040755)) 1
	newc_entry etc/coreos-live-initramfs $((0100644)) 2 "$stage/marker"
	newc_entry 'TRAILER!!!' 0 0
} | gzip -9 -n >"$stage/images/pxeboot/initrd.img"
rm -f "$stage/marker"

head -c 262144 /dev/zero >"$stage/images/ignition.img"
printf '{"file": "images/ignition.img"}\n' >"$stage/coreos/igninfo.json"

# A kargs embed area: kargs, "\n", '#' padding to karg_size, then the marker.
karg_area() {
	local body="${default_kargs}"$'\n'
	local pad=$((karg_size - ${#body}))
	printf '%s' "$body"
	printf '%*s' "$pad" '' | tr ' ' '#'
	printf '# COREOS_KARG_EMBED_AREA\n'
}
grub_pre='# AGENTHUB TEST ARTIFACT
set timeout=1
menuentry "RHCOS (Live) test" --class fedora --class gnu-linux --class gnu --class os {
	linux /images/pxeboot/vmlinuz '
grub_post='	initrd /images/pxeboot/initrd.img /images/ignition.img
}
'
iso_pre='# AGENTHUB TEST ARTIFACT
default vesamenu.c32
label linux
  menu label ^RHCOS (Live) test
  kernel /images/pxeboot/vmlinuz
  append initrd=/images/pxeboot/initrd.img,/images/ignition.img '
{ printf '%s' "$grub_pre"; karg_area; printf '%s' "$grub_post"; } >"$stage/EFI/fedora/grub.cfg"
{ printf '%s' "$iso_pre"; karg_area; } >"$stage/isolinux/isolinux.cfg"
grub_off=$(printf '%s' "$grub_pre" | wc -c)
iso_off=$(printf '%s' "$iso_pre" | wc -c)
cat >"$stage/coreos/kargs.json" <<EOF
{
  "default": "${default_kargs}",
  "files": [
    {
      "path": "EFI/fedora/grub.cfg",
      "offset": ${grub_off}
    },
    {
      "path": "isolinux/isolinux.cfg",
      "offset": ${iso_off}
    }
  ],
  "size": ${karg_size}
}
EOF

find "$stage" -exec touch -h -d "@${epoch}" {} +
date_str=$(date -u -d "@${epoch}" +%Y%m%d%H%M%S00)
out="$outdir/discovery-test.iso"
rm -f "$out.tmp"
# xorriso prints a banner on stderr every run: show its output only on failure.
if ! xorriso -report_about SORRY -as mkisofs -quiet \
	-o "$out.tmp" -R -V "$volid" \
	--modification-date="$date_str" --set_all_file_dates "$date_str" \
	-uid 0 -gid 0 "$stage" >"$stage.log" 2>&1; then
	cat "$stage.log" >&2
	rm -f "$stage.log" "$out.tmp"
	exit 1
fi
rm -f "$stage.log"
mv -f "$out.tmp" "$out"
