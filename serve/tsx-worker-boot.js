// The first module of frost's worker threads (decode threads, the image preprocessing thread).
// frost runs TypeScript through tsx, and a worker thread gets no loader hooks from its parent: not
// those of tsx's register() (bin/frost.js), and on Node 20 not an inherited `--import tsx` either
// (the entry fails with ERR_UNKNOWN_FILE_EXTENSION). So the thread installs tsx itself, then
// imports the TypeScript entry its creator named in workerData.entry (a file: URL).
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
