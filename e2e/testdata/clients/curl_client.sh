#!/usr/bin/env bash
# The client matrix with curl, as the README's examples use it.
set -euo pipefail
cd "$OUT"
api() { # api NAME OUTFILE curl-args...: the body to OUTFILE, the status to NAME.status
  local name=$1 out=$2; shift 2
  curl -sS --max-time 120 -o "$out" -w '%{http_code}' -H "X-API-Key: $DOCRENDER_API_KEY" "$@" > "$name.status"
}
html() { printf '<h1>MATRIX %s %s</h1>' "$1" "$RUN" > "$1.html"; }
docs='[{"fileName":"one","htmlContent":"<h1>MATRIX one '"$RUN"'</h1>"},{"fileName":"two","htmlContent":"<h1>MATRIX two '"$RUN"'</h1>"}]'

html generate
api generate generate.pdf -F "files=@generate.html;filename=index.html" "$DOCRENDER_URL/pdf/generate"

api batch batch.zip -H 'Content-Type: application/json' -d "{\"documents\":$docs}" "$DOCRENDER_URL/pdf/generate-batch"

api stream stream.json -H 'Content-Type: application/json' -d "{\"documents\":$docs,\"stream\":true,\"host\":true}" "$DOCRENDER_URL/pdf/generate-batch"
id=$(sed -E 's/.*"batchId":"([^"]+)".*/\1/' stream.json)
api stream-events stream.sse -N "$DOCRENDER_URL/pdf/progress/$id/stream"
sed -n 's/^event: *//p' stream.sse > stream-events.txt
url=$(grep -A1 '^event: complete' stream.sse | sed -n 's/^data: *//p' | sed -E 's/.*downloadUrl\\":\\"([^\\]+)\\".*/\1/')
api stream-zip stream.zip "$url"

html hosted
api hosted hosted.json -F "files=@hosted.html;filename=index.html" -F 'options={"host":true}' "$DOCRENDER_URL/pdf/generate"
api hosted-download hosted.pdf "$(sed -E 's/.*"url":"([^"]+)".*/\1/' hosted.json)"

api error error.json -F 'options={}' "$DOCRENDER_URL/pdf/generate"

html idem
for n in 1 2; do
  api idem "idem-$n.pdf" -D "idem-$n.headers" -H "Idempotency-Key: matrix-curl-$RUN" \
    -F "files=@idem.html;filename=index.html" "$DOCRENDER_URL/pdf/generate"
done
sed -n 's/^Idempotent-Replayed: *//Ip' idem-2.headers | tr -d '\r\n' > idem-2.replayed
