#!/usr/bin/env bash
# Benchmark `harnery otlp push` beside `harnery export --format otlp` to a
# file, in one run, on the same ledger:
#   1. write SIGNALS signals over SESSIONS sessions with
#      examples/bench_spool.rs and finalize them (not timed);
#   2. baseline: `export --format otlp > file`, under /usr/bin/time -v;
#   3. a receiver on 127.0.0.1 that reads each request whole and discards
#      it (python3's http.server, answering 200 with an empty body: an
#      empty ExportTraceServiceResponse); under /usr/bin/time -v: `otlp
#      push` (http/protobuf), `otlp push --resend --protocol http/json`,
#      a repeat push with nothing new to send, and a push of everything
#      again with `--content masked` (every row read whole, words masked);
#   4. checks both full pushes sent every span the export wrote, and the
#      repeat none.
# Prints one table: spans, seconds, spans/s, peak RSS, and each run's time
# as a multiple of the export's (same run, same ledger).
#
# Usage: scripts/bench-otlp.sh   (env: SIGNALS=1000000 SESSIONS=1000 BIN=<dir with
#        a release harnery and examples/bench_spool>; REUSE=1 with BENCH_DIR
#        keeps the ledger a run before made there; needs /usr/bin/time, python3)
set -euo pipefail

cd "$(dirname "$0")/.."
SIGNALS=${SIGNALS:-1000000}
SESSIONS=${SESSIONS:-1000}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-otlp.XXXXXX)}
mkdir -p "$WORK"

if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bin harnery --example bench_spool
  BIN=$PWD/target/release
fi
. scripts/time-v.sh

home="$WORK/home"
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z
if [ "${REUSE:-0}" = 1 ] && [ -f "$home/ledgers/v2/ledger.sqlite" ]; then
  # The ledger a run before made in BENCH_DIR (what each endpoint took is
  # forgotten: the first push sends everything).
  rm -rf "$home/otlp"
else
  rm -rf "$home" && mkdir -p "$home"
  "$BIN/examples/bench_spool" "$home" "$SIGNALS" "$SESSIONS" >/dev/null
  "$BIN/harnery" finalize >/dev/null
fi
# A compact ledger's `events` is a view over `event_store` that needs
# harnery's SQL functions: count the stored rows instead.
events=$(python3 -c "
import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
t = 'event_store' if c.execute(\"SELECT 1 FROM sqlite_schema WHERE name = 'event_store'\").fetchone() else 'events'
print(c.execute(f'SELECT count(*) FROM {t}').fetchone()[0])" "$home/ledgers/v2/ledger.sqlite")

cat > "$WORK/sink.py" <<'PY'
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        while n > 0:
            got = self.rfile.read(min(n, 1 << 20))
            if not got: break
            n -= len(got)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$WORK/sink.py" > "$WORK/port" &
SINK=$!
trap 'kill $SINK 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$WORK/port")/v1/traces"

/usr/bin/time -v "$BIN/harnery" export --format otlp > "$WORK/export.jsonl" 2> "$WORK/export.time"
spans=$(python3 -c "
import json,sys
print(sum(len(ss['spans']) for l in open(sys.argv[1]) for rs in json.loads(l)['resourceSpans'] for ss in rs['scopeSpans']))" "$WORK/export.jsonl")

push() { # name, then push's arguments
  local name=$1; shift
  /usr/bin/time -v "$BIN/harnery" otlp push --traces-endpoint "$URL" --json "$@" \
    > "$WORK/$name.json" 2> "$WORK/$name.time"
}
push protobuf
push json --resend --protocol http/json
push repeat
# Nothing new, but the sessions' marks forgotten: every session is read
# and each span found taken (the record read a trace at a time).
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('DELETE FROM sessions'); c.commit()" "$home/otlp/delivered.sqlite"
push reread
# The words too, masked: every row read whole and its words masked.
push masked --resend --content masked
sent() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['spans_sent'])" "$WORK/$1.json"; }
[ "$(sent protobuf)" = "$spans" ] || { echo "the protobuf push sent $(sent protobuf) of $spans spans" >&2; exit 1; }
[ "$(sent json)" = "$spans" ] || { echo "the json push sent $(sent json) of $spans spans" >&2; exit 1; }
[ "$(sent repeat)" = 0 ] || { echo "the repeat sent $(sent repeat) spans" >&2; exit 1; }
[ "$(sent reread)" = 0 ] || { echo "the reread sent $(sent reread) spans" >&2; exit 1; }
# (With words, a message the records gave without usage is a span too.)
[ "$(sent masked)" -ge "$spans" ] || { echo "the masked push sent $(sent masked) of $spans spans" >&2; exit 1; }

base=$(secs "$WORK/export.time")
row() { # label, time file, spans
  local s; s=$(secs "$2")
  printf '| %s | %s | %s | %s | %s MiB | %s |\n' "$1" "$3" "$s" \
    "$(python3 -c "print(f'{$3 / max($s, 0.001):,.0f}')")" "$(rss_mb "$2")" \
    "$(python3 -c "print(f'{$s / max($base, 0.001):.2f}x')")"
}
echo "$events events, $SESSIONS sessions, $spans spans"
echo "| run | spans sent | seconds | spans/s | peak RSS | time vs export |"
echo "|---|---|---|---|---|---|"
row "export --format otlp > file" "$WORK/export.time" "$spans"
row "otlp push (http/protobuf)" "$WORK/protobuf.time" "$spans"
row "otlp push --resend (http/json)" "$WORK/json.time" "$spans"
row "otlp push, nothing new" "$WORK/repeat.time" 0
row "otlp push, nothing new, every session read" "$WORK/reread.time" 0
row "otlp push --resend --content masked" "$WORK/masked.time" "$(sent masked)"
