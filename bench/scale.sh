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
#     the best of 3 runs, warm page cache; then the same cold (the store's files, or the
#     .rrd file, dropped from the page cache with posix_fadvise before each run);
#   - a 30-day xport of 20 series (AVERAGE, one DEF and XPORT each) the same ways, warm;
#   - with --load D (default 10m; 0: none): the real-time Ganglia load of bench/peers.sh (feed
#     --workload ganglia, its 10-second updates) sent to those series through the daemon for D,
#     then the daemon's RSS (and peak), feed's RESULT line (late steps), and the open after
#     kill -9 (replaying the load's log).
#   - with --fill as well: after that open, the same load accelerated (virtual time after the
#     real-time load's) until the log since the newest checkpoint is about 0.8 of the ring (a
#     lagged checkpoint comes at 7/8), then kill -9 and the open that replays it: the worst
#     replay after a crash with the default ring. With --keep DIR too, the store as kill -9
#     left it is copied to DIR/store (and DIR/base) first, to replay again or profile:
#     `ringlet serve --store DIR/store -b DIR/base -l unix:SOCK -g` on a copy of it.
# The cold fetch beside the daemon evicts the store's files, not the daemon's memory: it
# shows what a read costs when its stored chunks left the page cache.
# Everything lives in a directory of its own (under $SCRATCH when run by
# ../shared/bin/bounded); the daemon is stopped by its pid at the end, also on failure.
#
# usage: bench/scale.sh [--series N] [--days "1 30 365"] [--load 10m] [--fill [--keep DIR]]
#        (default 260 series: 1/100 of 26,000)
set -euo pipefail
SERIES=260
DAYS="1 30 365"
LOAD=10m
FILL=0
KEEP=""
while [ $# -gt 0 ]; do
    case "$1" in
        --series) SERIES=$2; shift 2 ;;
        --days) DAYS=$2; shift 2 ;;
        --load) LOAD=$2; shift 2 ;;
        --fill) FILL=1; shift ;;
        --keep) KEEP=$2; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "usage: $0 [--series N] [--days \"1 30 365\"] [--load 10m] [--fill [--keep DIR]]" >&2; exit 2 ;;
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
# shellcheck source=bench/serve-lib.sh
. "$(dirname "$0")/serve-lib.sh"
# The history ends at the last full hour, so that the load (now) continues it rather than
# first filling days of unknown rows, as a store restarted after a gap would.
END=$(( $(date +%s) / 3600 * 3600 ))
NAME=cluster/host0/metric1.rrd
XNAMES=$(seq 0 19 | awk '{ printf "cluster/host%d/metric%d.rrd\n", int($1 * 7 / 20), $1 * 7 }')

# xport's arguments for 20 series over 30 days, each series at "$1<name>"
xargs_for() {
    local i=0 n
    echo -s $((END - 30 * 86400)) -e "$END"
    for n in $XNAMES; do
        echo "DEF:v$i=$1$n:sum:AVERAGE XPORT:v$i"
        i=$((i + 1))
    done
}

# drop every file under the given paths from the page cache
evict() {
    python3 - "$@" <<'PY'
import os, sys
for top in sys.argv[1:]:
    for root, _, files in ([(os.path.dirname(top), None, [os.path.basename(top)])]
                           if os.path.isfile(top) else os.walk(top)):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
PY
}

start_daemon() {
    serve_start
    RSS=$(proc_mb "$PID" VmRSS)
    HWM=$(proc_mb "$PID" VmHWM)
}

stop_daemon() {
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
}

