<?php
// emoncms's file calls on its feed directories, made the way emoncms makes them (written for
// ringlet's tests from emoncms's documented formats and behaviour; not emoncms's code):
// PHP's own fopen ('wb', 'c+', 'r+', 'rb', 'a'), flock, fseek, fwrite of pack()ed values,
// fread, ftruncate, filesize after clearstatcache, unlink. PHP's stream layer and its stat
// cache are what emoncms runs through.
//
//   php emoncms.php phpfina DIR SEED N        a seeded sequence on PHPFina feeds
//   php emoncms.php phptimeseries DIR SEED N  the same on PHPTimeSeries feeds
//   php emoncms.php bad DIR                   writes that cannot be a feed's (the view
//                                             refuses each: one line says so)
//
// Every read prints a line; the same seed on a plain directory and on the view prints the
// same lines and leaves the same files.

error_reporting(E_ALL & ~E_WARNING & ~E_NOTICE);
[$_, $mode, $dir] = $argv;
$dir = rtrim($dir, '/') . '/';

function meta_write($dir, $id, $interval, $start) {
    $fh = fopen("$dir$id.meta", 'wb');
    if (!$fh || !flock($fh, LOCK_EX)) return false;
    $ok = fwrite($fh, pack("I", 0)) !== false;
    $ok = $ok && fwrite($fh, pack("I", 0)) !== false;
    $ok = $ok && fwrite($fh, pack("I", $interval)) !== false;
    $ok = $ok && fwrite($fh, pack("I", $start)) !== false;
    fclose($fh);
    return $ok;
}

function meta_read($dir, $id) {
    $fh = fopen("$dir$id.meta", 'rb');
    fseek($fh, 8);
    $interval = unpack("I", fread($fh, 4))[1];
    $start = unpack("I", fread($fh, 4))[1];
    fclose($fh);
    return [$interval, $start];
}

function npoints($dir, $name, $size) {
    clearstatcache();
    return intdiv(filesize("$dir$name"), $size);
}

function fina_create($dir, $id, $interval) {
    if (file_exists("$dir$id.meta")) return;
    meta_write($dir, $id, $interval, 0);
    fclose(fopen("$dir$id.dat", 'c+'));
}

// post_multiple: a point over an existing one is written in place; new ones are gathered
// (NaN over a gap) and written at the end in one call; the first point sets the start.
function fina_post($dir, $id, $points) {
    if (!file_exists("$dir$id.meta")) return;
    [$interval, $start] = meta_read($dir, $id);
    $fh = fopen("$dir$id.dat", 'c+');
    $npoints = npoints($dir, "$id.dat", 4);
    $buffer = '';
    foreach ($points as [$t, $v]) {
        $t = intdiv($t, $interval) * $interval;
        if ($npoints == 0 && $buffer === '' && $start == 0) {
            $start = $t;
            meta_write($dir, $id, $interval, $start);
        }
        if ($t < $start) continue;
        $pos = intdiv($t - $start, $interval);
        $last = $npoints + intdiv(strlen($buffer), 4);
        if ($pos < $npoints) {
            fseek($fh, 4 * $pos);
            fwrite($fh, pack("f", $v));
        } elseif ($pos < $last) {
            $buffer = substr_replace($buffer, pack("f", $v), 4 * ($pos - $npoints), 4);
        } else {
            $buffer .= str_repeat(pack("f", NAN), $pos - $last) . pack("f", $v);
        }
    }
    if ($buffer !== '') {
        fseek($fh, 4 * $npoints);
        fwrite($fh, $buffer);
    }
    fclose($fh);
}

// A graph's reads: a point at a time, fseek and fread.
function fina_read($dir, $id, $pos, $n) {
    if (!file_exists("$dir$id.dat")) return "none";
    $fh = fopen("$dir$id.dat", 'rb');
    $out = [];
    for ($i = 0; $i < $n; $i++) {
        fseek($fh, 4 * ($pos + $i));
        $b = fread($fh, 4);
        $out[] = strlen($b) == 4 ? bin2hex($b) : '-';
    }
    fclose($fh);
    return npoints($dir, "$id.dat", 4) . ":" . implode(',', $out);
}

function fina_clear($dir, $id) {
    if (!file_exists("$dir$id.meta")) return;
    [$interval, ] = meta_read($dir, $id);
    $fh = fopen("$dir$id.dat", 'r+');
    ftruncate($fh, 0);
    fclose($fh);
    meta_write($dir, $id, $interval, 0);
}

function fina_delete($dir, $id) {
    if (file_exists("$dir$id.meta")) unlink("$dir$id.meta");
    if (file_exists("$dir$id.dat")) unlink("$dir$id.dat");
}

// PHPTimeSeries: records pack("CIf", 249, time, value), in time order; a point at the last
// record's time replaces it, one before it replaces the record with its time if there is
// one (binary search), else is dropped.
function pts_post($dir, $id, $t, $v) {
    $name = "feed_$id.MYD";
    $fh = fopen("$dir$name", 'c+');
    $n = npoints($dir, $name, 9);
    if ($n > 0) {
        fseek($fh, ($n - 1) * 9);
        $last = unpack("x/Itime/fvalue", fread($fh, 9));
        if ($t == $last['time']) {
            fseek($fh, ($n - 1) * 9);
            fwrite($fh, pack("CIf", 249, $t, $v));
            fclose($fh);
            return;
        }
        if ($t < $last['time']) {
            $at = pts_find($fh, $n, $t);
            if ($at >= 0) {
                fseek($fh, $at * 9);
                fwrite($fh, pack("CIf", 249, $t, $v));
            }
            fclose($fh);
            return;
        }
    }
    fseek($fh, $n * 9);
    fwrite($fh, pack("CIf", 249, $t, $v));
    fclose($fh);
}

