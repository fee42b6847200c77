#!/usr/bin/env bash
# A full disk (run by tests/real_tools.rs in a mount namespace of its own; RINGLET is the
# binary, T an empty directory, HERE this directory): the daemon's base directory and store
# on a 40 MB tmpfs with a 2 MB log ring; a client creates series and sends values with a
# FLUSHALL after each round, then fills the file system to its last byte. Checkpoints fail;
# once the ring is full, commits fail and UPDATE refuses values with the reason; CREATE gets
# the file system's error. The client then frees the space: commits go on. After a restart,
# every value a FLUSHALL acknowledged is served by FETCH.
set -euo pipefail
. "$HERE/lib.sh"
FS=$T/fs
mkdir -p "$FS"
mount -t tmpfs -o size=40m ringlet-diskfull "$FS"
trap_prev=$(trap -p EXIT | sed "s/^trap -- '//; s/' EXIT\$//")
trap "$trap_prev; umount -l '$FS' 2>/dev/null || true" EXIT
mkdir -p "$FS/base" "$FS/store"
start() {
    "$RINGLET" serve -g -R -w 2 -l "unix:$FS/s.sock" -b "$FS/base" --store "$FS/store" \
        --log-size 2M >>"$T/serve.log" 2>&1 &
    P=$!
    pids+=($P)
    for _ in $(seq 200); do [ -S "$FS/s.sock" ] && break; sleep 0.05; done
    [ -S "$FS/s.sock" ] || fail "the daemon did not start: $(tail -5 "$T/serve.log")"
}
stop() {
    kill -TERM "$P"
    timeout 60 tail --pid="$P" -f /dev/null
    rm -f "$FS/s.sock"
}
start
"$PY" "$HERE/diskfull.py" "$FS" fill
stop
grep -q "could not write a checkpoint" "$T/serve.log" || fail "no failed checkpoint in the log"
grep -q "commits go on" "$T/serve.log" || fail "commits did not go on once the space was back"
echo "LOGGED: a failed checkpoint, then commits going on"
start
"$PY" "$HERE/diskfull.py" "$FS" check
stop
