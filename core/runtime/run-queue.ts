/** A serialising lock: one `session.run` at a time per runtime. */
export class RunQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    // The queue must keep going after a failed run; the caller still sees the rejection.
    this.tail = result.catch(() => undefined);
    return result;
  }
}
