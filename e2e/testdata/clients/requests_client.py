"""The client matrix with requests (urllib3 over http.client), as its users write it."""
import json
import os

import requests

BASE, KEY, OUT, RUN = (os.environ[k] for k in ("DOCRENDER_URL", "DOCRENDER_API_KEY", "OUT", "RUN"))
s = requests.Session()
s.headers["X-API-Key"] = KEY


def save(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def keep(name, resp):
    save(name + ".status", str(resp.status_code).encode())
    return resp


def generate(name, options=None, headers=None):
    files = {"files": ("index.html", f"<h1>MATRIX {name} {RUN}</h1>", "text/html")}
    data = {"options": json.dumps(options)} if options else None
    return keep(name, s.post(BASE + "/pdf/generate", files=files, data=data, headers=headers, timeout=120))


docs = [{"fileName": n, "htmlContent": f"<h1>MATRIX {n} {RUN}</h1>"} for n in ("one", "two")]

save("generate.pdf", generate("generate").content)
# The call that came back as "103, empty body" before DESIGN §4.20.
save("batch.zip", keep("batch", s.post(BASE + "/pdf/generate-batch", json={"documents": docs}, timeout=120)).content)

started = keep("stream", s.post(BASE + "/pdf/generate-batch", json={"documents": docs, "stream": True, "host": True})).json()
events = []
with keep("stream-events", s.get(f"{BASE}/pdf/progress/{started['batchId']}/stream", stream=True, timeout=120)) as sse:
    event = None
    for line in sse.iter_lines(decode_unicode=True):
        if line.startswith("event:"):
            event = line[6:].strip()
            events.append(event)
        elif line.startswith("data:") and event == "complete":
            result = json.loads(json.loads(line[5:])["message"])
            save("stream.zip", keep("stream-zip", requests.get(result["downloadUrl"], timeout=120)).content)
save("stream-events.txt", "\n".join(events).encode())

hosted = generate("hosted", {"host": True}).json()
save("hosted.pdf", keep("hosted-download", requests.get(hosted["url"], timeout=120)).content)

# Only the options field, as multipart: no files.
save("error.json", keep("error", s.post(BASE + "/pdf/generate", files={"options": (None, "{}")})).content)

key = {"Idempotency-Key": "matrix-requests-" + RUN}
save("idem-1.pdf", generate("idem", headers=key).content)
again = generate("idem", headers=key)
save("idem-2.pdf", again.content)
save("idem-2.replayed", (again.headers.get("Idempotent-Replayed") or "").encode())
