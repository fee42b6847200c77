#!/usr/bin/python3
"""Points for the Graphite test: the same points as whisper files (written by Debian's
python3-whisper) and as carbon's plaintext lines.

    graphite-points.py ANCHOR WHISPER_DIR LINES_FILE [--tags]

Ten-second slots from ANCHOR for two hours: gauges, a counter that wraps, gaps, unknowns.
With --tags, also three tagged series (whisper files where carbon puts them, under
_tagged/; their canonical names in LINES_FILE.tags, for graphite-web's tag database).
"""
import math
import os
import sys

import whisper

anchor = int(sys.argv[1])
wdir = sys.argv[2]
lines_file = sys.argv[3]
with_tags = "--tags" in sys.argv[4:]
STEP = 10
N = 720


def series():
    out = {}
    for h, host in enumerate(["web1", "web2", "db1"]):
        pts = []
        for k in range(N):
            if host == "db1" and k % 11 == 3:
                continue  # a gap
            v = round(10 + 5 * math.sin(k / 17 + h) + (k * 7919 + h) % 13 / 4, 3)
            pts.append((anchor + STEP * k + (k % 7), v))
        out[f"servers.{host}.cpu"] = pts
        count = 1000 * h
        pts = []
        for k in range(N):
            count += (k * 31 + h) % 50
            if k == 400 and host == "web2":
                count = 5  # a counter reset
            pts.append((anchor + STEP * k + 1, float(count)))
        out[f"servers.{host}.requests"] = pts
    out["collectd.host_a.load.shortterm"] = [
        (anchor + STEP * k, round(0.5 + (k % 37) / 10, 2)) for k in range(N) if k % 5 != 0
    ]
    if with_tags:
        for j, name in enumerate(["disk.used;host=a;dc=x", "disk.used;dc=y;host=b", "cpu.user;host=a;dc=x"]):
            out[name] = [
                (anchor + STEP * k + 2, round(40 + 10 * math.cos(k / 23 + j) + j, 3))
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
    whisper.create(f, [(STEP, 8640)], xFilesFactor=0.0, aggregationMethod="average")
    whisper.update_many(f, pts)
    lines += [f"{path} {v} {t}" for t, v in pts]
with open(lines_file, "w") as fh:
    fh.write("\n".join(lines) + "\n")
if with_tags:
    with open(lines_file + ".tags", "w") as fh:
        fh.write("\n".join(tagged) + "\n")
print(len(lines))
