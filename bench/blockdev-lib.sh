# blockdev-lib.sh: sourced by crash.sh and faults.sh, after their options: the store's file
# system on a loop device over blockrec's recorder. Needs $FS (ext4 or xfs) and $0's
# directory to be bench/.
#   blk_start NAME ARGS...: re-executes the script (with ARGS) in a mount namespace of its
#       own, unless it is in one already; builds ringlet and blockrec unless $RINGLET and
#       $BLOCKREC are both set (then used as they are); makes $WORK (under $SCRATCH, $TMPDIR
#       or /tmp) and the cleanup at exit (with $PID, the daemon, killed), and sets $MOUNT_OPTS
#       (xfs: nouuid, as every image has the same).
#   blk_record: $WORK/disk.img of a fresh $FS (128 MB; xfs 320 MB, mkfs.xfs refuses less
#       than 300 MB), copied to $WORK/base.img, served by `blockrec serve` at $WORK/rec
#       (log $WORK/rec.log), a loop device over it, mounted at $WORK/mnt.
#   blk_detach: unmount $WORK/mnt, detach its loop device, stop the recorder.
#   blk_attach IMAGE DIR: a loop device over IMAGE, mounted at DIR (sets LOOP).

blk_start() {
    local name=$1; shift
    case "$FS" in
        ext4|xfs) ;;
        *) echo "$name: --fs ext4 or xfs" >&2; exit 2 ;;
    esac
    if [ "${RINGLET_BLK_NS:-}" != 1 ]; then
        RINGLET_BLK_NS=1 exec unshare -m --propagation private -- bash "$0" "$@"
    fi
    local root target
    root=$(cd "$(dirname "$0")/.." && pwd)
    target=${CARGO_TARGET_DIR:-$root/target}
    if [ -z "${RINGLET:-}" ] || [ -z "${BLOCKREC:-}" ]; then
        (cd "$root" && cargo build --release -q -p ringlet -p ringlet-bench)
        RINGLET=$target/release/ringlet
        BLOCKREC=$target/release/blockrec
    fi
    WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-$name.XXXXXX")
    PID="" REC="" LOOP=""
    MOUNT_OPTS=""
    [ "$FS" = xfs ] && MOUNT_OPTS="-o nouuid"
    trap blk_cleanup EXIT
    trap 'exit 1' INT TERM
    mkdir -p "$WORK/rec" "$WORK/mnt"
}

blk_cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    local m l
    for m in "$WORK"/mnt "$WORK"/cm; do
        mountpoint -q "$m" 2>/dev/null && { timeout 30 umount "$m" || timeout 30 umount -l "$m"; }
    done
    [ -n "$LOOP" ] && timeout 30 losetup -d "$LOOP"
    for l in $(losetup -j "$WORK/crash/crash.img" -O NAME -n 2>/dev/null) \
             $(losetup -j "$WORK/disk.img" -O NAME -n 2>/dev/null); do
        timeout 30 losetup -d "$l"
    done
    mountpoint -q "$WORK/rec" 2>/dev/null && { timeout 30 umount "$WORK/rec" || timeout 30 umount -l "$WORK/rec"; }
    [ -n "$REC" ] && kill "$REC" 2>/dev/null && wait "$REC" 2>/dev/null
    rm -rf "$WORK"
}

blk_record() {
    local size=128M
    [ "$FS" = xfs ] && size=320M
    truncate -s "$size" "$WORK/disk.img"
    if [ "$FS" = ext4 ]; then
        # Inode tables and journal written now, not by the kernel in the background later.
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$WORK/disk.img"
    else
        mkfs.xfs -q -f "$WORK/disk.img"
    fi
    cp --sparse=always "$WORK/disk.img" "$WORK/base.img"
    "$BLOCKREC" serve --image "$WORK/disk.img" --log "$WORK/rec.log" "$WORK/rec" 2>"$WORK/rec.err" &
    REC=$!
    for _ in $(seq 100); do [ -e "$WORK/rec/disk.img" ] && break; sleep 0.05; done
    [ -e "$WORK/rec/disk.img" ] || { cat "$WORK/rec.err" >&2; echo "the recorder did not mount" >&2; exit 1; }
    blk_attach "$WORK/rec/disk.img" "$WORK/mnt"
}

blk_attach() {
    LOOP=$(timeout 30 losetup -f --show "$1")
    # shellcheck disable=SC2086
    timeout 60 mount $MOUNT_OPTS "$LOOP" "$2"
}

blk_detach() {
    timeout 60 umount "$WORK/mnt" || timeout 30 umount -l "$WORK/mnt"
    timeout 30 losetup -d "$LOOP"; LOOP=""
    timeout 30 umount "$WORK/rec"
    wait "$REC" || true; REC=""
}
