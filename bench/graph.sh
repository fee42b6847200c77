#!/bin/bash
# graph.sh: a graph of a day of 4 data sources, drawn by `ringlet graph` from the store
# against `rrdtool graph` on the plain file (issue 57's figures).
#
# One series of 4 data sources (two counters, two gauges; a one-minute step, Cacti's archive
# set: a day of minutes, then 5-minute, 30-minute and 2-hour rows, AVERAGE and MAX) fed two
# days of values, the same lines into an rrdtool file and into a ringlet store, both on a
# fresh ext4 file system on a loop device. Then a Cacti-like graph of the last day (4 DEFs,
# 4 AREA/LINE, 12 GPRINT, to `-` as Cacti draws it) run RUNS times as whole processes in
# pairs (rrdtool, ringlet; the order turned every other pair), first with ringlet alone on
# its store, then beside `ringlet serve` holding it (the CLI finds the daemon through the
# store). Prints each side's median milliseconds, the median of the pairs' ratios, whether
# the images are the same bytes, and the loop device's sectors written (its
# /sys/block/*/stat, after a sync) over the measured runs of each side: drawing writes
# nothing.
#
# Needs root (a loop device and a mount, in a mount namespace of its own so that both go
# with it), rrdtool and python3. Runs under $SCRATCH when run by ../shared/bin/bounded.
#
# usage: bench/graph.sh [--ringlet BIN] [--runs N]
set -euo pipefail
if [ "${RINGLET_GRAPH_NS:-}" != 1 ]; then
    RINGLET_GRAPH_NS=1 exec unshare -m --propagation private -- bash "$0" "$@"
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RINGLET=""
RUNS=50
while [ $# -gt 0 ]; do
    case "$1" in
        --ringlet) RINGLET=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        *) echo "usage: $0 [--ringlet BIN] [--runs N]" >&2; exit 2 ;;
    esac
done
if [ -z "$RINGLET" ]; then
    (cd "$ROOT" && cargo build --release -q -p ringlet)
    RINGLET=$TARGET/release/ringlet
fi
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-graph.XXXXXX")
PID="" LOOP=""
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    if mountpoint -q "$WORK/mnt" 2>/dev/null; then
        timeout 30 umount "$WORK/mnt" || timeout 30 umount -l "$WORK/mnt"
    fi
    [ -n "$LOOP" ] && timeout 30 losetup -d "$LOOP"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export TZ=UTC LC_ALL=C

truncate -s 256M "$WORK/disk.img"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$WORK/disk.img"
mkdir -p "$WORK/mnt"
LOOP=$(timeout 30 losetup -f --show "$WORK/disk.img")
timeout 60 mount "$LOOP" "$WORK/mnt"
DEV=$(basename "$LOOP")
M=$WORK/mnt
mkdir -p "$M/files"

# Two days of values, up to a minute boundary near now.
END=$(( $(date +%s) / 60 * 60 ))
python3 - "$END" > "$WORK/lines" <<'PY'
import sys, math, random
end = int(sys.argv[1]); start = end - 2 * 86400
rnd = random.Random(3)
rras = ("RRA:AVERAGE:0.5:1:1440 RRA:AVERAGE:0.5:5:2016 RRA:AVERAGE:0.5:30:1488 "
        "RRA:AVERAGE:0.5:120:1464 RRA:MAX:0.5:1:1440 RRA:MAX:0.5:5:2016 "
        "RRA:MAX:0.5:30:1488 RRA:MAX:0.5:120:1464")
print(f"create g.rrd --start {start - 60} --step 60 DS:in:COUNTER:120:0:U DS:out:COUNTER:120:0:U "
      f"DS:load:GAUGE:120:0:U DS:users:GAUGE:120:0:U {rras}")
