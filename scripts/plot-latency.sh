#!/usr/bin/env bash
# plot-latency.sh renders a latency-against-concurrency plot from the CSV
# that `mcp-load --sweep ... --csv FILE` writes.
#
# Usage:
#   scripts/plot-latency.sh [CSV] [PNG]
#     CSV  default .cache/latency.csv
#     PNG  default .cache/latency.png
#
# Needs gnuplot with the pngcairo terminal (Debian: apt-get install gnuplot-nox).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
csv=${1:-.cache/latency.csv}
png=${2:-.cache/latency.png}
command -v gnuplot >/dev/null || {
	echo "plot-latency.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2
	exit 1
}
[ -s "$csv" ] || {
	echo "plot-latency.sh: $csv is missing or empty (run mcp-load --sweep ... --csv $csv)" >&2
	exit 1
}
# The CSV's columns: clients,seconds,requests,throughput_rps,p50_ms,p95_ms,p99_ms,max_ms,unexpected,wrong
gnuplot <<GNUPLOT
set terminal pngcairo size 900,540 enhanced font 'sans,11'
set output '$png'
set datafile separator ','
set key top left
set title 'mcp-resources serve --http: latency and throughput against concurrent MCP clients'
set xlabel 'concurrent clients (go-sdk, streamable HTTP)'
set ylabel 'latency per request (ms)'
set y2label 'throughput (requests/s)'
set logscale x 2
set xrange [0.8:80]
set logscale y 10
set xtics (1, 2, 4, 8, 16, 32, 64, 128, 256)
set ytics nomirror
set y2tics
set y2range [0:*]
set grid xtics ytics
plot '$csv' skip 1 using 1:5 with linespoints lw 2 pt 7 title 'p50', \
     '' skip 1 using 1:6 with linespoints lw 2 pt 5 title 'p95', \
     '' skip 1 using 1:7 with linespoints lw 2 pt 9 title 'p99', \
     '' skip 1 using 1:4 axes x1y2 with linespoints lw 2 dt 2 pt 13 lc rgb '#555555' title 'throughput (right axis)'
GNUPLOT
echo "wrote $png"
