#!/usr/bin/env bash
# gmetad and ganglia-web, from Debian's packages, on a ringlet view (run by
# tests/real_tools.rs in a mount namespace of its own; RINGLET is the binary, T an empty
# directory every user can reach, HERE this directory).
#
# Two gmetads (as user ganglia, as Debian runs it) poll two gmond.py sources that answer the
# same polls with the same virtual times and values: one with its rrd_rootdir on a ringlet
# view over -b and rrdcached_address set to the daemon (gmetad takes TCP only), one on plain
# files written by rrdtool. gmetad creates each file itself (through the view) and sends
# updates to the daemon. Then every file of the view holds what the plain one holds, and
# ganglia-web (PHP's built-in server, one per tree) serves its pages and draws the same
# graphs (PNG bytes and JSON) from the view's files as from the plain ones.
#
# Debian 12's ganglia-webfrontend 3.7.5 was written for PHP 7 and fails on bookworm's PHP 8.2
# before it reads a file. Its copy here gets three compatibility shims, none near RRD
# reading: its error handler's fifth argument gets a default (PHP 8 passes four), an
# undefined list becomes an empty one for in_array, and PHP 7's each() (which its template
# engine, Dwoo, calls) is prepended as a function.
set -euo pipefail
B=$T/rrds O=$T/oracle S=$T/s.sock
mkdir -p "$B" "$O" "$T/store"
chown ganglia: "$B" "$O" "$T/store"
. "$HERE/lib.sh"
A=$(($(date +%s) - 600))
P1=$(port) P2=$(port) DP=$(port)
python3 "$HERE/gmond.py" "$P1" "$A" >"$T/gmond1.log" 2>&1 &
pids+=($!)
python3 "$HERE/gmond.py" "$P2" "$A" >"$T/gmond2.log" 2>&1 &
pids+=($!)
wait_port "$P1"
wait_port "$P2"

"$RINGLET" serve -g -w 3600 -U ganglia -l "unix:$S" -l "127.0.0.1:$DP" -b "$B" \
    --store "$T/store" --view >>"$T/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
    [ -S "$S" ] && mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null 2>&1 && break
    sleep 0.05
done
mountpoint -q "$B" || fail "no view"

gmetad_conf() { # source-port rrd_rootdir xml_port interactive_port [rrdcached address]
    cat <<EOC
data_source "ringtest" 1 127.0.0.1:$1
gridname "ringgrid"
xml_port $3
interactive_port $4
rrd_rootdir "$2"
setuid_username "ganglia"
${5:+rrdcached_address "$5"}
EOC
}
I1=$(port) I2=$(port)
gmetad_conf "$P1" "$B" "$(port)" "$I1" "127.0.0.1:$DP" >"$T/gmetad-view.conf"
gmetad_conf "$P2" "$O" "$(port)" "$I2" >"$T/gmetad-plain.conf"
gmetad -c "$T/gmetad-view.conf" -d 1 -p "$T/gmetad-view.pid" >"$T/gmetad-view.log" 2>&1 &
g1=$!
pids+=("$g1")
gmetad -c "$T/gmetad-plain.conf" -d 1 -p "$T/gmetad-plain.pid" >"$T/gmetad-plain.log" 2>&1 &
g2=$!
pids+=("$g2")
# About 15 polls each (a second apart), then both stop.
sleep 16
kill "$g1" "$g2"
timeout 20 tail --pid="$g1" -f /dev/null
timeout 20 tail --pid="$g2" -f /dev/null
grep -q 'imported' "$T/serve.log" ||
    fail "gmetad made no file through the view; gmetad: $(tail -8 "$T/gmetad-view.log");" \
        "daemon: $(tail -8 "$T/serve.log")"

