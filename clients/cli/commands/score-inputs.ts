/**
 * What `frost score` reads: hypotheses and references as text files (one segment per line, gzip
 * allowed, `-` for stdin) or caption JSON (Karpathy's `dataset_*.json`, COCO's `captions_*.json`
 * annotations, COCO results `[{image_id, caption}]`). Every error names the file.
 *
 * Node only.
 */
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';

/** Lines as sacreBLEU reads them: split on \n only; a final newline ends the last line, adds none. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** A file's text (`-` is stdin), gunzipped when it starts with the gzip magic bytes. */
export async function readInput(file: string): Promise<string> {
  let bytes: Buffer;
  if (file === '-') {
    if (process.stdin.isTTY) throw new Error('score: "-" reads stdin, but nothing is piped in');
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    bytes = Buffer.concat(chunks);
  } else {
    try {
      bytes = await readFile(file);
    } catch (err) {
      throw new Error(`score: cannot read ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  return bytes.toString('utf8');
}

/** Whether a file holds JSON rather than lines of text (by name, else by its first character). */
export function looksLikeJson(file: string, text: string): boolean {
  return /\.json(\.gz)?$/i.test(file) || /^\s*[[{]/.test(text);
}

const KarpathyJson = z.object({
  images: z.array(
    z.object({
      filename: z.string().optional(),
      imgid: z.union([z.number(), z.string()]).optional(),
      cocoid: z.union([z.number(), z.string()]).optional(),
      split: z.string(),
      sentences: z.array(z.object({ raw: z.string().optional(), tokens: z.array(z.string()).optional() })),
    }),
  ),
});
const CocoAnnotationsJson = z.object({
  images: z.array(z.object({ id: z.union([z.number(), z.string()]) })).optional(),
  annotations: z.array(z.object({ image_id: z.union([z.number(), z.string()]), caption: z.string() })),
});
const CocoResultsJson = z.array(z.object({ image_id: z.union([z.number(), z.string()]), caption: z.string() }));

/** Reference captions per image, in the file's image order, with training captions when the file has them. */
export interface CaptionReferences {
  ids: string[];
  captions: string[][];
  /** Captions of the `train` and `restval` splits (Karpathy files only), for the rare-word share. */
  training: string[];
  /** How the file was read, for the report: `Karpathy split test`, `COCO annotations`. */
  source: string;
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`score: ${file}: invalid JSON: ${(err as Error).message}`, { cause: err });
  }
}

const sentenceText = (s: { raw?: string; tokens?: string[] }) => s.raw ?? (s.tokens ?? []).join(' ');

/** Reads Karpathy or COCO caption references; `split` picks the Karpathy split. */
export function parseCaptionReferences(file: string, text: string, split: string): CaptionReferences {
  const json = parseJson(file, text);
  const karpathy = KarpathyJson.safeParse(json);
  if (karpathy.success) {
    const images = karpathy.data.images.filter((im) => im.split === split);
    if (images.length === 0) {
      const splits = [...new Set(karpathy.data.images.map((im) => im.split))].join(', ');
      throw new Error(`score: ${file} has no images in split '${split}' (it has: ${splits}); choose one with --split`);
    }
    return {
      ids: images.map((im) => String(im.cocoid ?? im.imgid ?? im.filename)),
      captions: images.map((im) => im.sentences.map(sentenceText)),
      training: karpathy.data.images
        .filter((im) => im.split === 'train' || im.split === 'restval')
        .flatMap((im) => im.sentences.map(sentenceText)),
      source: `Karpathy split ${split}`,
    };
  }
  const coco = CocoAnnotationsJson.safeParse(json);
  if (coco.success) {
    const byImage = new Map<string, string[]>();
    for (const im of coco.data.images ?? []) byImage.set(String(im.id), []);
    for (const a of coco.data.annotations) {
      const id = String(a.image_id);
      if (!byImage.has(id)) byImage.set(id, []);
      byImage.get(id)!.push(a.caption);
    }
    const ids = [...byImage.keys()].filter((id) => byImage.get(id)!.length > 0);
    return { ids, captions: ids.map((id) => byImage.get(id)!), training: [], source: 'COCO annotations' };
  }
  throw new Error(
    `score: ${file} is neither a Karpathy dataset_*.json ({images: [{split, sentences}]}) ` +
      'nor COCO caption annotations ({annotations: [{image_id, caption}]})',
  );
}

/**
 * Caption hypotheses in the references' image order: from COCO results JSON matched by `image_id`,
 * or from text, line i for image i.
 */
export function parseCaptionHypotheses(file: string, text: string, refs: CaptionReferences): string[] {
  if (!looksLikeJson(file, text)) {
    const lines = splitLines(text);
    if (lines.length !== refs.ids.length) {
      throw new Error(
        `score: ${file} has ${lines.length} captions, the references have ${refs.ids.length} images (${refs.source})`,
      );
    }
    return lines;
  }
  const parsed = CocoResultsJson.safeParse(parseJson(file, text));
  if (!parsed.success) throw new Error(`score: ${file}: expected COCO results, [{"image_id": …, "caption": "…"}]`);
  const byId = new Map<string, string>();
  for (const r of parsed.data) {
    const id = String(r.image_id);
    if (byId.has(id))
      throw new Error(`score: ${file} has two captions for image ${id}; the reference scorer takes one`);
    byId.set(id, r.caption);
  }
  const missing = refs.ids.filter((id) => !byId.has(id));
  if (missing.length > 0) {
    const some = missing.slice(0, 5).join(', ');
    throw new Error(
      `score: ${file} has no caption for ${missing.length} of ${refs.ids.length} images (${some}${missing.length > 5 ? ', …' : ''})`,
    );
  }
  return refs.ids.map((id) => byId.get(id)!);
}
