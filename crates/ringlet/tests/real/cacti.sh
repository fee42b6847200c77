#!/usr/bin/env bash
# Cacti, unchanged, with ringlet as its rrdtool (run by tests/real_tools.rs in a mount
# namespace of its own; RINGLET is the binary, T an empty directory, HERE this directory).
#
# Debian's Cacti 1.2 on a MariaDB of the test's own (its socket, data and Cacti's config are
# bind-mounted over the system's paths inside the namespace), installed by its own CLI, a
# "Local Linux Machine" device added with its graphs. Two Cactis from that one database:
# A keeps rrdtool and its rra directory of files; B's path_rrdtool is ringlet, beside
# `ringlet serve -b` on B's rra directory, so B's files are placeholders. The device's data
# input scripts are replaced by ones that print values of the poll's number, and both
# pollers run under libfaketime at the same times, 5 minutes apart. Then every RRD of A is
# B's series (`rrdtool dump` of A's file against `ringlet dump` of B's path), and Cacti's own
# rrdtool_function_graph draws the same PNG bytes from both. A third, C, runs ringlet as its
# rrdtool with no daemon at all (`ringlet -` on a store of its own): its creates leave
# placeholders, so Cacti creates each RRD once and C's series are A's too. After Boost's
# flush through B's daemon, the daemon is killed (kill -9) before anything else commits:
# the session committed what Boost then deleted from its table.
set -euo pipefail
. "$HERE/lib.sh"
POLLS=${CACTI_POLLS:-12}
DB=$T/db
mkdir -p "$DB" "$T/mysqld" "$T/rra-a" "$T/rra-b" "$T/rra-c" "$T/log-a" "$T/log-b" "$T/log-c" \
    "$T/store" "$T/store-c" "$T/scripts"
mkdir -p /run/mysqld
mount --bind "$T/mysqld" /run/mysqld
mariadb-install-db --no-defaults --datadir="$DB" --user=root >"$T/install-db.log" 2>&1 \
    || fail "mariadb-install-db"
# The clock of MariaDB (Cacti stamps its poller's output with NOW()), the pollers and the
# commands they run: libfaketime, reading the time from a file before every call, set to
# each poll's time and standing still meanwhile (the daemon keeps the real clock).
FAKE=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
[ -e "$FAKE" ] || fail "libfaketime is not installed"
# MariaDB starts on a ticking clock (it waits on time passing as it starts), then stands.
echo "@$(date -u -d "@$(( ($(date +%s) / 86400 - 3) * 86400 ))" '+%Y-%m-%d %H:%M:%S')" >"$T/faketime"
faked() { FAKETIME_TIMESTAMP_FILE="$T/faketime" FAKETIME_NO_CACHE=1 LD_PRELOAD="$FAKE" "$@"; }
# Started as a simple command, so that $! is mariadbd itself (stopped at exit).
FAKETIME_TIMESTAMP_FILE="$T/faketime" FAKETIME_NO_CACHE=1 LD_PRELOAD="$FAKE" \
    mariadbd --no-defaults --datadir="$DB" --socket=/run/mysqld/mysqld.sock --skip-networking \
    --user=root --pid-file="$T/mariadb.pid" >"$T/mariadb.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do [ -S /run/mysqld/mysqld.sock ] && break; sleep 0.1; done
[ -S /run/mysqld/mysqld.sock ] || fail "mariadbd did not start"
date -u -d "@$(( ($(date +%s) / 86400 - 3) * 86400 ))" '+%Y-%m-%d %H:%M:%S' >"$T/faketime"
sql() { mariadb -u root "$@"; }
sql -e "CREATE DATABASE cacti_a; CREATE DATABASE cacti_b; CREATE DATABASE cacti_c;
        CREATE USER cacti@localhost IDENTIFIED BY 'cacti';
        GRANT ALL ON cacti_a.* TO cacti@localhost; GRANT ALL ON cacti_b.* TO cacti@localhost;
        GRANT ALL ON cacti_c.* TO cacti@localhost;
        GRANT SELECT ON mysql.time_zone_name TO cacti@localhost; FLUSH PRIVILEGES;"
sql cacti_a </usr/share/doc/cacti/cacti.sql
for w in a b c; do
    cat >"$T/debian-$w.php" <<EOC
