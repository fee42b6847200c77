#!/usr/bin/env bash
# migrate.sh: the cost of `ringlet migrate rrdcached` on a tree of collectd-shaped files
# (issue 48's figures): how long clients are without a daemon, and how long the bulk import
# takes, through the daemon (the default) and on the store (--no-start).
#
# --files N .rrd files as collectd makes them (one GAUGE at 10 s; RRATimespan 1h, 1d, 1w, 1mo,
# 1y of 1200 rows each for AVERAGE, MIN and MAX: 15 archives, 144 KB), each given --updates
# values through Debian's rrdcached (-w 1800, so they are queued), which is then replaced.
# Prints the migrate's own lines and the times, then the same files imported on a fresh store
# with --no-start.
#
# usage: bench/migrate.sh [--files 1000] [--updates 30] [--out FILE]
# Needs rrdtool and rrdcached. Run it under ../shared/bin/bounded (the files go to $SCRATCH
# or $TMPDIR: 0.3 MB a file, twice). Removes its daemons and files on exit.
set -euo pipefail

files=1000 updates=30 out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --files) files=$2; shift 2 ;;
        --updates) updates=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "migrate.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
[ -n "${RINGLET:-}" ] || (cd "$ROOT" && cargo build --release -q -p ringlet)
RINGLET=${RINGLET:-$TARGET/release/ringlet}
work=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-migrate.XXXXXX")
cpid="" 
# shellcheck disable=SC2317  # called by the trap
cleanup() {
    set +e
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
    for p in $(pgrep -f -x "$RINGLET serve --defaults $work/ringlet.default"); do kill "$p"; done
    for _ in $(seq 100); do
        [ -z "$(pgrep -f -x "$RINGLET serve --defaults $work/ringlet.default")" ] && break
        sleep 0.1
    done
    rm -rf "$work"
}
trap cleanup EXIT
say() { echo "$*"; [ -z "$out" ] || echo "$*" >>"$out"; }

db=$work/db sock=$work/rrdcached.sock
mkdir -p "$db" "$work/journal"
t0=$(( $(date +%s) - 3600 ))
rras=""
for cf in AVERAGE MIN MAX; do
    for spp in 1 9 63 270 3285; do rras="$rras RRA:$cf:0.1:$spp:1200"; done
done
# The files, made by one rrdtool - session.
for i in $(seq 1 "$files"); do
    d=$db/host$((i % 50))/cpu-$i
    mkdir -p "$d"
    # shellcheck disable=SC2086
    echo "create $d/value.rrd -s 10 -b $t0 DS:value:GAUGE:20:U:U $rras"
done | rrdtool - >/dev/null
rrdcached -g -l "unix:$sock" -b "$db" -B -w 1800 -z 1 -j "$work/journal" \
    -p "$work/rrdcached.pid" >/dev/null 2>&1 &
cpid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
# Values queued in rrdcached (not yet in the files): one BATCH.
python3 - "$sock" "$db" "$files" "$updates" "$t0" <<'PY'
import socket, sys
sock, db, files, updates, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_UNIX); s.connect(sock)
f = s.makefile("rwb")
f.write(b"BATCH\n"); f.flush(); f.readline()
for i in range(1, files + 1):
    vals = " ".join(f"{t0 + 10 * k}:{(i * k) % 100}" for k in range(1, updates + 1))
    f.write(f"UPDATE {db}/host{i % 50}/cpu-{i}/value.rrd {vals}\n".encode())
f.write(b".\n"); f.flush()
line = f.readline().decode()
n = int(line.split()[0])
for _ in range(max(n, 0)): f.readline()
print("rrdcached: batch:", line.strip())
PY
size=$(du -sm "$db" | cut -f1)
say "migrate.sh: $files files ($size MB), $updates values each queued in rrdcached; $(date -u +%FT%TZ); ringlet $(cd "$ROOT" && git rev-parse --short HEAD)"
s0=$(date +%s.%N)
"$RINGLET" --store "$work/store" migrate rrdcached -q --pid "$cpid" --to "$work/ringlet.default" \
    >"$work/migrate.out" 2>&1
s1=$(date +%s.%N)
wait "$cpid" 2>/dev/null || true; cpid=""
while read -r l; do say "  $l"; done <"$work/migrate.out"
say "migrate (through the daemon): $(echo "$s1 - $s0" | bc) s in all, $(echo "scale=2; ($s1 - $s0) * 1000 / $files" | bc) ms a file"
for p in $(pgrep -f -x "$RINGLET serve --defaults $work/ringlet.default"); do kill "$p"; done
for _ in $(seq 300); do
    [ -z "$(pgrep -f -x "$RINGLET serve --defaults $work/ringlet.default")" ] && break
    sleep 0.1
done
# The same files on a fresh store, no daemon (migrate --no-start's import).
rm -rf "$work/tree2" && cp -a "$work/store/imported" "$work/tree2"
s0=$(date +%s.%N)
"$RINGLET" --store "$work/store2" import rrd -q --move "$work/tree2" >"$work/import.out" 2>&1
s1=$(date +%s.%N)
say "import rrd --move on a store: $(cat "$work/import.out"): $(echo "$s1 - $s0" | bc) s, $(echo "scale=2; ($s1 - $s0) * 1000 / $files" | bc) ms a file"
