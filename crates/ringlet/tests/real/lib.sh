# What the real-tool scripts share (sourced): free loopback ports, failing with a reason,
# waiting for a listener, and the processes they start: each added to `pids` (or, for one
# that must be killed outright, set as `relay`) is stopped and waited for at exit, before
# the test removes the directory (a daemon still committing at its exit would write into it
# again). Also graphite-web instances of their own (`gw`), for the Graphite scripts.

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
