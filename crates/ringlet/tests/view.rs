//! `ringlet serve --view DIR`: every series as a live `.rrd` file under DIR (FUSE).
//!
//! A file created by rrdtool under `-b` is taken over by the daemon and fed through it, while
//! a copy of it is fed the same updates by rrdtool itself: the view's file has the copy's
//! bytes, and rrdtool's own `info`, `dump`, `fetch`, `lastupdate`, `first`, `last` and `graph`
//! (PRINT values and PNG bytes), and python3-rrdtool, run on the view's file without a daemon,
//! give what they give on the copy. The tree lists every
//! series in its directories, and the view is gone when the daemon stops. What tools do to
//! files by hand (create, tune, restore, cp, mv, rm, mkdir, and a refused update of rows in
//! place) changes the series as the same commands through the daemon would.
//!
//! Each run mounts in a mount namespace of its own (`unshare -m`), under `timeout`, in a
//! directory under the system's temp directory: the mount dies with the namespace even if
//! the test is killed. Needs root, /dev/fuse, unshare and rrdtool; CI has them all.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ringlet");
static SEQ: AtomicUsize = AtomicUsize::new(0);

struct Dir(PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!(
            "ringlet-view-{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether this machine can mount a FUSE view: root, /dev/fuse, unshare, rrdtool (and
/// Debian's python3-rrdtool, which scripts/setup installs). Without
/// them the tests say so, and fail in CI (which has them).
fn can_mount() -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["unshare", "rrdtool", "timeout", "mountpoint"]
        .iter()
        .all(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
    let ok = root && Path::new("/dev/fuse").exists() && tools;
    if !ok {
        eprintln!("view tests need root, /dev/fuse, unshare and rrdtool: not run here");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with FUSE: the view tests must run"
        );
    }
    ok
}

/// Run `script` with bash in a new mount namespace, `$RINGLET` and `$T` set; returns stdout.
fn in_namespace(dir: &Path, script: &str) -> String {
    let o = Command::new("timeout")
        .args([
            "-k",
            "5",
            "120",
            "unshare",
            "-m",
            "--propagation",
            "private",
        ])
        .args(["bash", "-euo", "pipefail", "-c", script])
        .env("RINGLET", BIN)
        .env("T", dir)
        .output()
        .expect("unshare");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let log = std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default();
    assert!(
        o.status.success(),
        "script failed: {:?}\nstdout:\n{out}\nstderr:\n{err}\ndaemon log:\n{log}",
        o.status
    );
    out
}

/// Starts the daemon with the view; `stop` stops it by its pid and waits for it.
const START: &str = r#"
mkdir -p "$T/base/h" "$T/mnt" "$T/mirror/h"
"$RINGLET" serve -g -R -w 3600 -l "unix:$T/s.sock" -b "$T/base" --store "$T/store" \
    --view "$T/mnt" >"$T/serve.log" 2>&1 &
pid=$!
stop() { kill "$pid"; wait "$pid" || true; }
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 200); do
    mountpoint -q "$T/mnt" && [ -S "$T/s.sock" ] && break
    sleep 0.05
done
mountpoint -q "$T/mnt"
"#;

