/**
 * The HTTP client of bench/http-latency.ts, in a process of its own, as a real client is: started with
 * `child_process.fork`, it sends one request per IPC message (c=1) through a node:http keep-alive Agent with one
 * socket (Nagle off), reads and parses the answer, and reports how long that took, measured here, and the
 * answer's body. So none of the client's work (building the request, parsing the answer) runs on the server's
 * event loop, and the parent's own IPC hop is outside the time.
 */
import http from 'node:http';

/** A request the parent asks for. */
export interface ClientAsk {
  id: number;
  url: string;
  /** JSON to POST; GET without it. */
  body?: string;
}

/** What the child answers: `ms` from writing the request to the parsed answer. */
export interface ClientAnswer {
  id: number;
  ms: number;
  status: number;
  /** The parsed JSON body. */
  json: unknown;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function send(ask: ClientAsk): Promise<Omit<ClientAnswer, 'id'>> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const headers: http.OutgoingHttpHeaders =
      ask.body === undefined
        ? {}
        : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ask.body) };
    const req = http.request(ask.url, { method: ask.body === undefined ? 'GET' : 'POST', agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const json: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve({ ms: performance.now() - t0, status: res.statusCode ?? 0, json });
      });
      res.on('error', reject);
    });
    req.on('socket', (socket) => socket.setNoDelay(true));
    req.on('error', reject);
    req.end(ask.body);
  });
}

process.on('message', (ask: ClientAsk) => {
  send(ask).then(
    (answer) => process.send!({ id: ask.id, ...answer } satisfies ClientAnswer),
    (err: unknown) => process.send!({ id: ask.id, ms: NaN, status: 0, json: { error: String(err) } }),
  );
});
// The parent closing the channel ends the child, keep-alive socket and all.
process.on('disconnect', () => {
  agent.destroy();
  process.exit(0);
});
