#!/bin/bash
# million.sh: issue 19's million-series run, memory and open time (the device bytes per
# sample of the same load come from `bench/peers.sh --workload million`).
#
# Starts `ringlet serve -w 300` on an empty store (base directory and store in a directory
# of its own, under $SCRATCH when run by ../shared/bin/bounded), creates the series with
# `feed --workload million --phase setup` (1,000,000 collectd-like series: one GAUGE at 10 s,
# archives 1 min x 1 day, 10 min x 30 days, 1 h x 1 year; `--scale F` keeps a fraction),
# then feeds them in real time for --load D. It prints the daemon's RSS after the creates,
# every minute of the load and at its end (VmRSS, its anonymous and file-backed parts, the peak
# VmHWM, and the archive rows held: STATS ArchiveHeapBytes), feed's RESULT line
# (samples, late steps), then the open (seconds until the socket answers PING, and the RSS
# after it) after `kill -9` (replaying the log since the last checkpoint) and after a clean
# stop. The daemon is stopped by its pid at the end, also on failure.
#
# At a fraction of the series the log ring starts at that fraction of the default 64 MiB
# (unless $RINGLET_LOG_SIZE is set), so that it grows with the series (2 KiB each,
# --log-per-series) at the same points as the full run's, and a run at 1/10 checkpoints as
# often as the full run would. The ring's size is printed after the creates.
#
# With --fill, then: the same load accelerated (virtual time after the real-time load's) until
# the log since the newest checkpoint is about 0.8 of the ring (a lagged checkpoint comes at
# 7/8), then kill -9 and the open that replays it: the worst replay after a crash.
#
# usage: bench/million.sh [--scale F] [--load 30m] [--fill]   (default: --scale 1, --load 30m)
set -euo pipefail
SCALE=1
LOAD=30m
FILL=0
while [ $# -gt 0 ]; do
    case "$1" in
        --scale) SCALE=$2; shift 2 ;;
        --load) LOAD=$2; shift 2 ;;
        --fill) FILL=1; shift ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "usage: $0 [--scale F] [--load 30m] [--fill]" >&2; exit 2 ;;
    esac
done
if [ -z "${RINGLET_LOG_SIZE:-}" ]; then
    RINGLET_LOG_SIZE="$(awk -v f="$SCALE" 'BEGIN { k = int(65536 * f / 4 + 0.5) * 4; if (k < 1024) k = 1024; print k }')K"
    export RINGLET_LOG_SIZE
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
RINGLET=$TARGET/release/ringlet
FEED=$TARGET/release/feed
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-million.XXXXXX")
PID="" MON=""
cleanup() {
    [ -n "$MON" ] && kill "$MON" 2>/dev/null
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$WORK/base"

# shellcheck source=bench/serve-lib.sh
. "$(dirname "$0")/serve-lib.sh"

# The daemon's memory: VmRSS (its anonymous and file-backed parts), the peak VmHWM, and the
# archive rows it holds (STATS ArchiveHeapBytes).
mem() {
    echo "RSS $(proc_mb "$PID" VmRSS) MB (anon $(proc_mb "$PID" RssAnon), file $(proc_mb "$PID" RssFile); peak $(proc_mb "$PID" VmHWM) MB), archive heap $("$RINGLET" stats -d "unix:$WORK/s.sock" | awk '$1 == "ArchiveHeapBytes:" { printf "%.0f", $2 / 1048576 }') MB"
}

serve_start
echo "million.sh: scale $SCALE, load $LOAD, log ring $RINGLET_LOG_SIZE; empty store opened in ${OPEN} s"
t0=$(date +%s)
"$FEED" --workload million --scale "$SCALE" --proto rrdcached --target "unix:$WORK/s.sock" \
    --phase setup | grep '^RESULT' || true
echo "  created in $(( $(date +%s) - t0 )) s: $(mem)"
echo "  $("$RINGLET" stats -d "unix:$WORK/s.sock" | grep -E '^(LogRingBytes|JournalRotate|JournalBytes)' | tr '\n' ' ')"
( while sleep 60; do
    echo "  load: $(mem)"
  done ) &
MON=$!
"$FEED" --workload million --scale "$SCALE" --proto rrdcached --target "unix:$WORK/s.sock" \
    --phase run --realtime --duration "$LOAD" | grep '^RESULT' || true
kill "$MON"; MON=""
echo "  after the load: $(mem)"
echo "  $("$RINGLET" stats -d "unix:$WORK/s.sock" | grep -E '^(LogRingBytes|LogSinceCheckpoint|JournalRotate|JournalBytes)' | tr '\n' ' ')"
echo "  store: $(du -sm "$WORK/store" | cut -f1) MB; base: $(du -sm "$WORK/base" | cut -f1) MB"
kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
serve_start
echo "  open after kill -9: ${OPEN} s, $(mem)"
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
serve_start
echo "  open after a clean stop: ${OPEN} s, $(mem)"
if [ "$FILL" = 1 ]; then
    stat() { "$RINGLET" stats -d "unix:$WORK/s.sock" | awk -v k="$1:" '$1 == k { print $2 }'; }
    ring=$(stat LogRingBytes) since=$(stat LogSinceCheckpoint)
    series=$(stat TreeNodesNumber)
    # About 1.75 bytes of record a sample, one sample a series every 10 s.
    secs=$(awk -v r="$ring" -v s="$since" -v n="$series" \
        'BEGIN { d = (0.8 * r - s) / 1.75 / n * 10; if (d < 600) d = 600; printf "%d", d }')
    start=$(( $(date +%s) + 60 ))
    t0=$(date +%s)
    "$FEED" --workload million --scale "$SCALE" --proto rrdcached --target "unix:$WORK/s.sock" \
        --phase run --accelerated --start "$start" --duration "$secs" | grep '^RESULT' || true
    echo "  filled in $(( $(date +%s) - t0 )) s ($secs s of virtual time): $("$RINGLET" stats -d "unix:$WORK/s.sock" | grep -E '^(LogRingBytes|LogSinceCheckpoint|JournalRotate)' | tr '\n' ' ')"
    kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
    serve_start
    echo "  open after kill -9 with the ring filled: ${OPEN} s, RSS $(proc_mb "$PID" VmRSS) MB (peak $(proc_mb "$PID" VmHWM) MB)"
    grep -E 'replayed|open took|store opened' "$WORK/serve.log" | tail -2 | sed 's/^/  log: /'
fi
