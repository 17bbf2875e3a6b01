/**
 * Graceful shutdown of the HTTP server: stop accepting connections, let every request already
 * received finish (keep-alive connections are closed as their responses end), and only then let
 * the caller release the models. A deadline bounds the wait, after which connections are dropped.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** Tracks the requests a server is answering, and closes connections as they go idle once draining. */
export class RequestTracker {
  private readonly active = new Set<ServerResponse>();
  private draining = false;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly server: Server) {}

  /** Requests received and not yet answered. */
  get inFlight(): number {
    return this.active.size;
  }

  /** Whether {@link drain} has begun. */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Call first thing for every request. */
  track(_req: IncomingMessage, res: ServerResponse): void {
    this.active.add(res);
    // A request that arrives on a kept-alive connection while draining is still answered, but
    // its connection is closed after it.
    if (this.draining) res.setHeader('Connection', 'close');
    res.once('close', () => {
      this.active.delete(res);
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
    this.draining = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const res of this.active) if (!res.headersSent) res.setHeader('Connection', 'close');
    this.server.closeIdleConnections();
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
}
