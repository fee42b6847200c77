#!/usr/bin/env bash
# peers-build.sh: build the Go peers of the benchmarks from their Go modules (not Debian's
# packages, which are years behind): VictoriaMetrics single-node and go-carbon, each at a
# pinned version, into $RINGLET_PEERS/bin (default ~/.cache/ringlet-peers/bin). A binary
# already there at its version is kept. Needs Go 1.26 and the Go module proxy; the module
# and build caches take about 2 GB, under $RINGLET_PEERS/go.
#
# usage: bench/peers-build.sh [victoriametrics] [go-carbon]    (default: both)
set -euo pipefail
PEERS=${RINGLET_PEERS:-$HOME/.cache/ringlet-peers}
VM_VERSION=v1.151.0
GOCARBON_VERSION=v0.18.0
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(victoriametrics go-carbon)
command -v go >/dev/null || { echo "peers-build.sh: go not found (Go 1.26)" >&2; exit 1; }
mkdir -p "$PEERS/bin" "$PEERS/go"
export GOPATH="$PEERS/go" GOMODCACHE="$PEERS/go/mod" GOCACHE="$PEERS/go/cache" GOFLAGS=-mod=mod
# build NAME MODULE VERSION PACKAGE
build() {
    local name=$1 module=$2 version=$3 pkg=$4
    if [ -x "$PEERS/bin/$name" ] && [ "$(cat "$PEERS/bin/$name.version" 2>/dev/null)" = "$version" ]; then
        echo "$name $version: $PEERS/bin/$name (built before)"
        return
    fi
    local dir="$PEERS/src/$name"
    rm -rf "$dir"
    mkdir -p "$dir"
    (
        cd "$dir"
        go mod init "ringlet-peers/$name" >/dev/null 2>&1
        go get "$module@$version"
        go build -trimpath -o "$PEERS/bin/$name" "$pkg"
    )
    echo "$version" >"$PEERS/bin/$name.version"
    echo "$name $version: $PEERS/bin/$name"
}
for p in "${want[@]}"; do
    case "$p" in
        victoriametrics)
            build victoria-metrics github.com/VictoriaMetrics/VictoriaMetrics "$VM_VERSION" \
                github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics ;;
        go-carbon)
            build go-carbon github.com/go-graphite/go-carbon "$GOCARBON_VERSION" \
                github.com/go-graphite/go-carbon ;;
        *) echo "peers-build.sh: unknown peer $p (victoriametrics, go-carbon)" >&2; exit 2 ;;
    esac
done
