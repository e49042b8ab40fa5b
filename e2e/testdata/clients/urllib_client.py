"""The client matrix with Python's standard library (urllib over http.client)."""
import json
import os
import urllib.error
import urllib.request
import uuid

BASE, KEY, OUT, RUN = (os.environ[k] for k in ("DOCRENDER_URL", "DOCRENDER_API_KEY", "OUT", "RUN"))


def call(name, method, url, body=None, ctype=None, headers=None):
    h = {"X-API-Key": KEY}
    if ctype:
        h["Content-Type"] = ctype
    h.update(headers or {})
    r = urllib.request.Request(url if url.startswith("http") else BASE + url, data=body, method=method, headers=h)
    try:
        resp = urllib.request.urlopen(r, timeout=120)
    except urllib.error.HTTPError as e:
        resp = e
    save(name + ".status", str(resp.status).encode())
    return resp


def save(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def multipart(files, fields=()):
    boundary = uuid.uuid4().hex
    out = b""
    for fname, data in files:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{fname}\"\r\n"
                f"Content-Type: text/html\r\n\r\n").encode() + data + b"\r\n"
    for name, value in fields:
        out += f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n".encode()
    out += f"--{boundary}--\r\n".encode()
    return out, "multipart/form-data; boundary=" + boundary


def generate(name, options=None, headers=None):
    fields = [("options", json.dumps(options))] if options else []
    body, ctype = multipart([("index.html", f"<h1>MATRIX {name} {RUN}</h1>".encode())], fields)
    return call(name, "POST", "/pdf/generate", body, ctype, headers)


def batch(name, stream):
    docs = [{"fileName": n, "htmlContent": f"<h1>MATRIX {n} {RUN}</h1>"} for n in ("one", "two")]
    body = json.dumps({"documents": docs, "stream": stream, "host": stream}).encode()
    return call(name, "POST", "/pdf/generate-batch", body, "application/json")


save("generate.pdf", generate("generate").read())
save("batch.zip", batch("batch", False).read())

started = json.load(batch("stream", True))
events = []
with call("stream-events", "GET", f"/pdf/progress/{started['batchId']}/stream") as sse:
    event = None
    for raw in sse:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("event:"):
            event = line[6:].strip()
            events.append(event)
        elif line.startswith("data:") and event == "complete":
            result = json.loads(json.loads(line[5:])["message"])
            save("stream.zip", call("stream-zip", "GET", result["downloadUrl"]).read())
save("stream-events.txt", "\n".join(events).encode())

hosted = json.load(generate("hosted", {"host": True}))
save("hosted.pdf", call("hosted-download", "GET", hosted["url"]).read())

body, ctype = multipart([], [("options", "{}")])
save("error.json", call("error", "POST", "/pdf/generate", body, ctype).read())

key = {"Idempotency-Key": "matrix-urllib-" + RUN}
save("idem-1.pdf", generate("idem", headers=key).read())
again = generate("idem", headers=key)
save("idem-2.pdf", again.read())
save("idem-2.replayed", (again.headers.get("Idempotent-Replayed") or "").encode())
