#!/bin/bash
# view.sh: what reading the live view costs (issue 20). Starts `ringlet serve --view` on a
# fresh store (under $SCRATCH when run by ../shared/bin/bounded, whose scratch file system is
# a loop device of its own), creates N series of gmetad's archives (a day of 15-second values
# each), exports them as real .rrd files beside it, then measures:
#   - the device bytes written while 10,000 whole view files are read (`cat`, cycling over the
#     series), after `sync -f` before and after: expected 0; also the daemon's own write_bytes;
#   - the time to open and read one file whole, view against the real file (page cache warm),
#     and `rrdtool info` and `rrdtool fetch` (a process each) on either.
# Needs root and FUSE. The daemon is stopped by its pid at the end (the view unmounts with it).
#
# usage: bench/view.sh [--series N] [--reads N]     (defaults: 100, 10000)
set -euo pipefail
SERIES=100
READS=10000
while [ $# -gt 0 ]; do
    case "$1" in
        --series) SERIES=$2; shift 2 ;;
        --reads) READS=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "usage: $0 [--series N] [--reads N]" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release -q -p ringlet)
RINGLET=$TARGET/release/ringlet
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-view.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/base" "$WORK/mnt"
"$RINGLET" serve -g -w 300 -l "unix:$WORK/s.sock" -b "$WORK/base" --store "$WORK/store" \
    --view "$WORK/mnt" >"$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 200); do mountpoint -q "$WORK/mnt" && [ -S "$WORK/s.sock" ] && break; sleep 0.05; done
mountpoint -q "$WORK/mnt" || { cat "$WORK/serve.log"; echo "view.sh: no view" >&2; exit 1; }
D="unix:$WORK/s.sock"
start=$(( ($(date +%s) - 86400) / 15 * 15 ))
for i in $(seq 0 $((SERIES - 1))); do
    "$RINGLET" create --daemon "$D" "$WORK/base/s$i.rrd" --start "$start" --step 15 \
        DS:sum:GAUGE:30:U:U RRA:AVERAGE:0.5:1:5856 RRA:AVERAGE:0.5:4:20160 \
        RRA:AVERAGE:0.5:40:52704 >/dev/null
    awk -v s="$start" -v i="$i" 'BEGIN { srand(i); v = 50; for (k = 1; k <= 5760; k++) {
        v += rand() - 0.5; printf "%d:%.2f\n", s + 15 * k, v } }' |
        xargs -n 2000 "$RINGLET" update --daemon "$D" "$WORK/base/s$i.rrd"
done
"$RINGLET" export -q --daemon "$D" "$WORK/real" >/dev/null
size=$(stat -c %s "$WORK/mnt/s0.rrd")
cmp "$WORK/mnt/s0.rrd" "$WORK/real/s0.rrd"
echo "view.sh: $SERIES series of gmetad's archives, files of $size bytes (view = export: same bytes)"

dev=$(findmnt -no SOURCE --target "$WORK" | sed 's|^/dev/||')
snap() { awk -v d="$dev" '$3 == d { print $10 * 512 }' /proc/diskstats; }
wbytes() { awk '/^write_bytes/ { print $2 }' "/proc/$PID/io"; }
sync -f "$WORK"
d0=$(snap); w0=$(wbytes)
t0=$(date +%s%N)
for k in $(seq 0 $((READS - 1))); do
    cat "$WORK/mnt/s$((k % SERIES)).rrd" >/dev/null
done
t1=$(date +%s%N)
sync -f "$WORK"
d1=$(snap); w1=$(wbytes)
echo "  $READS whole-file reads of view files: device bytes written ${d0:+$((d1 - d0))} (device $dev), daemon write_bytes $((w1 - w0)), $(( (t1 - t0) / READS / 1000 )) us a read (cat, process start included)"

per() { # label, command...: microseconds a run, over 200 runs
    local label=$1; shift
    local a b
    a=$(date +%s%N)
    for k in $(seq 0 199); do "$@" "$k" >/dev/null; done
    b=$(date +%s%N)
    echo "  $label: $(( (b - a) / 200 / 1000 )) us"
}
catv() { cat "$WORK/mnt/s$(( $1 % SERIES )).rrd"; }
catr() { cat "$WORK/real/s$(( $1 % SERIES )).rrd"; }
infov() { rrdtool info "$WORK/mnt/s$(( $1 % SERIES )).rrd"; }
infor() { rrdtool info "$WORK/real/s$(( $1 % SERIES )).rrd"; }
fetchv() { rrdtool fetch "$WORK/mnt/s$(( $1 % SERIES )).rrd" AVERAGE -s -1d; }
fetchr() { rrdtool fetch "$WORK/real/s$(( $1 % SERIES )).rrd" AVERAGE -s -1d; }
per "cat, view file" catv
per "cat, real file" catr
per "rrdtool info, view file" infov
per "rrdtool info, real file" infor
per "rrdtool fetch -s -1d, view file" fetchv
per "rrdtool fetch -s -1d, real file" fetchr
echo "  daemon RSS $(awk '/^VmRSS/ { print int($2 / 1024) }' "/proc/$PID/status") MB"
