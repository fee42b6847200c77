#!/usr/bin/env bash
# render.sh: the time graphite-web's /render takes on ringlet (ringlet serve --http) for
# SERIES series of one day of ten-second points (sent with carbon's protocol, built-in
# schemas: 10s:1d,1m:7d,10m:5y), as Grafana asks for them: one target matching them all,
# from=-1d, format=json, maxDataPoints (Grafana's panel width) or none.
#
# Prints, for each query, the median and 95th percentile of RUNS requests (curl's
# time_total, on the loopback), the reply's bytes and the daemon's RSS.
#
# usage: bench/render.sh [--series 100] [--runs 30]
set -euo pipefail
series=100 runs=30
while [ $# -gt 0 ]; do
    case "$1" in
        --series) series=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "render.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RINGLET=${RINGLET:-$ROOT/target/release/ringlet}
W=$(mktemp -d "${SCRATCH:-/var/tmp}/render.XXXXXX")
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CP=$(port) HP=$(port)
mkdir -p "$W/base" "$W/conf"
# The series are made by their first points, all at once: no limit on the series made a
# minute (carbon.conf's MAX_CREATES_PER_MINUTE; the default, carbon's, is 50).
printf '[cache]\nMAX_CREATES_PER_MINUTE = inf\n' >"$W/conf/carbon.conf"
"$RINGLET" serve -g -w 300 -l "unix:$W/s.sock" -b "$W/base" --store "$W/store" \
    --carbon "127.0.0.1:$CP" --http "127.0.0.1:$HP" --graphite-conf "$W/conf" >"$W/log" 2>&1 &
pid=$!
for _ in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$HP") 2>/dev/null && break
    sleep 0.1
done
now=$(date +%s)
t0=$((now - now % 10 - 86400))
n=$((series * 8640))
awk -v s="$series" -v t0="$t0" 'BEGIN { for (k = 0; k < 8640; k++) for (i = 0; i < s; i++)
    printf "bench.s%d.value %.3f %d\n", i, 50 + 40 * sin(k / 97 + i) + (k * 7 + i) % 11 / 3, t0 + 10 * k }' \
    >"$W/points.txt"
cat "$W/points.txt" >"/dev/tcp/127.0.0.1/$CP"
stat_of() {
    /usr/bin/python3 - "$W/s.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"STATS\n")
b = b""
while b"CarbonSeriesCreated" not in b:
    b += s.recv(65536)
print(next(l.split()[1] for l in b.decode().splitlines() if l.startswith(sys.argv[2] + ": ")))
PY
}
for _ in $(seq 3000); do
    [ "$(stat_of CarbonPoints)" -ge "$n" ] && break
    sleep 0.2
done
echo "points=$(stat_of CarbonPoints) series=$series"
/usr/bin/python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('$W/s.sock'); s.sendall(b'FLUSHALL\n'); s.recv(100)"
q() { # label query
    local times=() t bytes
    for _ in $(seq "$runs"); do
        read -r t bytes < <(curl -s -o /dev/null -w '%{time_total} %{size_download}\n' "http://127.0.0.1:$HP/render?$2")
        times+=("$t")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v l="$1" -v b="$bytes" -v n="$runs" '
        { v[NR] = $1 } END { printf "%s: median %.1f ms, p95 %.1f ms, %d bytes\n", l, v[int((n + 1) / 2)] * 1000, v[int(n * 0.95 + 0.5)] * 1000, b }'
}
q "render ${series} x 1 day, json" "target=bench.*.value&from=-1d&format=json"
q "render ${series} x 1 day, json, maxDataPoints=1000" "target=bench.*.value&from=-1d&format=json&maxDataPoints=1000"
q "render sumSeries of ${series} x 1 day" "target=sumSeries(bench.*.value)&from=-1d&format=json"
q "render 1 x 1 day" "target=bench.s0.value&from=-1d&format=json"
# Three functions, as a dashboard's: a moving window (which reads its preview again), a
# scale and the names by node.
q "render aliasByNode(scale(movingAverage(${series} x 1 day,'5min'),8),1)" \
    "target=aliasByNode(scale(movingAverage(bench.*.value,'5min'),8),1)&from=-1d&format=json"
q "render the three functions, maxDataPoints=1000" \
    "target=aliasByNode(scale(movingAverage(bench.*.value,'5min'),8),1)&from=-1d&format=json&maxDataPoints=1000"
echo "daemon_rss_kb=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")"