# The same values in every file.
L=ringtest/node1/load_one.rrd
e1=$(timeout 10 rrdtool last "$B/$L") e2=$(rrdtool last "$O/$L")
E=$((e1 < e2 ? e1 : e2))
[ "$E" -gt $((A + 8)) ] || fail "too few polls: $e1 $e2 (anchor $A)"
n=0
while read -r f; do
    rel=${f#"$O"/}
    if [[ $rel == __SummaryInfo__/* ]]; then
        # The grid's summary is written on gmetad's own clock, not the polls': it differs
        # between any two gmetads. The view's holds values.
        timeout 10 rrdtool lastupdate "$B/$rel" | grep -q ': [0-9]' ||
            fail "$rel: no values in the view"
        continue
    fi
    # Summaries are written after the hosts' values: each file up to the last time both
    # copies of it hold.
    l1=$(rrdtool last "$f") l2=$(timeout 10 rrdtool last "$B/$rel") || fail "$rel: not in the view"
    # (fetch ends with the row after its end: one second before it)
    e=$((l1 < l2 ? l1 - 1 : l2 - 1))
    [ "$e" -gt $((A + 8)) ] || fail "$rel: too few updates: $l1 $l2 (anchor $A)"
    a=$(rrdtool fetch "$f" AVERAGE -r 1 -s "$A" -e "$e")
    b=$(timeout 10 rrdtool fetch "$B/$rel" AVERAGE -r 1 -s "$A" -e "$e")
    [ "$a" = "$b" ] || {
        echo "$rel:" >&2
        diff <(echo "$a") <(echo "$b") | head -20 >&2 || true
        echo "last: plain $l1 view $l2" >&2
        rrdtool fetch "$f" AVERAGE -r 1 -s "$A" -e "$l1" >"$T/fetch-plain.txt"
        timeout 10 rrdtool fetch "$B/$rel" AVERAGE -r 1 -s "$A" -e "$l2" >"$T/fetch-view.txt"
        fail "$rel differs"
    }
    n=$((n + 1))
done < <(find "$O" -name '*.rrd' | sort)
[ "$(find "$O" -name '*.rrd' | wc -l)" = "$(timeout 10 find "$B" -name '*.rrd' | wc -l)" ] ||
    fail "not the same files"
echo "GMETAD FILES SAME: $n"

# ganglia-web, one per tree.
web() { # dir rrds interactive-port
    cp -r /usr/share/ganglia-webfrontend "$1"
    sed -i 's/\$line, \$context)/$line, $context = null)/' "$1/lib/common_api.php"
    sed -i 's/in_array(\$context, \$SKIP_GMETAD_CONTEXTS)/in_array($context, $SKIP_GMETAD_CONTEXTS ?? [])/' \
        "$1/ganglia.php"
    mkdir -p "$1.d/conf" "$1.d/dwoo/compiled" "$1.d/dwoo/cache"
    cat >>"$1/conf.php" <<EOC
<?php
\$conf['gweb_confdir'] = "$1.d";
\$conf['dwoo_compiled_dir'] = "$1.d/dwoo/compiled";
\$conf['dwoo_cache_dir'] = "$1.d/dwoo/cache";
\$conf['views_dir'] = "$1.d/conf";
\$conf['conf_dir'] = "$1.d/conf";
\$conf['cachefile'] = "$1.d/conf/ganglia_metrics.cache";
\$conf['overlay_events_file'] = "$1.d/conf/events.json";
\$conf['rrds'] = "$2";
\$conf['ganglia_port'] = $3;
?>
EOC
}
cat >"$T/php8compat.php" <<'EOC'
<?php
// PHP 7's each(), which Dwoo calls; removed in PHP 8.
if (!function_exists('each')) {
    function each(&$a) {
        $k = key($a);
        if ($k === null) {
            return false;
        }
        $v = current($a);
        next($a);
        return [1 => $v, 'value' => $v, 0 => $k, 'key' => $k];
    }
}
EOC
# gmetad answers ganglia-web's questions on its interactive port: start them again.
gmetad -c "$T/gmetad-view.conf" -d 1 -p "$T/gmetad-view.pid" >>"$T/gmetad-view.log" 2>&1 &
pids+=($!)
gmetad -c "$T/gmetad-plain.conf" -d 1 -p "$T/gmetad-plain.pid" >>"$T/gmetad-plain.log" 2>&1 &
pids+=($!)
wait_port "$I1"
wait_port "$I2"
W1=$(port) W2=$(port)
web "$T/www-view" "$B" "$I1"
web "$T/www-plain" "$O" "$I2"
php -d auto_prepend_file="$T/php8compat.php" -S "127.0.0.1:$W1" -t "$T/www-view" >"$T/php-view.log" 2>&1 &
pids+=($!)
php -d auto_prepend_file="$T/php8compat.php" -S "127.0.0.1:$W2" -t "$T/www-plain" >"$T/php-plain.log" 2>&1 &
pids+=($!)
wait_port "$W1"
wait_port "$W2"
get() { # port path file -> http code
    curl -s -m 60 -o "$3" -w '%{http_code}' "http://127.0.0.1:$1$2"
}
[ "$(get "$W1" "/?c=ringtest" "$T/page.html")" = 200 ] || fail "ganglia-web's cluster page"
grep -q node1 "$T/page.html" && grep -q node2 "$T/page.html" || fail "the cluster page lists no hosts"
[ "$(get "$W1" "/?c=ringtest&h=node1" "$T/page.html")" = 200 ] || fail "ganglia-web's host page"
grep -q load_one "$T/page.html" || fail "the host page lists no metrics"
echo "GANGLIA-WEB PAGES"
range="cs=$((A + 1))&ce=$((E - 2))"
for q in "h=node1&m=load_one" "h=node2&m=bytes_in" "g=load_report" "g=mem_report&h=node1" "m=cpu_user"; do
    path="/graph.php?c=ringtest&$q&$range&z=medium"
    [ "$(get "$W1" "$path" "$T/view.png")" = 200 ] || fail "ganglia-web $path"
    [ "$(get "$W2" "$path" "$T/plain.png")" = 200 ] || fail "ganglia-web (plain) $path"
    [ "$(head -c 4 "$T/view.png" | tail -c 3)" = PNG ] || fail "$path: not a PNG"
    cmp "$T/view.png" "$T/plain.png" || fail "$path: another image from the view"
    cp "$T/view.png" "$T/graph-$(echo "$q" | tr -c 'a-z0-9_\n' -).png"
done
# A metric's values as JSON (ganglia-web's json=1; its report graphs have none on PHP 8).
for q in "h=node1&m=load_one" "h=node2&m=bytes_in" "m=cpu_user"; do
    path="/graph.php?c=ringtest&$q&$range&json=1"
    [ "$(get "$W1" "$path" "$T/view.json")" = 200 ] || fail "ganglia-web $path"
    get "$W2" "$path" "$T/plain.json" >/dev/null
    grep -q '"datapoints":\[\[[0-9]' "$T/view.json" || fail "$path: no values"
    cmp "$T/view.json" "$T/plain.json" || fail "$path: other JSON from the view"
done
echo "GANGLIA-WEB GRAPHS SAME"
