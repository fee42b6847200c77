#!/usr/bin/env python3
"""A client of rrdcached's protocol that retries as collectd's rrdcached plugin does: one
connection kept; when a request fails (the connection refused, closed, or the daemon
stopping) a new connection and the same update again, until it is acknowledged.

usage: client.py SOCKET DIR SERIES STOPFILE OUT

Creates SERIES series DIR/cN.rrd (step 1 s), then each second updates every one of them
(one update every 1/SERIES s) until STOPFILE exists; writes to OUT, as JSON, every value
acknowledged, how many connections were refused, the longest a value waited for its
acknowledgement, and from when to when.
"""
import json
import os
import socket
import sys
import time

sock_path, base, count, stopfile, out = sys.argv[1:6]
count = int(count)


class Conn:
    def __init__(self):
        self.s = None
        self.refused = 0
        self.reconnects = 0

    def request(self, line):
        """One request, answered, or None (the connection is closed)."""
        try:
            if self.s is None:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.settimeout(120)
                try:
                    self.s.connect(sock_path)
                except OSError:
                    self.refused += 1
                    self.s.close()
                    self.s = None
                    return None
                self.reconnects += 1
            self.s.sendall((line + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                got = self.s.recv(4096)
                if not got:
                    raise OSError("closed")
                buf += got
            return buf.decode()
        except OSError:
            if self.s is not None:
                self.s.close()
            self.s = None
            return None


c = Conn()
names = [os.path.join(base, "c%d.rrd" % i) for i in range(count)]
now = int(time.time())
for n in names:
    while True:
        # Begun a second before the first update: within the heartbeat, so it is known.
        r = c.request("CREATE %s -s 1 -b %d DS:x:GAUGE:10:U:U RRA:LAST:0.5:1:20000" % (n, now - 1))
        if r is not None:
            break
        time.sleep(0.01)
acked = []
longest = 0.0
longest_at = None
begun = time.time()
t = now
while not os.path.exists(stopfile):
    t = max(t + 1, int(time.time()))
    for i, n in enumerate(names):
        v = (t % 100000) * 10 + i
        first = time.time()
        while True:
            r = c.request("UPDATE %s %d:%d" % (n, t, v))
            if r is not None and r.startswith("0 "):
                break
            if r is not None and "illegal attempt to update" in r:
                # Sent before a break it did not see answered, and kept.
                break
            if r is not None and not r.startswith("-1 Shutting down"):
                print("client: %s: %s" % (n, r.strip()), file=sys.stderr)
                break
            if r is not None and c.s is not None:
                # The daemon is stopping: a new connection reaches the next one.
                c.s.close()
                c.s = None
            time.sleep(0.01)
        waited = time.time() - first
        if waited > longest:
            longest, longest_at = waited, first
        if r is not None and (r.startswith("0 ") or "illegal attempt" in r):
            acked.append([n, t, v])
        time.sleep(1.0 / count / 2)
json.dump(
    {
        "acked": acked,
        "refused": c.refused,
        "reconnects": c.reconnects,
        "longest_wait": longest,
        "longest_at": longest_at,
        "from": begun,
        "to": time.time(),
    },
    open(out, "w"),
)
