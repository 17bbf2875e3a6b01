/**
 * Graceful shutdown of the HTTP server: stop accepting connections, answer every request already
 * received (keep-alive connections are closed as their responses end), and only then let the
 * caller release the models. A deadline bounds the wait, after which connections are dropped.
 *
 * A request that arrives on an open connection once the drain has begun is answered 503 with
 * `Connection: close` (the caller checks {@link RequestTracker.isDraining}) rather than reset.
 * Connections that hold no request are closed after {@link IDLE_GRACE_MS}, those whose client never
 * sent one included (Node's closeIdleConnections leaves them, and they held `close` until their
 * clients left). A body still arriving after {@link STALLED_BODY_MS} is dropped rather than allowed
 * to hold the drain for its whole request timeout.
 *
 * Measured with `npm run bench:serve -- --shutdown 3` (docs/reliability.md): keeping the listening
 * socket open for a grace period, to answer newcomers 503, reset more requests than it saved, since
 * clients told `Connection: close` reconnect at once and fill the accept queue that a close resets.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long a connection with no request stays open once draining: time for a request already sent on it to arrive. */
const IDLE_GRACE_MS = 100;
/** How long a request body may still take to arrive once draining. */
const STALLED_BODY_MS = 1000;

/** Tracks the requests a server is answering, and closes connections as they go idle once draining. */
export class RequestTracker {
  private readonly active = new Map<ServerResponse, IncomingMessage>();
  private draining = false;
  private readonly waiters: Array<() => void> = [];
  /** Every open connection, and how many requests each is answering. */
  private readonly sockets = new Map<Socket, number>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.sockets.set(socket, 0);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /** Requests received and not yet answered. */
  get inFlight(): number {
    return this.active.size;
  }

  /** Whether {@link drain} has begun. */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Call first thing for every request. */
  track(req: IncomingMessage, res: ServerResponse): void {
    this.active.set(res, req);
    const socket = req.socket;
    if (this.sockets.has(socket)) this.sockets.set(socket, this.sockets.get(socket)! + 1);
    // A request that arrives on a kept-alive connection while draining is still answered, but
    // its connection is closed after it.
    if (this.draining) res.setHeader('Connection', 'close');
    res.once('close', () => {
      this.active.delete(res);
      if (this.sockets.has(socket)) this.sockets.set(socket, this.sockets.get(socket)! - 1);
      if (!this.draining) return;
      this.server.closeIdleConnections();
      if (this.active.size === 0) for (const w of this.waiters.splice(0)) w();
    });
  }

  /**
   * Stops accepting connections and resolves once every tracked request is answered, or after
   * `timeoutMs`, when the remaining connections are destroyed.
   * @returns whether every request finished in time
   */
  async drain(timeoutMs: number): Promise<boolean> {
    const started = performance.now();
    this.draining = true;
    const closed = this.stopListening();
    for (const res of this.active.keys()) if (!res.headersSent) res.setHeader('Connection', 'close');
    const stalled = setTimeout(
      () => {
        for (const req of this.active.values()) if (!req.complete) req.socket.destroy();
      },
      Math.min(STALLED_BODY_MS, timeoutMs),
    );
    await new Promise((resolve) => setTimeout(resolve, Math.min(IDLE_GRACE_MS, timeoutMs)));
    this.closeIdle();
    timeoutMs = Math.max(0, timeoutMs - (performance.now() - started));
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      new Promise<boolean>((resolve) => {
        if (this.active.size === 0) resolve(true);
        else this.waiters.push(() => resolve(true));
      }),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    clearTimeout(stalled);
    if (!finished) this.server.closeAllConnections();
    this.server.closeIdleConnections();
    await closed;
    return finished;
  }

  /**
   * Closes the listening socket; resolves once every connection has ended. `server.close()` also
   * closes the idle keep-alive connections at once, and a request the client is sending on one at
   * that moment is reset: those are kept open for {@link IDLE_GRACE_MS}, so such a request is
   * answered 503 instead.
   */
  private stopListening(): Promise<void> {
    const server = this.server;
    return new Promise<void>((resolve) => {
      server.closeIdleConnections = () => undefined;
      try {
        server.close(() => resolve());
      } finally {
        delete (server as Partial<Pick<Server, 'closeIdleConnections'>>).closeIdleConnections; // the prototype's again
      }
    });
  }

  /**
   * Closes the connections that hold no request. Node's closeIdleConnections leaves out those that
   * never sent one, which kept `server.close` waiting on them until their clients left.
   */
  private closeIdle(): void {
    this.server.closeIdleConnections();
    for (const [socket, requests] of this.sockets) if (requests === 0) socket.destroy();
  }
}
