#!/bin/bash
# create.sh: what CREATE of many series through `ringlet serve` leaves on disk, and how long it
# takes (issue 17). A fresh daemon (-g -R -b BASE --store STORE -w 300) in a directory of its
# own (under $SCRATCH when run by ../shared/bin/bounded, else $TMPDIR) gets N CREATE requests
# on its unix socket, gmetad-style (one DS, step 15, gmetad's default archives AVERAGE
# 1x5856, 4x20160, 40x52704) spread over hosts/ directories like Ganglia's tree, pipelined 100 at a
# time. It prints the wall time, bytes (apparent and allocated) and files under -b and in the
# store, and the size of one real .rrd file rrdtool makes for the same definition, times N
# (what rrdcached, or ringlet 0.1's copies, would hold under -b), and how long a restart takes
# until the daemon answers (it checks every placeholder before serving). The daemon is stopped
# by its pid at the end, also on failure, and the directory removed.
#
# usage: bench/create.sh [--series N] [--rras gmetad|collectd]   (default 26000, gmetad)
set -euo pipefail

SERIES=26000
RRAS=gmetad
while [ $# -gt 0 ]; do
    case "$1" in
        --series) SERIES=$2; shift 2 ;;
        --rras) RRAS=$2; shift 2 ;;
        *) echo "usage: $0 [--series N] [--rras gmetad|collectd]" >&2; exit 2 ;;
    esac
done
case "$RRAS" in
    gmetad) STEP=15; DEFS="DS:sum:GAUGE:120:U:U RRA:AVERAGE:0.5:1:5856 RRA:AVERAGE:0.5:4:20160 RRA:AVERAGE:0.5:40:52704" ;;
    collectd) STEP=10; DEFS="DS:value:GAUGE:20:U:U RRA:AVERAGE:0.5:6:1440 RRA:AVERAGE:0.5:60:4320 RRA:AVERAGE:0.5:360:8760" ;;
    *) echo "--rras: gmetad or collectd" >&2; exit 2 ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release -q -p ringlet)
RINGLET=$TARGET/release/ringlet

WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-create.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/base"
"$RINGLET" serve -g -R -w 300 -l "unix:$WORK/s.sock" -b "$WORK/base" --store "$WORK/store" \
    >"$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 200); do [ -S "$WORK/s.sock" ] && break; sleep 0.05; done
[ -S "$WORK/s.sock" ] || { cat "$WORK/serve.log" >&2; exit 1; }

T0=$(date +%s.%N)
/usr/bin/python3 - "$WORK/s.sock" "$SERIES" "$STEP" "$DEFS" <<'EOF'
import socket, sys
sock, n, step, defs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
f = s.makefile("rb")
hosts = max(1, n // 100)
done = 0
while done < n:
    k = min(100, n - done)
    lines = "".join(
        f"CREATE cluster/host{i % hosts}/metric{i}.rrd -s {step} -b 1795200000 {defs}\n"
        for i in range(done, done + k))
    s.sendall(lines.encode())
    for _ in range(k):
        r = f.readline().decode()
        if not r.startswith("0 "):
            sys.exit(f"CREATE failed: {r}")
    done += k
EOF
T1=$(date +%s.%N)

kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
# A restart: open, then every placeholder checked before serving; timed until PING answers.
T2=$(date +%s.%N)
"$RINGLET" serve -g -R -w 300 -l "unix:$WORK/s.sock" -b "$WORK/base" --store "$WORK/store" \
    >>"$WORK/serve.log" 2>&1 &
PID=$!
until /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"PING\n")
sys.exit(0 if s.recv(16).startswith(b"0 PONG") else 1)' "$WORK/s.sock" 2>/dev/null; do
    kill -0 "$PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
    sleep 0.02
done
T3=$(date +%s.%N)
RSS=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
rrdtool create "$WORK/one.rrd" -s "$STEP" -b 1795200000 $DEFS
ONE=$(stat -c %s "$WORK/one.rrd")
files=$(find "$WORK/base" -type f | wc -l)
echo "create.sh: $SERIES series ($RRAS archives) created through ringlet serve"
awk -v a="$T0" -v b="$T1" -v n="$SERIES" 'BEGIN { printf "  CREATE wall time: %.1f s (%.2f ms per series)\n", b - a, (b - a) * 1000 / n }'
echo "  under -b:  $files files, $(du -sb "$WORK/base" | cut -f1) bytes apparent, $(du -sk "$WORK/base" | cut -f1) KiB allocated (directories included)"
echo "  the store: $(du -sb "$WORK/store" | cut -f1) bytes apparent, $(du -sk "$WORK/store" | cut -f1) KiB allocated"
awk -v a="$T2" -v b="$T3" -v r="$RSS" 'BEGIN { printf "  restart until PING answers (open; the placeholders of series created since the checkpoint checked, the rest after): %.2f s; RSS then %d MB\n", b - a, r }'
echo "  one rrdtool file of this definition: $ONE bytes; x $SERIES = $((ONE * SERIES)) bytes (what full-size copies take)"