#[test]
fn view_files_are_what_rrdtool_holds_for_the_same_updates() {
    if !can_mount() {
        return;
    }
    let dir = Dir::new("bytes");
    let script = format!(
        r#"{START}
C="--start 1700000000 --step 60 DS:x:GAUGE:120:0:100 DS:c:COUNTER:120:U:U
   RRA:AVERAGE:0.5:1:50 RRA:MAX:0.5:5:20 RRA:MIN:0.5:12:10 RRA:LAST:0.5:1:5"
# Created by rrdtool under -b (as collectd does), taken over at the first update; the copy
# is fed the same updates by rrdtool.
(cd "$T/base" && rrdtool create h/m.rrd $C)
cp "$T/base/h/m.rrd" "$T/mirror/h/m.rrd"
c=1000
for k in $(seq 1 150); do
    c=$((c + (k * 37) % 500))
    u="$((1700000000 + 60 * k - k % 3)):$((k * 13 % 100)):$c"
    (cd "$T/base" && rrdtool update --daemon "unix:$T/s.sock" h/m.rrd "$u")
    (cd "$T/mirror" && rrdtool update h/m.rrd "$u")
done
# One more series, created through the daemon, deeper down.
mkdir -p "$T/base/d/e"
(cd "$T/base" && rrdtool create --daemon "unix:$T/s.sock" d/e/g.rrd --start 1700000000 \
    --step 300 DS:v:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10)
v="$T/mnt/h/m.rrd"; m="$T/mirror/h/m.rrd"
t() {{ timeout 10 "$@"; }}
t cmp "$v" "$m" && echo "BYTES SAME"
[ "$(t stat -c %s "$v")" = "$(stat -c %s "$m")" ] && echo "SIZE SAME"
[ "$(t stat -c %Y "$v")" = "$(rrdtool last "$m")" ] && echo "MTIME IS THE LAST UPDATE"
for cmd in "info F" "dump F" "fetch F AVERAGE -s 1700000000 -e 1700009000" "fetch F MAX -r 300" \
           "lastupdate F" "first F" "last F" "first F --rraindex 2"; do
    a=$(cd "$T/mnt/h" && t rrdtool ${{cmd/F/m.rrd}} 2>&1)
    b=$(cd "$T/mirror/h" && rrdtool ${{cmd/F/m.rrd}} 2>&1)
    [ "$a" = "$b" ] && echo "SAME: $cmd" || {{ echo "DIFFERENT: $cmd"; diff <(echo "$a") <(echo "$b") | head -5; }}
done
# graph: the PRINT values and the PNG's bytes.
g() {{ timeout 10 rrdtool graph "$1" --start 1700000000 --end 1700009000 --width 300 --height 100 \
    DEF:x=m.rrd:x:AVERAGE DEF:c=m.rrd:c:MAX LINE1:x#ff0000 LINE1:c#0000ff \
    PRINT:x:AVERAGE:%.6lf PRINT:c:MAX:%.6lf; }}
a=$(cd "$T/mnt/h" && g "$T/view.png")
b=$(cd "$T/mirror/h" && g "$T/mirror.png")
[ "$a" = "$b" ] && echo "SAME: graph PRINT"
cmp "$T/view.png" "$T/mirror.png" && echo "SAME: graph PNG"
# python3-rrdtool (librrd in the process, no daemon) reads the view's file as the copy.
py='import rrdtool, sys; print(rrdtool.lastupdate(sys.argv[1])); print(rrdtool.info(sys.argv[1])["rra[1].cur_row"])'
a=$(cd "$T/mnt/h" && t /usr/bin/python3 -c "$py" m.rrd)
b=$(cd "$T/mirror/h" && /usr/bin/python3 -c "$py" m.rrd)
[ "$a" = "$b" ] && echo "SAME: python3-rrdtool"
# mmap (as librrd reads): the mapped bytes are the file's.
mm='import mmap, sys; f = open(sys.argv[1], "rb"); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ); sys.stdout.buffer.write(m[:])'
t /usr/bin/python3 -c "$mm" "$v" | cmp - "$m" && echo "SAME: mmap"
echo "TREE: $(cd "$T/mnt" && t find . | sort | tr '\n' ' ')"
[ "$(t stat -c %s "$T/mnt/d/e/g.rrd")" = "$(t cat "$T/mnt/d/e/g.rrd" | wc -c)" ] && echo "SIZE OF NEW"
t rrdtool info "$T/mnt/d/e/g.rrd" | grep -q '^rra\[0\].rows = 10$' && echo "NEW READS"
t ls "$T/mnt/nothing.rrd" 2>/dev/null || echo "MISSING IS ENOENT"
echo junk 2>/dev/null >>"$v" || echo "APPEND REFUSED"
t cmp "$v" "$m" && echo "STILL THE SAME"
stop
mountpoint -q "$T/mnt" || echo "UNMOUNTED"
"#
    );
    let out = in_namespace(&dir.0, &script);
    for want in [
        "BYTES SAME",
        "SIZE SAME",
        "MTIME IS THE LAST UPDATE",
        "SAME: info F",
        "SAME: dump F",
        "SAME: fetch F AVERAGE -s 1700000000 -e 1700009000",
        "SAME: fetch F MAX -r 300",
        "SAME: lastupdate F",
        "SAME: first F",
        "SAME: last F",
        "SAME: first F --rraindex 2",
        "SAME: python3-rrdtool",
        "SAME: mmap",
        "SAME: graph PRINT",
        "SAME: graph PNG",
        "TREE: . ./d ./d/e ./d/e/g.rrd ./h ./h/m.rrd ",
        "SIZE OF NEW",
        "NEW READS",
        "MISSING IS ENOENT",
        "APPEND REFUSED",
        "STILL THE SAME",
        "UNMOUNTED",
    ] {
        assert!(out.lines().any(|l| l == want), "{want:?} not in:\n{out}");
    }
    assert!(!out.contains("DIFFERENT"), "{out}");
}