<?php
\$database_type = 'mysql'; \$database_default = 'cacti_$w'; \$database_hostname = 'localhost';
\$database_username = 'cacti'; \$database_password = 'cacti'; \$database_port = '3306';
\$database_retries = 5; \$database_ssl = false; \$database_ssl_key = '';
\$database_ssl_cert = ''; \$database_ssl_ca = ''; \$poller_id = 1; \$url_path = '/cacti/';
\$cacti_session_name = 'Cacti'; \$cacti_db_session = false; \$disable_log_rotation = true;
EOC
done
cp -a /usr/share/cacti/site/scripts/. "$T/scripts/"
# Cacti W's command: its config, rra directory, log and scripts mounted over Debian's paths.
MOUNTS='mount --bind "$T/debian-$1.php" /etc/cacti/debian.php
        mount --bind "$T/rra-$1" /var/lib/cacti/rra
        mount --bind "$T/log-$1" /var/log/cacti
        mount --bind "$T/scripts" /usr/share/cacti/site/scripts
        shift
        exec "$@"'
cacti() { unshare -m --propagation private bash -c "$MOUNTS" _ "$@"; }
export T
# Install once (Cacti's CLI installer), add the device and its graphs, then copy the
# database for B: the same ids, the same file names.
cacti a php /usr/share/cacti/cli/install_cacti.php --accept-eula --install >"$T/install.log" 2>&1 \
    || fail "install_cacti.php"
cacti a php /usr/share/cacti/cli/add_device.php --description=local --ip=127.0.0.1 \
    --template=7 --avail=none --version=0 >"$T/add_device.log" 2>&1 || fail "add_device.php"
# The data input scripts: Cacti's own, but the four of a Local Linux Machine print values of
# the poll's number (in $T/poll), the same for both Cactis (written after the install, which
# writes its packages' scripts).
cat >"$T/scripts/loadavg_multi.pl" <<EOC
open(F, "<$T/poll"); \$k = <F>; chomp \$k;
printf("1min:%.2f 5min:%.2f 10min:%.2f", (\$k % 7) * 0.37, (\$k % 5) * 0.21, (\$k % 3) * 0.11);
EOC
cat >"$T/scripts/linux_memory.pl" <<EOC
open(F, "<$T/poll"); \$k = <F>; chomp \$k;
print(1000000 + (\$k * 7919 % 100000) * (\$ARGV[0] =~ /Swap/ ? 2 : 1));
EOC
cat >"$T/scripts/unix_processes.pl" <<EOC
open(F, "<$T/poll"); \$k = <F>; chomp \$k; print(100 + \$k % 17);
EOC
cat >"$T/scripts/unix_users.pl" <<EOC
open(F, "<$T/poll"); \$k = <F>; chomp \$k; print(\$k % 4);
EOC
mariadb-dump -u root cacti_a | sql cacti_b
sql cacti_b -e "UPDATE settings SET value='$RINGLET' WHERE name='path_rrdtool'"
mariadb-dump -u root cacti_a | sql cacti_c
sql cacti_c -e "UPDATE settings SET value='$RINGLET' WHERE name='path_rrdtool'"
dss=$(sql -N cacti_a -e "SELECT COUNT(*) FROM data_local")
[ "$dss" -ge 4 ] || fail "the device has $dss data sources"
# The daemon sees B's paths: its -b is Cacti's rra directory, which Cacti names through
# Debian's link /usr/share/cacti/site/rra.
# (Not through the function: $! is then the daemon itself, unshare and bash exec'ing it.)
serve_b() {
    rm -f "$T/s.sock"
    unshare -m --propagation private bash -c "$MOUNTS" _ b "$RINGLET" serve -g -w 300 \
        -l "unix:$T/s.sock" -b /var/lib/cacti/rra --store "$T/store" >>"$T/serve.log" 2>&1 &
    daemon=$!
    pids+=($daemon)
    for _ in $(seq 200); do [ -S "$T/s.sock" ] && break; sleep 0.05; done
}
serve_b
# Polls at the same fake times for both: midnight of a day some days back, then every 5 min.
day=$(( ($(date +%s) / 86400 - 3) * 86400 ))
at() { date -u -d "@$1" '+%Y-%m-%d %H:%M:%S' >"$T/faketime"; }
poll() { # k: the poll's number
    echo "$1" >"$T/poll"
    at "$((day + 300 * $1 + 10))"
    faked cacti a php /usr/share/cacti/site/poller.php --force >>"$T/poller-a.log" 2>&1 \
        || fail "poller A, poll $1"
    RINGLET_STORE="$T/store" faked cacti b php /usr/share/cacti/site/poller.php --force \
        >>"$T/poller-b.log" 2>&1 || fail "poller B, poll $1"
    RINGLET_STORE="$T/store-c" faked cacti c php /usr/share/cacti/site/poller.php --force \
        >>"$T/poller-c.log" 2>&1 || fail "poller C, poll $1"
}
for k in $(seq 1 "$POLLS"); do
    poll "$k"
