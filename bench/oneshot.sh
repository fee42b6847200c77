#!/bin/bash
# oneshot.sh: rrdtool's one-shot commands, each as its own process, `ringlet --store S CMD`
# alone against `rrdtool CMD` on the same series as a plain .rrd file (issue 59), with the
# store's log empty, a quarter full and 7/8 full.
#
# The store: `engine-load` makes --series Cacti-like series (two COUNTERs, Cacti's eight
# archives, a step of 300 s) and runs them in virtual time, committing every 5 minutes as a
# daemon with `-w 300` would, then closes them cleanly without a checkpoint (as the daemon's
# stop without -F): what one-shot commands meet after the daemon stopped. The fill is the log
# written since the newest checkpoint, of the ring's 64 MiB. rrdtool's files are the same
# series, written by `rrdtool restore` from ringlet's `dump` (so both hold the same rows).
#
# Each command runs --runs times on each side (writes --write-runs times; after a kill, where
# a read replays the whole log, --crash-runs times), the two sides in turn; the median wall
# milliseconds of each, and their ratio. Output files go to /dev/null. After a kill the first
# write command opens the whole store and its close writes a checkpoint: the writes after it
# find the store as after a clean close.
#
# Runs in a directory of its own (under $SCRATCH when run by ../shared/bin/bounded).
#
# usage: bench/oneshot.sh [--series N] [--runs N] [--write-runs N] [--crash-runs N]
#                         [--fills "0 0.25 0.86"]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SERIES=5000
RUNS=50
WRITE_RUNS=10
CRASH_RUNS=5
FILLS="0 0.25 0.86"
while [ $# -gt 0 ]; do
    case "$1" in
        --series) SERIES=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --write-runs) WRITE_RUNS=$2; shift 2 ;;
        --crash-runs) CRASH_RUNS=$2; shift 2 ;;
        --fills) FILLS=$2; shift 2 ;;
        *) echo "usage: $0 [--series N] [--runs N] [--write-runs N] [--crash-runs N] [--fills \"0 0.25 0.86\"]" >&2; exit 2 ;;
    esac
