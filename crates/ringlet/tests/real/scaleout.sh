#!/usr/bin/env bash
# Scale-out on Graphite's own tools (run by tests/real_tools.rs; RINGLET is the binary, T an
# empty directory, HERE this directory): carbon-c-relay (Debian's) spreads carbon's points
# over three `ringlet serve --carbon --http` nodes by consistent hash with replication 2, and
# graphite-web (Debian's) reads them all as its CLUSTER_SERVERS. Every point is on exactly two
# nodes; graphite-web over the three gives, for every target of graphite-targets.txt, the
# JSON graphite-web gives over whisper files fed the same points; with one node stopped it
# still does, from the replicas. No cluster code of ringlet's own.
set -euo pipefail
mkdir -p "$T/whisper" "$T/conf" "$T/gw"
. "$HERE/lib.sh"
stat_of() { # socket key
    "$PY" - "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"STATS\n")
b = b""
while b"CarbonSeriesCreated" not in b:
    b += s.recv(65536)
print(next(l.split()[1] for l in b.decode().splitlines() if l.startswith(sys.argv[2] + ": ")))
PY
}
now=$(date +%s)
A=$((now - now % 60 - 7200))
n=$("$PY" "$HERE/graphite-points.py" "$A" "$T/whisper" "$T/points.txt")
printf '[all]\npattern = .*\nretentions = 10s:1d\n' >"$T/conf/storage-schemas.conf"
printf '[all]\npattern = .*\nxFilesFactor = 0\naggregationMethod = average\n' \
    >"$T/conf/storage-aggregation.conf"

# Three nodes.
CP=() HP=() NP=()
for k in 1 2 3; do
    CP[k]=$(port) HP[k]=$(port)
    mkdir -p "$T/n$k/base"
    "$RINGLET" serve -g -w 3600 -l "unix:$T/n$k.sock" -b "$T/n$k/base" --store "$T/n$k/store" \
        --carbon "${CP[k]}" --http "${HP[k]}" --graphite-conf "$T/conf" >"$T/n$k.log" 2>&1 &
    NP[k]=$!
    pids+=("${NP[k]}")
done
for k in 1 2 3; do wait_port "${HP[k]}"; done

# carbon-c-relay in front: consistent hash (carbon's), replication 2. The nodes share a host,
# so each gets an instance name: carbon_ch places servers by host and instance, not port.
RP=$(port)
cat >"$T/relay.conf" <<EOC
listen
    type linemode
        127.0.0.1:$RP proto tcp
    ;
cluster ringlets
    carbon_ch replication 2
        127.0.0.1:${CP[1]}=a
        127.0.0.1:${CP[2]}=b
        127.0.0.1:${CP[3]}=c
    ;
match * send to ringlets stop;
EOC
carbon-c-relay -f "$T/relay.conf" -s >"$T/relay.log" 2>&1 &
relay=$!
wait_port "$RP"
"$PY" - "$RP" "$T/points.txt" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(open(sys.argv[2], "rb").read())
s.close()
PY
total=0
for _ in $(seq 300); do
    total=0
    for k in 1 2 3; do total=$((total + $(stat_of "$T/n$k.sock" CarbonPoints))); done
    [ "$total" -ge $((2 * n)) ] && break
    sleep 0.1
done
[ "$total" = $((2 * n)) ] || fail "the nodes took $total points, not 2 x $n"
echo "POINTS ON TWO NODES EACH: $n"
for k in 1 2 3; do echo "node $k: $(stat_of "$T/n$k.sock" CarbonSeriesCreated) series"; done

WP=$(port) XP=$(port)
gw whisper "$WP" "WHISPER_DIR = \"$T/whisper\"
STANDARD_DIRS = [\"$T/whisper\"]"
gw cluster "$XP" "STANDARD_DIRS = []
CLUSTER_SERVERS = [\"127.0.0.1:${HP[1]}\", \"127.0.0.1:${HP[2]}\", \"127.0.0.1:${HP[3]}\"]
REMOTE_EXCLUDE_LOCAL = False
FIND_CACHE_DURATION = 0
REMOTE_RETRY_DELAY = 0"
wait_port "$WP"
wait_port "$XP"
compare() {
    "$PY" "$HERE/graphite-compare.py" "http://127.0.0.1:$XP" "http://127.0.0.1:$WP" \
        "http://127.0.0.1:$XP" "$((A + 5))" "$((A + 7000))" "$HERE/graphite-targets.txt"
}
compare >"$T/all.out" || { cat "$T/all.out"; fail "three nodes"; }
echo "THREE NODES SAME: $(grep -c '^SAME' "$T/all.out")"
# One node stops: its replicas answer.
kill "${NP[2]}"
timeout 20 tail --pid="${NP[2]}" -f /dev/null
compare >"$T/two.out" || { cat "$T/two.out"; fail "two nodes"; }
echo "ONE NODE DOWN SAME: $(grep -c '^SAME' "$T/two.out")"
