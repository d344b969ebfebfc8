// The events of a streaming OpenAI-style response (server-sent events: "data: {json}\n\n", ending
// with "data: [DONE]"), shared by bench/serve_load.mjs and bench/vs-llamacpp/serve_race.mjs.
// Yields each event's parsed JSON, and the string "[DONE]" for the last one.
export async function* sseData(res) {
  const reader = res.body.getReader(), dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let k;
    while ((k = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, k); buf = buf.slice(k + 2);
      if (!ev.startsWith("data: ")) continue;
      const d = ev.slice(6);
      yield d === "[DONE]" ? d : JSON.parse(d);
    }
  }
}
