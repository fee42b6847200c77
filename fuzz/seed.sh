#!/bin/bash
# seed.sh: a campaign's starting corpus. Writes every target's seeds into fuzz/corpus/<target>/
# (or DIR): those our own encoders make (`cargo run -p fuzz-targets --example seeds`: a real
# store's records, checkpoints and segments; rows; whisper and PHPFina files; a writer's
# histories; text) and those kept in fuzz/seeds/ (rrdtool's own .rrd files and XML dumps,
# Python's pickles of carbon's shape). The corpora that campaigns grow stay out of git.
#
# usage: fuzz/seed.sh [DIR]        the corpus (default fuzz/corpus)
#        fuzz/seed.sh --tools      make fuzz/seeds/ again with Debian's rrdtool and python3
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h|--help) sed -n '2,9p' "$0"; exit 0 ;;
--tools) ;;
*) cargo run --release -q -p fuzz-targets --example seeds -- "${1:-fuzz/corpus}"; exit 0 ;;
esac
K=fuzz/seeds
mkdir -p "$K/rrdfile" "$K/restore" "$K/pickle"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
rrdtool create "$T/r1.rrd" -s 300 -b 1700000000 DS:in:COUNTER:600:0:U DS:out:GAUGE:600:U:U \
    RRA:AVERAGE:0.5:1:20 RRA:MAX:0.5:6:10 RRA:LAST:0.5:12:5
for i in $(seq 1 30); do rrdtool update "$T/r1.rrd" "$((1700000000 + i * 300)):$((i * 1000)):$i.5"; done
rrdtool create "$T/r2.rrd" -s 10 -b 1700000000 DS:x:DERIVE:20:U:U RRA:MIN:0.5:1:8 RRA:AVERAGE:0.99:4:4
cp "$T/r1.rrd" "$T/r2.rrd" "$K/rrdfile/"
rrdtool dump "$T/r1.rrd" > "$K/restore/rrdtool-r1.xml"
rrdtool dump "$T/r2.rrd" > "$K/restore/rrdtool-r2.xml"
python3 - "$K/pickle" <<'PY'
import os, pickle, sys
d = sys.argv[1]
points = [("a.b.c", (1700000000, 1.5)), ("servers.web01.load", (1700000010, 0.25)),
          ("x;tag=v", (1700000020.5, -3))]
for proto in (0, 1, 2, 4):
    with open(os.path.join(d, f"points-{proto}"), "wb") as f:
        f.write(pickle.dumps(points, protocol=proto))
with open(os.path.join(d, "tuple-list"), "wb") as f:
    f.write(pickle.dumps([["a", [1, 2.0]], ("b", [3, None])], protocol=2))
PY
find "$K" -type f | sort
