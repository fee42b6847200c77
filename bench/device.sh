#!/usr/bin/env bash
# device.sh: count what a command writes to a real block device.
#
# Makes a sparse image on the backing disk, attaches a loop device (direct I/O), makes a
# filesystem, mounts it, runs SETUP, syncs the filesystem and snapshots /proc/diskstats,
# runs RUN, syncs again and snapshots, then prints the difference: bytes and write IOs at
# the device, plus the CPU seconds and peak RSS of RUN. The mount, the loop device and the
# image are removed on exit, also on failure or Ctrl-C. In SETUP and RUN, $MNT is the mount.
#
# usage: bench/device.sh [--fs ext4|ext4-1k|xfs|btrfs] [--size 4G] [--samples N]
#                        [--mount-opts OPTS] --setup 'CMD' --run 'CMD'
#   --samples N   also print bytes and IOs per sample (N = samples RUN writes)
#   --mount-opts  options for mount -o (e.g. lazytime); default: the filesystem's defaults
# Needs root (losetup, mkfs, mount). Prints one line of key=value pairs.
set -euo pipefail

fs=ext4 size=4G setup=true run="" samples=0 mopts=
while [ $# -gt 0 ]; do
  case "$1" in
    --fs) fs=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --setup) setup=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --mount-opts) mopts=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "device.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$run" ] || { echo "device.sh: --run is required" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "device.sh: needs root for losetup/mount" >&2; exit 2; }

# shellcheck source=bench/loopfs.sh
. "$(dirname "$0")/loopfs.sh"
work=$(mktemp -d /var/tmp/ringlet-device.XXXXXX)
img=$work/image MNT=$work/mnt
mkdir -p "$MNT"
cleanup() {
  set +e
  loopfs_remove "$MNT"
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

loopfs_make "$img" "$size" "$fs" "$MNT" "$mopts"
export MNT
snap() { loopfs_snap; }

bash -c "$setup"
sync -f "$MNT"
read -r w0 s0 f0 < <(snap)
start_ns=$(date +%s%N)
tfile=$work/time
/usr/bin/env time -f '%U %S %M' -o "$tfile" bash -c "$run" 2>&1 || {
  echo "device.sh: run failed" >&2; exit 1; }
sync -f "$MNT"
read -r w1 s1 f1 < <(snap)
end_ns=$(date +%s%N)
read -r ut st rss < "$tfile"
bytes=$(( (s1 - s0) * 512 )) ios=$(( w1 - w0 )) flushes=$(( f1 - f0 ))
line="fs=$fs${mopts:+ mount_opts=$mopts} dev_bytes=$bytes write_ios=$ios flushes=$flushes cpu_s=$(echo "$ut + $st" | bc) peak_rss_kb=$rss wall_s=$(( (end_ns - start_ns) / 1000000000 ))"
if [ "$samples" -gt 0 ]; then
  line="$line samples=$samples bytes_per_sample=$(echo "scale=3; $bytes / $samples" | bc) ios_per_sample=$(echo "scale=6; $ios / $samples" | bc)"
fi
echo "$line"
