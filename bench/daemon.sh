#!/bin/bash
# daemon.sh: ingest throughput of ringlet serve and rrdcached, same machine, same run.
#
# For each transport (unix socket, 127.0.0.1 TCP), mode (UPDATE lines, BATCH blocks) and daemon
# (ringlet, then rrdcached, in turns) it starts a fresh daemon in its own temp directory
# (-g -b DIR -w 300; rrdcached also -B -j JOURNAL), CREATEs the series through the daemon,
# then times daemon-load's updates and reads the daemon's CPU (utime+stime), peak RSS
# (VmHWM) and bytes written (write_bytes, up to the end of FLUSHALL) from /proc, then times
# FLUSHALL until every series is written (the work both
# daemons defer to -w: rrdcached writes the .rrd files, ringlet applies its queues and
# commits). For ringlet it also prints what `ringlet stats` reports it wrote. Each daemon is
# stopped by its pid afterwards, also on failure.
# Each run ends with a FETCH check of 5 series against the values sent (rrdcached writes
# the file first on FETCH).
#
# usage: bench/daemon.sh [--series N] [--updates U] [--conns C] [--only ringlet|rrdcached]
#        (defaults 10000, 2000000, 4; binaries from $CARGO_TARGET_DIR or ./target, release)
set -euo pipefail

SERIES=10000
UPDATES=2000000
CONNS=4
ONLY=""
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --series) SERIES=$2; shift 2 ;;
        --updates) UPDATES=$2; shift 2 ;;
        --conns) CONNS=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "usage: $0 [--series N] [--updates U] [--conns C] [--only ringlet|rrdcached] [-- daemon-load options]" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
RINGLET=$TARGET/release/ringlet
LOAD=$TARGET/release/daemon-load
RRDCACHED=${RRDCACHED:-/usr/bin/rrdcached}

WORK=$(mktemp -d /tmp/daemonbench.XXXXXX)
PID=""
stop_daemon() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill "$PID"
        for _ in $(seq 1 600); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$PID" 2>/dev/null && kill -9 "$PID"
    fi
    PID=""
}
cleanup() { stop_daemon; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

wait_for() { # socket path or host:port
    for _ in $(seq 1 100); do
        case "$1" in
            /*) [ -S "$1" ] && return 0 ;;
            *) (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null && return 0 ;;
        esac
        sleep 0.1
    done
    echo "daemon did not come up on $1" >&2; exit 1
}

PORT=$((42000 + RANDOM % 2000))
RESULTS=$WORK/results
: >"$RESULTS"
echo "series=$SERIES updates=$UPDATES conns=$CONNS cores=$(nproc) $(uname -r)"
# The two daemons take turns on each workload, so that a busy moment on a shared machine
# hits both alike.
for transport in unix tcp; do
    for mode in update batch; do
        for daemon in ringlet rrdcached; do
            [ -n "$ONLY" ] && [ "$ONLY" != "$daemon" ] && continue
            D=$WORK/$daemon-$transport-$mode
            mkdir -p "$D/base" "$D/journal"
            PORT=$((PORT + 1))
            SOCK=$D/sock
            case "$transport" in
                unix) ADDR=unix:$SOCK; READY=$SOCK ;;
                tcp) ADDR=127.0.0.1:$PORT; READY=$ADDR ;;
            esac
            case "$daemon" in
                ringlet) "$RINGLET" serve -g --store "$D/store" -b "$D/base" -w 300 \
                        -l "unix:$SOCK" -l "127.0.0.1:$PORT" -p "$D/pid" >"$D/log" 2>&1 & ;;
                rrdcached) "$RRDCACHED" -g -b "$D/base" -B -j "$D/journal" -w 300 \
                        -p "$D/pid" -l "unix:$SOCK" -l "127.0.0.1:$PORT" >"$D/log" 2>&1 & ;;
            esac
            PID=$!
            wait_for "$READY"
            "$LOAD" --connect "$ADDR" --create --series "$SERIES" --updates "$UPDATES" \
                --conns "$CONNS" --mode "$mode" --pid "$PID" \
                --label "$daemon/$transport" --flush --check 5 "${EXTRA[@]}" | tee "$D/out"
            grep '^RESULT' "$D/out" >>"$RESULTS"
            if [ "$daemon" = ringlet ]; then
                # What ringlet wrote (its own STATS keys; CREATE's .rrd files included).
                "$RINGLET" stats -d "$ADDR" | grep -E '^(DiskBytes|Fsyncs|Commits|DataSets|ApplyErrors)' \
                    | tr '\n' ' '; echo
            fi
            stop_daemon
            rm -rf "$D"
        done
    done
done

echo
echo "| daemon/socket | mode | updates | seconds | updates/s | daemon CPU s per 100k | peak RSS MB | errors | FLUSHALL s | FLUSHALL CPU s | CPU s per 100k incl. FLUSHALL | disk bytes per update incl. FLUSHALL |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
while read -r line; do
    declare -A f=()
    for kv in ${line#RESULT }; do f[${kv%%=*}]=${kv#*=}; done
    total=-
    if [ -n "${f[cpu]:-}" ] && [ -n "${f[flush_cpu]:-}" ]; then
        total=$(awk -v c="${f[cpu]}" -v fc="${f[flush_cpu]}" -v u="${f[updates]}" \
            'BEGIN { printf "%.3f", (c + fc) * 100000 / u }')
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "${f[label]}" "${f[mode]}" \
        "${f[updates]}" "${f[seconds]}" "${f[rate]}" "${f[cpu_per_100k]:--}" \
        "$(( ${f[rss_kb]:-0} / 1024 ))" "${f[errors]}" "${f[flush_seconds]:--}" "${f[flush_cpu]:--}" "$total" \
        "${f[disk_per_update]:--}"
    unset f
done < <(for daemon in ringlet rrdcached; do for transport in unix tcp; do
    grep " label=$daemon/$transport " "$RESULTS" || true; done; done)
