#!/usr/bin/env bash
# Munin, unchanged, on a ringlet view (run by tests/real_tools.rs in a mount namespace of its
# own; RINGLET is the binary, T an empty directory every user can reach, HERE this directory).
#
# Two Munin masters read the same node (munin-node.py: fixed past values, a DERIVE pair and a
# gauge whose max changes): one with its dbdir on a ringlet view over -b and rrdcached_socket
# set to the daemon (run as -U munin, as Munin's own user needs), one on plain files written
# by rrdtool. Munin's first create and its tune of a changed max run on the view's files, its
# updates go through the daemon, its state files beside the RRDs are kept on disk beneath the
# view (the daemon is restarted between the two runs). Then every RRD file of the view is
# the plain one (`rrdtool dump`), the new max applies, and munin-graph and munin-cgi-graph draw
# from the view's files what they draw from the plain ones.
set -euo pipefail
B=$T/base O=$T/oracle S=$T/s.sock
mkdir -p "$B" "$O" "$T/store" "$T/state" "$T/html" "$T/html-o" "$T/log" "$T/run" "$T/cgi-o"
chown munin: "$B" "$O" "$T/store" "$T/html" "$T/html-o" "$T/log" "$T/run" "$T/cgi-o"
# A free port below the ephemeral range (32768 and up), which outgoing connections of the
# tests beside this one could take before munin-node binds it.
PORT=$(python3 -c '
import random, socket
for _ in range(10000):
    p = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break
')
now=$(date +%s)
A=$(((now / 300) * 300 - 300 * 288))
echo "$A" >"$T/state/anchor"
echo 0 >"$T/state/phase"
echo 100 >"$T/state/max"
pids=()
# Every process stopped and waited for before the test removes the directory (a daemon
# still committing at its exit would write into it again).
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
      for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null 2>/dev/null || true; done' EXIT
python3 "$HERE/munin-node.py" "$PORT" "$T/state" >"$T/node.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.05
done

conf() { # dbdir htmldir cgitmpdir [rrdcached socket]
    cat <<EOC
dbdir $1
htmldir $2
logdir $T/log
rundir $T/run
cgitmpdir $3
tmpldir /etc/munin/templates
staticdir /etc/munin/static
${4:+rrdcached_socket $4}
[ringtest;node1.example]
    address 127.0.0.1
    port $PORT
EOC
}
conf "$B" "$T/html" "$B/cgi-tmp" "$S" >"$T/munin.conf"
conf "$B" "$T/html" "$B/cgi-tmp" >"$T/munin-files.conf"
conf "$O" "$T/html-o" "$T/cgi-o" >"$T/oracle.conf"

start() {
    rm -f "$S"
    "$RINGLET" serve -g -w 3600 -U munin -m 777 -l "unix:$S" -b "$B" --store "$T/store" \
        --view >>"$T/serve.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 200); do
        [ -S "$S" ] && mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "the daemon did not start" >&2
    return 1
}
stop() {
    kill "$pid"
    timeout 20 tail --pid="$pid" -f /dev/null
}
update() {
    timeout 120 runuser -u munin -- /usr/share/munin/munin-update --config_file="$1" --nofork
}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

start
echo 200 >"$T/state/phase"
update "$T/munin.conf"
update "$T/oracle.conf"
stop
start
echo 288 >"$T/state/phase"
echo 50 >"$T/state/max"
update "$T/munin.conf"
update "$T/oracle.conf"

# The state files Munin keeps beside its RRDs are on disk beneath the view.
ls "$O" | grep -v '\.rrd$' | sort >"$T/oracle-files"
ls "$B" | grep -v '\.rrd$' | grep -v cgi-tmp | sort >"$T/view-files"
diff "$T/oracle-files" "$T/view-files" || fail "Munin's files in the view differ"
grep -q datafile "$T/view-files" || fail "no datafile in the view"

n=0
for f in "$O"/ringtest/*.rrd; do
    v="$B/ringtest/$(basename "$f")"
    # rrdtool starts each archive at a random row: the dumps (in time order) are compared.
    if ! diff <(rrdtool dump "$f") <(timeout 20 rrdtool dump "$v") >"$T/dump.diff"; then
        head -40 "$T/dump.diff" >&2
        fail "$v does not hold what rrdtool's file holds"
    fi
    n=$((n + 1))
done
[ "$n" = 3 ] || fail "$n RRD files, not 3"
echo "RRD FILES SAME: $n"
L="$B/ringtest/node1.example-load-load-g.rrd"
timeout 10 rrdtool info "$L" | grep -qx 'ds\[42\].max = 5.0000000000e+01' || fail "max not 50"
echo "MAX TUNED"
# Step 36 (before the tune) kept its 75; step 210 (after) is over the max: unknown.
t36=$((A + 36 * 300)) t210=$((A + 210 * 300))
timeout 10 rrdtool fetch "$L" AVERAGE -r 300 -s $((t36 - 300)) -e "$t36" | grep -q "^$t36: 7.5000000000e+01" ||
    fail "step 36 lost its 75"
timeout 10 rrdtool fetch "$L" AVERAGE -r 300 -s $((t210 - 300)) -e "$t210" | grep -q "^$t210: -\?nan" ||
    fail "step 210 is not unknown"
echo "VALUES RIGHT"

# munin-limits and munin-html (their state and list of graphs lands beside the RRDs), then munin-graph reading the view's
# files (no rrdcached_socket) and the plain ones.
graph() {
    timeout 120 runuser -u munin -- /usr/share/munin/munin-limits --config "$1"
    timeout 120 runuser -u munin -- /usr/share/munin/munin-html --config "$1"
    timeout 120 runuser -u munin -- /usr/share/munin/munin-graph --config "$1" --nofork --nolazy \
        --host node1.example
}
graph "$T/munin-files.conf"
graph "$T/oracle.conf"
for g in load-day if_eth0-day load-week; do
    p="$T/html/ringtest/node1.example/$g.png"
    [ "$(head -c 4 "$p" | tail -c 3)" = PNG ] || fail "$p is not a PNG"
done
echo "MUNIN-GRAPH DREW"

# munin-cgi-graph, a fixed range: the same image from the view as from rrdtool's files.
cgi() { # config path-info
    timeout 120 runuser -u munin -- env REQUEST_METHOD=GET MUNIN_CONFIG="$1" PATH_INFO="$2" \
        QUERY_STRING= /usr/lib/munin/cgi/munin-cgi-graph | sed '1,/^\r\?$/d'
}
for g in load if_eth0; do
    pin="/ringtest/node1.example/$g-pinpoint=$A,$((A + 288 * 300)).png"
    cgi "$T/munin-files.conf" "$pin" >"$T/view-$g.png"
    cgi "$T/oracle.conf" "$pin" >"$T/oracle-$g.png"
    [ "$(head -c 4 "$T/view-$g.png" | tail -c 3)" = PNG ] || fail "munin-cgi-graph $g: no PNG"
    cmp "$T/view-$g.png" "$T/oracle-$g.png" || fail "munin-cgi-graph $g differs"
done
echo "MUNIN-CGI-GRAPH SAME"
stop
