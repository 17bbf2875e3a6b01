// A decode thread's first module. frost runs TypeScript through tsx, and a worker thread gets no
// loader hooks from its parent: not those of tsx's register() (bin/frost.js), and on Node 20 not
// an inherited `--import tsx` either (the entry fails with ERR_UNKNOWN_FILE_EXTENSION). So the
// thread installs tsx itself before importing its TypeScript entry.
import { register } from 'tsx/esm/api';

register();
await import('./decode-worker.ts');
