/**
 * Graceful shutdown of the HTTP server: answer every request already received (keep-alive
 * connections are closed as their responses end), and only then let the caller release the
 * models. A deadline bounds the wait, after which connections are dropped.
 *
 * Requests that come in once the drain has begun are answered 503 (the caller checks
 * {@link RequestTracker.isDraining}): the listening socket stays open for a short grace period, until
 * connections stop arriving, because connections still in the kernel's accept queue when it closes
 * are reset; under load that was hundreds of requests. Uploads whose bodies are still arriving are
 * dropped at once rather than allowed to hold the drain for their whole request timeout.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long the listening socket stays open once draining, at most. @see RequestTracker.drain */
export const DEFAULT_DRAIN_GRACE_MS = 1000;
/** The grace period ends early once no connection has arrived for this long. */
const QUIET_MS = 100;

/** Tracks the requests a server is answering, and closes connections as they go idle once draining. */
export class RequestTracker {
  private readonly active = new Map<ServerResponse, IncomingMessage>();
  private draining = false;
  private readonly waiters: Array<() => void> = [];
  private lastConnectionAt = 0;
  /** Every open connection, and how many requests each is answering. */
  private readonly sockets = new Map<Socket, number>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.lastConnectionAt = performance.now();
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
   * Drops requests whose bodies are still arriving, stops accepting connections (after up to
   * `graceMs` in which newcomers are answered 503) and resolves once every tracked request is
   * answered, or after `timeoutMs`, when the remaining connections are destroyed.
   * @returns whether every request finished in time
   */
  async drain(timeoutMs: number, graceMs = DEFAULT_DRAIN_GRACE_MS): Promise<boolean> {
    const started = performance.now();
    this.draining = true;
    for (const [res, req] of this.active) {
      if (!req.complete) req.socket.destroy();
      else if (!res.headersSent) res.setHeader('Connection', 'close');
    }
    // Idle keep-alive connections stay open through the grace period: a client may be sending its
    // next request on one right now, and closing it would reset that request instead of answering
    // it 503.
    await this.lastArrivals(Math.min(graceMs, timeoutMs));
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    // Connections accepted just before the close get a moment to send their request (answered 503)
    // before those still idle are closed.
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
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
    if (!finished) this.server.closeAllConnections();
    this.server.closeIdleConnections();
    await closed;
    return finished;
  }

  /**
   * Closes the connections that hold no request. Node's closeIdleConnections leaves out those that
   * never sent one, which kept `server.close` waiting on them until their clients left.
   */
  private closeIdle(): void {
    this.server.closeIdleConnections();
    for (const [socket, requests] of this.sockets) if (requests === 0) socket.destroy();
  }

  /** Resolves once no connection has arrived for {@link QUIET_MS} since the drain began, or after `graceMs`. */
  private async lastArrivals(graceMs: number): Promise<void> {
    const started = performance.now();
    const until = started + graceMs;
    for (;;) {
      const now = performance.now();
      const quiet = now - Math.max(started, this.lastConnectionAt);
      if (now >= until || quiet >= QUIET_MS) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(until - now, QUIET_MS - quiet)));
    }
  }
}
