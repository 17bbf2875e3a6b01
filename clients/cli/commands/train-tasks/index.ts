// Importing a task's file registers `frost train`'s side of it; this list is the only place that names them all.
import './translation.ts';
import './caption.ts';
import './lm.ts';

export { newRunTask, tasksWith } from './registry.ts';
export type { ConfigContext, NewRunFlags, NewRunTask } from './types.ts';
