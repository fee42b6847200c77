#!/usr/bin/env bash
# The web page in headless Chromium (Debian's), run by tests/real_tools.rs (RINGLET is the
# binary, T an empty directory, HERE this directory; SHOTS where the screenshots go, kept
# after the test). A daemon with known data: web/known.rrd, a day and a half of minutes (a
# saw 0..99 and a counter), and SERIES-1 more series (host<h>/cpu<i>.rrd) created through
# the rrdcached protocol; then web-check.py drives the page.
set -euo pipefail
. "$HERE/lib.sh"
SERIES=${SERIES:-2001}   # with the hostile name: one more
S=$T/s.sock
mkdir -p "$T/base/web"
HP=$(port)
"$RINGLET" serve -g -R -w 60 -l "unix:$S" -b "$T/base" --store "$T/store" --http "$HP" \
    >"$T/serve.log" 2>&1 &
pids+=($!)
wait_port "$HP"
"$PY" - "$S" "$SERIES" <<'PY'
import socket, sys, time
sock, count = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
f = s.makefile("rwb")
def ask(line):
    f.write((line + "\n").encode()); f.flush()
    head = f.readline().decode()
    for _ in range(max(int(head.split(" ", 1)[0]), 0)):
        f.readline()
    if head.startswith("-"):
        raise SystemExit(line + ": " + head)
    return head
now = int(time.time())
end = now - now % 60
t0 = end - 36 * 3600
ask("CREATE web/known.rrd -b %d -s 60 DS:v:GAUGE:120:U:U DS:w:COUNTER:120:U:U "
    "RRA:AVERAGE:0.5:1:2880 RRA:MAX:0.5:60:48 RRA:AVERAGE:0.5:60:400" % t0)
# A name a careless page would run as HTML.
ask("CREATE web/<b>bold&'q<script>alert(1)<script>.rrd -b %d -s 60 DS:value:GAUGE:120:U:U RRA:LAST:0.5:1:10" % t0)
hosts = (count - 1 + 19) // 20
made = 0
for h in range(hosts):
    for i in range(20):
        if made == count - 1:
            break
        ask("CREATE host%d/cpu%d.rrd -b %d -s 60 DS:value:GAUGE:120:0:100 RRA:AVERAGE:0.5:1:1440" % (h, i, t0))
        made += 1
# Updates in one batch: the known series every minute, the others the last hour.
f.write(b"BATCH\n")
c = 0
for k in range(1, (end - t0) // 60 + 1):
    t = t0 + 60 * k
    c += 1000 + (k % 7) * 10
    f.write(("UPDATE web/known.rrd %d:%d:%d\n" % (t, k % 100, c)).encode())
for h in range(min(hosts, 50)):
    for i in range(20):
        vals = " ".join("%d:%d" % (end - 3600 + 60 * m, (h + i + m) % 100) for m in range(1, 61))
        f.write(("UPDATE host%d/cpu%d.rrd %s\n" % (h, i, vals)).encode())
f.write(b".\n"); f.flush()
go = f.readline().decode()
done = f.readline().decode()
if not done.startswith("0 errors"):
    raise SystemExit("BATCH: " + done + "".join(f.readline().decode() for _ in range(5)))
PY
"$PY" "$HERE/web-check.py" "$HP" "$S" "$T/base" "${SHOTS:-$T/shots}" "$SERIES" "${LOADS:-5}"
