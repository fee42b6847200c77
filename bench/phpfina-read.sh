#!/usr/bin/env bash
# phpfina-read.sh: the read latency of an emoncms graph query on a PHPFina feed, through the
# view (`ringlet serve --phpfina`) against a plain file (issue 47's figure).
#
# One feed of --days days at 10 s (written through the view by bench's `phpfina-load`, then
# copied to a plain directory), and the query emoncms's get_data makes for a graph of
# --points points over the last day: PHP opens the .dat, and for each point fseek()s to its
# position and fread()s 4 bytes, then closes it. Each query is a new php process's loop
# (timed inside PHP, from fopen to fclose), --queries times on each directory, alternating;
# prints the median and the 90th percentile in microseconds. The plain file is read from the
# page cache (the usual case on a server); the view's reads go to the daemon at each open.
#
# usage: bench/phpfina-read.sh [--days 1] [--points 1000] [--queries 200] [--out FILE]
# Needs root, /dev/fuse and php. Removes its daemon, mount and files on exit.
set -euo pipefail

days=1 points=1000 queries=200 out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --days) days=$2; shift 2 ;;
        --points) points=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "phpfina-read.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "phpfina-read.sh: needs root" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${LOAD:-}" ] || [ -z "${RINGLET:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
fi
LOAD=${LOAD:-$TARGET/release/phpfina-load}
RINGLET=${RINGLET:-$TARGET/release/ringlet}
work=$(mktemp -d /var/tmp/ringlet-phpfina-read.XXXXXX)
PID=""
# shellcheck disable=SC2317  # called by the trap
cleanup() {
    set +e
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    mountpoint -q "$work/view" && umount -l "$work/view"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$work/view" "$work/plain"
"$RINGLET" serve -g --store "$work/store" -w 300 -l "unix:$work/sock" \
    --phpfina "$work/view" >"$work/log" 2>&1 &
PID=$!
for _ in $(seq 1 300); do mountpoint -q "$work/view" && break; sleep 0.1; done
mountpoint -q "$work/view" || { tail -3 "$work/log" >&2; exit 1; }
dur=$((days * 86400))
start=$(( ($(date +%s) - dur) / 3600 * 3600 ))
"$LOAD" --dir "$work/view" --feeds 1:10 --start "$start" --phase setup >/dev/null
"$LOAD" --dir "$work/view" --feeds 1:10 --start "$start" --duration "${days}d" >/dev/null
cp "$work/view/1.meta" "$work/view/1.dat" "$work/plain/"
cmp "$work/view/1.dat" "$work/plain/1.dat"
php_query='$dir = $argv[1]; $n = (int)$argv[2];
$meta = unpack("I4", file_get_contents("$dir/1.meta"));
$interval = $meta[3]; $start = $meta[4];
clearstatcache(); $npoints = intdiv(filesize("$dir/1.dat"), 4);
$end = $start + $interval * $npoints; $from = $end - 86400; $step = 86400 / $n;
$t0 = hrtime(true);
$fh = fopen("$dir/1.dat", "rb"); $sum = 0;
for ($i = 0; $i < $n; $i++) {
    $pos = intdiv((int)($from + $i * $step) - $start, $interval);
    if ($pos < 0 || $pos >= $npoints) continue;
    fseek($fh, 4 * $pos);
    $v = unpack("f", fread($fh, 4))[1];
    if (!is_nan($v)) $sum += $v;
}
fclose($fh);
printf("%d %.3f\n", intdiv(hrtime(true) - $t0, 1000), $sum);'
: >"$work/plain.us"
: >"$work/view.us"
for _ in $(seq 1 "$queries"); do
    a=$(php -r "$php_query" "$work/plain" "$points")
    b=$(php -r "$php_query" "$work/view" "$points")
    [ "${a#* }" = "${b#* }" ] || { echo "phpfina-read.sh: the view read other values" >&2; exit 1; }
    echo "${a%% *}" >>"$work/plain.us"
    echo "${b%% *}" >>"$work/view.us"
done
pct() { sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int(NR * p + 0.5); if (i < 1) i = 1; print v[i] }'; }
line="date=$(date -u +%Y-%m-%dT%H:%MZ) days=$days points=$points queries=$queries"
line+=" plain_median_us=$(pct "$work/plain.us" 0.5) plain_p90_us=$(pct "$work/plain.us" 0.9)"
line+=" view_median_us=$(pct "$work/view.us" 0.5) view_p90_us=$(pct "$work/view.us" 0.9)"
echo "$line"
[ -n "$out" ] && echo "$line" >>"$out"
exit 0
