# Sourced by the benchmarks: read a `/usr/bin/time -v` report.
#   secs FILE     wall-clock seconds
#   cpu FILE      user + system CPU seconds
#   rss_kb FILE   peak resident set, KiB
#   rss_mb FILE   peak resident set, MiB with one decimal

secs() {
  awk -F': ' '/Elapsed \(wall clock\)/ {
    n = split($2, p, ":"); s = 0
    for (i = 1; i <= n; i++) s = s * 60 + p[i]
    print s }' "$1"
}
cpu() { awk -F': ' '/(User|System) time \(seconds\)/ {s += $2} END {print s}' "$1"; }
rss_kb() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }
rss_mb() { awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$1"; }
