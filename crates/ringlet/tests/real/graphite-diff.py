#!/usr/bin/python3
"""The Graphite differential test: random render expressions, generated from graphite-web's
own function table (its /functions: every function, its parameters' types, options and
defaults), rendered as JSON by ringlet and by graphite-web over the same points.

    graphite-diff.py RINGLET_URL GRAPHITE_URL FROM UNTIL COUNT SEED [--show] [--only NAMES]
                     [--table FUNCTIONS_JSON]

Each expression is rendered by both; they agree when both give the same series in the same
order (names, tags, timestamps, values: None where graphite-web has null, the same floats)
or both refuse it (an HTTP error from each). One request in ten has a second target, and
some carry maxDataPoints, noNullPoints or xFilesFactor. Every function of the table is called at
least once (the first expressions go through the table in order; the rest are random,
nested up to three deep, with wildcards, tagged series, keyword and positional arguments).
Random functions (randomWalk) agree on their names, tags and times only.

Prints `DIFF: <expression>: <why>` for each disagreement, then
`GRAPHITE DIFF: <n> expressions, <same> same (<errors> refused by both), <diff> different,
<k> of <m> functions called`; exits 1 if any differs. With --show, prints each expression.
"""
import json
import math
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

argv = sys.argv[1:]
table_file = None
if "--table" in argv:
    table_file = argv.pop(argv.index("--table") + 1)
args = [a for a in argv if not a.startswith("--")]
ringlet, graphite, frm, until, count, seed = args[:6]
frm, until, count, seed = int(frm), int(until), int(count), int(seed)
show = "--show" in sys.argv
only = None
if "--only" in sys.argv:
    only = set(sys.argv[sys.argv.index("--only") + 1].split(","))

rng = random.Random(seed)

PATHS = [
    "servers.web1.cpu.user",
    "servers.*.cpu.user",
    "servers.*.cpu.*",
    "servers.web*.cpu.system",
    "servers.{web1,db1}.cpu.user",
    "servers.web[12].cpu.user",
    "servers.*.mem.free",
    "servers.*.net.rx",
    "servers.db1.net.rx",
    "servers.web1.disk.used",
    "servers.*.*.*",
    "misc.signed",
    "misc.sparse",
    "misc.old",
    "misc.*",
    "slow.*",
    "slow.a",
    "no.such.series",
    "cpu.load;dc=x;host=a",
]
TAG_QUERIES = [
    "seriesByTag('name=cpu.load')",
    "seriesByTag('dc=x')",
    "seriesByTag('name=~disk','dc!=y')",
    "seriesByTag('name=disk.used')",
    "seriesByTag('host=~[ab]','name=cpu.load')",
]
INTERVALS = ["1min", "5min", "10min", "30min", "1h", "2h", "3h", "1d", "90s", "7min"]
SHIFTS = ["1h", "-1h", "1d", "+30min", "2h"]
NODES_OR_TAGS = [0, 1, 2, 3, -1, -2, "name", "host", "dc", "role"]