done
(cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
RINGLET=$TARGET/release/ringlet
LOAD=$TARGET/release/engine-load
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-oneshot.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export TZ=UTC LC_ALL=C
unset RRDCACHED_ADDRESS

# Series read: two of the first host, one in the middle of the store's ids, the last.
NAMES="host0/m0.rrd host0/m1.rrd host$(( SERIES / 100 ))/m7.rrd host$(( (SERIES - 1) / 50 ))/m$(( (SERIES - 1) % 50 )).rrd"

echo "$(date -u +%F) $(git -C "$ROOT" rev-parse --short HEAD): $SERIES series, median of $RUNS runs (writes: $WRITE_RUNS)"
for fill in $FILLS; do
    S=$WORK/store-$fill
    F=$WORK/files-$fill
    rm -rf "$S" "$F"
    mkdir -p "$F/new"
    "$LOAD" create --store "$S" --workload cacti --series "$SERIES" > /dev/null
    # Run a day, then as long again as the fill so far says is missing (up to four runs,
    # until within 3% of it). Each run ends as a process killed after its last
    # commit (--crash): no mark of a clean close, no checkpoint at the close.
    want=$(python3 -c "print(int($fill * 64 * 1048576))")
    have=0
    for _ in 1 2 3 4; do
        [ "$have" -lt $((want * 97 / 100)) ] || break
        if [ "$have" = 0 ]; then
            more=86400
        else
            more=$(python3 -c "print(max(300, int(($want - $have) / $have * $ran)))")
        fi
        "$LOAD" run --store "$S" --workload cacti --duration "$more" --commit 5m --crash > /dev/null
        ran=$(( ${ran:-0} + more ))
        have=$("$LOAD" stat --store "$S" | sed -n 's/^log_since_checkpoint=\([0-9]*\).*/\1/p')
    done
    ran=0
    for n in $NAMES; do
        mkdir -p "$F/$(dirname "$n")"
        "$RINGLET" --store "$S" dump "$n" > "$WORK/d.xml"
        rrdtool restore "$WORK/d.xml" "$F/$n"
    done
    # After a crash (the log as the killed process left it), then after a clean close (a
    # writer's open and close: what a stop or a write command leaves).
    states="crash clean"
    [ "$want" -gt 0 ] || states=clean
    for state in $states; do
    if [ "$state" = clean ]; then
        "$LOAD" open --store "$S" > /dev/null
    fi
    opened=$("$LOAD" stat --store "$S")
    since=$(sed -n 's/.*log_since_checkpoint=\([0-9]*\).*/\1/p' <<< "$opened")
    ring=$(sed -n 's/.*log_ring=\([0-9]*\).*/\1/p' <<< "$opened")
    pieces=$(sed -n 's/.*pieces_since_checkpoint=\([0-9]*\).*/\1/p' <<< "$opened")
    runs=$RUNS
    [ "$state" = crash ] && runs=$CRASH_RUNS
    python3 - "$RINGLET" "$S" "$F" "$runs" "$WRITE_RUNS" "$since" "$ring" "$pieces" "$state" $NAMES <<'PY'
import subprocess, sys, time, statistics
ringlet, store, files, runs, wruns, since, ring, pieces, state = sys.argv[1:10]
runs, wruns, since, ring = int(runs), int(wruns), int(since), int(ring)
names = sys.argv[10:]
a, b, mid, last_name = names
what = "after a kill (no clean close)" if state == "crash" else "after a clean close"
print(f"\n{what}: log since the checkpoint {since / ring:.3f} of the ring ({since} of {ring} "
      f"bytes, {pieces} pieces)")
def out(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
last = int(out(["rrdtool", "last", f"{files}/{a}"]).strip())
# Updates go after what both sides' copies of the series hold (an earlier state's too).
last_mid = int(out(["rrdtool", "last", f"{files}/{mid}"]).strip())
rl = [ringlet, "--store", store]
# (label, args with {f}/{g} for the two files, writes?)
cases = [
    ("info", ["info", "{a}"], False),
    ("last", ["last", "{m}"], False),
    ("lastupdate", ["lastupdate", "{z}"], False),
    ("first", ["first", "{a}"], False),
    ("fetch a day", ["fetch", "{a}", "AVERAGE", "-s", str(last - 86400), "-e", str(last)], False),
    ("fetch a year", ["fetch", "{m}", "AVERAGE", "-s", str(last - 365 * 86400), "-e", str(last)], False),
    ("xport a day, 2 series", ["xport", "-s", str(last - 86400), "-e", str(last),
        "DEF:x={a}:ds0:AVERAGE", "DEF:y={b}:ds1:AVERAGE", "XPORT:x", "XPORT:y"], False),
    ("dump", ["dump", "{z}"], False),
    ("graph a day, 4 DS", ["graph", "/dev/null", "-s", str(last - 86400), "-e", str(last),
        "DEF:w={a}:ds0:AVERAGE", "DEF:x={a}:ds1:AVERAGE", "DEF:y={b}:ds0:AVERAGE",
        "DEF:z={b}:ds1:AVERAGE", "LINE1:w#ff0000", "LINE1:x#00ff00", "LINE1:y#0000ff",
        "LINE1:z#000000"], False),
    ("update", ["update", "{m}", "{t}:{v}:{v}"], True),
    ("create", ["create", "{new}", "--start", str(last), "--step", "300",
        "DS:a:COUNTER:600:0:U", "DS:b:COUNTER:600:0:U", "RRA:AVERAGE:0.5:1:600",
        "RRA:AVERAGE:0.5:6:700", "RRA:AVERAGE:0.5:24:775", "RRA:AVERAGE:0.5:288:797",
        "RRA:MAX:0.5:1:600", "RRA:MAX:0.5:6:700", "RRA:MAX:0.5:24:775",
        "RRA:MAX:0.5:288:797"], True),
]
# The DS names of engine-load's Cacti series.
info = out(rl + ["info", a])
ds = sorted({l.split("[")[1].split("]")[0] for l in info.splitlines() if l.startswith("ds[")})
print(f"{'command':26s} {'rrdtool ms':>11s} {'ringlet ms':>11s} {'ratio':>6s}")
for label, args, writes in cases:
    n = wruns if writes else runs
    med = {}
    for k in range(n):
        for side in ("rrdtool", "ringlet"):
            base = files if side == "rrdtool" else None
            def path(x):
                return f"{files}/{x}" if side == "rrdtool" else x
            t = last_mid + 300 * (k + 1)
            v = 1_000_000 + 1000 * k
            argv = [s.replace("ds0", ds[0]).replace("ds1", ds[-1])
                     .replace("{a}", path(a)).replace("{b}", path(b))
                     .replace("{m}", path(mid)).replace("{z}", path(last_name))
                     .replace("{t}", str(t)).replace("{v}", str(v))
                     .replace("{new}", path(f"new/{label[:1]}{k}.rrd")) for s in args]
            cmd = (["rrdtool"] if side == "rrdtool" else rl) + argv
            t0 = time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            dt = (time.perf_counter() - t0) * 1000
            if r.returncode != 0:
                sys.exit(f"{side} {label} failed: {r.stderr.decode()[:300]}")
            med.setdefault(side, []).append(dt)
    x, y = statistics.median(med["rrdtool"]), statistics.median(med["ringlet"])
    print(f"{label:26s} {x:11.2f} {y:11.2f} {y / x:6.2f}")
PY
    done
    rm -rf "$S" "$F"
done
