#!/usr/bin/env bash
# carbon-ingest.sh: how many of carbon's plaintext points a second a store takes: ringlet
# (ringlet serve --carbon), carbon-cache (Debian's graphite-carbon), VictoriaMetrics
# single-node (-graphiteListenAddr) and go-carbon, the last two built from their Go modules
# by bench/peers-build.sh, in the same run.
#
# Writes SERIES x POINTS lines (`bench.s<i>.value <v> <t>`, ten-second steps, a day back
# from now) to CONNS files, then for each peer: starts it with its data on a fresh file
# system of its own (--fs ext4, the default as root: a loop device each, so no peer's
# writeback slows another) or under $SCRATCH, sends the files over CONNS TCP connections at
# once (cat to bash's /dev/tcp) and times until the peer has taken every point: ringlet by
# its STATS (CarbonPoints), VictoriaMetrics by its /metrics (vm_rows_inserted_total of
# type graphite), carbon-cache and go-carbon (which keep no count they can be asked for)
# when the senders are done and their sockets' receive queues are empty (every line read
# into their caches). Prints one line a peer and round: points, seconds, points a second,
# the peer's CPU seconds and peak RSS; for ringlet also the time and CPU of the commit of
# what it took (a FLUSHALL after the count), which the figure leaves out. With --rounds N
# the peers run N times, each round in a rotated order (the first peer of a round goes last
# in the next).
#
# The first point of each series (which makes it) is sent before the clock starts: the
# figure is the steady rate at which existing series take points.
#
# usage: bench/carbon-ingest.sh [--series 100000] [--points 20] [--conns 4] [--rounds 1]
#            [--fs ext4|none] [--peers "ringlet carbon victoriametrics go-carbon"]
# Run it under ../shared/bin/bounded (the file is ~45 bytes a point).
set -euo pipefail
series=100000 points=20 conns=4 peers="ringlet carbon" rounds=1
fs=none
[ "$(id -u)" = 0 ] && fs=ext4
while [ $# -gt 0 ]; do
    case "$1" in
        --series) series=$2; shift 2 ;;
        --points) points=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --peers) peers=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --fs) fs=$2; shift 2 ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        *) echo "carbon-ingest.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RINGLET=${RINGLET:-$ROOT/target/release/ringlet}
PEERS_BIN=${RINGLET_PEERS:-$HOME/.cache/ringlet-peers}/bin
for peer in $peers; do
    case "$peer" in
        carbon) command -v carbon-cache >/dev/null ||
            { echo "carbon-ingest.sh: carbon-cache not found (apt install graphite-carbon)" >&2; exit 1; } ;;
        victoriametrics) [ -x "$PEERS_BIN/victoria-metrics" ] || bash "$ROOT/bench/peers-build.sh" victoriametrics ;;
        go-carbon) [ -x "$PEERS_BIN/go-carbon" ] || bash "$ROOT/bench/peers-build.sh" go-carbon ;;
    esac
done
W=$(mktemp -d "${SCRATCH:-/var/tmp}/carbon-ingest.XXXXXX")
pids=()
# shellcheck source=bench/loopfs.sh
. "$ROOT/bench/loopfs.sh"
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    loopfs_remove "$W/mnt" 2>/dev/null || true
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
# The count of a peer that keeps none it can be asked for (carbon-cache, go-carbon): every
# point is taken once the senders are done and nothing waits in the receive queues of its
# sockets on port $P.
drained() {
    if ss -Htn state established "( sport = :$P )" | awk '$1 > 0 { q = 1 } END { exit !q }'; then
        echo 0
    else
        echo "$n"
    fi
}
send() {
    local p=$1 s senders=()
    for s in "$W"/slice.*; do
        cat "$s" >"/dev/tcp/127.0.0.1/$p" &
        senders+=($!)
    done
    wait "${senders[@]}"
}
read -r -a order <<<"$peers"
for round in $(seq "$rounds"); do
for peer in "${order[@]}"; do
    P=$(port)
    # The peer's data: a fresh file system of its own, or a directory.
    D=$W/data
    mkdir -p "$D"
    if [ "$fs" != none ]; then
        mkdir -p "$W/mnt"
        loopfs_make "$W/fs.img" 8G "$fs" "$W/mnt"
        D=$W/mnt
    fi
    case "$peer" in
        ringlet)
            mkdir -p "$D/r/base" "$D/r/conf"
            # As carbon-cache below: no limit on the series made a minute (carbon.conf's
            # MAX_CREATES_PER_MINUTE; ringlet's default is carbon's, 50).
            printf '[cache]\nMAX_CREATES_PER_MINUTE = inf\n' >"$D/r/conf/carbon.conf"
            "$RINGLET" serve -g -w 300 -l "unix:$D/r/s.sock" -b "$D/r/base" --store "$D/r/store" \
                --carbon "127.0.0.1:$P" --graphite-conf "$D/r/conf" >"$D/r/log" 2>&1 &
            pid=$!
            count() {
                /usr/bin/python3 - "$D/r/s.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"STATS\n")
b = b""
while b"CarbonSeriesCreated" not in b:
    b += s.recv(65536)
print(next(l.split()[1] for l in b.decode().splitlines() if l.startswith("CarbonPoints: ")))
PY
            } ;;
        carbon)
            mkdir -p "$D/c/whisper" "$D/c/log"
            printf '[all]\npattern = .*\nretentions = 10s:1d,1m:7d,10m:1y\n' >"$D/c/storage-schemas.conf"
            cat >"$D/c/carbon.conf" <<EOF
