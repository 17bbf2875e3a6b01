/**
 * The names of what an atomic write leaves beside its target when it is killed (train/atomic-write.ts):
 * `NAME.tmp-PID`, the new version being written, and `NAME.old-PID`, the previous one during a folder
 * swap. One reading of them for the writer's recovery, the resume's checkpoint finder and the server's
 * folder finder (which must never serve one under its own name).
 */
const TEMP_SIBLING = /^(.+)\.(tmp|old)-(\d+)$/;

/** What `name` is a temporary sibling of, which kind, and the pid that wrote it; null for any other name. */
export function tempSiblingOf(name: string): { base: string; kind: 'tmp' | 'old'; pid: number } | null {
  const m = TEMP_SIBLING.exec(name);
  return m ? { base: m[1]!, kind: m[2] as 'tmp' | 'old', pid: Number(m[3]) } : null;
}
