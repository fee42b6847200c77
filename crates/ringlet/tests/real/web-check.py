"""The web page in headless Chromium against a running daemon (run by web.sh):
web-check.py HTTP_PORT SOCKET BASE_DIR SHOTS_DIR SERIES_COUNT [LOADS]

Checks the DOM: the tree lists the series and the search filters it; a chart of a known
series is drawn and its legend's min/avg/max/last are those of `rrdtool fetch --daemon`
over the range shown; a drag zooms (the range requested narrows) and a double-click goes
back; the URL restores the view; live refresh shows a value sent after the page loaded;
the Disk panel shows STATS. Prints a line per check (upper case), and the figures: the
time from navigation to the first chart (LOADS loads), and the search's time to filter."""

import json
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Chrome  # noqa: E402

port, sock, basedir, shots, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
loads = int(sys.argv[6]) if len(sys.argv) > 6 else 5
base = "http://127.0.0.1:%s/" % port
os.makedirs(shots, exist_ok=True)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def daemon(line):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    f = s.makefile("rwb")
    f.write((line + "\n").encode())
    f.flush()
    head = f.readline().decode()
    n = int(head.split(" ", 1)[0])
    lines = [f.readline().decode().rstrip("\n") for _ in range(max(n, 0))]
    s.close()
    return head, lines


def stats():
    _, lines = daemon("STATS")
    return dict(l.split(": ", 1) for l in lines)


def oracle(name, cf, start, end):
    """min, avg, max, last and the step of `rrdtool fetch --daemon` (first DS)."""
    p = subprocess.run(
        ["rrdtool", "fetch", "--daemon", "unix:" + sock, name, cf, "-s", str(start), "-e", str(end)],
        capture_output=True, text=True, env=dict(os.environ, TZ="UTC", LC_ALL="C"), cwd=basedir,
    )
    if p.returncode != 0:
        fail("rrdtool fetch %s: %s" % (name, p.stderr))
    out = p.stdout
    rows = []
    for line in out.splitlines():
        if ":" not in line:
            continue
        t, vs = line.split(":", 1)
        v = float(vs.split()[0])
        rows.append((int(t), v))
    known = [v for _, v in rows if v == v]
    step = rows[1][0] - rows[0][0]
    return min(known), sum(known) / len(known), max(known), known[-1], step


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


