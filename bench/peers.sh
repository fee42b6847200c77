#!/usr/bin/env bash
# peers.sh: the write load of one metrics store (a "peer", or ringlet) at the block device.
#
# Makes a sparse image under /var/tmp, attaches a loop device (direct I/O), makes the
# filesystem (ext4 without lazy init), mounts it and puts the peer's data directory there.
# Starts the peer as a foreground process of its own (own config in a run directory on the
# backing disk, listening on 127.0.0.1 / a unix socket only), creates the series (setup, not
# counted), then syncs the filesystem and snapshots /proc/diskstats of the loop device, feeds
# the workload with bench's `feed` (real time or accelerated), reads the peer's CPU seconds
# (utime+stime) and peak RSS (VmHWM) from /proc, syncs and snapshots (window), stops the peer
# (it flushes what it still buffers), syncs and snapshots again (all). Every process, mount,
# loop device and image it made is removed by its id on exit, also on failure or Ctrl-C.
#
# usage: bench/peers.sh --peer P --workload W [--fs ext4|ext4-1k|xfs|btrfs]
#          [--mode realtime|accelerated] [--duration 10m] [--window 300] [--out FILE]
#          [--scale F] [--cacti-rrds N] [--cacti-values rate|walk] [--size 8G] [--note TEXT]
#          [--writeback SECS|off] [--llm-devices N] [--boost SECS]
#          [--evict] [--no-settle] [--warmup D]
#   P: rrdtool (direct, `rrdtool -` pipe), rrdcached (-w WINDOW), carbon, victoriametrics,
#      prometheus, influxdb, ringlet (ringlet serve -w WINDOW), ringlet-carbon (ringlet serve
#      -w WINDOW --carbon: carbon's plaintext protocol, carbon's storage schemas), ringlet-cli
#      (Cacti's way: its poller's lines to `ringlet -` beside `ringlet serve -w WINDOW`)
#   W: emoncms, collectd, ganglia, cacti (--cacti-values walk: issue 15's increments uniform
#      in 0..50,000; rate: a noisy rate, the default), munin (issue 15: 4,000 DERIVE series
#      at 300 s), million (issue 19: 1,000,000 series at 10 s), llm (issue 46: --llm-devices
#      devices, default 2,000, of Cacti 1.2's Local Linux Machine, 5 RRDs and 7 GAUGE DS
#      each, Cacti's 5-minute profile; the rrdtool and ringlet-cli peers get Cacti's poller
#      lines, `update F --skip-past-updates --template a:b T:v:v`)
# --boost SECS (llm): Cacti's Boost: the values held and each RRD's written in one line of
#      many T:v at every SECS boundary (3600: Boost's 1-hour flush).
# Accelerated runs sync the filesystem every SECS of virtual time (default: the kernel's
# vm.dirty_expire_centisecs, 30 s), i.e. the kernel's periodic writeback at the accelerated
# pace, without touching the global sysctls; `--writeback off` lets the page cache merge freely.
# --evict drops the data files from the page cache after setup (posix_fadvise DONTNEED per
# file), as for files written long ago: on kernels with large folios (6.18 here), files that
# were just written sequentially sit in the cache in large folios, and a one-byte mmap store
# then writes back the whole folio.
# After setup the filesystem is settled before counting starts: `sync -f`, then `fsfreeze -f`
# and `-u`, which also writes back the metadata a sync leaves for later (xfs pushes the
# inodes of the files setup created; ext4 checkpoints its journal), so it is not charged to
# the run. --no-settle skips the freeze.
# --warmup D (real-time runs): after setup, feed D of history before now accelerated (with
# FLUSHALL every WINDOW of it), not counted, so the measured window is a peer's steady state
# rather than its first steps (ringlet's sample codec learns each series' figures from its
# first values; a whisper file's first points fill its archives). The real-time values continue
# each series from where the warm-up left it (feed --start), as a poller's would.
# Prints one key=value line and appends it to FILE (--out). Needs root. Installs missing peers
# from Debian with a policy-rc.d that forbids starting their services. Binaries: $FEED and
# $RINGLET if set, else built with cargo into $CARGO_TARGET_DIR (or ./target), release.
# ringlet with `--workload million --scale F` below 1 gets a log ring of F x 64 MiB to start
# with (unless $RINGLET_LOG_SIZE is set): it grows with the series (2 KiB each) at the same
# points as a million series', so that it checkpoints as often as they would.
set -euo pipefail

