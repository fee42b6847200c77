#!/usr/bin/env bash
# peers-table.sh: turn peers.sh result lines into markdown tables and an SVG chart.
#
# usage: bench/peers-table.sh RESULTS [--svg FILE] [--title TEXT]
#   Prints one markdown table per (mode, workload), rows in file order. With --svg, also
#   writes a horizontal bar chart of device bytes per sample (log scale), one bar per result
#   line, grouped by mode and workload, coloured by filesystem. Later lines for the same
#   peer, window, workload, filesystem and mode replace earlier ones in the chart.
set -euo pipefail

results="" svg="" title="Device bytes written per sample (log scale)"
while [ $# -gt 0 ]; do
    case "$1" in
        --svg) svg=$2; shift 2 ;;
        --title) title=$2; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) results=$1; shift ;;
    esac
done
{ [ -n "$results" ] && [ -r "$results" ]; } || { echo "usage: $0 RESULTS [--svg FILE]" >&2; exit 2; }

# A peer's label: the name plus its window where the window is the peer's own setting.
read -r -d '' PARSE <<'AWK' || true
function parse(line,   n, i, kv, k) {
    delete f
    n = split(line, kv, " ")
    for (i = 1; i <= n; i++) {
        k = index(kv[i], "=")
        if (k > 0) f[substr(kv[i], 1, k - 1)] = substr(kv[i], k + 1)
    }
}
function label() {
    if (f["peer"] == "ringlet" || f["peer"] == "rrdcached")
        return f["peer"] " -w " f["window"] (f["evict"] == "1" ? ", evicted" : "")
    if (f["peer"] == "rrdtool") return "rrdtool (direct)"
    return f["peer"]
}
function ios(v) { return v >= 0.01 ? sprintf("%.3f", v) : sprintf("%.2g", v) }
function num(v) { return v >= 100 ? commas(v) : sprintf("%.3g", v) }
function modename() { return f["mode"] == "realtime" ? "real time" : "accelerated" }
function group() { return modename() ", " f["workload"] }
function commas(x,   s, neg) {
    s = sprintf("%.0f", x); neg = ""
    if (substr(s, 1, 1) == "-") { neg = "-"; s = substr(s, 2) }
    while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]([,]|$)/, ",&", s)
    return neg s
}
AWK

awk "$PARSE"'
/^date=/ {
    parse($0)
    g = group()
    if (!(g in seen)) { seen[g] = 1; order[++ng] = g }
    rows[g] = rows[g] sprintf("| %s | %s | %s | %s | %s | %s | **%s** | %s | %s | %s | %.1f | %.2f | %d | %s | %s | %s |\n",
        substr(f["date"], 1, 10), label(), f["fs"], commas(f["series"]), commas(f["samples"]),
        commas(f["dev_bytes"]), num(f["bytes_per_sample"] + 0), commas(f["write_ios"]),
        ios(f["write_ios"] / f["samples"]), commas(f["bytes_per_second"] + 0), f["cpu_s"] + 0,
        f["cpu_us_per_sample"] + 0, f["peak_rss_kb"] / 1024, f["wall_s"],
        f["load_start"] "-" f["load_end"], (f["mode"] == "realtime" ? \
            "late steps " f["late_steps"] ", max lag " f["max_lag_s"] " s" : \
            "virtual " f["duration"] ", writeback every " f["writeback"]) \
            (f["scale"] != "1" ? ", **series scaled x" f["scale"] "**" : "") \
            (f["evict"] == "1" ? ", files evicted from the page cache after setup" : "") \
            (f["settle"] == "yes" ? ", settled start (fsfreeze)" : "") \
            (index(f["note"], "concurrent") ? ", beside another run" : "") \
            (f["peer"] == "ringlet" && match(f["note"], /ringlet@[0-9a-f]+/) ? ", " substr(f["note"], RSTART, RLENGTH) : ""))
}
END {
    for (i = 1; i <= ng; i++) {
        g = order[i]
        printf "### %s\n\n", g
        print "| date | system | fs | series | samples | device bytes | bytes/sample | write IOs | IOs/sample | bytes/s | CPU s | CPU µs/sample | peak RSS MB | wall s | load | notes |"
        print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        printf "%s\n", rows[g]
    }
}' "$results"

[ -n "$svg" ] || exit 0

awk -v title="$title" "$PARSE"'
/^date=/ {
    parse($0)
    key = group() "|" label() "|" f["fs"]
    if (!(key in val)) { keys[++n] = key; grp[key] = group(); lab[key] = label(); fsn[key] = f["fs"] }
    val[key] = f["bytes_per_sample"] + 0
}
function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); return s }
function lx(v) { return log(v) / log(10) }
END {
    # Order: groups in first-seen order, bars within a group by bytes per sample.
    ng = 0
    for (i = 1; i <= n; i++) if (!(grp[keys[i]] in gi)) { gi[grp[keys[i]]] = ++ng; gname[ng] = grp[keys[i]] }
    m = 0
    for (g = 1; g <= ng; g++) {
        c = 0
        for (i = 1; i <= n; i++) if (grp[keys[i]] == gname[g]) sel[++c] = keys[i]
        for (a = 2; a <= c; a++) { k = sel[a]; b = a - 1
            while (b > 0 && val[sel[b]] > val[k]) { sel[b + 1] = sel[b]; b-- } sel[b + 1] = k }
        m++; kind[m] = "g"; text[m] = gname[g]
        for (a = 1; a <= c; a++) { m++; kind[m] = "b"; text[m] = sel[a] }
    }
    lo = -1; hi = 5   # 0.1 to 100,000 bytes per sample
    left = 250; width = 560; rowh = 18; top = 56
    H = top + m * rowh + 40
    colour["ext4"] = "#4e79a7"; colour["ext4-1k"] = "#76b7b2"; colour["xfs"] = "#f28e2b"; colour["btrfs"] = "#e15759"
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", left + width + 90, H
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
    printf "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", esc(title)
    lx0 = 10
    split("ext4 ext4-1k xfs btrfs", fl, " ")
    for (j = 1; j <= 4; j++) {
        printf "<rect x=\"%d\" y=\"30\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"40\">%s</text>\n", lx0, colour[fl[j]], lx0 + 16, fl[j]
        lx0 += 80
    }
    for (e = lo; e <= hi; e++) {
        x = left + (e - lo) / (hi - lo) * width
        printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, top - 4, x, top + m * rowh
        printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n", x, top + m * rowh + 16, (e < 0 ? "0.1" : 10 ^ e)
    }
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">device bytes per sample</text>\n", left + width / 2, top + m * rowh + 34
    for (r = 1; r <= m; r++) {
        y = top + (r - 1) * rowh
        if (kind[r] == "g") {
            printf "<text x=\"10\" y=\"%d\" font-weight=\"bold\">%s</text>\n", y + 13, esc(text[r])
            continue
        }
        k = text[r]; v = val[k]
        w = (lx(v < 0.1 ? 0.1 : v) - lo) / (hi - lo) * width
        printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s (%s)</text>\n", left - 6, y + 13, esc(lab[k]), fsn[k]
        printf "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left, y + 2, w, rowh - 4, (fsn[k] in colour ? colour[fsn[k]] : "#999")
        printf "<text x=\"%.1f\" y=\"%d\">%s</text>\n", left + w + 4, y + 13, num(v)
    }
    print "</svg>"
}' "$results" >"$svg"