#[test]
fn what_tools_do_to_view_files_changes_the_series() {
    if !can_mount() {
        return;
    }
    let dir = Dir::new("tools");
    let script = format!(
        r#"{START}
S="unix:$T/s.sock"
W="$T/mnt/w"
t() {{ timeout 10 "$@"; }}
# Through the daemon (the CLI's RUN): what the store holds.
at() {{ "$RINGLET" "$1" --daemon "$S" "$T/base/$2" "${{@:3}}"; }}
t mkdir "$W"
# rrdtool create writes w/x.rrdXXXXXX and renames it: the series exists, with a placeholder.
t rrdtool create "$W/x.rrd" --start 1700000000 --step 60 DS:v:GAUGE:120:0:U RRA:LAST:0.5:1:100
[ "$(t find "$W" -type f | wc -l)" = 1 ] && echo "NO TEMPORARY LEFT"
grep -q '^ringlet placeholder' "$T/base/w/x.rrd" && echo "PLACEHOLDER WRITTEN"
at update w/x.rrd 1700000060:5
at lastupdate w/x.rrd | tail -1
# tune on the file: the header changes, the daemon's series with it.
t rrdtool tune "$W/x.rrd" -a v:100
at info w/x.rrd | grep '^ds\[v\].max = '
t rrdtool info "$W/x.rrd" | grep '^ds\[v\].max = '
# An update of the file in place writes rows: refused, nothing changes.
t rrdtool update "$W/x.rrd" 1700090000:7 2>/dev/null || echo "UPDATE IN PLACE REFUSED"
at lastupdate w/x.rrd | tail -1
# A real file copied in, restored over a series, renamed, removed.
rrdtool create "$T/real.rrd" --start 1700000000 --step 300 DS:r:COUNTER:600:U:U RRA:AVERAGE:0.5:1:10
rrdtool update "$T/real.rrd" 1700000300:100 1700000600:400
t cp "$T/real.rrd" "$W/copy.rrd"
t cmp "$T/real.rrd" "$W/copy.rrd" && echo "COPY IMPORTED"
rrdtool dump "$T/real.rrd" >"$T/real.xml"
t rrdtool restore -f "$T/real.xml" "$W/x.rrd"
at info w/x.rrd | grep -c '^ds\[r\]' | sed 's/^/RESTORED DS LINES: /'
t mv "$W/copy.rrd" "$W/moved.rrd"
t cmp "$T/real.rrd" "$W/moved.rrd" && echo "RENAMED"
t ls "$W/copy.rrd" 2>/dev/null || echo "OLD NAME GONE"
[ -e "$T/base/w/copy.rrd" ] || echo "OLD PLACEHOLDER GONE"
t rm "$W/moved.rrd"
{{ at update w/moved.rrd 1700000900:1 2>&1 || true; }} | sed 's/^/AFTER RM: /'
[ -e "$T/base/w/moved.rrd" ] || echo "PLACEHOLDER REMOVED"
# A file that is not an RRD stays a plain file of the view until removed.
echo junk >"$W/notes.rrd" 2>/dev/null || true
[ "$(t cat "$W/notes.rrd")" = junk ] && echo "LOOSE FILE KEPT"
t rm "$W/notes.rrd"
t rmdir "$W" 2>/dev/null || echo "NON-EMPTY DIR STAYS"
t mkdir "$T/mnt/empty" && t rmdir "$T/mnt/empty" && echo "EMPTY DIR REMOVED"
stop
"#
    );
    let out = in_namespace(&dir.0, &script);
    for want in [
        "NO TEMPORARY LEFT",
        "PLACEHOLDER WRITTEN",
        "1700000060: 5",
        "ds[v].max = 1.0000000000e+02",
        "UPDATE IN PLACE REFUSED",
        "COPY IMPORTED",
        "RESTORED DS LINES: 8",
        "RENAMED",
        "OLD NAME GONE",
        "OLD PLACEHOLDER GONE",
        "PLACEHOLDER REMOVED",
        "LOOSE FILE KEPT",
        "NON-EMPTY DIR STAYS",
        "EMPTY DIR REMOVED",
    ] {
        assert!(out.lines().any(|l| l == want), "{want:?} not in:\n{out}");
    }
    // Both the daemon and the file say the tuned maximum.
    assert_eq!(
        out.matches("ds[v].max = 1.0000000000e+02").count(),
        2,
        "{out}"
    );
    // The refused update changed nothing: the last update is still the daemon's.
    assert_eq!(out.matches("1700000060: 5").count(), 2, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("AFTER RM: ") && l.contains("No such file")),
        "{out}"
    );
}

