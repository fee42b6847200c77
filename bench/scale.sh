#!/bin/bash
# scale.sh: memory, open time and one-series reads against the history a store holds (issue
# 19). For each history length it builds a store with `synth` (N gmetad series, D days of
# noisy 15-second data), then measures:
#   - ringlet serve: seconds until its socket answers (the store's open), RSS right after
#     (VmRSS) and its peak (VmHWM); stopped with SIGTERM, started again: the open after a
#     clean stop;
#   - a one-day fetch of one series: the CLI on the store alone, the CLI beside the daemon,
#     `rrdtool fetch --daemon` against the daemon, and `rrdtool fetch` of the same series
#     exported as a .rrd file (`ringlet export`): wall seconds and peak RSS (/usr/bin/time),
#     the best of 3 runs, warm page cache;
#   - with --load D (default 10m; 0: none): the real-time Ganglia load of bench/peers.sh (feed
#     --workload ganglia, its 10-second updates) sent to those series through the daemon for D,
#     then the daemon's RSS (and peak), feed's RESULT line (late steps), and the open after
#     kill -9 (replaying the load's log).
# Everything lives in a directory of its own (under $SCRATCH when run by
# ../shared/bin/bounded); the daemon is stopped by its pid at the end, also on failure.
#
# usage: bench/scale.sh [--series N] [--days "1 30 365"] [--load 10m]
#        (default 260 series: 1/100 of 26,000)
set -euo pipefail
SERIES=260
DAYS="1 30 365"
LOAD=10m
while [ $# -gt 0 ]; do
    case "$1" in
        --series) SERIES=$2; shift 2 ;;
        --days) DAYS=$2; shift 2 ;;
        --load) LOAD=$2; shift 2 ;;
        *) echo "usage: $0 [--series N] [--days \"1 30 365\"] [--load 10m]" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
RINGLET=$TARGET/release/ringlet
SYNTH=$TARGET/release/synth
FEED=$TARGET/release/feed
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-scale.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
# The history ends at the last full hour, so that the load (now) continues it rather than
# first filling days of unknown rows, as a store restarted after a gap would.
END=$(( $(date +%s) / 3600 * 3600 ))
NAME=cluster/host0/metric1.rrd

start_daemon() {
    local t0 t1
    t0=$(date +%s.%N)
    "$RINGLET" serve -g -w 300 -l "unix:$WORK/s.sock" -b "$WORK/base" --store "$WORK/store" \
        >>"$WORK/serve.log" 2>&1 &
    PID=$!
    until [ -S "$WORK/s.sock" ] && printf 'PING\n' | timeout 1 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"PING\n")
sys.exit(0 if s.recv(16).startswith(b"0 PONG") else 1)' "$WORK/s.sock" 2>/dev/null; do
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
        sleep 0.02
    done
    t1=$(date +%s.%N)
    OPEN=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    RSS=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
    HWM=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
}

stop_daemon() {
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
}

# best of 3: "<wall s> <peak MB>" (wall from date(1), including the process start; peak
# RSS from /usr/bin/time)
best() {
    local best_w=999 best_m=0 out w m
    for _ in 1 2 3; do
        local t0 t1
        t0=$(date +%s.%N)
        /usr/bin/time -o "$WORK/time" -f "%M" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; cat "$WORK/time" >&2; }
        t1=$(date +%s.%N)
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
        m=$(tail -1 "$WORK/time")
        if awk -v a="$w" -v b="$best_w" 'BEGIN { exit !(a < b) }'; then best_w=$w; best_m=$m; fi
    done
    awk -v w="$best_w" -v m="$best_m" 'BEGIN { printf "%.4f s %.0f MB", w, m / 1024 }'
}

echo "scale.sh: $SERIES gmetad series; one-day fetch of $NAME"
for D in $DAYS; do
    rm -rf "$WORK/store" "$WORK/base" "$WORK/exp" "$WORK/s.sock"
    mkdir -p "$WORK/base"
    "$SYNTH" --store "$WORK/store" --series "$SERIES" --days "$D" --end "$END" >"$WORK/synth.out"
    SIZE=$(du -sk "$WORK/store" | cut -f1)
    "$RINGLET" --store "$WORK/store" export -q "$WORK/exp" "$NAME" >/dev/null
    ALONE=$(best "$RINGLET" --store "$WORK/store" fetch "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    FILE=$(best rrdtool fetch "$WORK/exp/$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    start_daemon
    FIRST_OPEN=$OPEN; FIRST_RSS=$RSS; FIRST_HWM=$HWM
    BESIDE=$(best "$RINGLET" --store "$WORK/store" fetch "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    VIA=$(cd "$WORK/base" && best rrdtool fetch --daemon "unix:$WORK/s.sock" "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    if [ "$LOAD" != 0 ]; then
        RES=$("$FEED" --workload ganglia --proto rrdcached --target "unix:$WORK/s.sock" --phase run \
            --realtime --duration "$LOAD" --scale "$(awk -v n="$SERIES" 'BEGIN { printf "%.9f", n / 26000 }')" \
            --names synth | grep '^RESULT' || true)
        LRSS=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
        LHWM=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
        kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
        start_daemon
        echo "  $D days, after $LOAD of the Ganglia load: RSS ${LRSS} MB (peak ${LHWM} MB); open after kill -9 ${OPEN} s (RSS ${RSS} MB); feed: ${RES#RESULT }"
    fi
    stop_daemon
    start_daemon
    stop_daemon
    echo "  $D days: store $((SIZE / 1024)) MB; daemon open ${FIRST_OPEN} s, RSS ${FIRST_RSS} MB (peak ${FIRST_HWM} MB); open after a clean stop ${OPEN} s"
    echo "    fetch: CLI alone $ALONE; CLI beside the daemon $BESIDE; rrdtool --daemon $VIA; rrdtool on a .rrd file $FILE"
done
