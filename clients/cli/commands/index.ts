import { commandLoaders, type RegisterCommand } from './loaders.ts';

export type { RegisterCommand } from './loaders.ts';

/**
 * Every command, loaded: what the in-process test helper registers. bin/frost.js loads only the one it runs
 * (loaders.ts), from the same list.
 */
export const commands: RegisterCommand[] = await Promise.all(commandLoaders.map(([, load]) => load()));