# best of 3: "<wall s> <peak MB>" (wall from date(1), including the process start; peak
# RSS from /usr/bin/time); with $EVICT set, the files under those paths are dropped from
# the page cache before each run (best_cold)
best() {
    local best_w=999 best_m=0 out w m
    for _ in 1 2 3; do
        # shellcheck disable=SC2086
        [ -n "${EVICT:-}" ] && evict $EVICT
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

# best of 3, cold: best_cold PATHS COMMAND... (PATHS: one word, or several in quotes)
best_cold() {
    local paths=$1; shift
    EVICT=$paths best "$@"
}

echo "scale.sh: $SERIES gmetad series; one-day fetch of $NAME"
for D in $DAYS; do
    rm -rf "$WORK/store" "$WORK/base" "$WORK/exp" "$WORK/s.sock"
    mkdir -p "$WORK/base"
    "$SYNTH" --store "$WORK/store" --series "$SERIES" --days "$D" --end "$END" >"$WORK/synth.out"
    SIZE=$(du -sk "$WORK/store" | cut -f1)
    # shellcheck disable=SC2086
    "$RINGLET" --store "$WORK/store" export -q "$WORK/exp" "$NAME" $XNAMES >/dev/null
    ALONE=$(best "$RINGLET" --store "$WORK/store" fetch "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    FILE=$(best rrdtool fetch "$WORK/exp/$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    ALONE_COLD=$(best_cold "$WORK/store" "$RINGLET" --store "$WORK/store" fetch "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    FILE_COLD=$(best_cold "$WORK/exp/$NAME" rrdtool fetch "$WORK/exp/$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    mapfile -t XA < <(xargs_for "")
    mapfile -t XF < <(xargs_for "$WORK/exp/")
    # shellcheck disable=SC2206
    X_ALONE=$(best "$RINGLET" --store "$WORK/store" xport ${XA[*]})
    # shellcheck disable=SC2206
    X_FILE=$(best rrdtool xport ${XF[*]})
    start_daemon
    FIRST_OPEN=$OPEN; FIRST_RSS=$RSS; FIRST_HWM=$HWM
    BESIDE=$(best "$RINGLET" --store "$WORK/store" fetch "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    VIA=$(cd "$WORK/base" && best rrdtool fetch --daemon "unix:$WORK/s.sock" "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    BESIDE_COLD=$(best_cold "$WORK/store" "$RINGLET" --store "$WORK/store" fetch "$NAME" AVERAGE -s $((END - 86400)) -e "$END")
    # shellcheck disable=SC2206
    X_BESIDE=$(best "$RINGLET" --store "$WORK/store" xport ${XA[*]})
    # shellcheck disable=SC2206
    X_VIA=$(cd "$WORK/base" && best rrdtool xport --daemon "unix:$WORK/s.sock" ${XA[*]})
    if [ "$LOAD" != 0 ]; then
        RES=$("$FEED" --workload ganglia --proto rrdcached --target "unix:$WORK/s.sock" --phase run \
            --realtime --duration "$LOAD" --scale "$(awk -v n="$SERIES" 'BEGIN { printf "%.9f", n / 26000 }')" \
            --names synth | grep '^RESULT' || true)
        LRSS=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
        LHWM=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
        kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
        start_daemon
        echo "  $D days, after $LOAD of the Ganglia load: RSS ${LRSS} MB (peak ${LHWM} MB); open after kill -9 ${OPEN} s (RSS ${RSS} MB); feed: ${RES#RESULT }"
        if [ "$FILL" = 1 ]; then
            stat() { "$RINGLET" stats -d "unix:$WORK/s.sock" | awk -v k="$1:" '$1 == k { print $2 }'; }
            # Fed in steps towards 0.83 of the ring (a checkpoint at 7/8 would drop it to
            # 3/8): about 1.3 bytes of record a sample at first, then as measured.
            ring=$(stat LogRingBytes) since=$(stat LogSinceCheckpoint) bps=1.3 vt=$(( $(date +%s) + 60 ))
            t0=$(date +%s) RES="" steps=0 total=0
            while awk -v r="$ring" -v s="$since" 'BEGIN { exit !(s < 0.8 * r) }' && [ $steps -lt 20 ]; do
                secs=$(awk -v r="$ring" -v s="$since" -v n="$SERIES" -v b="$bps" \
                    'BEGIN { d = 0.9 * (0.83 * r - s) / b / n * 10; if (d < 300) d = 300; printf "%d", d }')
                RES=$("$FEED" --workload ganglia --proto rrdcached --target "unix:$WORK/s.sock" --phase run \
                    --accelerated --start "$vt" --duration "$secs" \
                    --scale "$(awk -v n="$SERIES" 'BEGIN { printf "%.9f", n / 26000 }')" \
                    --names synth | grep '^RESULT' || true)
                vt=$((vt + secs)) steps=$((steps + 1)) total=$((total + secs))
                now=$(stat LogSinceCheckpoint)
                # A checkpoint came meanwhile: the log since it is shorter; keep the old rate.
                if [ "$now" -gt "$since" ]; then
                    bps=$(awk -v a="$since" -v b="$now" -v d="$secs" -v n="$SERIES" 'BEGIN { printf "%.3f", (b - a) / (d / 10 * n) }')
                fi
                since=$now
            done
            FILLED="$("$RINGLET" stats -d "unix:$WORK/s.sock" | grep -E '^(LogRingBytes|LogSinceCheckpoint)' | tr '\n' ' ')"
            kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
            if [ -n "$KEEP" ]; then
                rm -rf "$KEEP/store" "$KEEP/base"; mkdir -p "$KEEP"
                cp -a "$WORK/store" "$WORK/base" "$KEEP/"
            fi
            start_daemon
            echo "  $D days, filled in $(( $(date +%s) - t0 )) s ($total s of virtual time in $steps steps; last: ${RES#RESULT }): $FILLED"
            echo "  $D days, open after kill -9 with the ring filled: ${OPEN} s (RSS ${RSS} MB, peak ${HWM} MB)"
            grep -E 'replayed|open took|store opened' "$WORK/serve.log" | tail -2 | sed 's/^/    log: /'
        fi
    fi
    stop_daemon
    start_daemon
    stop_daemon
    echo "  $D days: store $((SIZE / 1024)) MB; daemon open ${FIRST_OPEN} s, RSS ${FIRST_RSS} MB (peak ${FIRST_HWM} MB); open after a clean stop ${OPEN} s"
    echo "    fetch: CLI alone $ALONE; CLI beside the daemon $BESIDE; rrdtool --daemon $VIA; rrdtool on a .rrd file $FILE"
    echo "    fetch, cold page cache: CLI alone $ALONE_COLD; CLI beside the daemon $BESIDE_COLD; rrdtool on a .rrd file $FILE_COLD"
    echo "    30-day xport of 20 series: CLI alone $X_ALONE; CLI beside the daemon $X_BESIDE; rrdtool --daemon $X_VIA; rrdtool on .rrd files $X_FILE"
done