cin = cout = 0
for t in range(start, end + 1, 60):
    h = (t % 86400) / 86400
    cin += int(5e6 * (1.2 + math.sin(2 * math.pi * h)) + rnd.random() * 1e5)
    cout += int(2e6 * (1.1 + math.cos(2 * math.pi * h)) + rnd.random() * 1e5)
    print(f"update g.rrd {t}:{cin}:{cout}:{1.5 + math.sin(t / 3000) + rnd.random():.3f}:{rnd.randint(0, 40)}")
PY
(cd "$M/files" && rrdtool - < "$WORK/lines" > /dev/null)
"$RINGLET" --store "$M/store" - < "$WORK/lines" > /dev/null

START=$(( END - 86400 ))
ARGS=(- --start "$START" --end "$END" -w 500 -h 150 -t "Traffic and load"
    DEF:in=g.rrd:in:AVERAGE DEF:out=g.rrd:out:AVERAGE DEF:load=g.rrd:load:AVERAGE
    DEF:users=g.rrd:users:AVERAGE CDEF:bin=in,8,* CDEF:bout=out,8,*
    AREA:bin#00cf00:Inbound GPRINT:bin:LAST:%8.2lf%s GPRINT:bin:AVERAGE:%8.2lf%s GPRINT:bin:MAX:%8.2lf%s
    LINE1:bout#002a97:Outbound GPRINT:bout:LAST:%8.2lf%s GPRINT:bout:AVERAGE:%8.2lf%s GPRINT:bout:MAX:%8.2lf%s
    LINE1:load#ff0000:Load GPRINT:load:LAST:%8.2lf GPRINT:load:AVERAGE:%8.2lf GPRINT:load:MAX:%8.2lf
    LINE1:users#aa00aa:Users GPRINT:users:LAST:%8.0lf GPRINT:users:AVERAGE:%8.0lf GPRINT:users:MAX:%8.0lf)
sync

# Pairs: rrdtool in files/, ringlet on the store (alone, or the daemon found through it).
pairs() {
    python3 - "$1" "$RUNS" "$DEV" "$M" "$RINGLET" "${ARGS[@]}" <<'PY'
import os, statistics, subprocess, sys, time
label, runs, dev, m, ringlet = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
args = sys.argv[6:]
a = ["rrdtool", "graph"] + args
b = [ringlet, "--store", os.path.join(m, "store"), "graph"] + args
def written():
    os.sync()
    with open(f"/sys/block/{dev}/stat") as f:
        return int(f.read().split()[6])
def run(cmd, cwd):
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {p.stderr.decode()}")
    return dt, p.stdout
files = os.path.join(m, "files")
# Warm-up (page cache, atime): not counted.
for _ in range(3):
    _, ia = run(a, files)
    _, ib = run(b, m)
same = "the same bytes" if ia == ib else f"DIFFERENT images ({len(ia)} and {len(ib)} bytes)"
ta, tb, ratios = [], [], []
wa = wb = 0
for i in range(runs):
    order = [(a, files, ta, "a"), (b, m, tb, "b")]
    if i % 2:
        order.reverse()
    got = {}
    for cmd, cwd, into, k in order:
        w0 = written()
        dt, _ = run(cmd, cwd)
        w1 = written()
        if k == "a":
            wa += w1 - w0
        else:
            wb += w1 - w0
        into.append(dt)
        got[k] = dt
    ratios.append(got["b"] / got["a"])
ms = lambda v: statistics.median(v) * 1000
print(f"{label}: rrdtool graph {ms(ta):.1f} ms, ringlet graph {ms(tb):.1f} ms (medians of {runs}); "
      f"ringlet/rrdtool {statistics.median(ratios):.2f} (median of the pairs' ratios); images: {same}; "
      f"device sectors written over the runs: rrdtool {wa}, ringlet {wb}")
PY
}

pairs "alone"
"$RINGLET" serve -g -w 300 -l "unix:$WORK/s.sock" --store "$M/store" > "$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 200); do [ -S "$WORK/s.sock" ] && break; sleep 0.05; done
[ -S "$WORK/s.sock" ] || { cat "$WORK/serve.log" >&2; echo "the daemon did not start" >&2; exit 1; }
pairs "beside the daemon"
