#!/usr/bin/env bash
# web.sh: the web page's figures, in headless Chromium (Debian's chromium) against
# `ringlet serve --http` holding SERIES series (a known one with a day and a half of
# minutes, the others host<h>/cpu<i>.rrd): the page weight, the time from navigation to the
# first chart of a one-day series (LOADS loads: the first is Chromium's cold start), and how
# long the search takes to filter the series. The same checks as the CI test
# (crates/ringlet/tests/real/web.sh and web-check.py), at a size of your choosing.
#
# usage: bench/web.sh [--series 10001] [--loads 20]     (screenshots: $SHOTS, else none kept)
set -euo pipefail
series=10001 loads=20
while [ $# -gt 0 ]; do
    case "$1" in
        --series) series=$2; shift 2 ;;
        --loads) loads=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "web.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RINGLET=${RINGLET:-$ROOT/target/release/ringlet}
[ -x "$RINGLET" ] || (cd "$ROOT" && cargo build --release -p ringlet)
W=$(mktemp -d "${SCRATCH:-/var/tmp}/web.XXXXXX")
trap 'rm -rf "$W"' EXIT
page=$(wc -c <"$ROOT/crates/server/web/index.html")
lib=$(cat "$ROOT"/crates/server/web/vendor/uPlot-*/uPlot.iife.min.js "$ROOT"/crates/server/web/vendor/uPlot-*/uPlot.min.css | wc -c)
echo "page weight: $((page + lib)) bytes (the page $page, uPlot $lib)"
t0=$(date +%s.%N)
RINGLET=$RINGLET T=$W HERE=$ROOT/crates/ringlet/tests/real SHOTS=${SHOTS:-$W/shots} \
    SERIES=$series LOADS=$loads bash "$ROOT/crates/ringlet/tests/real/web.sh"
echo "series: $series; whole run $(echo "$(date +%s.%N) - $t0" | bc) s"
