#!/bin/bash
# cacti-cli.sh: Cacti's use of rrdtool as a program, timed against rrdtool 1.7.2 on files.
#
# 1. Pipe mode: a Cacti-like session (creates with `--start 0`, polls of `update PATH
#    --skip-past-updates --template ds:ds T:v:v` for every RRD, a tune and a few fetches
#    between polls, Boost-style lines of many T:V at the end) through `rrdtool -` on files,
#    `ringlet --store S -` alone, and `ringlet -` beside `ringlet serve -w 300` (the CLI finds
#    the daemon); wall seconds of each, and the RRDs compared (`dump` of every file against
#    the store's) so that the three did the same work.
# 2. One-shot commands: `info`, `last`, `fetch` of a day and `graph` of a day of 4 DS, each
#    run 50 times as its own process, rrdtool on a file against ringlet alone and beside the
#    daemon: the median milliseconds.
#
# Runs in a directory of its own (under $SCRATCH when run by ../shared/bin/bounded); the
# daemon is stopped by its pid at the end, also on failure.
#
# With --wait, the pipe-mode client writes a line only once the answer to the one before has
# come (as Cacti's poller and scripts that read each reply do); without it, all lines go at
# once.
#
# usage: bench/cacti-cli.sh [--ringlet BIN] [--rrds N] [--polls N] [--runs N] [--wait]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RINGLET=""
RRDS=300
POLLS=60
RUNS=50
WAIT=0
while [ $# -gt 0 ]; do
    case "$1" in
        --ringlet) RINGLET=$2; shift 2 ;;
        --rrds) RRDS=$2; shift 2 ;;
        --polls) POLLS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --wait) WAIT=1; shift ;;
        *) echo "usage: $0 [--ringlet BIN] [--rrds N] [--polls N] [--runs N] [--wait]" >&2; exit 2 ;;
    esac
done
if [ -z "$RINGLET" ]; then
    (cd "$ROOT" && cargo build --release -q -p ringlet)
    RINGLET=$TARGET/release/ringlet
fi
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-cacti-cli.XXXXXX")
PID=""
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
export TZ=UTC LC_ALL=C

