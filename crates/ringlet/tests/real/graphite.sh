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
S=$T/s.sock
mkdir -p "$T/base" "$T/whisper" "$T/conf" "$T/gw"
. "$HERE/lib.sh"
now=$(date +%s)
A=$((now - now % 60 - 7200))
n=$("$PY" "$HERE/graphite-points.py" "$A" "$T/whisper" "$T/points.txt" --tags)
printf '[all]\npattern = .*\nretentions = 10s:1d\n' >"$T/conf/storage-schemas.conf"
printf '[all]\npattern = .*\nxFilesFactor = 0\naggregationMethod = average\n' \
    >"$T/conf/storage-aggregation.conf"

carbon_ringlet "$T/points.txt" "$n"

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
