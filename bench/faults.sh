#!/bin/bash
# faults.sh: a disk that fails under the daemon (issue 21), with bench's `blockrec`.
#
# The daemon's store on ext4 or xfs on a loop device over blockrec's FUSE recorder (as
# crash.sh), and `blockrec faults` as the client: a few batches acknowledged by FLUSHALL,
# then the disk answers every write (--fail fail-writes) or every flush (fail-flushes) with
# EIO, and the client prints what the daemon said to a batch of updates, to FLUSHALL, to an
# UPDATE and to a FETCH; then the disk heals and FLUSHALL is tried again. The daemon is
# stopped (kill -9: after a failed write it may not write again), the file system unmounted,
# and the disk's image mounted afresh (what reached it, the journal replayed): the store is
# opened and checked (`blockrec verify`: every acknowledged update there, no wrong value),
# then the daemon started on it and a FETCH through it compared.
#
# Prints the client's lines and `STORE: ...`, `SERVED AFTER RESTART: ...`; exits non-zero
# if a step is not as it must be:
#   - FLUSHALL on the failing disk is refused (the values are not acknowledged),
#   - FETCH never serves an update past the acknowledged ones while the disk fails,
#   - the store holds every acknowledged update after the restart, and no wrong value.
#
# Needs root, /dev/fuse, losetup, mkfs.ext4 or mkfs.xfs; runs in a mount namespace of its own
# (re-executed under `unshare -m`); everything under a directory of its own in $SCRATCH (or
# $TMPDIR, /tmp), removed at the end with its loop devices and mounts.
#
# usage: bench/faults.sh [--fs ext4|xfs] [--fail fail-writes|fail-flushes] [--series 20]
set -euo pipefail
FS=ext4 FAIL=fail-flushes SERIES=20 PER=10 GOOD=5
while [ $# -gt 0 ]; do
    case "$1" in
        --fs) FS=$2; shift 2 ;;
        --fail) FAIL=$2; shift 2 ;;
        --series) SERIES=$2; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "usage: $0 [--fs ext4|xfs] [--fail fail-writes|fail-flushes] [--series N]" >&2; exit 2 ;;
    esac
done
case "$FAIL" in
    fail-writes|fail-flushes) ;;
    *) echo "faults.sh: --fail fail-writes or fail-flushes" >&2; exit 2 ;;
esac
# shellcheck source=bench/blockdev-lib.sh
. "$(dirname "$0")/blockdev-lib.sh"
blk_start faults --fs "$FS" --fail "$FAIL" --series "$SERIES"

start_daemon() {
    "$RINGLET" serve -g -w 300 -l "unix:$WORK/s.sock" -b "$WORK/mnt/base" \
        --store "$WORK/mnt/store" >>"$WORK/serve.log" 2>&1 &
    PID=$!
    until [ -S "$WORK/s.sock" ]; do
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
        sleep 0.05
    done
}

blk_record
mkdir -p "$WORK/mnt/base"
start_daemon
OUT=$(timeout 300 "$BLOCKREC" faults --socket "$WORK/s.sock" --marks "$WORK/rec/marks" \
    --control "$WORK/rec/control" --fail "$FAIL" --series "$SERIES" --per "$PER" --good "$GOOD")
echo "$OUT"
kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
rm -f "$WORK/s.sock"
echo "LOGGED: $(grep -ciE 'failed|error' "$WORK/serve.log") lines of failure; first: $(grep -iE 'failed|error' "$WORK/serve.log" | head -1)"
# What reached the disk: unmount (after a failed write the file system may refuse), detach,
# and mount the image afresh.
blk_detach
blk_attach "$WORK/disk.img" "$WORK/mnt"
ACKED=$(echo "$OUT" | awk -F': ' '/^ACKED:/ { print $2 }')
set +e
STORE=$(timeout 120 "$BLOCKREC" verify --store "$WORK/mnt/store" --series "$SERIES" --per "$PER" --acked "$ACKED")
rc=$?
set -e
echo "STORE: $STORE"
start_daemon
SERVED=$(python3 - "$WORK/s.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
f = s.makefile("rw")
f.write("FETCH s000.rrd LAST 1700000000 1700001000\n"); f.flush()
n = int(f.readline().split()[0])
lines = [f.readline().strip() for _ in range(max(n, 0))]
vals = [l.split(": ") for l in lines if ": " in l and l.split(": ")[0].isdigit()]
last = max([int(t) - 1700000000 for t, v in vals if float(v) == float(v)], default=0)
print(f"the last update with a value is {last}")
PY
)
echo "SERVED AFTER RESTART: $SERVED"
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
timeout 60 umount "$WORK/mnt"
timeout 30 losetup -d "$LOOP"; LOOP=""

fail=0
echo "$OUT" | grep -q '^FLUSHALL ON THE FAILING DISK: -' || { echo "faults.sh: FLUSHALL was acknowledged on the failing disk" >&2; fail=1; }
acked_n=$(( (ACKED + 1) * PER ))
last=$(echo "$OUT" | sed -n 's/^FETCH AFTER: the last update with a value is \([0-9]*\).*/\1/p')
if [ -n "$last" ] && [ "$last" -gt "$acked_n" ]; then
    echo "faults.sh: FETCH served update $last, past the $acked_n acknowledged, while the disk failed" >&2; fail=1
fi
[ "$rc" = 0 ] || { echo "faults.sh: the store after the restart is not right (verify: $rc)" >&2; fail=1; }
served=$(echo "$SERVED" | sed -n 's/.* is \([0-9]*\)$/\1/p')
[ "${served:-0}" -ge "$acked_n" ] || { echo "faults.sh: after the restart the daemon served up to $served of $acked_n" >&2; fail=1; }
exit $fail
