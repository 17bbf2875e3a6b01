import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { describeIssues } from '../core/zod-issues.ts';

const schema = z.object({ texts: z.array(z.string().min(1, 'must be a non-empty string')), beam: z.number().int() });

test('each issue is named by its field path, the value itself by `whole`', () => {
  const bad = schema.safeParse({ texts: ['ok', ''], beam: 1.5 });
  assert.equal(bad.success, false);
  assert.equal(
    describeIssues(bad.error!.issues),
    'texts.1: must be a non-empty string; beam: Invalid input: expected int, received number',
  );
  const notAnObject = schema.safeParse(7);
  assert.match(describeIssues(notAnObject.error!.issues), /^\(root\): Invalid input: expected object/);
  assert.match(describeIssues(notAnObject.error!.issues, { whole: '(body)' }), /^\(body\): /);
});

test('`max` names the first issues and counts the rest', () => {
  const bad = z.array(z.number()).safeParse(['a', 'b', 'c', 'd', 'e']);
  const line = describeIssues(bad.error!.issues, { max: 3 });
  assert.match(line, /^0: .*; 1: .*; 2: [^;]* \(and 2 more\)$/);
  assert.doesNotMatch(describeIssues(bad.error!.issues, { max: 5 }), /more/);
});

test('`bracketed` names array entries as a file layout does', () => {
  const layout = z.object({ images: z.array(z.object({ split: z.enum(['train', 'val']) })) });
  const bad = layout.safeParse({ images: [{ split: 'train' }, { split: 'dev' }] });
  assert.match(describeIssues(bad.error!.issues, { bracketed: true }), /^images\[1\]\.split: /);
  assert.match(describeIssues(bad.error!.issues), /^images\.1\.split: /);
  const top = z.array(z.number()).safeParse([1, 'x']);
  assert.match(describeIssues(top.error!.issues, { bracketed: true }), /^\[1\]: /);
});