peer="" workload="" fs=ext4 mode=realtime duration=10m window=300 out="" scale=1
cacti_rrds=1000 cacti_values=rate size="" note="" writeback="" evict="" settle=1 warmup=""
llm_devices=2000 boost=0
while [ $# -gt 0 ]; do
    case "$1" in
        --peer) peer=$2; shift 2 ;;
        --workload) workload=$2; shift 2 ;;
        --fs) fs=$2; shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --window) window=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        --cacti-rrds) cacti_rrds=$2; shift 2 ;;
        --cacti-values) cacti_values=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --note) note=$2; shift 2 ;;
        --writeback) writeback=$2; shift 2 ;;
        --evict) evict=1; shift ;;
        --no-settle) settle=""; shift ;;
        --warmup) warmup=$2; shift 2 ;;
        --llm-devices) llm_devices=$2; shift 2 ;;
        --boost) boost=$2; shift 2 ;;
        -h|--help) sed -n '2,54p' "$0"; exit 0 ;;
        *) echo "peers.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
die() { echo "peers.sh: $*" >&2; exit 2; }
{ [ -n "$peer" ] && [ -n "$workload" ]; } || die "--peer and --workload are required"
case "$peer" in rrdtool|rrdcached|carbon|victoriametrics|prometheus|influxdb|ringlet|ringlet-carbon|ringlet-cli) ;;
    *) die "unknown peer $peer" ;; esac
case "$workload" in emoncms|collectd|ganglia|cacti|munin|million|llm) ;; *) die "unknown workload $workload" ;; esac
[ "$peer" != ringlet-cli ] || [ "$workload" = llm ] || die "ringlet-cli feeds the llm workload only"
case "$mode" in realtime|accelerated) ;; *) die "--mode: realtime or accelerated" ;; esac
[ "$(id -u)" = 0 ] || die "needs root for losetup/mount"
if [ -z "$size" ]; then
    # gmetad's RRDs are 630 kB and carbon's 10 s whisper files 855 kB: 26,000 of them.
    case "$workload" in ganglia|million) size=40G ;; *) size=8G ;; esac
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${FEED:-}" ] || { [[ "$peer" == ringlet* ]] && [ -z "${RINGLET:-}" ]; }; then
    (cd "$ROOT" && cargo build --release -q -p ringlet -p ringlet-bench)
fi
FEED=${FEED:-$TARGET/release/feed}
RINGLET=${RINGLET:-$TARGET/release/ringlet}

# --- install the peer from Debian if it is missing, without starting its service ---------
install_pkgs() {
    local made_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2 || {
        [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d; die "apt-get install $* failed"; }
    [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
    return 0
}
need() { # binary package...
    local bin=$1; shift
    command -v "$bin" >/dev/null || install_pkgs "$@"
}
case "$peer" in
    rrdtool) need rrdtool rrdtool ;;
    rrdcached) need rrdcached rrdcached ;;
    carbon) need carbon-cache graphite-carbon ;;
    victoriametrics) need victoria-metrics victoria-metrics ;;
    prometheus) need prometheus prometheus ;;
    influxdb) need influxd influxdb ;;
esac
case "$fs" in
    xfs) need mkfs.xfs xfsprogs ;;
    btrfs) need mkfs.btrfs btrfs-progs ;;
esac

