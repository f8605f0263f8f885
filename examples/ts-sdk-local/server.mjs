// The TypeScript SDK's in-memory Resonate server (@resonatehq/sdk, src/network/local.ts:
// the `Server` a LocalNetwork runs in-process) behind Resonate's HTTP protocol, so that
// duespec can probe it like any server: `duespec catch-up --target http://127.0.0.1:PORT`.
//
//   npm ci --prefix examples/ts-sdk-local        # once: the pinned @resonatehq/sdk
//   node examples/ts-sdk-local/server.mjs 8003   # prints "listening on http://127.0.0.1:8003"
//
// POST / takes {kind, head: {corrId, version, "resonate:debug_time"?}, data}. Time is pinned
// as duespec pins it: a request's `now` is its head's resonate:debug_time, debug.tick's is
// its data.time (the Server reads that itself), and a request with neither reads the wall
// clock. The Server answers {kind, head: {status}, data}; the corrId and version go back as
// they came, and the HTTP status is the head's. Nothing else is changed: no background
// ticks run (LocalNetwork.init would start them), so timeouts fire only on debug.tick.

import http from "node:http";
import { LocalNetwork } from "@resonatehq/sdk";

const server = new LocalNetwork().server;
const port = Number(process.argv[2] ?? 0);

function answer(body) {
  let request;
  try {
    request = JSON.parse(body);
  } catch (error) {
    return { kind: "unknown", head: { corrId: "0", status: 400 }, data: `malformed JSON: ${error.message}` };
  }
  const head = request?.head ?? {};
  const now = typeof head["resonate:debug_time"] === "number" ? head["resonate:debug_time"] : Date.now();
  let response;
  try {
    response = server.apply(now, request).response;
  } catch (error) {
    response = { kind: request?.kind, head: { status: 500 }, data: `${error.name}: ${error.message}` };
  }
  return { kind: response.kind, head: { corrId: head.corrId, status: response.head.status, version: head.version },
           data: response.data };
}

http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const reply = answer(Buffer.concat(chunks).toString("utf8"));
    res.writeHead(reply.head.status, { "content-type": "application/json" });
    res.end(JSON.stringify(reply));
  });
}).listen(port, "127.0.0.1", function () {
  console.log(`listening on http://127.0.0.1:${this.address().port}`);
});