#[test]
fn the_view_over_the_base_directory_serves_clients_and_keeps_the_placeholders_beneath() {
    if !can_mount() {
        return;
    }
    let dir = Dir::new("overbase");
    let script = r#"
B="$T/base"; S="unix:$T/s.sock"
mkdir -p "$B"
start() {
    # A socket or a dead mount left by the previous daemon must not pass for this one's.
    rm -f "$T/s.sock"
    "$RINGLET" serve -g -w 3600 -l "$S" -b "$B" --store "$T/store" --view >>"$T/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        [ -S "$T/s.sock" ] && mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null 2>&1 && break
        sleep 0.05
    done
    mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null
}
trap 'kill "$pid" 2>/dev/null || true' EXIT
t() { timeout 10 "$@"; }
start
# gmetad: stat, then CREATE through the daemon; then updates; the file reads live.
t stat "$B/a/x.rrd" 2>/dev/null || echo "NOT THERE YET"
t mkdir "$B/a"
(cd "$B" && t rrdtool create --daemon "$S" a/x.rrd --start 1700000000 --step 60     DS:v:GAUGE:120:U:U RRA:LAST:0.5:1:100)
(cd "$B" && t rrdtool update --daemon "$S" a/x.rrd 1700000060:1 1700000120:2)
t rrdtool lastupdate "$B/a/x.rrd" | tail -1
# collectd's CreateFiles: a file made locally, then updated through the daemon.
t rrdtool create "$B/b.rrd" --start 1700000000 --step 60 DS:w:GAUGE:120:U:U RRA:LAST:0.5:1:10
(cd "$B" && t rrdtool update --daemon "$S" b.rrd 1700000060:9)
(cd "$B" && t rrdtool flushcached --daemon "$S" b.rrd)
t rrdtool lastupdate "$B/b.rrd" | tail -1
echo "TREE: $(cd "$B" && t find . | sort | tr '
' ' ')"
kill "$pid"; wait "$pid" || true
mountpoint -q "$B" || echo "UNMOUNTED"
# Beneath the view: the placeholders the daemon wrote.
grep -l '^ringlet placeholder' "$B/a/x.rrd" "$B/b.rrd" | wc -l | sed 's/^/PLACEHOLDERS: /'
start
t rrdtool lastupdate "$B/a/x.rrd" | tail -1
# A daemon killed leaves its mount dead; the next start removes it.
kill -9 "$pid"; wait "$pid" || true
t stat -f "$B" >/dev/null 2>&1 || echo "STALE"
start
grep -q 'removed a stale mount' "$T/serve.log" && echo "STALE MOUNT REMOVED"
t rrdtool lastupdate "$B/b.rrd" | tail -1
kill "$pid"; wait "$pid" || true
"#;
    let out = in_namespace(&dir.0, script);
    for want in [
        "NOT THERE YET",
        "1700000120: 2",
        "1700000060: 9",
        "TREE: . ./a ./a/x.rrd ./b.rrd ",
        "UNMOUNTED",
        "PLACEHOLDERS: 2",
        "STALE",
        "STALE MOUNT REMOVED",
    ] {
        assert!(out.lines().any(|l| l == want), "{want:?} not in:\n{out}");
    }
    assert_eq!(out.matches("1700000120: 2").count(), 2, "{out}");
    assert_eq!(out.matches("1700000060: 9").count(), 2, "{out}");
}