# --- the device ----------------------------------------------------------------------------
# shellcheck source=bench/loopfs.sh
. "$(dirname "$0")/loopfs.sh"
work=$(mktemp -d /var/tmp/ringlet-peers.XXXXXX)
img=$work/image MNT=$work/mnt RUN=$work/run PID="" FEED_PID=""
mkdir -p "$MNT" "$RUN"
stop_peer() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null || true
        for _ in $(seq 1 1200); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$PID" 2>/dev/null && kill -KILL "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null || true
    fi
    PID=""
}
# shellcheck disable=SC2317  # called by the trap
cleanup() {
    set +e
    mountpoint -q "$MNT" && fsfreeze -u "$MNT" 2>/dev/null  # in case we died frozen
    [ -n "$FEED_PID" ] && kill "$FEED_PID" 2>/dev/null && wait "$FEED_PID" 2>/dev/null
    stop_peer
    loopfs_remove "$MNT"
    if [ -n "${KEEP_LOGS:-}" ]; then cp -r "$RUN" "$KEEP_LOGS" 2>/dev/null; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

loopfs_make "$img" "$size" "$fs" "$MNT"
DATA=$MNT/data
mkdir -p "$DATA"

snap() { loopfs_snap; }
# feed in the background, so that a TERM to this script ends the run at once (bash runs a
# trap only once its foreground child has exited) and the cleanup stops feed too.
run_feed() {
    "$FEED" "$@" &
    FEED_PID=$!
    local rc=0
    wait "$FEED_PID" || rc=$?
    FEED_PID=""
    return "$rc"
}
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
TCK=$(getconf CLK_TCK)
wait_tcp() { # host port
    for _ in $(seq 1 300); do
        (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
        kill -0 "$PID" 2>/dev/null || die "$peer exited at start; log: $(tail -5 "$RUN/log")"
        sleep 0.1
    done
    die "$peer did not listen on $1:$2"
}
wait_sock() {
    for _ in $(seq 1 300); do
        [ -S "$1" ] && return 0
        kill -0 "$PID" 2>/dev/null || die "$peer exited at start; log: $(tail -5 "$RUN/log")"
        sleep 0.1
    done
    die "$peer did not make $1"
}

dur_secs() { # 90, 10m, 6h, 2d -> seconds
    local n=${1%[smhd]}
    case ${1#"$n"} in
        m) echo $((n * 60)) ;; h) echo $((n * 3600)) ;; d) echo $((n * 86400)) ;; *) echo "$n" ;;
    esac
}
port=$((20000 + RANDOM % 20000))
start_s=$(date +%s)
# Accelerated runs feed virtual time that ends now; real-time runs start now.
if [ "$mode" = accelerated ]; then
    dur_s=$(dur_secs "$duration")
    start=$(( (start_s - dur_s - 600) / 3600 * 3600 ))
else
    start=$(( start_s / 300 * 300 - 300 ))
    # The series begin before the history the warm-up feeds.
    [ -n "$warmup" ] && start=$(( start - $(dur_secs "$warmup") ))
fi
common=(--workload "$workload" --scale "$scale" --cacti-rrds "$cacti_rrds"
    --cacti-values "$cacti_values" --llm-devices "$llm_devices" --boost "$boost" --start "$start")
if [ "$peer" = ringlet ] && [ "$workload" = million ] && [ -z "${RINGLET_LOG_SIZE:-}" ]; then
    RINGLET_LOG_SIZE="$(awk -v f="$scale" 'BEGIN { if (f > 1) f = 1; k = int(65536 * f / 4 + 0.5) * 4; if (k < 1024) k = 1024; print k }')K"
    export RINGLET_LOG_SIZE
fi

# Debian's storage-schemas.conf, plus one schema per workload step (carbon, ringlet-carbon).
schemas() {
    cat <<'EOF'
[carbon]
pattern = ^carbon\.
retentions = 60:90d

[bench_10s]
pattern = ^(collectd|ganglia)\.|^emoncms\.s(2[5-9]|3[0-9]|4[0-4])$
retentions = 10s:1d,1m:7d,10m:1y

[bench_300s]
pattern = ^(cacti|munin)\.
retentions = 5m:2d,30m:14d,2h:64d,1d:2y

[default]
pattern = .*
retentions = 60s:1d,5m:30d,1h:3y
EOF
}

