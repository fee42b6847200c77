#!/bin/bash
# seed.sh: the fuzz corpora's seeds (fuzz/corpus/<target>/), from our own encoders and from
# Debian's tools: `cargo run -p fuzz-targets --example seeds` (a real store's records,
# checkpoints and segments; rows; whisper and PHPFina files; text), then rrdtool's own .rrd
# files and XML dumps, and Python's pickles of carbon's shape. Run from anywhere; needs
# rrdtool and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
C=fuzz/corpus
cargo run --release -q -p fuzz-targets --example seeds -- "$C"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
rrdtool create "$T/r1.rrd" -s 300 -b 1700000000 DS:in:COUNTER:600:0:U DS:out:GAUGE:600:U:U \
    RRA:AVERAGE:0.5:1:20 RRA:MAX:0.5:6:10 RRA:LAST:0.5:12:5
for i in $(seq 1 30); do rrdtool update "$T/r1.rrd" "$((1700000000 + i * 300)):$((i * 1000)):$i.5"; done
rrdtool create "$T/r2.rrd" -s 10 -b 1700000000 DS:x:DERIVE:20:U:U RRA:MIN:0.5:1:8 RRA:AVERAGE:0.99:4:4
cp "$T/r1.rrd" "$T/r2.rrd" "$C/rrdfile/"
rrdtool dump "$T/r1.rrd" > "$C/restore/rrdtool-r1.xml"
rrdtool dump "$T/r2.rrd" > "$C/restore/rrdtool-r2.xml"
# fallback: two bytes choosing the flipped bit, then (op, value) pairs: updates of either
# series, commits (5), full checkpoints (6), a stop and a start (7), records after both.
python3 - "$C/fallback" <<'PY'
import os, random, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
for k in range(8):
    r = random.Random(k)
    ops = []
    for i in range(300 + 100 * k):
        ops += [r.choice([0, 8, 16, 24, 32, 40]), r.randrange(256)]
        if i % 7 == 6: ops += [5, 0]
        if i % (60 + 10 * k) == 59: ops += [6 if k % 2 else 7, 0]
    with open(os.path.join(d, f"seed-{k}"), "wb") as f:
        f.write(bytes([r.randrange(256), r.randrange(256)] + ops))
PY
python3 - "$C/pickle" <<'PY'
import os, pickle, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
points = [("a.b.c", (1700000000, 1.5)), ("servers.web01.load", (1700000010, 0.25)),
          ("x;tag=v", (1700000020.5, -3))]
for proto in (0, 1, 2, 4):
    with open(os.path.join(d, f"points-{proto}"), "wb") as f:
        f.write(pickle.dumps(points, protocol=proto))
with open(os.path.join(d, "tuple-list"), "wb") as f:
    f.write(pickle.dumps([["a", [1, 2.0]], ("b", [3, None])], protocol=2))
PY
for t in "$C"/*/; do echo "$(basename "$t"): $(ls "$t" | wc -l) seeds"; done