#[test]
fn over_the_base_directory_other_files_are_kept_on_the_disk_beneath() {
    if !can_mount() {
        return;
    }
    let dir = Dir::new("plain");
    let script = r#"
B="$T/base"; S="unix:$T/s.sock"
mkdir -p "$B"
start() {
    rm -f "$T/s.sock"
    "$RINGLET" serve -g -w 3600 -l "$S" -b "$B" --store "$T/store" --view >>"$T/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        [ -S "$T/s.sock" ] && mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null 2>&1 && break
        sleep 0.05
    done
    mountpoint -q "$B"
}
trap 'kill "$pid" 2>/dev/null || true' EXIT
t() { timeout 10 "$@"; }
start
cd "$B"
# Munin's state beside its RRDs: written, appended, replaced by rename, truncated.
echo hello > datafile
echo more >> datafile
echo "READ: $(t cat datafile | tr '\n' ' ')"
t perl -e 'open F, ">state.tmp.$$" or die; print F "state"; close F;
    rename "state.tmp.$$", "state.storable" or die'
t chmod 600 datafile
t truncate -s 3 datafile
t touch -d '2020-01-01 00:00:00 UTC' datafile
echo "ATTR: $(t stat -c '%a %s %Y' datafile)"
t mkdir -p cgi-tmp/x
echo png > cgi-tmp/x/a.png
t mv cgi-tmp cgi-old
echo "MOVED: $(t cat cgi-old/x/a.png)"
t python3 -c "
import os
f = os.open('excl', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640); os.write(f, b'x'); os.close(f)
try:
    os.open('excl', os.O_CREAT | os.O_EXCL | os.O_WRONLY)
except FileExistsError:
    print('EXCL HELD')
"
# A series beside them, made by rrdtool's create (a temporary .rrdXXXXXX, renamed).
t rrdtool create m.rrd --start 1700000000 --step 60 DS:v:GAUGE:120:U:U RRA:LAST:0.5:1:10
echo "LIST: $(t ls | tr '\n' ' ')"
t rm cgi-old/x/a.png; t rmdir cgi-old/x
t rmdir cgi-old
cd /
kill "$pid"; wait "$pid" || true
# On the disk beneath: the plain files as written, the series' placeholder.
echo "BENEATH: $(ls "$B" | tr '\n' ' ')"
echo "DISK: $(cat "$B/datafile") $(stat -c '%a %Y' "$B/datafile") $(cat "$B/state.storable")"
grep -q '^ringlet placeholder' "$B/m.rrd" && echo "PLACEHOLDER"
start
echo "AGAIN: $(t cat "$B/datafile") $(t rrdtool info "$B/m.rrd" | grep -c '^ds\[v\]')"
kill "$pid"; wait "$pid" || true
"#;
    let out = in_namespace(&dir.0, script);
    for want in [
        "READ: hello more ",
        "ATTR: 600 3 1577836800",
        "MOVED: png",
        "EXCL HELD",
        "LIST: cgi-old datafile excl m.rrd state.storable ",
        "BENEATH: datafile excl m.rrd state.storable ",
        "DISK: hel 600 1577836800 state",
        "PLACEHOLDER",
        "AGAIN: hel 8",
    ] {
        assert!(out.lines().any(|l| l == want), "{want:?} not in:\n{out}");
    }
}