# --- start the peer -------------------------------------------------------------------------
proto="" target="" config="" flush=()
case "$peer" in
    rrdtool)
        proto=pipe target=$(command -v rrdtool)
        config="rrdtool - (direct updates)"
        [ "$workload" = llm ] && proto=cacti config="rrdtool - (Cacti's poller lines)"
        ;;
    ringlet-cli)
        "$RINGLET" serve -g --store "$MNT/store" -b "$DATA" -w "$window" \
            -l "unix:$RUN/sock" -p "$RUN/pid" >"$RUN/log" 2>&1 &
        PID=$!
        # feed runs `ringlet -` in $DATA, which finds the daemon through the store.
        export RINGLET_STORE=$MNT/store
        proto=cacti target=$RINGLET flush=(--flush-sock "unix:$RUN/sock")
        config="ringlet - beside serve -w $window (Cacti's poller lines)"
        wait_sock "$RUN/sock" ;;
    rrdcached)
        mkdir -p "$MNT/journal"
        rrdcached -g -B -b "$DATA" -j "$MNT/journal" -w "$window" -f 3600 -F \
            -l "unix:$RUN/sock" -p "$RUN/pid" >"$RUN/log" 2>&1 &
        PID=$!
        proto=rrdcached target=unix:$RUN/sock
        config="-w $window -f 3600 -F -j on the fs"
        wait_sock "$RUN/sock" ;;
    ringlet)
        "$RINGLET" serve -g --store "$MNT/store" -b "$DATA" -w "$window" \
            -l "unix:$RUN/sock" -p "$RUN/pid" >"$RUN/log" 2>&1 &
        PID=$!
        proto=rrdcached target=unix:$RUN/sock
        config="serve -w $window${RINGLET_LOG_SIZE:+ ring $RINGLET_LOG_SIZE}"
        wait_sock "$RUN/sock" ;;
    ringlet-carbon)
        schemas >"$RUN/storage-schemas.conf"
        "$RINGLET" serve -g --store "$MNT/store" -b "$DATA" -w "$window" \
            -l "unix:$RUN/sock" -p "$RUN/pid" --carbon "127.0.0.1:$port" \
            --graphite-conf "$RUN" >"$RUN/log" 2>&1 &
        PID=$!
        proto=graphite target=127.0.0.1:$port
        config="serve -w $window --carbon, carbon's schemas${RINGLET_LOG_SIZE:+ ring $RINGLET_LOG_SIZE}"
        wait_tcp 127.0.0.1 "$port" ;;
    carbon)
        # Debian's [cache] section, data under the mount, listeners on 127.0.0.1, run as the
        # invoking user, no self-metrics, no tag registration with graphite-web, no create limit.
        override='^(STORAGE_DIR|LOCAL_DATA_DIR|CONF_DIR|LOG_DIR|PID_DIR|USER|MAX_CREATES_PER_MINUTE|LINE_RECEIVER_INTERFACE|LINE_RECEIVER_PORT|PICKLE_RECEIVER_INTERFACE|PICKLE_RECEIVER_PORT|CACHE_QUERY_INTERFACE|CACHE_QUERY_PORT|UDP_RECEIVER_INTERFACE) *='
        {
            echo "[cache]"
            awk '/^\[/ { s = $0 } s == "[cache]" && /^[A-Z_]+ *=/' /etc/carbon/carbon.conf |
                grep -Ev "$override"
            cat <<EOF
STORAGE_DIR = $MNT/graphite/
LOCAL_DATA_DIR = $MNT/graphite/whisper/
CONF_DIR = $RUN/
LOG_DIR = $RUN/carbonlog/
PID_DIR = $RUN/
USER =
MAX_CREATES_PER_MINUTE = inf
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = $port
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = $((port + 1))
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = $((port + 2))
UDP_RECEIVER_INTERFACE = 127.0.0.1
ENABLE_TAGS = False
CARBON_METRIC_INTERVAL = 0
EOF
        } >"$RUN/carbon.conf"
        schemas >"$RUN/storage-schemas.conf"
        mkdir -p "$MNT/graphite/whisper" "$RUN/carbonlog"
        carbon-cache --config="$RUN/carbon.conf" --nodaemon --pidfile="$RUN/pid" \
            --logdir="$RUN/carbonlog" start >"$RUN/log" 2>&1 &
        PID=$!
        proto=graphite target=127.0.0.1:$port
        config="Debian carbon.conf; MAX_UPDATES_PER_SECOND=500 MAX_CACHE_SIZE=inf CACHE_WRITE_STRATEGY=sorted WHISPER_FALLOCATE_CREATE=True MAX_CREATES_PER_MINUTE=inf ENABLE_TAGS=False"
        wait_tcp 127.0.0.1 "$port" ;;
    victoriametrics)
        victoria-metrics -storageDataPath="$MNT/vm" -httpListenAddr="127.0.0.1:$port" \
            -graphiteListenAddr="127.0.0.1:$((port + 1))" >"$RUN/log" 2>&1 &
        PID=$!
        proto=graphite target=127.0.0.1:$((port + 1))
        config="defaults, graphite listener"
        wait_tcp 127.0.0.1 "$((port + 1))" ;;
    prometheus)
        printf 'global:\n  scrape_interval: 1m\n' >"$RUN/prometheus.yml"
        prometheus --config.file="$RUN/prometheus.yml" --storage.tsdb.path="$MNT/prometheus" \
            --web.listen-address="127.0.0.1:$port" --web.enable-remote-write-receiver \
            >"$RUN/log" 2>&1 &
        PID=$!
        proto=promwrite target=127.0.0.1:$port
        config="defaults, --web.enable-remote-write-receiver, no scrape jobs"
        wait_tcp 127.0.0.1 "$port" ;;
    influxdb)
        influxd config 2>/dev/null | sed \
            -e "s|/var/lib/influxdb|$MNT/influxdb|" \
            -e "s|^bind-address = .*|bind-address = \"127.0.0.1:$((port + 1))\"|" \
            -e "s|^  bind-address = \":8086\"|  bind-address = \"127.0.0.1:$port\"|" \
            -e 's|store-enabled = true|store-enabled = false|' \
            -e 's|query-log-enabled = true|query-log-enabled = false|' \
            -e 's|^  log-enabled = true|  log-enabled = false|' >"$RUN/influxdb.conf"
        influxd -config "$RUN/influxdb.conf" >"$RUN/log" 2>&1 &
        PID=$!
        proto=influx target=127.0.0.1:$port
        config="influxd config defaults; [monitor] store-enabled=false, logs off; HTTP /write"
        wait_tcp 127.0.0.1 "$port" ;;