function pts_find($fh, $n, $t) {
    [$lo, $hi] = [0, $n - 1];
    while ($lo <= $hi) {
        $mid = intdiv($lo + $hi, 2);
        fseek($fh, $mid * 9);
        $dp = unpack("x/Itime/fvalue", fread($fh, 9));
        if ($dp['time'] == $t) return $mid;
        if ($dp['time'] < $t) $lo = $mid + 1; else $hi = $mid - 1;
    }
    return -1;
}

function pts_read($dir, $id, $t) {
    $name = "feed_$id.MYD";
    if (!file_exists("$dir$name")) return "none";
    $fh = fopen("$dir$name", 'rb');
    $n = npoints($dir, $name, 9);
    $at = pts_find($fh, $n, $t);
    $out = "$n:$at";
    if ($at >= 0) {
        fseek($fh, $at * 9);
        $out .= ":" . bin2hex(fread($fh, 9));
    }
    fclose($fh);
    return $out;
}

function pts_clear($dir, $id) {
    $name = "feed_$id.MYD";
    if (!file_exists("$dir$name")) return;
    $fh = fopen("$dir$name", 'r+');
    ftruncate($fh, 0);
    fclose($fh);
}

function value() {
    return mt_rand(0, 99) < 3 ? NAN : mt_rand(-5000, 40000) / 10.0;
}

if ($mode === 'phpfina' || $mode === 'phptimeseries') {
    mt_srand((int)$argv[3]);
    $n = (int)$argv[4];
    $next = [];
    $t0 = 1700000000;
    for ($k = 0; $k < $n; $k++) {
        $id = mt_rand(1, 6);
        $r = mt_rand(0, 99);
        if ($mode === 'phpfina') {
            $interval = [5, 10, 10, 60][$id % 4];
            if (!isset($next[$id]) || !file_exists("$dir$id.meta")) {
                fina_create($dir, $id, $interval);
                $next[$id] = $t0 + mt_rand(0, 3600);
                continue;
            }
            if ($r < 2) {
                fina_clear($dir, $id);
            } elseif ($r < 3) {
                fina_delete($dir, $id);
            } elseif ($r < 15) {
                echo "read $id: ", fina_read($dir, $id, mt_rand(0, 80), mt_rand(1, 30)), "\n";
            } elseif ($r < 20) {
                $pts = [];
                for ($i = mt_rand(2, 12); $i > 0; $i--) {
                    $next[$id] += $interval * mt_rand(1, 3);
                    $pts[] = [$next[$id], value()];
                }
                fina_post($dir, $id, $pts);
            } else {
                $s = mt_rand(0, 19);
                $t = $s == 0 ? $next[$id] - $interval * mt_rand(1, 20)
                   : ($s < 3 ? $next[$id] + $interval * mt_rand(2, 60) : $next[$id] + $interval);
                $next[$id] = max($next[$id], $t);
                fina_post($dir, $id, [[$t, value()]]);
            }
        } else {
            $next[$id] = $next[$id] ?? $t0 + mt_rand(0, 3600);
            if ($r < 2) {
                pts_clear($dir, $id);
            } elseif ($r < 3) {
                if (file_exists("{$dir}feed_$id.MYD")) unlink("{$dir}feed_$id.MYD");
            } elseif ($r < 15) {
                echo "read $id: ", pts_read($dir, $id, $next[$id] - 10 * mt_rand(0, 30)), "\n";
            } else {
                $s = mt_rand(0, 19);
                $t = $s == 0 ? $next[$id] - 10 * mt_rand(0, 20) : $next[$id] + mt_rand(1, 100);
                $next[$id] = max($next[$id], $t);
                pts_post($dir, $id, $t, value());
            }
        }
    }
    clearstatcache();
    foreach (scandir($dir) as $f) {
        if ($f[0] != '.') echo "size $f: ", filesize("$dir$f"), "\n";
    }
} elseif ($mode === 'bad') {
    $say = function ($what, $ok) { echo $ok ? "ACCEPTED: $what\n" : "REFUSED: $what\n"; };
    // A meta of interval 0: its third word is refused.
    $say("a meta with interval 0", meta_write($dir, 900, 0, 0));
    fina_create($dir, 901, 10);
    fina_post($dir, 901, [[1700000000, 1.5], [1700000010, 2.5]]);
    $fh = fopen("{$dir}901.dat", 'c+');
    fseek($fh, 8);
    $say("a write of 6 bytes", fwrite($fh, "abcdef") !== false);
    fseek($fh, 4 * (2 ** 32));
    $say("a write past 2^32 points", fwrite($fh, pack("f", 1.0)) !== false);
    $say("a cut to 6 bytes", ftruncate($fh, 6));
    fclose($fh);
    $say("a feed file name that is not a feed's", fopen("{$dir}abc.dat", 'c+') !== false);
    $fh = fopen("{$dir}901.meta", 'r+');
    fseek($fh, 16);
    $say("a meta of more than 16 bytes", fwrite($fh, pack("I", 7)) !== false);
    fclose($fh);
    echo "still: ", fina_read($dir, 901, 0, 3), "\n";
}
