#!/usr/bin/env bash
# phpfina.sh: emoncms's PHPFina write load at the block device (issue 47's figure).
#
# On a fresh ext4 on a loop device (loopfs.sh), makes the feeds (not counted: 40 at 10 s and
# 52 at 60 s by default, the anchor site's), settles the file system, then writes
# --duration of virtual time of points (bench's `phpfina-load`, accelerated, the file system
# synced every 30 s of virtual time: the kernel's writeback at that pace) and counts the
# device's bytes until everything is on it (the daemon stopped, `sync -f`; `window_bytes`:
# before the stop, `stop_bytes`: the stop's own):
#   --mode plain        emoncms with its buffer off (its default): a post a point
#   --mode feedwriter   emoncms's feedwriter: each feed's points written once every --flush
#   --mode view         emoncms's posts (a point each) into `ringlet serve --phpfina` on the
#                       same file system, committing every --window of virtual time
#                       (FLUSHALL), its store on the same file system
# Prints one key=value line (bytes a day and a point) and appends it to --out.
#
# usage: bench/phpfina.sh --mode plain|feedwriter|view [--flush 300] [--window 300]
#          [--duration 1d] [--feeds 40:10,52:60] [--fs ext4] [--size 4G] [--out FILE]
# Needs root. Removes its daemon, mount, loop device and image on exit, also on failure.
set -euo pipefail

mode="" flush=300 window=300 duration=1d feeds=40:10,52:60 fs=ext4 size=4G out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --mode) mode=$2; shift 2 ;;
        --flush) flush=$2; shift 2 ;;
        --window) window=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --feeds) feeds=$2; shift 2 ;;
        --fs) fs=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "phpfina.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
die() { echo "phpfina.sh: $*" >&2; exit 2; }
case "$mode" in plain|feedwriter|view) ;; *) die "--mode plain, feedwriter or view" ;; esac
[ "$(id -u)" = 0 ] || die "needs root for losetup and mount"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${LOAD:-}" ] || [ -z "${RINGLET:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
fi
LOAD=${LOAD:-$TARGET/release/phpfina-load}
RINGLET=${RINGLET:-$TARGET/release/ringlet}

# shellcheck source=bench/loopfs.sh
. "$(dirname "$0")/loopfs.sh"
work=$(mktemp -d /var/tmp/ringlet-phpfina.XXXXXX)
img=$work/image MNT=$work/mnt RUN=$work/run PID=""
mkdir -p "$MNT" "$RUN"
stop_daemon() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID"
        for _ in $(seq 1 600); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$PID" 2>/dev/null && kill -KILL "$PID"
        wait "$PID" 2>/dev/null || true
    fi
    PID=""
}
# shellcheck disable=SC2317  # called by the trap
cleanup() {
    set +e
    mountpoint -q "$MNT" && fsfreeze -u "$MNT" 2>/dev/null
    stop_daemon
    mountpoint -q "$MNT/phpfina" && umount -l "$MNT/phpfina"
    loopfs_remove "$MNT"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

loopfs_make "$img" "$size" "$fs" "$MNT"
DATA=$MNT/phpfina
mkdir -p "$DATA"
dur_s=$(( $(echo "$duration" | sed 's/d$/*86400/; s/h$/*3600/; s/m$/*60/; s/s$//') ))
start=$(( ($(date +%s) - dur_s - 3600) / 3600 * 3600 ))
args=(--dir "$DATA" --feeds "$feeds" --start "$start")
run=(--duration "$duration" --syncfs "$MNT" --sync-every 30)
config=""
case "$mode" in
    plain) config="emoncms, buffer off: a post a point" ;;
    feedwriter) run+=(--flush "$flush"); config="emoncms feedwriter, a write a feed every ${flush} s" ;;
    view)
        "$RINGLET" serve -g --store "$MNT/store" -w 86400 -l "unix:$RUN/sock" \
            --phpfina "$DATA" >"$RUN/log" 2>&1 &
        PID=$!
        for _ in $(seq 1 300); do
            mountpoint -q "$DATA" && [ -S "$RUN/sock" ] && break
            kill -0 "$PID" 2>/dev/null || die "the daemon exited: $(tail -3 "$RUN/log")"
            sleep 0.1
        done
        mountpoint -q "$DATA" || die "the view did not mount: $(tail -3 "$RUN/log")"
        run+=(--window "$window" --flush-sock "$RUN/sock")
        config="emoncms's posts into serve --phpfina, a commit every ${window} s" ;;
esac
"$LOAD" "${args[@]}" --phase setup >"$RUN/setup.out"
if [ "$mode" = view ]; then
    python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"FLUSHALL\n"); s.recv(100)' "$RUN/sock"
fi
sync -f "$MNT"
fsfreeze -f "$MNT"
fsfreeze -u "$MNT"
read -r w0 s0 f0 < <(loopfs_snap)
"$LOAD" "${args[@]}" "${run[@]}" >"$RUN/run.out"
stats=""
if [ "$mode" = view ]; then
    stats=$(python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"STATS\n")
b = b""
while b.count(b"\n") < 2 or not b.endswith(b"\n"):
    c = s.recv(65536)
    if not c: break
    b += c
    n = int(b.split(b" ")[0]) if b[:1].isdigit() else 0
    if b.count(b"\n") > n: break
print(b.decode())' "$RUN/sock" | awk '/^(CommitsTotal|BytesWrittenTotal|LogBytesWritten|Commits|FsyncsTotal):/ { printf "%s=%s ", $1, $2 }' | tr -d ':')
fi
sync -f "$MNT"
read -r _ sw _ < <(loopfs_snap)
stop_daemon
sync -f "$MNT"
read -r w1 s1 f1 < <(loopfs_snap)
result=$(grep '^RESULT' "$RUN/run.out")
points=$(tr ' ' '\n' <<<"$result" | awk -F= '$1 == "points" { print $2 }')
wall=$(tr ' ' '\n' <<<"$result" | awk -F= '$1 == "wall_s" { print $2 }')
bytes=$(( (s1 - s0) * 512 ))
line="date=$(date -u +%Y-%m-%dT%H:%MZ) mode=$mode fs=$fs feeds=$feeds duration=$duration"
[ "$mode" = feedwriter ] && line+=" flush=$flush"
[ "$mode" = view ] && line+=" window=$window"
line+=" points=$points dev_bytes=$bytes bytes_per_day=$(( bytes * 86400 / dur_s ))"
line+=" bytes_per_point=$(echo "scale=3; $bytes / $points" | bc)"
line+=" write_ios=$(( w1 - w0 )) flushes=$(( f1 - f0 )) wall_s=$wall"
line+=" window_bytes=$(( (sw - s0) * 512 )) stop_bytes=$(( (s1 - sw) * 512 ))"
[ -n "$stats" ] && line+=" ${stats% }"
line+=" config=${config// /_}"
echo "$line"
[ -n "$out" ] && echo "$line" >>"$out"
exit 0
