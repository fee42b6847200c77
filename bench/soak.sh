#!/bin/bash
# soak.sh: the daemon under the Ganglia load for hours, killed with kill -9 at every cycle
# (issue 21). Not a test: a bench run (2 hours by default).
#
# Starts `ringlet serve -w 300` on an empty store (base directory and store in a directory of
# its own, under $SCRATCH when run by ../shared/bin/bounded), creates the Ganglia series
# (`feed --workload ganglia --phase setup`: 26,000 at --scale 1), then, every cycle:
#   - the real-time Ganglia load (`feed --workload ganglia --phase run --realtime`) for the
#     cycle, and beside it `blockrec load`: 20 series of one-second rows, a batch of 10
#     updates each every second, each batch acknowledged by FLUSHALL and its number appended
#     to a marks file once acknowledged;
#   - at the cycle's end: the daemon's RSS (VmRSS, and its peak VmHWM; from its STATS, the
#     archive rows it holds, the log since the newest checkpoint and the checkpoints it
#     wrote in the cycle), then kill -9, then
#     the store checked with the daemon down (`blockrec verify`: every acknowledged update
#     of the 20 series there, every value the one sent, no update after a lost one), then the
#     daemon started again (seconds until it answers PING) and the next cycle.
# Prints a line a cycle and the totals; exits non-zero if a check failed.
#
# --log-size SIZE: the store is created with a log ring of SIZE and no per-series share
# (RINGLET_LOG_SIZE, RINGLET_LOG_PER_SERIES=0), so that checkpoints come within the soak:
# with the default ring (2 KiB a series) the first comes after about 2.3 h of this load.
#
# usage: bench/soak.sh [--duration 2h] [--every 10m] [--scale 1] [--log-size SIZE]
set -euo pipefail
DURATION=2h EVERY=10m SCALE=1 LOGSIZE=""
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION=$2; shift 2 ;;
        --every) EVERY=$2; shift 2 ;;
        --scale) SCALE=$2; shift 2 ;;
        --log-size) LOGSIZE=$2; shift 2 ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "usage: $0 [--duration 2h] [--every 10m] [--scale F] [--log-size SIZE]" >&2; exit 2 ;;
    esac
done
secs() {
    case "$1" in
        *h) echo $(( ${1%h} * 3600 )) ;;
        *m) echo $(( ${1%m} * 60 )) ;;
        *s) echo "${1%s}" ;;
        *) echo "$1" ;;
    esac
}
TOTAL=$(secs "$DURATION") CYCLE=$(secs "$EVERY")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
# $RINGLET, $FEED and $BLOCKREC, when all set, are used as they are (a copy of the build,
# so that a build during the soak does not change what the restarts run).
if [ -z "${RINGLET:-}" ] || [ -z "${FEED:-}" ] || [ -z "${BLOCKREC:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
    RINGLET=$TARGET/release/ringlet
    FEED=$TARGET/release/feed
    BLOCKREC=$TARGET/release/blockrec
fi
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-soak.XXXXXX")
PID="" LOAD="" FEEDPID=""
cleanup() {
    for p in $LOAD $FEEDPID $PID; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$WORK/base"
if [ -n "$LOGSIZE" ]; then
    export RINGLET_LOG_SIZE=$LOGSIZE RINGLET_LOG_PER_SERIES=0
fi
# shellcheck source=bench/serve-lib.sh
. "$(dirname "$0")/serve-lib.sh"

serve_start
"$FEED" --workload ganglia --scale "$SCALE" --proto rrdcached --target "unix:$WORK/s.sock" \
    --phase setup >/dev/null
touch "$WORK/marks"
PER=10 SERIES=20
# One batch a second for the whole soak, and some room.
ROWS=$(( (TOTAL + 600) * PER ))
echo "soak.sh: $DURATION, kill -9 every $EVERY, Ganglia load at scale $SCALE, log ring ${LOGSIZE:-default}; empty store opened in ${OPEN} s"
start=$(date +%s) cycle=0 fails=0 from=0
while [ $(( $(date +%s) - start )) -lt "$TOTAL" ]; do
    cycle=$((cycle + 1))
    left=$(( TOTAL - ($(date +%s) - start) ))
    d=$(( CYCLE < left ? CYCLE : left ))
    "$FEED" --workload ganglia --scale "$SCALE" --proto rrdcached --target "unix:$WORK/s.sock" \
        --phase run --realtime --duration "${d}s" >"$WORK/feed.out" 2>&1 &
    FEEDPID=$!
    "$BLOCKREC" load --socket "$WORK/s.sock" --marks "$WORK/marks" --series "$SERIES" \
        --per "$PER" --batches 1000000000 --from "$from" --pace-ms 1000 --rows "$ROWS" \
        2>"$WORK/load.err" &
    LOAD=$!
    sleep "$d"
    rss=$(proc_mb "$PID" VmRSS) hwm=$(proc_mb "$PID" VmHWM)
    # The store's archive rows in memory and the log since the newest checkpoint (STATS).
    st=$("$RINGLET" stats --daemon "unix:$WORK/s.sock" 2>/dev/null || true)
    heap=$(echo "$st" | awk '/^ArchiveHeapBytes:/ {printf "%.0f", $2 / 1048576}')
    since=$(echo "$st" | awk '/^LogSinceCheckpoint:/ {printf "%.0f", $2 / 1048576}')
    ckpts=$(echo "$st" | awk '/^JournalRotate:/ {print $2}')
    kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
    wait "$LOAD" 2>/dev/null || true; LOAD=""
    kill "$FEEDPID" 2>/dev/null || true; wait "$FEEDPID" 2>/dev/null || true; FEEDPID=""
    late=$(grep -o 'late_steps=[0-9]*' "$WORK/feed.out" | tail -1)
    acked=$(grep -v '^created' "$WORK/marks" | tail -1)
    [ -n "$acked" ] || acked=created
    rm -f "$WORK/s.sock"
    set +e
    said=$("$BLOCKREC" verify --store "$WORK/store" --series "$SERIES" --per "$PER" --acked "$acked")
    rc=$?
    set -e
    [ "$rc" = 0 ] || fails=$((fails + 1))
    serve_start
    echo "cycle $cycle: ${d} s; RSS ${rss} MB (peak ${hwm} MB, archive rows ${heap:-?} MB, log since checkpoint ${since:-?} MB, ${ckpts:-?} checkpoints written in the cycle) at kill -9; acknowledged up to batch $acked; check: $([ "$rc" = 0 ] && echo ok || echo FAILED) ($said); open after kill -9 ${OPEN} s, RSS $(proc_mb "$PID" VmRSS) MB; feed ${late:-late_steps=?}"
    [ "$acked" = created ] || from=$((acked + 1))
done
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
echo "soak.sh: $cycle cycles, $fails failed checks; store $(du -sm "$WORK/store" | cut -f1) MB"
[ "$fails" = 0 ]