esac

# --- setup: series creation (RRD peers) or one warm-up step (index-based peers) ------------
t_setup=$(date +%s.%N)
run_feed "${common[@]}" --proto "$proto" --target "$target" --dir "$DATA" --phase setup \
    >"$RUN/setup.out"
case "$peer" in
    carbon) # carbon creates the files and writes the warm-up point from its cache
        want=$(grep -o 'columns=[0-9]*' "$RUN/setup.out" | cut -d= -f2)
        for _ in $(seq 1 3000); do
            have=$(find "$MNT/graphite/whisper" -name '*.wsp' | wc -l)
            [ "$have" -ge "$want" ] && break
            sleep 0.2
        done
        sleep 5 ;;
    ringlet-carbon) # each series is made at its first point, with its placeholder; the
        # creations are committed in setup, as CREATE commits them for the ringlet peer
        want=$(grep -o 'columns=[0-9]*' "$RUN/setup.out" | cut -d= -f2)
        for _ in $(seq 1 3000); do
            have=$(find "$DATA" -name '*.rrd' | wc -l)
            [ "$have" -ge "$want" ] && break
            sleep 0.2
        done
        python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"FLUSHALL\n"); s.recv(100)' "$RUN/sock" ;;
    victoriametrics|prometheus|influxdb) sleep 5 ;;
esac
if [ -n "$warmup" ] && [ "$mode" = realtime ]; then
    # The warm-up's history ends at the last 5-minute boundary (a multiple of every
    # workload's step), and the real-time run continues each series from there: its first
    # step follows the warm-up's last with no gap, when the warm-up ends within those 5
    # minutes (a gap would make every series' next sample late, which a steady store never
    # sees). Close to the next boundary, wait for it first.
    now=$(date +%s)
    if [ $((now % 300)) -gt 200 ]; then sleep $((300 - now % 300 + 1)); fi
    start=$(( $(date +%s) / 300 * 300 - $(dur_secs "$warmup") ))
    common=(--workload "$workload" --scale "$scale" --cacti-rrds "$cacti_rrds"
    --cacti-values "$cacti_values" --llm-devices "$llm_devices" --boost "$boost" --start "$start")
    run_feed "${common[@]}" --proto "$proto" --target "$target" --dir "$DATA" --phase run \
        --accelerated --window "$window" --duration "$warmup" >"$RUN/warmup.out" || {
        cat "$RUN/warmup.out" >&2; die "warm-up failed"; }
    case "$peer" in victoriametrics|prometheus|influxdb|carbon) sleep 5 ;; esac
