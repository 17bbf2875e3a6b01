import assert from 'node:assert/strict';
import type { RunningServer } from '../../serve/server.ts';

/**
 * Asserts that `starting` (a `startServer` call) rejects with a message matching `reason`. A server
 * that starts anyway is closed before the test fails, so a regression fails the run instead of
 * holding it open.
 */
export async function assertRefusedToStart(starting: Promise<RunningServer>, reason: RegExp): Promise<void> {
  let server: RunningServer;
  try {
    server = await starting;
  } catch (err) {
    assert.match((err as Error).message, reason);
    return;
  }
  await server.close();
  assert.fail(`the server started at ${server.url}; expected it to refuse with ${String(reason)}`);
}
