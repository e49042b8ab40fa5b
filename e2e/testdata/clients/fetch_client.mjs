// The client matrix with Node's built-in fetch (undici), FormData and Blob.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const { DOCRENDER_URL: BASE, DOCRENDER_API_KEY: KEY, OUT, RUN } = process.env;
const auth = { "X-API-Key": KEY };
const save = (name, data) => writeFileSync(join(OUT, name), data);

async function call(name, url, init = {}) {
  const resp = await fetch(url.startsWith("http") ? url : BASE + url, init);
  save(name + ".status", String(resp.status));
  return resp;
}
const bytes = async (resp) => Buffer.from(await resp.arrayBuffer());

function generate(name, options, headers = {}) {
  const form = new FormData();
  form.append("files", new Blob([`<h1>MATRIX ${name} ${RUN}</h1>`], { type: "text/html" }), "index.html");
  if (options) form.append("options", JSON.stringify(options));
  return call(name, "/pdf/generate", { method: "POST", body: form, headers: { ...auth, ...headers } });
}

const docs = ["one", "two"].map((n) => ({ fileName: n, htmlContent: `<h1>MATRIX ${n} ${RUN}</h1>` }));
const batch = (name, stream) =>
  call(name, "/pdf/generate-batch", {
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify({ documents: docs, stream, host: stream }),
  });

save("generate.pdf", await bytes(await generate("generate")));
save("batch.zip", await bytes(await batch("batch", false)));

const started = await (await batch("stream", true)).json();
const sse = await call("stream-events", `/pdf/progress/${started.batchId}/stream`, { headers: auth });
const events = [];
let buf = "", event = null, complete = null;
const decoder = new TextDecoder();
for await (const chunk of sse.body) {
  buf += decoder.decode(chunk, { stream: true });
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, nl).replace(/\r$/, "");
    buf = buf.slice(nl + 1);
    if (line.startsWith("event:")) events.push((event = line.slice(6).trim()));
    else if (line.startsWith("data:") && event === "complete") complete = JSON.parse(JSON.parse(line.slice(5)).message);
  }
}
save("stream-events.txt", events.join("\n"));
if (complete) save("stream.zip", await bytes(await call("stream-zip", complete.downloadUrl)));

const hosted = await (await generate("hosted", { host: true })).json();
save("hosted.pdf", await bytes(await call("hosted-download", hosted.url)));

const empty = new FormData();
empty.append("options", "{}");
save("error.json", await bytes(await call("error", "/pdf/generate", { method: "POST", body: empty, headers: auth })));

const key = { "Idempotency-Key": `matrix-fetch-${RUN}` };
save("idem-1.pdf", await bytes(await generate("idem", null, key)));
const again = await generate("idem", null, key);
save("idem-2.pdf", await bytes(again));
save("idem-2.replayed", again.headers.get("Idempotent-Replayed") ?? "");
