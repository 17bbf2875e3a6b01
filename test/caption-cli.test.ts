/**
 * `frost caption`: argument handling and bad images. Captioning itself goes through
 * core/runtime/caption.ts with an exported model; what this command adds is decoding and
 * preprocessing (core/image, tested in image-*.test.ts) and its refusals, tested here.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Command } from 'commander';
import sharp from 'sharp';
import { registerCaption } from '../clients/cli/commands/caption.ts';

let dir: string | undefined;
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function program(): Command {
  const p = new Command().exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  registerCaption(p);
  return p;
}

test('frost caption refuses a bad image by path before loading the model', async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-caption-cli-'));
  const good = join(dir, 'good.jpg');
  const pdf = join(dir, 'scan.jpg');
  await writeFile(
    good,
    await sharp({ create: { width: 20, height: 20, channels: 3, background: '#fff' } })
      .jpeg()
      .toBuffer(),
  );
  await writeFile(pdf, '%PDF-1.4\n%%EOF\n');
  const missingModel = join(dir, 'no-model');
  // The model directory does not exist: the image error wins, so images are checked first.
  await assert.rejects(program().parseAsync(['node', 'frost', 'caption', missingModel, good, pdf]), {
    name: 'ImageDecodeError',
    message: `${pdf}: not an image: the bytes are a PDF document (only JPEG and PNG are accepted)`,
  });
  // With good images, the missing model is what fails, naming its directory.
  await assert.rejects(program().parseAsync(['node', 'frost', 'caption', missingModel, good]), (err: Error) =>
    err.message.includes(missingModel),
  );
});

test('frost caption validates --beam', async () => {
  await assert.rejects(
    program().parseAsync(['node', 'frost', 'caption', 'm', 'a.jpg', '--beam', '0']),
    /--beam must be an integer >= 1, got '0'/,
  );
});
