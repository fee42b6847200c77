#!/usr/bin/env bash
# carbon-ingest.sh: how many of carbon's plaintext points a second a store takes, ringlet
# (ringlet serve --carbon) and carbon-cache (Debian's graphite-carbon) in the same run.
#
# Writes SERIES x POINTS lines (`bench.s<i>.value <v> <t>`, ten-second steps, a day back
# from now) to CONNS files, then for each peer: starts it with its data under $SCRATCH (or a
# temporary directory), sends the files over CONNS TCP connections at once (cat to bash's
# /dev/tcp)
# and times until the peer has taken every point: ringlet by its STATS (CarbonPoints),
# carbon-cache (which keeps no count it can be asked for) when the senders are done and its
# sockets' receive queues are empty (every line read into its cache). Prints one line a
# peer: points, seconds, points a second, the peer's CPU seconds and peak RSS.
#
# The first point of each series (which makes it) is sent before the clock starts: the
# figure is the steady rate at which existing series take points.
#
# usage: bench/carbon-ingest.sh [--series 100000] [--points 20] [--conns 4] [--peers "ringlet carbon"]
# Run it under ../shared/bin/bounded (the file is ~45 bytes a point).
set -euo pipefail
series=100000 points=20 conns=4 peers="ringlet carbon"
while [ $# -gt 0 ]; do
    case "$1" in
        --series) series=$2; shift 2 ;;
        --points) points=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --peers) peers=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "carbon-ingest.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RINGLET=${RINGLET:-$ROOT/target/release/ringlet}
W=$(mktemp -d "${SCRATCH:-/var/tmp}/carbon-ingest.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
n=$((series * (points - 1)))
now=$(date +%s)
t0=$((now - now % 10 - 86400))
# Point k of series i at t0 + 10k: all series at a step, then the next step (as a collector
# sends them); series i goes over connection i % CONNS (each collector its own series: a
# point older than one its series already has is late, not taken).
# The first step (every series created) is sent before the clock starts.
awk -v s="$series" -v p="$points" -v t0="$t0" -v c="$conns" -v w="$W" 'BEGIN {
    for (k = 0; k < p; k++) for (i = 0; i < s; i++)
        printf "bench.s%d.value %.2f %d\n", i, (i * 7 + k * 13) % 1000 / 10, t0 + 10 * k > (k ? (w "/slice." (i % c)) : (w "/first")) }'
bytes=$(cat "$W"/slice.* | wc -c)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hwm() { awk '/VmHWM/ { print $2 }' "/proc/$1/status"; }
send() {
    local p=$1 s senders=()
    for s in "$W"/slice.*; do
        cat "$s" >"/dev/tcp/127.0.0.1/$p" &
        senders+=($!)
    done
    wait "${senders[@]}"
}
for peer in $peers; do
    P=$(port)
    case "$peer" in
        ringlet)
            mkdir -p "$W/r/base" "$W/r/conf"
            # As carbon-cache below: no limit on the series made a minute (carbon.conf's
            # MAX_CREATES_PER_MINUTE; ringlet's default is carbon's, 50).
            printf '[cache]\nMAX_CREATES_PER_MINUTE = inf\n' >"$W/r/conf/carbon.conf"
            "$RINGLET" serve -g -w 300 -l "unix:$W/r/s.sock" -b "$W/r/base" --store "$W/r/store" \
                --carbon "127.0.0.1:$P" --graphite-conf "$W/r/conf" >"$W/r/log" 2>&1 &
            pid=$!
            count() {
                /usr/bin/python3 - "$W/r/s.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"STATS\n")
b = b""
while b"CarbonSeriesCreated" not in b:
    b += s.recv(65536)
print(next(l.split()[1] for l in b.decode().splitlines() if l.startswith("CarbonPoints: ")))
PY
            } ;;
        carbon)
            mkdir -p "$W/c/whisper" "$W/c/log"
            printf '[all]\npattern = .*\nretentions = 10s:1d,1m:7d,10m:1y\n' >"$W/c/storage-schemas.conf"
            cat >"$W/c/carbon.conf" <<EOF
[cache]
STORAGE_DIR = $W/c/
LOCAL_DATA_DIR = $W/c/whisper/
CONF_DIR = $W/c/
LOG_DIR = $W/c/log/
PID_DIR = $W/c/
USER =
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = 500
MAX_CREATES_PER_MINUTE = inf
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = $P
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = $(port)
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = $(port)
CARBON_METRIC_INTERVAL = 0
ENABLE_TAGS = False
WHISPER_FALLOCATE_CREATE = True
EOF
            carbon-cache --config="$W/c/carbon.conf" --nodaemon --pidfile="$W/c/pid" \
                --logdir="$W/c/log" start >"$W/c/out" 2>&1 &
            pid=$!
            # carbon keeps no count it can be asked for: every point is taken once the
            # senders are done and nothing waits in its sockets' receive queues.
            count() {
                if ss -Htn state established "( sport = :$P )" | awk '$1 > 0 { q = 1 } END { exit !q }'; then
                    echo 0
                else
                    echo "$n"
                fi
            } ;;
        *) echo "carbon-ingest.sh: unknown peer $peer" >&2; exit 2 ;;
    esac
    pids+=("$pid")
    for _ in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$P") 2>/dev/null && break
        sleep 0.1
    done
    # Setup, not timed: the first step makes every series.
    cat "$W/first" >"/dev/tcp/127.0.0.1/$P"
    want=$n
    n=$series
    for _ in $(seq 3000); do
        [ "$(count 2>/dev/null || echo 0)" -ge "$series" ] && break
        sleep 0.2
    done
    [ "$peer" = carbon ] && sleep 2
    n=$((want + series))
    c0=$(ticks "$pid")
    start=$(date +%s.%N)
    send "$P"
    sent=$(date +%s.%N)
    got=0
    for _ in $(seq 3000); do
        got=$(count 2>/dev/null || echo 0)
        [ "$got" -ge "$n" ] && break
        sleep 0.2
    done
    end=$(date +%s.%N)
    c1=$(ticks "$pid")
    secs=$(echo "$end - $start" | bc)
    got=$((got - series))
    n=$want
    echo "peer=$peer series=$series points=$n bytes=$bytes conns=$conns taken=$got send_s=$(echo "$sent - $start" | bc) total_s=$secs points_per_s=$(echo "scale=0; $got / $secs" | bc) cpu_s=$(echo "scale=2; ($c1 - $c0) / $(getconf CLK_TCK)" | bc) peak_rss_kb=$(hwm "$pid")"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
done
