# shellcheck shell=bash
# loopfs.sh: a fresh file system on a loop device, for the write-load scripts (device.sh,
# fs-floor.sh, peers.sh source it). Sets globals `loop` (/dev/loopN, for cleanup) and `dev`
# (loopN, its /proc/diskstats name).
#
#   loopfs_make IMAGE SIZE FS MOUNTPOINT [MOUNT_OPTS]  sparse image, loop device (direct I/O),
#       mkfs (ext4 | ext4-1k | xfs | btrfs; ext4 without lazy init, so no background writes
#       during a measurement), mount
#   loopfs_remove MOUNTPOINT   unmount and detach what loopfs_make made (safe to call twice)
#   loopfs_snap                "writes sectors_written flushes" of the device

loop="" dev=""

loopfs_make() {
    local img=$1 size=$2 fs=$3 mnt=$4 opts=${5:-}
    truncate -s "$size" "$img"
    loop=$(losetup -f --show --direct-io=on "$img")
    dev=${loop#/dev/}
    case "$fs" in
        ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loop" ;;
        ext4-1k) mkfs.ext4 -q -F -b 1024 -E lazy_itable_init=0,lazy_journal_init=0 "$loop" ;;
        xfs) mkfs.xfs -q -f "$loop" ;;
        btrfs) mkfs.btrfs -q -f "$loop" >/dev/null ;;
        *) echo "unknown filesystem $fs" >&2; return 2 ;;
    esac
    mount ${opts:+-o "$opts"} "$loop" "$mnt"
}

loopfs_remove() {
    mountpoint -q "$1" && umount "$1"
    [ -n "$loop" ] && losetup -d "$loop"
    loop=""
}

# Columns after the name: writes completed (col 8), sectors written (col 10), flushes (col 19
# on recent kernels).
loopfs_snap() {
    awk -v d="$dev" '$3 == d { print $8, $10, ($19 == "" ? 0 : $19) }' /proc/diskstats
}