# Strings a function's parameter takes (where graphite-web's table gives no options).
STRINGS = {
    ("alias", "newName"): ["renamed", "a b", "x.y.z"],
    ("aliasQuery", "search"): [r"servers\.([^.]+)\.cpu\.user", r"(.*)"],
    ("aliasQuery", "replace"): [r"servers.\1.cpu.system", r"\1"],
    ("aliasQuery", "newName"): ["%d sys", "value %g", "%.2f"],
    ("aliasSub", "search"): [r"servers\.(\w+)\.", r"cpu", r"^(\w+)", "nomatch"],
    ("aliasSub", "replace"): [r"\1-", "CPU", r"\g<1>_x", ""],
    ("applyByNode", "templateFunction"): ["sumSeries(%.cpu.*)", "maxSeries(%.*.*)", "%.mem.free"],
    ("applyByNode", "newName"): ["%.total", "all.%"],
    ("cactiStyle", "units"): ["b", "req/s"],
    ("color", "theColor"): ["red", "ff0000"],
    ("events", "tags"): ["deploy", "*"],
    ("exclude", "pattern"): ["web", "cpu", r"^servers\.db", "x=", "user$"],
    ("grep", "pattern"): ["web", "cpu", r"^servers\.db", "x=", "user$"],
    ("identity", "name"): ["ident"],
    ("integralByInterval", "intervalUnit"): ["1h", "10min", "1d", "30min"],
    ("randomWalk", "name"): ["walk"],
    ("randomWalkFunction", "name"): ["walk"],
    ("reduce", "reduceFunction"): ["asPercent", "diffSeries", "divideSeries", "sumSeries"],
    ("reduceSeries", "reduceFunction"): ["asPercent", "diffSeries", "divideSeries", "sumSeries"],
    ("reduce", "reduceMatchers"): ["user", "system"],
    ("reduceSeries", "reduceMatchers"): ["user", "system"],
    ("sin", "name"): ["the.sine"],
    ("sinFunction", "name"): ["the.sine"],
    ("stacked", "stack"): ["one", "__DEFAULT__"],
    ("threshold", "label"): ["limit"],
    ("threshold", "color"): ["red"],
    ("time", "name"): ["the.time"],
    ("timeFunction", "name"): ["the.time"],
    ("useSeriesAbove", "search"): ["user", "cpu"],
    ("useSeriesAbove", "replace"): ["system", "mem"],
    ("verticalLine", "label"): ["here"],
    ("verticalLine", "color"): ["blue"],
    ("seriesByTag", "tagExpressions"): ["name=cpu.load", "dc=x", "host!=b", "name=~disk", "role="],
}
RANDOM = {"randomWalk", "randomWalkFunction"}


def q(s):
    """A string literal of the target language."""
    return "'" + s + "'" if "'" not in s else '"' + s + '"'


def fmt_num(v):
    if isinstance(v, float) and v == int(v) and abs(v) < 1e6 and rng.random() < 0.5:
        return str(int(v))
    return repr(v)


