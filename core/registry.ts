/**
 * A named set of definitions that files add themselves to when imported (archs, output heads,
 * tasks, converter layers, experiments, word pairs). A second registration under a name throws
 * rather than replacing the first; looking up an unknown name throws a RangeError that lists the
 * known ones. (fairseq's `setup_registry` does the same for its `--criterion`-style choices.)
 */
export class Registry<T> {
  private readonly items = new Map<string, T>();

  /**
   * @param what What an entry is, for messages: `output head` gives "unknown output head 'x'".
   */
  constructor(private readonly what: string) {}

  /** @throws Error when `name` is already registered */
  register(name: string, item: T): void {
    if (this.items.has(name)) throw new Error(`${this.what} '${name}' is already registered`);
    this.items.set(name, item);
  }

  /** @throws RangeError naming the known entries when `name` is not one of them */
  get(name: string): T {
    const item = this.items.get(name);
    if (item === undefined) throw new RangeError(`unknown ${this.what} '${name}'; known: ${this.names().join(', ')}`);
    return item;
  }

  /** The entry, or undefined (for callers where a missing entry is not an error). */
  find(name: string): T | undefined {
    return this.items.get(name);
  }

  /** Names in registration order. */
  names(): string[] {
    return [...this.items.keys()];
  }
}
