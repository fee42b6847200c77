#!/usr/bin/python3
"""Compare /render's JSON from ringlet and from graphite-web (over whisper files, and over
ringlet as its CLUSTER_SERVERS), and from ringlet over the whisper files imported
(`ringlet import whisper`), for each target in TARGETS_FILE.

    graphite-compare.py RINGLET_URL WHISPER_URL CLUSTER_URL FROM UNTIL TARGETS_FILE [IMPORTED_URL]

Prints SAME: target, or DIFF: target and where; exits 1 if any differs.
"""
import json
import math
import sys
import urllib.parse
import urllib.request

ringlet, whisper_url, cluster, frm, until, targets_file = sys.argv[1:7]
imported = sys.argv[7] if len(sys.argv) > 7 else None


def render(base, target, extra=""):
    q = urllib.parse.urlencode({"target": target, "from": frm, "until": until, "format": "json"})
    with urllib.request.urlopen(f"{base}/render?{q}{extra}", timeout=60) as r:
        return json.loads(r.read())


def same(a, b):
    if len(a) != len(b):
        return f"{len(a)} series against {len(b)}: {[s['target'] for s in a]} / {[s['target'] for s in b]}"
    for x, y in zip(sorted(a, key=lambda s: s["target"]), sorted(b, key=lambda s: s["target"])):
        if x["target"] != y["target"]:
            return f"name {x['target']!r} against {y['target']!r}"
        px, py = x["datapoints"], y["datapoints"]
        if len(px) != len(py):
            return f"{x['target']}: {len(px)} points against {len(py)}"
        for (vx, tx), (vy, ty) in zip(px, py):
            if tx != ty:
                return f"{x['target']}: time {tx} against {ty}"
            if (vx is None) != (vy is None):
                return f"{x['target']} at {tx}: {vx} against {vy}"
            if vx is not None and not math.isclose(vx, vy, rel_tol=1e-9, abs_tol=1e-9):
                return f"{x['target']} at {tx}: {vx} against {vy}"
    return None


bad = 0
for line in open(targets_file):
    t = line.strip()
    if not t or t.startswith("#"):
        continue
    extra = ""
    if "\t" in t:
        t, extra = t.split("\t", 1)
    try:
        r = render(ringlet, t, extra)
        w = render(whisper_url, t, extra)
        c = render(cluster, t, extra)
        i = render(imported, t, extra) if imported else r
    except Exception as e:  # noqa: BLE001 - report which target failed
        print(f"DIFF: {t}: {e}")
        bad += 1
        continue
    why = (
        same(r, w)
        or (same(r, c) and f"via CLUSTER_SERVERS: {same(r, c)}")
        or (same(i, w) and f"imported whisper: {same(i, w)}")
    )
    if why:
        print(f"DIFF: {t}{extra}: {why}")
        bad += 1
    elif not any(s["datapoints"] for s in r):
        print(f"DIFF: {t}: no points at all")
        bad += 1
    else:
        print(f"SAME: {t}{extra}")
sys.exit(1 if bad else 0)
