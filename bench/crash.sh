#!/bin/bash
# crash.sh: power cuts at the block device (issue 21), with bench's `blockrec`.
#
# Makes an ext4 or xfs image, serves it through blockrec's FUSE recorder (every write and
# flush that reaches the image logged), puts a loop device over it, mounts it, and runs
# `ringlet serve -w 1` with its store and base directory there while `blockrec load` sends
# updates through the rrdcached socket (series of one-second LAST rows, FLUSHALL after each
# batch, a mark in the recorder's log once each is acknowledged; a small log ring, so that
# checkpoints, segments and the ring's growth are all in the recording). Then the daemon is killed
# (kill -9), and from the image as it was before the run and the log, `blockrec crash` builds
# crash images one at a time: the state at flushes, and states between two flushes with a
# random part of the writes since the last one lost. Each is mounted (the file system replays
# its journal), the store opened as the daemon opens it, and every series checked: every
# acknowledged update there, every value there the one sent, what is there a prefix of what
# was sent (`blockrec verify`). Prints a line an image and the counts; exits non-zero if any
# image fails.
#
# Needs root, /dev/fuse, losetup, mkfs.ext4 or mkfs.xfs. Runs in a mount namespace of its own (re-executed under `unshare -m` unless already in one
# made for it, as ../shared/bin/bounded makes); everything lives under a directory of its own
# in $SCRATCH (or $TMPDIR, /tmp), removed at the end with the loop devices and mounts. Root.
#
# With --control N, the same recording then gives N images of a lying disk (one that
# acknowledges flushes it has not made durable: each image also loses blocks the flush
# before it promised); the checks must find losses there, or the run fails.
#
# usage: bench/crash.sh [--fs ext4|xfs] [--images 1000] [--series 20] [--batches 100]
#                       [--per 10] [--seed 1] [--log-size 256K] [--control N]
set -euo pipefail
FS=ext4 IMAGES=1000 SERIES=20 BATCHES=100 PER=10 SEED=1 LOGSIZE=256K CONTROL=0
while [ $# -gt 0 ]; do
    case "$1" in
        --fs) FS=$2; shift 2 ;;
        --images) IMAGES=$2; shift 2 ;;
        --series) SERIES=$2; shift 2 ;;
        --batches) BATCHES=$2; shift 2 ;;
        --per) PER=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --log-size) LOGSIZE=$2; shift 2 ;;
        --control) CONTROL=$2; shift 2 ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        *) echo "usage: $0 [--fs ext4|xfs] [--images N] [--series N] [--batches B] [--per M] [--seed S] [--log-size SIZE] [--control N]" >&2; exit 2 ;;
    esac
done
# shellcheck source=bench/blockdev-lib.sh
. "$(dirname "$0")/blockdev-lib.sh"
blk_start crash --fs "$FS" --images "$IMAGES" --series "$SERIES" --batches "$BATCHES" --per "$PER" \
    --seed "$SEED" --log-size "$LOGSIZE" --control "$CONTROL"
mkdir -p "$WORK/cm"
t0=$(date +%s)
blk_record
mkdir -p "$WORK/mnt/base"
# A small ring that grows with the series (8 KiB each): checkpoints come every few dozen
# commits, and the ring is replaced (built, renamed over the log) as series are created.
"$RINGLET" serve -g -w 1 --log-size "$LOGSIZE" --log-per-series 8K -l "unix:$WORK/s.sock" -b "$WORK/mnt/base" \
    --store "$WORK/mnt/store" >"$WORK/serve.log" 2>&1 &
PID=$!
until [ -S "$WORK/s.sock" ]; do
    kill -0 "$PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
    sleep 0.05
done
timeout 600 "$BLOCKREC" load --socket "$WORK/s.sock" --marks "$WORK/rec/marks" \
    --series "$SERIES" --batches "$BATCHES" --per "$PER"
# The power cut: nothing more from the daemon; what the file system writes at unmount is
# recorded too (images are cut at every point of the log anyway).
kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
blk_detach
t1=$(date +%s)
echo "crash.sh: $FS, $SERIES series x $BATCHES batches of $PER updates recorded in $((t1 - t0)) s: $(du -k "$WORK/rec.log" | cut -f1) KB of log"

cat >"$WORK/check.sh" <<EOF
#!/bin/bash
# One crash image: mount it (journal replay), open and check the store, unmount.
set -u
L=\$(timeout 30 losetup -f --show "\$IMAGE") || { echo "losetup failed"; exit 3; }
if ! timeout 60 mount $MOUNT_OPTS "\$L" "$WORK/cm" 2>"$WORK/mount.err"; then
    echo "the file system does not mount: \$(head -c 300 "$WORK/mount.err")"
    timeout 30 losetup -d "\$L"
    exit 4
fi
timeout 120 "$BLOCKREC" verify --store "$WORK/cm/store" --series $SERIES --per $PER --acked "\$ACKED"
rc=\$?
timeout 60 umount "$WORK/cm" || rc=5
timeout 30 losetup -d "\$L" || rc=5
exit \$rc
EOF
"$BLOCKREC" crash --base "$WORK/base.img" --log "$WORK/rec.log" --work "$WORK/crash" \
    --images "$IMAGES" --seed "$SEED" -- bash "$WORK/check.sh"
echo "crash.sh: $FS: $IMAGES images checked in $(( $(date +%s) - t1 )) s"
if [ "$CONTROL" -gt 0 ]; then
    t2=$(date +%s)
    "$BLOCKREC" crash --base "$WORK/base.img" --log "$WORK/rec.log" --work "$WORK/crash" \
        --images "$CONTROL" --seed "$SEED" --disk lying -- bash "$WORK/check.sh" | grep -v '^ok'
    echo "crash.sh: $FS: $CONTROL images of a lying disk checked in $(( $(date +%s) - t2 )) s"
fi
