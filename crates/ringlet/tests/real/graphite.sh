#!/usr/bin/env bash
# graphite-web, from Debian's package, as the oracle of ringlet's render API (run by
# tests/real_tools.rs; RINGLET is the binary, T an empty directory, HERE this directory).
#
# The same points go to whisper files (python3-whisper) and, as carbon's plaintext lines,
# to ringlet serve --carbon. graphite-web serves the whisper files (one instance) and
# ringlet's API as its CLUSTER_SERVERS (another); the whisper files are also imported into a
# second store (`ringlet import whisper`) served by a second ringlet: for every target of
# graphite-targets.txt all four give the same JSON.
set -euo pipefail
# Debian's Python: python3-whisper and graphite-web are its packages.
PY=/usr/bin/python3
S=$T/s.sock
mkdir -p "$T/base" "$T/whisper" "$T/conf" "$T/gw"
port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
pids=()
# Every process stopped and waited for before the test removes the directory (a daemon
# still committing at its exit would write into it again).
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
      for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null 2>/dev/null || true; done' EXIT
wait_port() {
    for _ in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    fail "nothing listens on $1"
}
now=$(date +%s)
A=$((now - now % 60 - 7200))
n=$("$PY" "$HERE/graphite-points.py" "$A" "$T/whisper" "$T/points.txt" --tags)
printf '[all]\npattern = .*\nretentions = 10s:1d\n' >"$T/conf/storage-schemas.conf"
printf '[all]\npattern = .*\nxFilesFactor = 0\naggregationMethod = average\n' \
    >"$T/conf/storage-aggregation.conf"

CP=$(port) HP=$(port)
"$RINGLET" serve -g -w 3600 -l "unix:$S" -b "$T/base" --store "$T/store" --carbon "$CP" \
    --http "$HP" --graphite-conf "$T/conf" >"$T/serve.log" 2>&1 &
pids+=($!)
wait_port "$HP"
"$PY" - "$CP" "$T/points.txt" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(open(sys.argv[2], "rb").read())
s.close()
PY
got=0
for _ in $(seq 200); do
    got=$("$PY" - "$S" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"STATS\n")
buf = b""
while b"CarbonSeriesCreated" not in buf:
    buf += s.recv(65536)
for l in buf.decode().splitlines():
    if l.startswith("CarbonPoints: "):
        print(l.split()[1])
PY
)
    [ "$got" = "$n" ] && break
    sleep 0.1
done
[ "$got" = "$n" ] || fail "ringlet took $got points of $n"
echo "POINTS: $n"

# graphite-web: settings of its own for each instance, a database it migrates itself.
gw() { # name port extra-settings
    cat >"$T/gw/gw_$1.py" <<EOC
SECRET_KEY = "ringlet-test"
ALLOWED_HOSTS = ["*"]
TIME_ZONE = "UTC"
DEFAULT_XFILES_FACTOR = 0
GRAPHITE_ROOT = "/usr/share/graphite-web"
STATIC_ROOT = "/usr/share/graphite-web/static"
STORAGE_DIR = "$T/gw/$1"
LOG_DIR = "$T/gw/$1/log"
INDEX_FILE = "$T/gw/$1/index"
DATABASES = {"default": {"NAME": "$T/gw/$1/graphite.db", "ENGINE": "django.db.backends.sqlite3"}}
FUNCTION_PLUGINS = []
TAGDB = ""
$3
EOC
    mkdir -p "$T/gw/$1/log"
    local env=(env PYTHONPATH="$T/gw" GRAPHITE_SETTINGS_MODULE="gw_$1" DJANGO_SETTINGS_MODULE=graphite.settings)
    "${env[@]}" "$PY" -m django migrate --noinput >"$T/gw/$1/migrate.log" 2>&1 ||
        fail "graphite-web's migrate: $(tail -5 "$T/gw/$1/migrate.log")"
    "${env[@]}" "$PY" -m django runserver "127.0.0.1:$2" --noreload >"$T/gw/$1/server.log" 2>&1 &
    pids+=($!)
}
# The whisper files imported into a store of their own, served by a second daemon.
"$RINGLET" --store "$T/imported" import whisper -q "$T/whisper" >"$T/import.log" 2>&1 ||
    fail "import: $(cat "$T/import.log")"
grep -q "^$(find "$T/whisper" -name '*.wsp' | wc -l) imported, 0 skipped" "$T/import.log" ||
    fail "import: $(cat "$T/import.log")"
IP=$(port)
mkdir -p "$T/ibase"
"$RINGLET" serve -g -w 3600 -l "unix:$T/i.sock" -b "$T/ibase" --store "$T/imported" \
    --http "$IP" >"$T/serve-imported.log" 2>&1 &
pids+=($!)
wait_port "$IP"
echo "IMPORTED: $(cat "$T/import.log")"
WP=$(port) XP=$(port)
gw whisper "$WP" "WHISPER_DIR = \"$T/whisper\"
STANDARD_DIRS = [\"$T/whisper\"]
TAGDB = \"graphite.tags.localdatabase.LocalDatabaseTagDB\""
gw cluster "$XP" "STANDARD_DIRS = []
CLUSTER_SERVERS = [\"127.0.0.1:$HP\"]
REMOTE_EXCLUDE_LOCAL = False"
wait_port "$WP"
wait_port "$XP"
# graphite-web's tag database learns the tagged series as carbon would tell it.
"$PY" - "$WP" "$T/points.txt.tags" <<'PY'
import sys, urllib.parse, urllib.request
paths = [l.strip() for l in open(sys.argv[2]) if l.strip()]
data = urllib.parse.urlencode([("path", p) for p in paths]).encode()
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/tags/tagMultiSeries", data, timeout=60).read()
PY
# Tag queries: ringlet, graphite-web over whisper and its tag database, and ringlet over
# the imported files (graphite-web's CLUSTER_SERVERS keep no tag database of their own).
"$PY" "$HERE/graphite-compare.py" "http://127.0.0.1:$HP" "http://127.0.0.1:$WP" \
    "http://127.0.0.1:$HP" "$((A + 5))" "$((A + 7000))" "$HERE/graphite-tag-targets.txt" \
    "http://127.0.0.1:$IP" | sed 's/^SAME: /SAME TAGS: /'
"$PY" "$HERE/graphite-compare.py" "http://127.0.0.1:$HP" "http://127.0.0.1:$WP" \
    "http://127.0.0.1:$XP" "$((A + 5))" "$((A + 7000))" "$HERE/graphite-targets.txt" \
    "http://127.0.0.1:$IP"
