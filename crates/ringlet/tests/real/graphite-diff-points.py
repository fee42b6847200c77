#!/usr/bin/python3
"""Points for the Graphite differential test: the same points as whisper files (written by
Debian's python3-whisper) and as carbon's plaintext lines.

    graphite-diff-points.py UNTIL WHISPER_DIR LINES_FILE

Nine days of minutes before UNTIL (Holt-Winters' bootstrap reads a week before the range):
gauges with a daily season, counters that wrap and reset, gaps, long runs of unknowns,
negatives and zeros, a series only known days ago, two series at five minutes (`slow.*`, a
schema of their own) and tagged series (their canonical names in LINES_FILE.tags, for
graphite-web's tag database). Prints the number of points.
"""
import math
import os
import sys

import whisper

until = int(sys.argv[1])
wdir = sys.argv[2]
lines_file = sys.argv[3]
DAYS = 9
N = DAYS * 1440
start = until - N * 60


def q(x):
    """x to 1/256: every value a binary fraction, which an RRD row holds exactly (rrdtool's
    ((v * step) / step * step) / step changes the last bit of some decimals, 18.772 among
    them), so both sides start from the same floats."""
    return round(x * 256) / 256


def wave(k, h, scale=5.0, base=10.0):
    # A daily season, a slower drift and a little deterministic noise.
    day = math.sin(2 * math.pi * k / 1440 + h)
    return q(base + scale * day + 0.3 * math.sin(k / 37 + h) + ((k * 7919 + h * 31) % 13) / 10)


def series():
    out = {}
    for h, host in enumerate(["web1", "web2", "db1"]):
        for m, metric in enumerate(["user", "system"]):
            pts = []
            for k in range(N):
                if host == "db1" and k % 11 == 3:
                    continue  # a gap a few minutes apart
                if host == "web2" and metric == "system" and N - 200 < k < N - 150:
                    continue  # a run of unknowns inside the range
                pts.append((start + 60 * k + (k % 7), wave(k, h + m, 5 + m, 10 + 3 * h)))
            out[f"servers.{host}.cpu.{metric}"] = pts
        out[f"servers.{host}.mem.free"] = [
            (start + 60 * k, float(10 ** 9 + ((k * 104729 + h) % 99991) * 1000))
            for k in range(N)
            if k % (17 + h) != 5
        ]
        count = 1000 * h
        pts = []
        for k in range(N):
            count += (k * 31 + h) % 50
            if host == "web2" and k == N - 100:
                count = 5  # a counter reset
            if host == "db1":
                count %= 4096  # a counter that wraps at 4096
            pts.append((start + 60 * k + 1, float(count)))
        out[f"servers.{host}.net.rx"] = pts
    out["servers.web1.disk.used"] = [
        (start + 60 * k, float((k // 90) % 4)) for k in range(N)
    ]
    out["misc.signed"] = [
        (start + 60 * k, q(3 * math.sin(k / 29) - 0.5) if k % 9 else 0.0) for k in range(N)
    ]
    out["misc.sparse"] = [(start + 60 * k, float(k % 100)) for k in range(N) if k % 23 == 0]
    out["misc.old"] = [(start + 60 * k, 1.0 + k % 5) for k in range(2000)]
    for j, name in enumerate(["a", "b"]):
        out[f"slow.{name}"] = [
            (start + 300 * k, q(20 + 4 * math.cos(k / 11 + j) + j))
            for k in range(N // 5)
            if (k + j) % 17 != 0
        ]
    for j, name in enumerate(
        [
            "cpu.load;host=a;dc=x",
            "cpu.load;dc=y;host=b",
            "cpu.load;dc=x;host=c;role=db",
            "disk.used;host=a;dc=x",
            "disk.used;dc=y;host=b",
        ]
    ):
        out[name] = [
            (start + 60 * k + 2, q(40 + 10 * math.cos(k / 230 + j) + j))
            for k in range(N)
            if (k + j) % 13 != 0
        ]
    return out


lines = []
tagged = []
for path, pts in series().items():
    if ";" in path:
        from graphite.tags.utils import TaggedSeries

        canonical = TaggedSeries.parse(path).path
        tagged.append(canonical)
        f = os.path.join(wdir, TaggedSeries.encode(canonical, os.sep)) + ".wsp"
    else:
        f = os.path.join(wdir, *path.split(".")) + ".wsp"
    os.makedirs(os.path.dirname(f), exist_ok=True)
    step = 300 if path.startswith("slow.") else 60
    whisper.create(f, [(step, 10 * 86400 // step)], xFilesFactor=0.0, aggregationMethod="average")
    whisper.update_many(f, pts)
    lines += [f"{path} {v} {t}" for t, v in pts]
with open(lines_file, "w") as fh:
    fh.write("\n".join(lines) + "\n")
with open(lines_file + ".tags", "w") as fh:
    fh.write("\n".join(tagged) + "\n")
print(len(lines))
