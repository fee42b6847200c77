#!/bin/bash
# read-latency.sh: LAST latency from one client while another FETCHes a 1,000,000-row archive
# (issue 18, defect 7), against a fresh `ringlet serve -g -w 300` in a directory of its own
# (under $SCRATCH when run by ../shared/bin/bounded). The daemon is stopped by its pid at the
# end, also on failure.
#
# usage: bench/read-latency.sh [--ringlet BIN] [-- read-latency options]
#        (BIN defaults to target/release/ringlet; read-latency: --rows, --fill, --seconds)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RINGLET=""
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --ringlet) RINGLET=$2; shift 2 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "usage: $0 [--ringlet BIN] [-- read-latency options]" >&2; exit 2 ;;
    esac
done
(cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
RINGLET=${RINGLET:-$TARGET/release/ringlet}
WORK=$(mktemp -d "${SCRATCH:-${TMPDIR:-/tmp}}/ringlet-latency.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
"$RINGLET" serve -g -w 300 -l "unix:$WORK/s.sock" -b "$WORK/base" --store "$WORK/store" \
    >"$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 200); do [ -S "$WORK/s.sock" ] && break; sleep 0.05; done
"$TARGET/release/read-latency" --connect "unix:$WORK/s.sock" "${EXTRA[@]}"
