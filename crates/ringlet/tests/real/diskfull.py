"""The client of diskfull.sh: diskfull.py FS fill|check. `fill` writes the values it saw
acknowledged (by a FLUSHALL) to FS/acked.json for `check`, which FETCHes them after the
restart."""

import json
import os
import socket
import sys

fs, phase = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.connect(fs + "/s.sock")
f = s.makefile("rwb")
T0, N = 1_700_000_000, 200


def ask(line):
    f.write((line + "\n").encode())
    f.flush()
    head = f.readline().decode().rstrip("\n")
    n = int(head.split(" ", 1)[0])
    return head, [f.readline().decode().rstrip("\n") for _ in range(max(n, 0))]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


if phase == "fill":
    for i in range(N):
        h, _ = ask("CREATE s%d.rrd -b %d -s 10 DS:v:GAUGE:20:U:U RRA:AVERAGE:0.5:1:5000" % (i, T0))
        if not h.startswith("0"):
            fail("CREATE s%d: %s" % (i, h))
    acked, refused, flush_failed, create_err = {}, [], 0, None
    full = True
    filler = fs + "/filler"
    fl = open(filler, "wb", buffering=0)
    for size in (1 << 20, 4096, 1):
        try:
            while True:
                fl.write(b"\0" * size)
        except OSError:
            pass
    fl.close()
    t = T0
    back_at = None
    for rnd in range(1400):
        pend = {}
        for i in range(N):
            t1 = t + 10
            v = ((rnd * 7919 + i * 104729) % 1000003) / 1000
            h, _ = ask("UPDATE s%d.rrd %d:%s" % (i, t1, v))
            if h.startswith("0"):
                pend["s%d.rrd" % i] = (t1, v)
            else:
                if full:
                    refused.append(h)
                else:
                    fail("UPDATE refused after the space came back: " + h)
        t += 10
        h, _ = ask("FLUSHALL")
        if h.startswith("0"):
            for k, (tt, v) in pend.items():
                acked.setdefault(k, {})[str(tt)] = v
        elif full:
            flush_failed += 1
        else:
            fail("FLUSHALL failed after the space came back: " + h)
        if full and create_err is None:
            h, _ = ask("CREATE extra.rrd -s 10 DS:v:GAUGE:20:U:U RRA:AVERAGE:0.5:1:10")
            if not h.startswith("0"):
                create_err = h
        if full and flush_failed >= 20:
            # Long enough: give the space back; the next commit writes its checkpoint.
            os.remove(filler)
            full = False
            back_at = rnd
            # The next commit writes the checkpoint (the daemon retries every few seconds
            # while blocked; a FLUSHALL does it now).
            h, _ = ask("FLUSHALL")
            if not h.startswith("0"):
                fail("FLUSHALL once the space was back: " + h)
    if back_at is None:
        fail("the commits never failed: %d refused, %d FLUSHALLs failed" % (len(refused), flush_failed))
    if not any("the store cannot commit" in r for r in refused):
        fail("no UPDATE was refused with the reason: %r" % refused[:3])
    if not create_err or "No space left" not in create_err:
        fail("CREATE on the full disk: %r" % create_err)
    print("REFUSED WHILE FULL: %d UPDATEs (%s), %d FLUSHALLs failed"
          % (len(refused), refused[0].split(": ", 1)[-1][:60], flush_failed))
    print("CREATE WHILE FULL: " + create_err[:90])
    print("WENT ON: space back at round %d of 1400, every UPDATE and FLUSHALL after it succeeded" % back_at)
    json.dump(acked, open(fs + "/acked.json", "w"))
    print("ACKNOWLEDGED: %d values" % sum(len(v) for v in acked.values()))
else:
    acked = json.load(open(fs + "/acked.json"))
    checked = lost = 0
    for name, vals in acked.items():
        h, lines = ask("FETCH %s AVERAGE %d %d" % (name, T0, T0 + 1500 * 10))
        if not h.startswith("0") and not h[0].isdigit():
            fail("FETCH %s: %s" % (name, h))
        got = {}
        for line in lines:
            k, _, v = line.partition(": ")
            if k.strip().isdigit():
                got[k.strip()] = v.strip()
        for tt, v in vals.items():
            checked += 1
            g = got.get(tt)
            if g is None or g.lower().startswith("nan") or abs(float(g) - v) > 1e-9:
                lost += 1
                if lost <= 3:
                    print("LOST %s %s %r %r" % (name, tt, v, g), file=sys.stderr)
    if lost:
        fail("%d of %d acknowledged values lost" % (lost, checked))
    print("NOTHING LOST: %d acknowledged values served after the restart" % checked)