class Gen:
    def __init__(self, table):
        self.table = table
        self.series_funcs = [
            n
            for n, f in table.items()
            if any(p["type"] in ("seriesList", "seriesLists") for p in f["params"])
        ]
        self.makers = [
            n for n, f in table.items() if not any(p["type"].startswith("series") for p in f["params"])
        ]

    def series(self, depth):
        r = rng.random()
        if depth >= 3 or r < 0.35:
            if rng.random() < 0.15:
                return rng.choice(TAG_QUERIES)
            return rng.choice(PATHS)
        return self.call(rng.choice(self.series_funcs), depth + 1)

    def value(self, fname, p, depth):
        t = p["type"]
        opts = p.get("options")
        name = p["name"]
        if opts and rng.random() < 0.97:
            return q(str(rng.choice(opts))) if isinstance(opts[0], str) else str(rng.choice(opts))
        if (fname, name) in STRINGS:
            return q(rng.choice(STRINGS[(fname, name)]))
        if t in ("seriesList", "seriesLists"):
            return self.series(depth)
        if t == "integer":
            if name in ("n", "points"):
                return str(rng.choice([1, 2, 3, 5]))
            if name == "steps":
                return str(rng.choice([1, 3, -2, 0]))
            if name == "base":
                return str(rng.choice([2, 10]))
            if name == "precision":
                return str(rng.choice([0, 1, 2, -1]))
            if name in ("timeShiftStart", "timeShiftEnd"):
                return str(rng.choice([0, 1, 2]))
            if name == "step":
                return str(rng.choice([60, 300]))
            return str(rng.choice([0, 1, 2, 3, 5, 10]))
        if t == "float":
            if name == "xFilesFactor":
                return fmt_num(rng.choice([0.0, 0.1, 0.5, 1.0]))
            if name == "n" and fname.startswith(("remove", "average", "nPercentile", "percentile")):
                return fmt_num(rng.choice([5.0, 50.0, 90.0, 99.5, 0.0]))
            return fmt_num(rng.choice([0.0, 1.0, 2.0, 0.5, -1.5, 10.0, 50.0, 1e9, 12.25]))
        if t == "boolean":
            return rng.choice(["true", "false", "True", "False"])
        if t in ("interval",):
            if name in ("timeShift", "timeShiftUnit"):
                return q(rng.choice(SHIFTS))
            return q(rng.choice(INTERVALS))
        if t == "intOrInterval":
            return rng.choice([q(rng.choice(INTERVALS[:6])), str(rng.choice([1, 3, 5, 10]))])
        if t == "intOrInf":
            return str(rng.choice([1, 2, 5, 100]))
        if t == "node":
            return str(rng.choice([0, 1, 2, 3, -1]))
        if t == "nodeOrTag":
            v = rng.choice(NODES_OR_TAGS)
            return q(v) if isinstance(v, str) else str(v)
        if t == "tag":
            return q(rng.choice(["dc", "host", "name", "role"]))
        if t == "date":
            # Absolute times: graphite-web reads a relative one against its own clock (not
            # the request's), which two servers read a second apart. An unquoted number is
            # refused by both (graphite-web reads only strings).
            hm = time.strftime("%H:%M_%Y%m%d", time.gmtime(frm + 7200))
            return rng.choice(
                [q(str(frm + 3600)), q(str(until - 1800)), q(hm), q(str(frm - 86400)), str(frm)]
            )
        if t == "any":
            return rng.choice(["None", fmt_num(rng.choice([100.0, 50.0])), self.series(depth)])
        return q(rng.choice(["x", "web", "cpu"]))

    def call(self, fname, depth):
        f = self.table[fname]
        params = f["params"]
        out = []
        kw = False
        for i, p in enumerate(params):
            req = p.get("required", False)
            if not req and rng.random() < 0.5:
                # Left out: the rest may still come by keyword.
                kw = True
                continue
            reps = 1
            if p.get("multiple"):
                reps = rng.choice([1, 1, 2, 3]) if req else rng.choice([0, 1, 2])
            for _ in range(reps):
                v = self.value(fname, p, depth)
                if kw and not p.get("multiple"):
                    out.append(f"{p['name']}={v}")
                elif not kw:
                    out.append(v)
                if not p.get("multiple") and not kw and not req and rng.random() < 0.15:
                    out[-1] = f"{p['name']}={v}"
                    kw = True
        if fname == "timeSlice" and len(out) < 3 and not any(o.startswith("endSliceAt=") for o in out):
            # Its default end is graphite-web's own clock's now (see dates).
            out.append("endSliceAt=" + q(str(until - 600)))
        if fname == "seriesByTag" and not any("=" in o and "!=" not in o for o in out):
            out.insert(0, q("name=cpu.load"))
        if (
            out
            and params
            and params[0]["type"] == "seriesList"
            and not params[0].get("multiple")
            and "=" not in out[0].split("(")[0]
            and rng.random() < 0.06
        ):
            # graphite-web's pipe: `a.b|scale(2)` is `scale(a.b,2)`.
            return f"{out[0]}|{fname}({','.join(out[1:])})"
        return f"{fname}({','.join(out)})"