# The session, for a given rra directory (the paths are absolute, as Cacti's are).
session() {
    python3 - "$1" "$RRDS" "$POLLS" <<'PY'
import sys, random, time
rra, n, polls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(7)
day0 = int(time.time()) // 86400 * 86400
rras = ("RRA:AVERAGE:0.5:1:600 RRA:AVERAGE:0.5:6:700 RRA:AVERAGE:0.5:24:775 "
        "RRA:AVERAGE:0.5:288:797 RRA:MAX:0.5:1:600 RRA:MAX:0.5:6:700 RRA:MAX:0.5:24:775 "
        "RRA:MAX:0.5:288:797")
kinds = [("load_1min:load_5min:load_15min", "GAUGE", 3), ("mem_buffers:mem_swap", "GAUGE", 2),
         ("traffic_in:traffic_out", "COUNTER", 2), ("users", "GAUGE", 1)]
files = []
for i in range(n):
    names, typ, k = kinds[i % len(kinds)]
    f = f"{rra}/host{i // 4}_{names.split(':')[0]}_{i}.rrd"
    ds = " ".join(f"DS:{d}:{typ}:600:0:U" for d in names.split(":"))
    print(f"create {f} --start 0 --step 300 {ds} {rras}")
    files.append((f, names, k, typ))
t = day0 + 300
counters = [0] * n
for p in range(polls):
    for i, (f, names, k, typ) in enumerate(files):
        if typ == "COUNTER":
            counters[i] += rnd.randint(1000, 900000)
            vals = ":".join(str(counters[i] + j) for j in range(k))
        else:
            vals = ":".join(f"{rnd.uniform(0, 100):.2f}" for _ in range(k))
        print(f"update {f} --skip-past-updates --template {names} {t}:{vals}")
    f, names, k, typ = files[p % n]
    print(f"tune {f} --maximum {names.split(':')[0]}:{1000 + p}")
    for j in range(3):
        f = files[(p * 7 + j) % n][0]
        print(f"fetch {f} AVERAGE -s {t - 3600} -e {t}")
    t += 300
# Boost: many T:V in one line per RRD.
for i, (f, names, k, typ) in enumerate(files[: max(1, n // 4)]):
    parts = []
    for q in range(12):
        if typ == "COUNTER":
            counters[i] += 5000
            parts.append(f"{t + 300 * q}:" + ":".join(str(counters[i] + j) for j in range(k)))
        else:
            parts.append(f"{t + 300 * q}:" + ":".join(f"{rnd.uniform(0, 100):.2f}" for _ in range(k)))
    print(f"update {f} --skip-past-updates --template {names} " + " ".join(parts))
print("quit")
PY
}

secs() { python3 -c 'import time; print(f"{time.time():.3f}")'; }

# Pipe mode: `CMD... < input > output`, all lines at once, or (--wait) each line once the
# answer to the one before (its OK or ERROR line) has come.
pipe() {
    if [ "$WAIT" = 0 ]; then
        "$@" -
        return
    fi
    python3 -c '
import subprocess, sys
p = subprocess.Popen(sys.argv[1:] + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    p.stdin.write(line)
    p.stdin.flush()
    if line.strip() == b"quit":
        break
    while True:
        answer = p.stdout.readline()
        out.write(answer)
        if not answer or answer.startswith((b"OK", b"ERROR")):
            break
p.stdin.close()
out.write(p.stdout.read())
sys.exit(p.wait())
' "$@"
}

# --- 1. pipe mode ---------------------------------------------------------------------------
mkdir -p "$WORK/files" "$WORK/alone/rra" "$WORK/base"
session "$WORK/files" > "$WORK/files.txt"
session "$WORK/alone/rra" > "$WORK/alone.txt"
session "$WORK/base" > "$WORK/beside.txt"
lines=$(wc -l < "$WORK/files.txt")

# Each run starts on a clean device: what the one before left dirty is written back first
# (else its writeback slows the next one's fsyncs: ringlet's creates are durable, rrdtool's
# are not).
sync -f "$WORK"
t0=$(secs); pipe rrdtool < "$WORK/files.txt" > "$WORK/files.out"; t1=$(secs)
sync -f "$WORK"
t1b=$(secs); RINGLET_STORE="$WORK/alone/store" pipe "$RINGLET" < "$WORK/alone.txt" > "$WORK/alone.out"; t2=$(secs)
. "$ROOT/bench/serve-lib.sh"
serve_start   # ringlet serve -w 300, -b $WORK/base, --store $WORK/store; sets PID
sync -f "$WORK"
t3=$(secs); pipe "$RINGLET" --store "$WORK/store" < "$WORK/beside.txt" > "$WORK/beside.out"; t4=$(secs)
for o in files alone beside; do
    bad=$(grep -c '^ERROR' "$WORK/$o.out" || true)
    [ "$bad" = 0 ] || { echo "$o: $bad errors:"; grep -m3 '^ERROR' "$WORK/$o.out"; exit 1; }
done
# The same RRDs: every dump against rrdtool's.
same=0
for f in "$WORK"/files/*.rrd; do
    b=$(basename "$f")
    rrdtool dump "$f" > "$WORK/a.xml"
    "$RINGLET" --store "$WORK/alone/store" dump "$WORK/alone/rra/$b" > "$WORK/b.xml"
    "$RINGLET" --store "$WORK/store" dump "$WORK/base/$b" > "$WORK/c.xml"
    cmp -s "$WORK/a.xml" "$WORK/b.xml" && cmp -s "$WORK/a.xml" "$WORK/c.xml" \
        || { echo "$b differs"; diff "$WORK/a.xml" "$WORK/b.xml" | head -5; exit 1; }
    same=$((same + 1))
done
python3 - "$lines" "$t0" "$t1" "$t1b" "$t2" "$t3" "$t4" "$same" "$WAIT" <<'PY'
import sys
lines, t0, t1, t1b, t2, t3, t4, same = int(sys.argv[1]), *map(float, sys.argv[2:8]), int(sys.argv[8])
print(f"pipe mode: {lines} lines, {same} RRDs identical (dump) in all three"
      + (", the client waiting for each answer" if sys.argv[9] == "1" else ", sent at once"))
for name, s in (("rrdtool - (files)", t1 - t0), ("ringlet - (alone)", t2 - t1b),
                ("ringlet - (beside serve -w 300)", t4 - t3)):
    print(f"  {name:34s} {s:8.2f} s  {lines / s:10.0f} lines/s  {s / (t1 - t0):5.2f}x rrdtool")
PY

# --- 2. one-shot commands -------------------------------------------------------------------
# (Globs, not `ls | head`: under pipefail a head that ends first fails the script.)
fs=("$WORK"/files/*load_1min*.rrd); f=${fs[0]}; b=$(basename "$f")
# A day of 4 DS: graph two files of this kind.
fs=("$WORK"/files/*mem_buffers*.rrd); f2=${fs[0]}; b2=$(basename "$f2")
last=$(rrdtool last "$f")
median_ms() { # label, command...
    python3 - "$RUNS" "$@" <<'PY'
import subprocess, sys, time, statistics
runs, label, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
ts = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    ts.append((time.perf_counter() - t) * 1000)
print(f"  {label:44s} {statistics.median(ts):7.2f} ms")
PY
}
echo "one-shot commands, median of $RUNS runs each:"
for way in files alone beside; do
    case $way in
        files) run=(rrdtool); A=$f; B=$f2 ;;
        alone) run=(env RINGLET_STORE="$WORK/alone/store" "$RINGLET"); A=$WORK/alone/rra/$b; B=$WORK/alone/rra/$b2 ;;
        beside) run=("$RINGLET" --store "$WORK/store"); A=$WORK/base/$b; B=$WORK/base/$b2 ;;
    esac
    median_ms "$way: info" "${run[@]}" info "$A"
    median_ms "$way: last" "${run[@]}" last "$A"
    median_ms "$way: fetch a day" "${run[@]}" fetch "$A" AVERAGE -s $((last - 86400)) -e "$last"
    median_ms "$way: graph a day, 4 DS" "${run[@]}" graph "$WORK/g-$way.png" -s $((last - 86400)) -e "$last" \
        "DEF:a=$A:load_1min:AVERAGE" "DEF:b=$A:load_5min:AVERAGE" "DEF:c=$B:mem_buffers:AVERAGE" \
        "DEF:d=$B:mem_swap:AVERAGE" LINE1:a#ff0000 LINE1:b#00ff00 LINE1:c#0000ff LINE1:d#000000
done
cmp -s "$WORK/g-files.png" "$WORK/g-alone.png" && cmp -s "$WORK/g-files.png" "$WORK/g-beside.png" \
    && echo "  graphs: the same PNG bytes in all three" || echo "  graphs: the PNGs DIFFER"