#[test]
fn after_minus_u_the_view_serves_as_the_user_and_the_next_start_clears_it() {
    if !can_mount() {
        return;
    }
    let dir = Dir::new("minusu");
    // The user's daemon must reach its directories.
    let _ = Command::new("chmod").arg("755").arg(&dir.0).status();
    let script = r#"
B="$T/base"; S="unix:$T/s.sock"
mkdir -p "$B" "$T/store"; chown nobody "$B" "$T/store"
"$RINGLET" serve -g -w 3600 -U nobody -l "$S" -m 777 -b "$B" --store "$T/store" --view \
    >>"$T/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 200); do
    [ -S "$T/s.sock" ] && mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null 2>&1 && break
    sleep 0.05
done
(cd "$B" && timeout 10 rrdtool create --daemon "$S" m.rrd --start 1700000000 --step 60 \
    DS:v:GAUGE:120:U:U RRA:LAST:0.5:1:10)
(cd "$B" && timeout 10 rrdtool update --daemon "$S" m.rrd 1700000060:3)
echo "OWNER: $(timeout 10 stat -c %U "$B/m.rrd")"
su nobody -s /bin/sh -c "timeout 10 rrdtool lastupdate '$B/m.rrd'" | tail -1
kill "$pid"
timeout 20 tail --pid="$pid" -f /dev/null && echo "STOPPED"
timeout 5 stat -f "$B" >/dev/null 2>&1 || echo "LEFT DEAD"
rm -f "$T/s.sock"
"$RINGLET" serve -g -w 3600 -l "$S" -b "$B" --store "$T/store" --view >>"$T/serve.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
    [ -S "$T/s.sock" ] && mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null 2>&1 && break
    sleep 0.05
done
timeout 10 rrdtool lastupdate "$B/m.rrd" | tail -1
kill "$pid"; wait "$pid" || true
"#;
    let out = in_namespace(&dir.0, script);
    for want in ["OWNER: nobody", "STOPPED", "LEFT DEAD"] {
        assert!(out.lines().any(|l| l == want), "{want:?} not in:\n{out}");
    }
    assert_eq!(out.matches("1700000060: 3").count(), 2, "{out}");
    let log = std::fs::read_to_string(dir.0.join("serve.log")).unwrap();
    assert!(
        log.contains("stays mounted, dead, until the next start"),
        "{log}"
    );
    assert!(log.contains("removed a stale mount"), "{log}");
}

#[test]
fn a_reader_keeps_its_snapshot_and_the_next_open_sees_new_values() {
    if !can_mount() {
        return;
    }
    let dir = Dir::new("snapshot");
    let script = format!(
        r#"{START}
S="unix:$T/s.sock"
(cd "$T/base" && rrdtool create --daemon "$S" h/a.rrd --start 1700000000 --step 60 \
    DS:x:GAUGE:120:U:U RRA:LAST:0.5:1:100)
(cd "$T/base" && rrdtool update --daemon "$S" h/a.rrd 1700000060:1)
exec 3<"$T/mnt/h/a.rrd"
(cd "$T/base" && rrdtool update --daemon "$S" h/a.rrd 1700000120:2)
# The open file still holds the state it was opened with; a new open has the new value.
old=$(timeout 10 cat <&3 | md5sum)
exec 3<&-
new=$(timeout 10 cat "$T/mnt/h/a.rrd" | md5sum)
[ "$old" != "$new" ] && echo "NEW OPEN DIFFERS"
timeout 10 rrdtool lastupdate "$T/mnt/h/a.rrd" | tail -1
stop
"#
    );
    let out = in_namespace(&dir.0, &script);
    assert!(out.contains("NEW OPEN DIFFERS\n"), "{out}");
    assert!(out.ends_with("1700000120: 2\n"), "{out}");
}