done
grep -h "ERROR" "$T/log-b/cacti.log" | head -5 >&2 || true
# Every RRD of A is the series of W (b: through B's daemon, by the name under its -b; c: C's
# store alone, named by the path Cacti gave, /usr/share/cacti/site/rra or its target), and
# W's files are placeholders (Cacti's file_exists found them: one create each, the values
# kept).
compare_in() { # w store names...
local w=$1 store=$2 f name got
shift 2
n=0
for f in "$T"/rra-a/*.rrd; do
    head -c 21 "$T/rra-$w/$(basename "$f")" | grep -q "ringlet placeholder" \
        || fail "$w: $(basename "$f") is not a placeholder"
    rrdtool dump "$f" >"$T/a.xml"
    grep -q "<v>[0-9]" "$T/a.xml" || fail "$(basename "$f") holds no value"
    got=
    for name in "$@"; do
        RINGLET_STORE="$store" "$RINGLET" dump "$name$(basename "$f")" >"$T/$w.xml" 2>/dev/null \
            && got=1 && break
    done
    [ -n "$got" ] || fail "$w holds no series for $(basename "$f")"
    cmp -s "$T/a.xml" "$T/$w.xml" || { diff "$T/a.xml" "$T/$w.xml" | head -20 >&2; fail "$w: $(basename "$f") differs"; }
    n=$((n + 1))
done
[ "$n" -ge 4 ] || fail "only $n RRDs in $w"
}
compare_rrds() { compare_in b "$T/store" ""; }
compare_alone() { compare_in c "$T/store-c" /usr/share/cacti/site/rra/ /var/lib/cacti/rra/; }
# Cacti's own graph function, through each Cacti's rrdtool.
cat >"$T/graph.php" <<'EOC'
<?php
include('/usr/share/cacti/site/include/cli_check.php');
include_once($config['base_path'] . '/lib/rrd.php');
$null = array();
$out = rrdtool_function_graph($argv[1], 0, array('graph_start' => $argv[2],
    'graph_end' => $argv[3], 'disable_cache' => true, 'image_format' => 'png'), '', $null, 1);
file_put_contents($argv[4], $out);
EOC
compare_graphs() { # end
g=0
end=$1
at "$((end + 60))"
for id in $(sql -N cacti_a -e "SELECT id FROM graph_local"); do
    faked cacti a php "$T/graph.php" "$id" "$day" "$end" "$T/a-$id.png" \
        >>"$T/graph-a.log" 2>&1 || fail "graph A $id"
    RINGLET_STORE="$T/store" faked cacti b php "$T/graph.php" "$id" "$day" \
        "$end" "$T/b-$id.png" >>"$T/graph-b.log" 2>&1 || fail "graph B $id"
    head -c 4 "$T/a-$id.png" | grep -q PNG || fail "graph $id: A drew no PNG"
    cmp -s "$T/a-$id.png" "$T/b-$id.png" || fail "graph $id: the PNGs differ"
    g=$((g + 1))
done
[ "$g" -ge 4 ] || fail "only $g graphs"
}
compare_rrds
echo "RRD FILES SAME: $n"
compare_alone
echo "ALONE RRD FILES SAME: $n"
compare_graphs "$((day + 300 * POLLS))"
echo "GRAPHS SAME: $g"

# Boost: the polls go to Cacti's poller_output_boost table, and poller_boost.php writes
# each RRD's hour in one update of many T:V (through one `rrdtool -`, and a one-shot `last`
# for each RRD).
for w in a b c; do
    sql "cacti_$w" -e "REPLACE INTO settings (name, value) VALUES
        ('boost_rrd_update_enable', 'on'), ('boost_rrd_update_interval', '60'),
        ('boost_rrd_update_max_records', '1000000'), ('boost_rrd_update_max_records_per_select', '50000')"
done
BPOLLS=${CACTI_BOOST_POLLS:-12}
for k in $(seq $((POLLS + 1)) $((POLLS + BPOLLS))); do
    poll "$k"
done
rows=$(sql -N cacti_b -e "SELECT COUNT(*) FROM poller_output_boost")
at "$((day + 300 * (POLLS + BPOLLS) + 120))"
faked cacti a php /usr/share/cacti/site/poller_boost.php --force >>"$T/boost-a.log" 2>&1 \
    || fail "poller_boost A"
RINGLET_STORE="$T/store" faked cacti b php /usr/share/cacti/site/poller_boost.php --force \
    >>"$T/boost-b.log" 2>&1 || fail "poller_boost B"
RINGLET_STORE="$T/store-c" faked cacti c php /usr/share/cacti/site/poller_boost.php --force \
    >>"$T/boost-c.log" 2>&1 || fail "poller_boost C"
left=$(sql -N cacti_b -e "SELECT COUNT(*) FROM poller_output_boost")
# Boost deleted what it flushed; the daemon dies before its next commit (-w 300): what
# the session wrote is on the disk all the same.
kill -9 "$daemon"
wait "$daemon" 2>/dev/null || true
serve_b
# Boost wrote the hour: A's files (rrdtool's) end at the last Boost poll.
for f in "$T"/rra-a/*.rrd; do
    [ "$(rrdtool last "$f")" -ge $((day + 300 * (POLLS + BPOLLS))) ] \
        || fail "$(basename "$f"): Boost did not write the last poll (last $(rrdtool last "$f"))"
done
compare_rrds
echo "BOOST RRD FILES SAME: $n ($rows values held, $left left after poller_boost, daemon killed after it)"
compare_alone
echo "BOOST ALONE RRD FILES SAME: $n"
compare_graphs "$((day + 300 * (POLLS + BPOLLS)))"
echo "BOOST GRAPHS SAME: $g"

# Cacti's spikekill (cli/removespikes.php --backup): it dumps the RRD, edits the XML, copies
# the file as its backup and restores over it with `restore -f`. A spike is written into one
# RRD of A (rrdtool on its file) and of B (ringlet through the daemon) at the same time; both
# remove it the same way. B's copy is the placeholder (PHP's copy() of the path); the real
# file of before is kept by ringlet in STORE/replaced/, and equals A's backup.
for w in a b; do
    mkdir -p "$T/bak-$w"
    sql "cacti_$w" -e "REPLACE INTO settings (name, value) VALUES ('spikekill_backupdir', '$T/bak-$w')"
done
spiky=$(cd "$T/rra-a" && ls *.rrd | head -1)
ts=$((day + 300 * (POLLS + BPOLLS + 1)))
at "$ts"
ds=$(rrdtool info "$T/rra-a/$spiky" | sed -n 's/^ds\[\(.*\)\]\.type.*/\1/p' | head -1)
rrdtool update "$T/rra-a/$spiky" -t "$ds" "$ts:999999999"
RINGLET_STORE="$T/store" cacti b "$RINGLET" update "/var/lib/cacti/rra/$spiky" -t "$ds" "$ts:999999999" \
    || fail "the spike into B"
at "$((ts + 60))"
faked cacti a php /usr/share/cacti/cli/removespikes.php -R="/var/lib/cacti/rra/$spiky" -M=stddev \
    -S=3 --backup >"$T/spike-a.log" 2>&1 || fail "removespikes A"
RINGLET_STORE="$T/store" faked cacti b php /usr/share/cacti/cli/removespikes.php \
    -R="/var/lib/cacti/rra/$spiky" -M=stddev -S=3 --backup >"$T/spike-b.log" 2>&1 \
    || fail "removespikes B"
grep -q "Spikes Found and Remediated" "$T/spike-a.log" || { cat "$T/spike-a.log" >&2; fail "A removed no spike"; }
grep -q "Spikes Found and Remediated" "$T/spike-b.log" || { cat "$T/spike-b.log" >&2; fail "B removed no spike"; }
compare_rrds
bak_a=$(ls "$T/bak-a/"* | head -1)
kept=$(find "$T/store/replaced" -name "*.rrd*" | head -1)
[ -n "$kept" ] || fail "ringlet kept no copy of the series restore -f replaced"
rrdtool dump "$bak_a" >"$T/bak-a.xml"
rrdtool dump "$kept" >"$T/bak-b.xml"
cmp -s "$T/bak-a.xml" "$T/bak-b.xml" || { diff "$T/bak-a.xml" "$T/bak-b.xml" | head >&2; fail "the kept copy is not A's backup"; }
grep -q "999999999\|9.9999999[0-9]*e+08" "$T/bak-b.xml" || fail "the kept copy does not hold the spike"
echo "SPIKEKILL SAME: $n (the replaced series kept as $(basename "$kept"))"