fi
setup_s=$(echo "$(date +%s.%N) - $t_setup" | bc)
if [ -n "$evict" ]; then
    sync -f "$MNT"
    python3 - "$MNT" <<'PY'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        fd = os.open(os.path.join(root, name), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
fi

# --- the measured run ----------------------------------------------------------------------
sync -f "$MNT"
if [ -n "$settle" ]; then
    fsfreeze -f "$MNT"
    fsfreeze -u "$MNT"
fi
read -r w0 s0 f0 < <(snap)
c0=0
[ -n "$PID" ] && c0=$(ticks "$PID")
load_start=$(cut -d' ' -f1 /proc/loadavg)
t0=$(date +%s.%N)
feed_mode=(--realtime)
if [ "$mode" = accelerated ]; then
    feed_mode=(--accelerated --window "$window" "${flush[@]}")
    case "$writeback" in
        off) ;;
        "") feed_mode+=(--syncfs "$MNT") ;;
        *) feed_mode+=(--syncfs "$MNT" --sync-every "$writeback") ;;
    esac
fi
run_feed "${common[@]}" --proto "$proto" --target "$target" --dir "$DATA" --phase run \
    "${feed_mode[@]}" --duration "$duration" >"$RUN/run.out" || {
    cat "$RUN/run.out" >&2; tail -20 "$RUN/log" >&2 2>/dev/null; die "feed failed"; }
t1=$(date +%s.%N)
load_end=$(cut -d' ' -f1 /proc/loadavg)
result=$(grep '^RESULT' "$RUN/run.out")
get() { tr ' ' '\n' <<<"$result" | awk -F= -v k="$1" '$1 == k { print $2 }'; }
if [ -n "$PID" ]; then
    c1=$(ticks "$PID")
    cpu_s=$(echo "scale=2; ($c1 - $c0) / $TCK" | bc)
    rss=$(hwm "$PID")
else
    cpu_s=$(get peer_cpu_s) rss=$(get peer_rss_kb)
fi
sync -f "$MNT"
read -r w1 s1 _ < <(snap)
stop_peer
sync -f "$MNT"
read -r w2 s2 f2 < <(snap)

samples=$(get samples)
wall=$(echo "$t1 - $t0" | bc)
bytes=$(( (s2 - s0) * 512 )) ios=$(( w2 - w0 ))
win_bytes=$(( (s1 - s0) * 512 )) win_ios=$(( w1 - w0 ))
line="date=$(date -u +%Y-%m-%dT%H:%MZ) peer=$peer workload=$workload fs=$fs mode=$mode"
line+=" window=$window series=$(get columns) scale=$scale samples=$samples dev_bytes=$bytes"
line+=" write_ios=$ios flushes=$(( f2 - f0 ))"
line+=" bytes_per_sample=$(echo "scale=3; $bytes / $samples" | bc)"
line+=" ios_per_sample=$(echo "scale=6; $ios / $samples" | bc)"
line+=" bytes_per_second=$(echo "scale=2; $bytes / $wall" | bc)"
line+=" cpu_s=$cpu_s cpu_us_per_sample=$(echo "scale=3; $cpu_s * 1000000 / $samples" | bc)"
line+=" peak_rss_kb=$rss wall_s=$(printf '%.1f' "$wall") window_bytes=$win_bytes"
line+=" window_ios=$win_ios shutdown_bytes=$(( (s2 - s1) * 512 )) setup_s=$(printf '%.1f' "$setup_s")"
line+=" late_steps=$(get late_steps) max_lag_s=$(get max_lag_s) load_start=$load_start"
line+=" load_end=$load_end duration=$duration writeback=${writeback:-$([ "$mode" = accelerated ] && echo "$(( $(cat /proc/sys/vm/dirty_expire_centisecs) / 100 ))s" || echo kernel)}"
[ -n "$evict" ] && line+=" evict=1"
[ -n "$warmup" ] && line+=" warmup=$warmup"
[ "$workload" = cacti ] && line+=" cacti_values=$cacti_values"
[ "$workload" = llm ] && line+=" llm_devices=$llm_devices boost=$boost"
line+=" settle=$([ -n "$settle" ] && echo yes || echo no)"
[ -n "$note" ] && line+=" note=${note// /_}"
line+=" config=${config// /_}"
echo "$line"
[ -n "$out" ] && echo "$line" >>"$out"
exit 0