#[test]
fn without_a_mount_the_daemon_serves_and_says_why() {
    let dir = Dir::new("nomount");
    let sock = dir.0.join("s.sock");
    std::fs::create_dir_all(dir.0.join("base")).unwrap();
    let log = std::fs::File::create(dir.0.join("serve.log")).unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "-g", "-l"])
        .arg(format!("unix:{}", sock.display()))
        .arg("-b")
        .arg(dir.0.join("base"))
        .arg("--store")
        .arg(dir.0.join("store"))
        .arg("--view")
        .arg(dir.0.join("no-such-dir"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut answered = false;
    while t0.elapsed() < Duration::from_secs(20) {
        if let Ok(mut s) = std::os::unix::net::UnixStream::connect(&sock) {
            use std::io::{Read, Write};
            s.write_all(b"PING\n").unwrap();
            let mut b = [0u8; 32];
            let n = s.read(&mut b).unwrap();
            answered = &b[..n] == b"0 PONG\n";
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let _ = child.wait();
    let log = std::fs::read_to_string(dir.0.join("serve.log")).unwrap();
    assert!(answered, "{log}");
    assert!(
        log.contains("no view: cannot mount the view at") && log.contains("no-such-dir"),
        "{log}"
    );
}

#[test]
fn a_view_of_its_own_keeps_other_files_on_its_disk() {
    // The review (issue 44, defect 9): files that are no series, written into a `--view DIR`
    // that is not -b, were read back but kept nowhere: gone after a restart.
    if !can_mount() {
        return;
    }
    let dir = Dir::new("ownview");
    let script = format!(
        "{START}{}",
        r#"
t() { timeout 10 "$@"; }
echo kept > "$T/mnt/notes.txt"
t mkdir "$T/mnt/cache"
echo png > "$T/mnt/cache/a.png"
echo "READ: $(t cat "$T/mnt/notes.txt")"
stop
echo "DISK: $(cat "$T/mnt/notes.txt") $(cat "$T/mnt/cache/a.png")"
"$RINGLET" serve -g -R -w 3600 -l "unix:$T/s.sock" -b "$T/base" --store "$T/store" \
    --view "$T/mnt" >>"$T/serve.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
    mountpoint -q "$T/mnt" && [ -S "$T/s.sock" ] && break
    sleep 0.05
done
echo "AGAIN: $(t cat "$T/mnt/notes.txt") $(t cat "$T/mnt/cache/a.png")"
stop
"#
    );
    let out = in_namespace(&dir.0, &script);
    for want in ["READ: kept", "DISK: kept png", "AGAIN: kept png"] {
        assert!(out.lines().any(|l| l == want), "{want:?} not in:\n{out}");
    }
}

/// The view shows the directory beneath as it is (owner, group, mode), and its files its
/// mode less execute, and the kernel checks them: a private 0700 -b stays private (user
/// nobody could read every series through a view that showed 0755 and 0644).
#[test]
fn a_private_base_directory_stays_private_through_the_view() {
    if !can_mount() {
        return;
    }
    let dir = Dir::new("private");
    let _ = Command::new("chmod").arg("755").arg(&dir.0).status();
    let script = r#"
B="$T/base"; S="unix:$T/s.sock"
mkdir -p "$B/open" "$T/store"; chmod 700 "$B"; chmod 755 "$B/open"; chown nobody "$B/open"
"$RINGLET" serve -g -w 3600 -l "$S" -m 777 -b "$B" --store "$T/store" --view \
    >>"$T/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 200); do
    [ -S "$T/s.sock" ] && mountpoint -q "$B" && timeout 2 stat "$B" >/dev/null 2>&1 && break
    sleep 0.05
done
for f in secret.rrd open/seen.rrd; do
    timeout 10 rrdtool create --daemon "$S" "$B/$f" --start 1700000000 --step 60 \
        DS:v:GAUGE:120:U:U RRA:LAST:0.5:1:10
    timeout 10 rrdtool update --daemon "$S" "$B/$f" 1700000060:31337
done
timeout 5 stat -c "MODE %A %U %n" "$B" "$B/secret.rrd" "$B/open" "$B/open/seen.rrd" | sed "s|$B|B|"
echo "ROOT: $(timeout 10 rrdtool lastupdate "$B/secret.rrd" | tail -1)"
{ timeout 10 setpriv --reuid=65534 --regid=65534 --clear-groups rrdtool lastupdate "$B/secret.rrd" 2>&1 || true; } | tail -1 | sed "s|$B|B|; s/^/NOBODY: /"
{ timeout 10 setpriv --reuid=65534 --regid=65534 --clear-groups ls "$B" 2>&1 || true; } | sed "s|$B|B|; s/^/NOBODY LS: /"
kill "$pid"; wait "$pid" || true
"#;
    let out = in_namespace(&dir.0, script);
    for want in [
        "MODE drwx------ root B",
        "MODE -rw------- root B/secret.rrd",
        "MODE drwxr-xr-x nobody B/open",
        "MODE -rw-r--r-- root B/open/seen.rrd",
        "ROOT: 1700000060: 31337",
        "NOBODY: ERROR: opening 'B/secret.rrd': Permission denied",
        "NOBODY LS: ls: cannot open directory 'B': Permission denied",
    ] {
        assert!(out.lines().any(|l| l == want), "{want:?} not in:\n{out}");
    }
    assert!(!out.contains("NOBODY: 1700000060"), "{out}");
}