[cache]
STORAGE_DIR = $D/c/
LOCAL_DATA_DIR = $D/c/whisper/
CONF_DIR = $D/c/
LOG_DIR = $D/c/log/
PID_DIR = $D/c/
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
            carbon-cache --config="$D/c/carbon.conf" --nodaemon --pidfile="$D/c/pid" \
                --logdir="$D/c/log" start >"$D/c/out" 2>&1 &
            pid=$!
            count() { drained; } ;;
        victoriametrics)
            mkdir -p "$D/vm"
            H=$(port)
            "$PEERS_BIN/victoria-metrics" -storageDataPath="$D/vm" -httpListenAddr="127.0.0.1:$H" \
                -graphiteListenAddr="127.0.0.1:$P" -retentionPeriod=100y -loggerLevel=ERROR \
                >"$D/vm.log" 2>&1 &
            pid=$!
            count() {
                curl -s "http://127.0.0.1:$H/metrics" |
                    awk '/^vm_rows_inserted_total\{type="graphite"\}/ { v = $2 } END { print v + 0 }'
            } ;;
        go-carbon)
            mkdir -p "$D/gc/whisper"
            printf '[all]\npattern = .*\nretentions = 10s:1d,1m:7d,10m:1y\n' >"$D/gc/storage-schemas.conf"
            cat >"$D/gc/go-carbon.conf" <<CONF
[common]
user = ""
metric-interval = "1h"
max-cpu = $(nproc)
[whisper]
data-dir = "$D/gc/whisper"
schemas-file = "$D/gc/storage-schemas.conf"
workers = $(nproc)
max-updates-per-second = 0
sparse-create = true
enabled = true
[cache]
max-size = 100000000
write-strategy = "max"
[udp]
enabled = false
[tcp]
listen = "127.0.0.1:$P"
enabled = true
[pickle]
enabled = false
[carbonlink]
enabled = false
[grpc]
enabled = false
[tags]
enabled = false
[carbonserver]
enabled = false
[dump]
enabled = false
[pprof]
enabled = false
[[logging]]
logger = ""
file = "$D/gc/go-carbon.log"
level = "error"
CONF
            "$PEERS_BIN/go-carbon" -config "$D/gc/go-carbon.conf" >"$D/gc/out" 2>&1 &
            pid=$!
            count() { drained; } ;;
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
    case "$peer" in carbon|go-carbon) sleep 2 ;; esac
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
    # ringlet's commit of what it took (FLUSHALL answers once it is durable), not in the
    # figure above: its time and CPU.
    commit=""
    if [ "$peer" = ringlet ]; then
        f0=$(date +%s.%N)
        /usr/bin/python3 - "$D/r/s.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"FLUSHALL\n")
b = b""
while b"\n" not in b:
    b += s.recv(4096)
assert b.startswith(b"0 "), b
PY
        f1=$(date +%s.%N)
        c2=$(ticks "$pid")
        commit=" commit_s=$(echo "$f1 - $f0" | bc) commit_cpu_s=$(echo "scale=2; ($c2 - $c1) / $(getconf CLK_TCK)" | bc)"
    fi
    echo "round=$round peer=$peer fs=$fs series=$series points=$n bytes=$bytes conns=$conns taken=$got send_s=$(echo "$sent - $start" | bc) total_s=$secs points_per_s=$(echo "scale=0; $got / $secs" | bc) cpu_s=$(echo "scale=2; ($c1 - $c0) / $(getconf CLK_TCK)" | bc) peak_rss_kb=$(hwm "$pid")$commit"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    if [ "$fs" != none ]; then
        loopfs_remove "$W/mnt"
        rm -f "$W/fs.img"
    fi
    rm -rf "$W/data"
done
# The next round starts with the peer after this round's first.
order=("${order[@]:1}" "${order[0]}")
done