c = Chrome()
try:
    q = lambda e: c.eval(e)  # noqa: E731
    chart = "document.getElementById('chart').dataset"

    # First load: the tree, and a known series charted from the URL.
    times = []
    for k in range(loads):
        # A query of its own each time: a new document, not a move within the last one.
        c.goto(base + "?load=%d#from=-1d&until=now&s=web%%2Fknown.rrd%%2Cv%%2CAVERAGE%%2Cauto" % k)
        c.wait("document.body && document.body.dataset.ready === '1'", 30, "the page")
        times.append(float(q("document.body.dataset.firstChartMs")))
    print("FIRST CHART MS: median %.1f (min %.1f, max %.1f, %d loads)"
          % (statistics.median(times), min(times), max(times), len(times)))
    listed = q("document.getElementById('count').textContent")
    count += 1  # web.sh's hostile name
    if not listed.startswith("%d series" % count):
        fail("the tree says %r, not %d series" % (listed, count))
    dirs = q("[...document.querySelectorAll('#tree > li.dir')].map(e => e.dataset.dir)")
    if "web" not in dirs or len(dirs) < 2:
        fail("the tree's top directories: %r" % dirs)
    q("document.querySelector('#tree li.dir[data-dir=\"web\"] > span').click()")
    c.wait("!!document.querySelector('#tree li.rrd[data-series=\"web/known.rrd\"] li.ds[data-ds=\"w\"]')", 20, "web/ opened")
    evil = "web/<b>bold&'q<script>alert(1)<script>.rrd"
    shown = q("""(() => { const r = [...document.querySelectorAll('#tree li.rrd')].find(e => e.dataset.series === %s);
        return r ? r.firstChild.textContent : null; })()""" % json.dumps(evil))
    if shown != evil[4:] or q("document.querySelectorAll('#tree b, #tree script').length") != 0:
        fail("the hostile name shows as %r" % shown)
    q("document.querySelector('#tree li.dir[data-dir=\"host42\"] > span').click()")
    c.wait("document.querySelectorAll('#tree li.dir[data-dir=\"host42\"] li.rrd').length === 20", 20, "host42/ opened")
    print("TREE LISTS: %d series, %d top directories, opened one at a time; a name in HTML shown as text" % (count, len(dirs)))
    c.screenshot(os.path.join(shots, "1-day.png"))

    def legend(name):
        return q("""(() => { const r = document.querySelector('#legend tr[data-series="%s"]');
            if (!r) return null;
            const v = (k) => r.querySelector('td.' + k).dataset.value;
            return {min: v('min'), avg: v('avg'), max: v('max'), last: v('last'), step: r.dataset.step}; })()""" % name)

    def check_legend(name, what):
        got = legend(name)
        f, u = int(q(chart + ".from")), int(q(chart + ".until"))
        want = oracle(name, "AVERAGE", f, u)
        for k, w in zip(["min", "avg", "max", "last"], want):
            if not got or got[k] == "" or not close(float(got[k]), w):
                fail("%s: legend %s is %r, rrdtool fetch says %r (range %d..%d)" % (what, k, got and got[k], w, f, u))
        if int(got["step"]) != want[4]:
            fail("%s: rows of %s s, rrdtool fetch's of %d" % (what, got["step"], want[4]))
        return got, (f, u)

    got, (f0, u0) = check_legend("web/known.rrd", "1 day")
    if int(q(chart + ".points")) < 1000 or int(q(chart + ".drawn")) < 1:
        fail("the chart was not drawn with its points")
    print("CHART DRAWN: %s points, legend min %s avg %s max %s last %s = rrdtool fetch"
          % (q(chart + ".points"), got["min"], got["avg"], got["max"], got["last"]))

    # The search box: filters as one types, across thousands of series.
    def search(text):
        """Type `text`; (data sources listed, ms until the list changed)."""
        return q("""new Promise((done) => {
            const s = document.getElementById('search'), count = document.getElementById('count');
            const t0 = performance.now(), was = count.textContent + '|' + document.getElementById('tree').childElementCount;
            const obs = new MutationObserver(() => {
                if (!count.textContent.includes('match')) return;
                obs.disconnect();
                done([document.querySelectorAll('#tree li.ds').length, performance.now() - t0]);
            });
            obs.observe(count, {childList: true, characterData: true, subtree: true});
            s.value = %s; s.dispatchEvent(new Event('input'));
        })""" % json.dumps(text))

    first = search("host42/ cpu7.rrd")
    if first[0] != 1:
        fail("'host42/ cpu7.rrd' found %d data sources" % first[0])
    hit = q("document.querySelector('#tree li.ds').dataset.series")
    if hit != "host42/cpu7.rrd":
        fail("'host42/ cpu7.rrd' found %s" % hit)
    n = search("known")
    n2 = q("[...document.querySelectorAll('#tree li.ds')].map(e => e.dataset.ds)")
    if sorted(n2) != ["v", "w"]:
        fail("'known' found %r" % n2)
    n3 = search("cpu1")
    if n3[0] != min(500, 11 * ((count - 1) // 20)):
        fail("'cpu1' lists %d" % n3[0])
    where = "in the page" if count <= 20000 else "by the daemon, after 150 ms without typing"
    print("SEARCH FILTERS: %d series %s: %.1f ms the first time, then %.1f ms and %.1f ms"
          % (count, where, first[1], n[1], n3[1]))

    # A second series from the search's results, on the same chart.
    search("host42/ cpu7.rrd")
    q("document.querySelector('#tree li.ds[data-series=\"host42/cpu7.rrd\"] a').click()")
    c.wait("document.querySelectorAll('#legend tbody tr').length === 2", 20, "a second series")
    c.wait("document.querySelector('#legend tr[data-series=\"host42/cpu7.rrd\"] td.last').dataset.value !== ''", 20)
    c.screenshot(os.path.join(shots, "compare.png"))
    # host42/cpu7 has values for the last hour only: the day before is unknown, drawn as a gap.
    gaps = q("""(() => { const k = plot.series.findIndex(x => x.label && x.label.startsWith('host42/cpu7.rrd'));
        const d = plot.data[k]; return [d.filter(v => v === null).length, d.filter(v => typeof v === 'number').length, plot.series[k].spanGaps]; })()""")
    if gaps[0] < 1000 or gaps[1] < 50 or gaps[2] is not False:
        fail("unknown values are not gaps: %r" % gaps)
    print("COMPARE: 2 series on one chart; %d unknown rows drawn as a gap" % gaps[0])

    # Drag to zoom: the range requested narrows, the legend follows.
    box = q("(() => { const o = document.querySelector('#chart .u-over').getBoundingClientRect(); return [o.left, o.top, o.width, o.height]; })()")
    before = int(q(chart + ".fetches"))
    f0, u0 = int(q(chart + ".from")), int(q(chart + ".until"))
    c.drag(box[0] + box[2] * 0.40, box[0] + box[2] * 0.60, box[1] + box[3] / 2)
    c.wait("%s.from !== '%d'" % (chart, f0), 20, "the zoom")
    c.wait("document.querySelectorAll('#legend tbody tr').length === 2", 20)
    f1, u1 = int(q(chart + ".from")), int(q(chart + ".until"))
    if not (f0 < f1 < u1 < u0) or (u1 - f1) > 0.3 * (u0 - f0):
        fail("zoom: %d..%d from %d..%d" % (f1, u1, f0, u0))
    if int(q(chart + ".fetches")) <= before:
        fail("zoom fetched nothing")
    if "from=%d" % f1 not in q("location.hash"):
        fail("the URL does not hold the zoomed range: " + q("location.hash"))
    check_legend("web/known.rrd", "zoomed")
    print("ZOOM REQUESTS: %d..%d (%.1f h) within %d..%d" % (f1, u1, (u1 - f1) / 3600, f0, u0))
    c.screenshot(os.path.join(shots, "zoomed.png"))
    zoomed = q("location.href")

    # An archive chosen by hand: the hourly MAX rows, as rrdtool gives them.
    q("""(() => { const sel = document.querySelector('#legend tr[data-series="web/known.rrd"] select[aria-label="archive"]');
        sel.value = '1'; sel.dispatchEvent(new Event('change')); })()""")
    c.wait("document.querySelector('#legend tr[data-series=\"web/known.rrd\"]').dataset.rra === '1'", 20, "archive 1")
    mx = legend("web/known.rrd")
    if mx["step"] != "3600" or float(mx["max"]) != 99.0:
        fail("archive 1: %r" % mx)
    q("""(() => { const sel = document.querySelector('#legend tr[data-series="web/known.rrd"] select[aria-label="archive"]');
        sel.value = 'auto'; sel.dispatchEvent(new Event('change')); })()""")
    c.wait("document.querySelector('#legend tr[data-series=\"web/known.rrd\"]').dataset.step === '60'", 20, "auto again")
    print("ARCHIVE CHOSEN: MAX at 1 h rows")

    # Double-click: back to the preset.
    c.dblclick(box[0] + box[2] * 0.5, box[1] + box[3] / 2)
    c.wait("location.hash.includes('from=-1d')", 20, "the reset")
    c.wait("Math.abs(Number(%s.until) - Date.now() / 1000) < 120" % chart, 20)
    print("DOUBLE-CLICK RESETS: to the last day")

    # A custom range from the two fields.
    q("""(() => { const p = (x) => String(x).padStart(2, '0'), d = new Date((%d - 7200) * 1000);
        const v = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes());
        const e = new Date(%d * 1000);
        const w = e.getFullYear() + '-' + p(e.getMonth() + 1) + '-' + p(e.getDate()) + 'T' + p(e.getHours()) + ':' + p(e.getMinutes());
        document.getElementById('from').value = v; document.getElementById('until').value = w;
        document.getElementById('apply').click(); })()""" % (u0 - u0 % 60, u0 - u0 % 60))
    c.wait("Number(%s.until) === %d" % (chart, u0 - u0 % 60), 20, "the custom range")
    if int(q(chart + ".from")) != u0 - u0 % 60 - 7200:
        fail("custom range from %s" % q(chart + ".from"))
    check_legend("web/known.rrd", "custom range")
    print("CUSTOM RANGE: 2 h")

    # The URL brings the zoomed view back.
    c.goto("about:blank")
    c.goto(zoomed)
    c.wait("document.body && document.body.dataset.ready === '1'", 30)
    if int(q(chart + ".from")) != f1 or q("document.querySelectorAll('#legend tbody tr').length") != 2:
        fail("the bookmarked URL did not bring the view back")
    print("URL RESTORES: range and series")

    # Live refresh: a value sent now shows up without a reload.
    c.goto(base + "#from=-1h&until=now&s=web%2Fknown.rrd%2Cv%2CAVERAGE%2Cauto&refresh=10")
    c.wait("document.body && document.body.dataset.ready === '1'", 30)
    _, info = daemon("INFO web/known.rrd")
    last_up = int(next(l for l in info if l.startswith("last_update")).split()[-1])
    head, _ = daemon("UPDATE web/known.rrd %d:1234.5:U" % (last_up + 60))
    if not head.startswith("0"):
        fail("UPDATE: " + head)
    c.wait("document.querySelector('#legend tr[data-series=\"web/known.rrd\"] td.last').dataset.value === '1234.5'",
           30, "the refreshed value")
    print("LIVE REFRESH: a value sent after the load is shown")

    # The Disk panel: STATS, once the values are committed.
    head, _ = daemon("FLUSHALL")
    if not head.startswith("0"):
        fail("FLUSHALL: " + head)
    c.goto(base)
    c.wait("document.body && document.body.dataset.ready === '1'", 30)
    c.wait("!!document.querySelector('#diskfigs dd[data-key=\"Commits\"]')", 20)
    st = stats()
    panel = q("Object.fromEntries([...document.querySelectorAll('#diskfigs dd')].map(d => [d.dataset.key, d.dataset.value]))")
    if panel.get("TreeNodesNumber") != st["TreeNodesNumber"] or panel.get("lossWindowSeconds") != "60":
        fail("the Disk panel: %r against STATS %r" % (panel, st))
    if int(panel["Commits"]) < 1 or int(panel["DataSetsWritten"]) < 2000 or float(panel["DiskBytesPerSample"]) <= 0:
        fail("the Disk panel shows no commits: %r" % panel)
    print("DISK PANEL: %s series, %s commits, %s bytes a value, window %s s"
          % (panel["TreeNodesNumber"], panel["Commits"], panel["DiskBytesPerSample"], panel["lossWindowSeconds"]))
    c.screenshot(os.path.join(shots, "disk.png"))
finally:
    c.close()
