# serve-lib.sh: sourced by scale.sh, million.sh, soak.sh and cacti-cli.sh. Needs $RINGLET and $WORK.
#   serve_start: `ringlet serve -w 300` on $WORK/s.sock (-b $WORK/base, --store $WORK/store,
#                log appended to $WORK/serve.log) in the background; returns once it answers
#                PING. Sets PID, and OPEN (seconds from the start until it answered).
#                $RINGLET_WRAP, when set, is put before the command (e.g. `heaptrack -o F`).
#   proc_mb PID KEY: a /proc/PID/status figure (VmRSS, VmHWM) in MB.

serve_start() {
    local t0 t1
    # A killed daemon's socket file: gone first (the daemon replaces it when it binds), so
    # that the loop below only tests for the file (a shell builtin) until the daemon is
    # open. Probing the stale socket with python every 20 ms took a third of a core from
    # the open it timed (0.7-2 s more for a 4-second replay on 2 cores, 2026-11-27).
    rm -f "$WORK/s.sock"
    t0=$(date +%s.%N)
    ${RINGLET_WRAP:-} "$RINGLET" serve -g -w 300 -l "unix:$WORK/s.sock" -b "$WORK/base" --store "$WORK/store" \
        >>"$WORK/serve.log" 2>&1 &
    PID=$!
    until [ -S "$WORK/s.sock" ] && timeout 1 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"PING\n")
sys.exit(0 if s.recv(16).startswith(b"0 PONG") else 1)' "$WORK/s.sock" 2>/dev/null; do
        kill -0 "$PID" 2>/dev/null || { tail -20 "$WORK/serve.log" >&2; exit 1; }
        sleep 0.02
    done
    t1=$(date +%s.%N)
    OPEN=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

proc_mb() {
    awk -v k="$2:" '$1 == k { printf "%.0f", $2 / 1024 }' "/proc/$1/status"
}
