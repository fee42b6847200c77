#!/bin/bash
# run.sh: fuzz campaigns with cargo-fuzz (libFuzzer; nightly), each target for a while, and
# a line each of what it did. A target's corpus, fuzz/corpus/<target>/, starts from its seeds
# (fuzz/seed.sh, run here when the corpus is missing) and grows with the inputs that reach new
# code (it stays out of git; minimize with `cargo +nightly fuzz cmin <target>`); a crash
# stops its target and is left in fuzz/artifacts/<target>/ (fix it, then keep the input in
# fuzz/regressions/<target>/, which the tests replay).
#
# usage: fuzz/run.sh [--time SECONDS] [--jobs N] [TARGET...]   (default 300 s, 2 jobs, all)
# Run it under ../shared/bin/bounded (a memory cap: each target is also limited to 2 GB).
set -euo pipefail
cd "$(dirname "$0")"
TIME=300 JOBS=2
while [ $# -gt 0 ]; do
    case "$1" in
        --time) TIME=$2; shift 2 ;;
        --jobs) JOBS=$2; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        -*) echo "usage: $0 [--time SECONDS] [--jobs N] [TARGET...]" >&2; exit 2 ;;
        *) break ;;
    esac
done
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || mapfile -t TARGETS < <(ls fuzz_targets | sed 's/\.rs$//')
cargo +nightly fuzz build -O -a >/dev/null
for t in "${TARGETS[@]}"; do
    if [ -z "$(ls -A "corpus/$t" 2>/dev/null)" ]; then bash seed.sh "$PWD/corpus" >/dev/null; break; fi
done
LOGS=$(mktemp -d); trap 'rm -rf "$LOGS"' EXIT
one() {
    local t=$1 rc=0
    mkdir -p "corpus/$t"
    cargo +nightly fuzz run -O -a "$t" "corpus/$t" -- -max_total_time="$TIME" -rss_limit_mb=2048 \
        -malloc_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 >"$LOGS/$t" 2>&1 || rc=$?
    local execs cov
    execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$LOGS/$t")
    cov=$(grep -o 'cov: [0-9]*' "$LOGS/$t" | tail -1)
    if [ "$rc" = 0 ]; then
        echo "$t: ${TIME} s, ${execs:-?} runs, ${cov:-cov: ?}, no crash"
    else
        echo "$t: CRASH after ${execs:-?} runs (exit $rc):"
        grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$LOGS/$t" | head -5 | sed 's/^/    /'
    fi
}
running=0
for t in "${TARGETS[@]}"; do
    one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
