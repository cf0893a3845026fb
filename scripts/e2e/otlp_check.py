# Compare what an MLflow tracking server holds with `harnery export
# --format otlp`: every session one trace, with exactly the exported span
# ids (each once). Usage: otlp_check.py <tracking url> <export file>
# Prints "ok <traces> <spans>" or the differences, exit 1.
import json, sys
import mlflow

url, export = sys.argv[1], sys.argv[2]
want = {}
for line in open(export):
    doc = json.loads(line)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                want.setdefault(span["traceId"], set()).add(span["spanId"])
mlflow.set_tracking_uri(url)
client = mlflow.MlflowClient()
got, page = {}, None
while True:
    traces = client.search_traces(experiment_ids=["0"], max_results=200, page_token=page)
    for t in traces:
        trace = t.info.trace_id.removeprefix("tr-")
        if trace in got:
            print(f"trace {trace} twice"); sys.exit(1)
        ids = [s.span_id for s in t.data.spans]
        if len(ids) != len(set(ids)):
            print(f"trace {trace}: a span twice"); sys.exit(1)
        got[trace] = set(ids)
    page = traces.token
    if not page:
        break
bad = False
for trace in sorted(set(want) | set(got)):
    w, g = want.get(trace, set()), got.get(trace, set())
    if w != g:
        bad = True
        print(f"trace {trace}: missing {sorted(w - g)[:5]} extra {sorted(g - w)[:5]}")
if bad:
    sys.exit(1)
print(f"ok {len(got)} {sum(len(s) for s in got.values())}")
