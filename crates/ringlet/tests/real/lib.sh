# What the real-tool scripts share (sourced): free loopback ports, failing with a reason,
# waiting for a listener, and the processes they start: each added to `pids` (or, for one
# that must be killed outright, set as `relay`) is stopped and waited for at exit, before
# the test removes the directory (a daemon still committing at its exit would write into it
# again). Also graphite-web instances of their own (`gw`) and ringlet fed through carbon
# (`carbon_ringlet`), for the Graphite scripts.

# Debian's Python: python3-whisper and graphite-web are its packages.
PY=/usr/bin/python3
port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
pids=()
relay=""
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
      [ -n "$relay" ] && kill -9 "$relay" 2>/dev/null || true
      for p in "${pids[@]}" $relay; do timeout 20 tail --pid="$p" -f /dev/null 2>/dev/null || true; done' EXIT
wait_port() {
    for _ in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    fail "nothing listens on $1"
}

# graphite-web on 127.0.0.1:PORT with settings of its own (NAME, under $T/gw) and a database
# it migrates itself: gw NAME PORT EXTRA-SETTINGS
gw() {
    mkdir -p "$T/gw/$1/log"
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
    local env=(env PYTHONPATH="$T/gw" GRAPHITE_SETTINGS_MODULE="gw_$1" DJANGO_SETTINGS_MODULE=graphite.settings)
    "${env[@]}" "$PY" -m django migrate --noinput >"$T/gw/$1/migrate.log" 2>&1 ||
        fail "graphite-web's migrate: $(tail -5 "$T/gw/$1/migrate.log")"
    "${env[@]}" "$PY" -m django runserver "127.0.0.1:$2" --noreload >"$T/gw/$1/server.log" 2>&1 &
    pids+=($!)
}

# ringlet serving carbon and graphite-web's API (on free ports, set as CP and HP; its socket
# S, data under $T) with carbon's files in $T/conf; the points of FILE sent through carbon
# and waited for until STATS counts all N: carbon_ringlet FILE N [SECONDS]
carbon_ringlet() {
    CP=$(port) HP=$(port)
    "$RINGLET" serve -g -w 3600 -l "unix:$S" -b "$T/base" --store "$T/store" --carbon "$CP" \
        --http "$HP" --graphite-conf "$T/conf" >"$T/serve.log" 2>&1 &
    pids+=($!)
    wait_port "$HP"
    "$PY" - "$CP" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(open(sys.argv[2], "rb").read())
s.close()
PY
    local got=0
    for _ in $(seq $((${3:-20} * 10))); do
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
        [ "$got" = "$2" ] && break
        sleep 0.1
    done
    [ "$got" = "$2" ] || fail "ringlet took $got points of $2"
    echo "POINTS: $2"
}