def render(base, targets, extra):
    qs = urllib.parse.urlencode(
        [("target", t) for t in targets] + [("from", frm), ("until", until), ("format", "json")]
        + extra
    )
    try:
        with urllib.request.urlopen(f"{base}/render?{qs}", timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read()[:300].decode(errors="replace")


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return a == b


def same(r, g, values=True):
    if len(r) != len(g):
        return f"{len(r)} series against {len(g)}: {[s['target'] for s in r][:6]} / {[s['target'] for s in g][:6]}"
    for x, y in zip(r, g):
        if x["target"] != y["target"]:
            return f"name {x['target']!r} against {y['target']!r}"
        if x.get("tags") != y.get("tags"):
            return f"{x['target']}: tags {x.get('tags')} against {y.get('tags')}"
        px, py = x["datapoints"], y["datapoints"]
        if len(px) != len(py):
            return f"{x['target']}: {len(px)} points against {len(py)}"
        for (vx, tx), (vy, ty) in zip(px, py):
            if tx != ty:
                return f"{x['target']}: time {tx} against {ty}"
            if values and not close(vx, vy):
                return f"{x['target']} at {tx}: {vx} against {vy}"
    return None


if table_file:
    raw = json.load(open(table_file))
else:
    with urllib.request.urlopen(f"{graphite}/functions", timeout=60) as r:
        raw = json.loads(r.read())
# /functions is {name: {name, group, params, ...}}; ?grouped=1 would nest by group.
table = {n: f for n, f in raw.items() if isinstance(f, dict) and "params" in f}
if only:
    table = {n: f for n, f in table.items() if n in only}
gen = Gen(table)
names = sorted(table)
called = set()
n_same = n_err = n_diff = n_empty = 0
def request_options():
    """Now and then a second target in the request (graphite-web fetches every target's
    paths before evaluating any, and keeps state across them), and the options Grafana
    sends."""
    extra = []
    if rng.random() < 0.1:
        extra.append(("maxDataPoints", str(rng.choice([1, 7, 50, 200]))))
    if rng.random() < 0.04:
        extra.append(("noNullPoints", "true"))
    if rng.random() < 0.04:
        extra.append(("xFilesFactor", rng.choice(["0.5", "1"])))
    return extra


for i in range(count):
    fname = names[i] if i < len(names) else rng.choice(gen.series_funcs + gen.makers)
    targets = [gen.call(fname, 1)]
    called.add(fname)
    if i >= len(names) and rng.random() < 0.1:
        targets.append(gen.call(rng.choice(gen.series_funcs), 1))
    extra = request_options() if i >= len(names) else []
    if i >= len(names) and rng.random() < 0.06:
        # graphite-web's template(): a node made `$var`, its value given by name, by
        # position (`$1`) or by the request's `template[var]=` parameter.
        word = rng.choice(["web1", "cpu", "user", "servers", "db1", "web", "2"])
        var = rng.choice(["h", "1", "node"])
        t = targets[0].replace(word, "$" + var) if rng.random() < 0.8 else targets[0]
        form = rng.random()
        if var == "1":
            targets[0] = f"template({t}, {q(word)})"
        elif form < 0.5:
            targets[0] = f"template({t}, {var}={q(word)})"
        elif form < 0.7:
            targets[0] = f"template({t}, {var}={q('nothing')})"
            extra.append((f"template[{var}]", word))
        else:
            targets[0] = f"template({t})"
            extra.append((f"template[{var}]", word))
    target = "&target=".join(targets) + "".join(f"&{k}={v}" for k, v in extra)
    if show:
        print(f"EXPR: {target}", flush=True)
    rs, r = render(ringlet, targets, extra)
    gs, g = render(graphite, targets, extra)
    if rs != 200 or gs != 200:
        if rs != 200 and gs != 200:
            n_same += 1
            n_err += 1
            continue
        print(f"DIFF: {target}: ringlet {rs} {str(r)[:300]}, graphite-web {gs} {str(g)[:300]}")
        n_diff += 1
        continue
    why = same(r, g, values=fname not in RANDOM)
    if why:
        print(f"DIFF: {target}: {why}")
        n_diff += 1
    else:
        n_same += 1
        n_empty += not g
# /functions: the same table (names, signatures, groups, parameters) as graphite-web's;
# the descriptions are each side's own words.
with urllib.request.urlopen(f"{ringlet}/functions", timeout=60) as r:
    mine = json.loads(r.read())
theirs = json.load(open(table_file)) if table_file else raw
fsame = 0
for name in sorted(set(mine) | set(theirs)):
    a, b = dict(mine.get(name, {})), dict(theirs.get(name, {}))
    a.pop("description", None)
    b.pop("description", None)
    if a == b:
        fsame += 1
    else:
        print(f"DIFF: /functions {name}: {a} against {b}")
        n_diff += 1
print(f"FUNCTIONS SAME: {fsame}")

# Grafana's other calls, each the same from both (graphite-web's tag database numbers its
# tags and values, `id`; ringlet keeps no such numbers, so they are left out).
ENDPOINTS = [
    "/metrics/find?query=servers.*",
    "/metrics/find?query=servers.*.cpu",
    "/metrics/find?query=servers.*.cpu.*&wildcards=1",
    "/metrics/find?query=s*",
    "/metrics/find?query=servers.web*.{cpu,mem}.*&format=treejson",
    "/metrics/find?query=servers.*&format=completer",
    "/metrics/find?query=servers.w&format=completer&wildcards=1",
    "/metrics/find?query=servers..cpu&format=completer",
    "/metrics/find?query=misc.old,misc.sparse&format=completer&automatic_variants=1",
    "/metrics/find?query=servers.*.*&format=nodelist&position=2",
    "/metrics/find?query=servers.*.*.*&format=nodelist",
    "/metrics/find?query=misc.*&leavesOnly=1",
    "/metrics/find?query=servers.*&jsonp=cb",
    "/metrics/find?query=no.such.*",
    "/metrics/find?query=slow.*&from=-1h&until=now",
    "/metrics/expand?query=servers.*.cpu.*",
    "/metrics/expand?query=servers.*&query=misc.*",
    "/metrics/expand?query=servers.*&query=misc.*&groupByExpr=1",
    "/metrics/expand?query=servers.*.*&leavesOnly=1",
    "/metrics/expand?query=servers.*&jsonp=cb",
    "/tags",
    "/tags/dc",
    "/tags/name",
    "/tags/autoComplete/tags",
    "/tags/autoComplete/tags?tagPrefix=h",
    "/tags/autoComplete/tags?expr=dc=x",
    "/tags/autoComplete/tags?expr=dc=x&expr=host!=a&limit=2",
    "/tags/autoComplete/values?tag=dc",
    "/tags/autoComplete/values?tag=host&valuePrefix=a",
    "/tags/autoComplete/values?tag=name&expr=dc=y",
    "/tags/findSeries?expr=name=cpu.load",
    "/tags/findSeries?expr=dc=x&expr=name=~disk",
    "/tags/findSeries?expr=host!=a&expr=name=cpu.load",
    "/version",
]


def get(base, path):
    try:
        with urllib.request.urlopen(base + path, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def no_ids(v):
    if isinstance(v, dict):
        return {k: no_ids(x) for k, x in v.items() if k != "id" or "tag" not in v and "value" not in v}
    if isinstance(v, list):
        return [no_ids(x) for x in v]
    return v


esame = 0
for path in ENDPOINTS:
    (rs, r), (gs, g) = get(ringlet, path), get(graphite, path)
    if rs != 200 or gs != 200:
        ok = rs != 200 and gs != 200
    elif "jsonp=" in path or path == "/version":
        ok = r == g
    else:
        ok = no_ids(json.loads(r)) == no_ids(json.loads(g))
    if ok:
        esame += 1
    else:
        print(f"DIFF: {path}: ringlet {rs} {r[:300]!r}, graphite-web {gs} {g[:300]!r}")
        n_diff += 1
print(f"ENDPOINTS SAME: {esame} of {len(ENDPOINTS)}")
print(
    f"GRAPHITE DIFF: {count} expressions, {n_same} same ({n_err} refused by both, "
    f"{n_empty} empty), {n_diff} different, {len(called)} of {len(table)} functions called"
)
sys.exit(1 if n_diff else 0)
