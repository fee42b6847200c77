#!/usr/bin/env bash
# The Graphite differential test (run by tests/real_tools.rs; RINGLET is the binary, T an
# empty directory, HERE this directory): the same nine days of points go to whisper files
# (python3-whisper) served by graphite-web (Debian's, with its tag database) and, as
# carbon's plaintext lines, to `ringlet serve --carbon`; graphite-diff.py then renders
# GRAPHITE_DIFF_CASES random expressions (default 1000, seed GRAPHITE_DIFF_SEED) from
# graphite-web's function table on both, and graphite-diff-endpoints.py compares the other
# calls Grafana makes.
#
# GRAPHITE_DIFF_KEEP=1 leaves both running and prints their addresses (for working on a
# function: `graphite-diff.py URL URL FROM UNTIL N SEED --show --only name`).
set -euo pipefail
S=$T/s.sock
mkdir -p "$T/base" "$T/whisper" "$T/conf" "$T/gw"
. "$HERE/lib.sh"
now=$(date +%s)
U=$((now - now % 3600))
n=$("$PY" "$HERE/graphite-diff-points.py" "$U" "$T/whisper" "$T/points.txt")
printf '[slow]\npattern = ^slow\\.\nretentions = 5m:10d\n[all]\npattern = .*\nretentions = 1m:10d\n' \
    >"$T/conf/storage-schemas.conf"
printf '[all]\npattern = .*\nxFilesFactor = 0\naggregationMethod = average\n' \
    >"$T/conf/storage-aggregation.conf"

carbon_ringlet "$T/points.txt" "$n" 60
WP=$(port)
gw whisper "$WP" "WHISPER_DIR = \"$T/whisper\"
STANDARD_DIRS = [\"$T/whisper\"]
TAGDB = \"graphite.tags.localdatabase.LocalDatabaseTagDB\""
wait_port "$WP"
"$PY" - "$WP" "$T/points.txt.tags" <<'PY'
import sys, urllib.parse, urllib.request
paths = [l.strip() for l in open(sys.argv[2]) if l.strip()]
data = urllib.parse.urlencode([("path", p) for p in paths]).encode()
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/tags/tagMultiSeries", data, timeout=60).read()
PY
# graphite-web's /functions as it answers where Python still has inspect.getargspec
# (Debian's, on Python 3.11, answers 500): its function table, for the generator and for
# ringlet's /functions.
PYTHONPATH="$T/gw" GRAPHITE_SETTINGS_MODULE=gw_whisper DJANGO_SETTINGS_MODULE=graphite.settings \
    "$PY" - >"$T/functions.json" 2>"$T/functions.log" <<'PY'
import inspect, json
import django
django.setup()
from graphite.functions import SeriesFunctions, functionInfo
from graphite.functions.views import jsonInfinityEncoder

def getargspec(f):
    s = inspect.getfullargspec(f)
    return s.args, s.varargs, s.varkw, s.defaults

def formatargspec(args, varargs, varkw, defaults):
    out = []
    first_default = len(args) - len(defaults or ())
    for i, a in enumerate(args):
        out.append(a if i < first_default else f"{a}={defaults[i - first_default]!r}")
    if varargs:
        out.append("*" + varargs)
    if varkw:
        out.append("**" + varkw)
    return "(" + ", ".join(out) + ")"

inspect.getargspec = getargspec
inspect.formatargspec = formatargspec
print(json.dumps({n: functionInfo(n, f) for n, f in SeriesFunctions().items()}, cls=jsonInfinityEncoder))
PY
FROM=$((U - 6 * 3600)) UNTIL=$U
if [ "${GRAPHITE_DIFF_KEEP:-}" = 1 ]; then
    echo "RINGLET http://127.0.0.1:$HP GRAPHITE http://127.0.0.1:$WP FROM $FROM UNTIL $UNTIL"
    echo "$HP $WP $FROM $UNTIL $T/functions.json" >"${GRAPHITE_DIFF_PORTS:-/tmp/graphite-diff.ports}"
    sleep infinity
fi
"$PY" "$HERE/graphite-diff.py" "http://127.0.0.1:$HP" "http://127.0.0.1:$WP" "$FROM" "$UNTIL" \
    "${GRAPHITE_DIFF_CASES:-1000}" "${GRAPHITE_DIFF_SEED:-1}" --table "$T/functions.json"
