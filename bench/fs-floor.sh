#!/usr/bin/env bash
# fs-floor.sh: what the filesystem itself writes for the smallest possible commit.
#
# On a fresh filesystem on a loop device (as device.sh makes it), preallocates a 1 MiB file
# (written, not sparse), then every INTERVAL seconds overwrites one 4 KiB block of it in place
# and fdatasyncs (dd conv=notrunc,fdatasync), WRITES times; prints the device bytes per write
# from /proc/diskstats after `sync -f`. Any store that makes a 4 KiB commit durable by
# overwriting a file pays at least this per commit; with INTERVAL = the commit window it is
# the floor of a lightly loaded store's write load (e.g. emoncms at -w 300).
#
# usage: bench/fs-floor.sh [--fs ext4|ext4-1k|xfs|btrfs] [--mount-opts OPTS]
#                          [--writes 6] [--interval 10] [--direct] [--nocow]
# --nocow makes the file with `chattr +C` (btrfs: overwritten in place, no data checksums;
# other filesystems refuse or ignore the flag) before it is written.
# Needs root. Removes its mount, loop device and image on exit, also on failure.
set -euo pipefail

fs=ext4 mopts="" writes=6 interval=10 oflag="" nocow=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fs) fs=$2; shift 2 ;;
    --mount-opts) mopts=$2; shift 2 ;;
    --writes) writes=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --direct) oflag=oflag=direct; shift ;;
    --nocow) nocow=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "fs-floor.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "fs-floor.sh: needs root for losetup/mount" >&2; exit 2; }

# shellcheck source=bench/loopfs.sh
. "$(dirname "$0")/loopfs.sh"
work=$(mktemp -d /var/tmp/ringlet-floor.XXXXXX)
img=$work/image mnt=$work/mnt
mkdir -p "$mnt"
cleanup() {
  set +e
  loopfs_remove "$mnt"
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

loopfs_make "$img" 1G "$fs" "$mnt" "$mopts"
snap() { loopfs_snap | cut -d' ' -f1,2; }

if [ -n "$nocow" ]; then
  touch "$mnt/f"
  chattr +C "$mnt/f" 2>/dev/null || echo "fs-floor.sh: chattr +C refused on $fs" >&2
fi
dd if=/dev/zero of="$mnt/f" bs=1M count=1 conv=fdatasync status=none
sync -f "$mnt"
sleep 6 # let the journal's periodic commit of the setup pass
read -r w0 s0 < <(snap)
for i in $(seq 1 "$writes"); do
  dd if=/dev/urandom of="$mnt/f" bs=4k count=1 seek=$((i % 256)) conv=notrunc,fdatasync \
    $oflag status=none
  sleep "$interval"
done
sync -f "$mnt"
read -r w1 s1 < <(snap)
bytes=$(( (s1 - s0) * 512 ))
echo "fs=$fs${mopts:+ mount_opts=$mopts}${oflag:+ direct=1}${nocow:+ nocow=1} writes=$writes interval_s=$interval" \
  "dev_bytes=$bytes write_ios=$(( w1 - w0 )) bytes_per_write=$(( bytes / writes ))" \
  "bytes_per_s_at_300s_window=$(echo "scale=1; $bytes / $writes / 300" | bc)"
