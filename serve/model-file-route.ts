/**
 * `GET /v1/models/:name/files/:file`: a file the model's card names (the card, its graphs, its
 * subword models), which the page downloads to run the model in the browser. The model folder is
 * hostile input (core/runtime/model-files.ts): the file is opened only once it resolves inside the
 * folder's real path as a regular file within its size limit, and streamed from that descriptor.
 * The folder may lie under a dot-folder (`~/.cache/frost/models/...`), which express's `send`
 * refuses; nothing here looks at the path's segments.
 */
import { pipeline } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import { cardFiles, ModelFileError, openModelFile, type ModelFileKind } from '../core/runtime/model-files.ts';
import { clip, HttpError } from './errors.ts';

/** What the route needs of a loaded model. */
export interface ServedModel {
  name: string;
  /** Its folder; a model without one (built in memory) has no files to serve. */
  dir?: string;
  runtime: { card: Parameters<typeof cardFiles>[0] };
}

/** Files change when a model is reloaded: revalidate (by ETag) on every load. */
const REVALIDATE = 'no-cache';

/**
 * Sends `req.params.file` of `model`; a file its card does not name is the JSON 404 of an unknown route. When the
 * folder now holds a version `--watch` refused (`refusedOnDisk`), the files on disk are not the served model's: the
 * card is the served one, from memory, and the other files are unavailable until a good version loads.
 */
export async function sendModelFile(
  req: Request,
  res: Response,
  next: NextFunction,
  model: ServedModel,
  refusedOnDisk = false,
) {
  const name = String(req.params.file);
  const kind: ModelFileKind | undefined = cardFiles(model.runtime.card).get(name);
  if (model.dir === undefined || kind === undefined) {
    next(new HttpError('FROST_ERR_NOT_FOUND', { method: req.method, path: req.path }));
    return;
  }
  if (refusedOnDisk && kind === 'card') {
    res.setHeader('Cache-Control', REVALIDATE);
    res.type('application/json').send(JSON.stringify(model.runtime.card));
    return;
  }
  let opened: Awaited<ReturnType<typeof openModelFile>>;
  try {
    opened = await openModelFile(model.dir, name, kind);
  } catch (err) {
    if (!(err instanceof ModelFileError)) throw err;
    next(
      new HttpError('FROST_ERR_MODEL_FILE_UNAVAILABLE', { model: model.name, file: clip(name), reason: err.reason }),
    );
    return;
  }
  const { file, handle } = opened;
  if (refusedOnDisk) {
    // The file itself passed its checks (a hostile one is refused for what it is, above), but it is the refused
    // version's, not the served model's.
    await handle.close();
    next(
      new HttpError('FROST_ERR_MODEL_FILE_UNAVAILABLE', {
        model: model.name,
        file: clip(name),
        reason: 'the folder holds a new version that was refused; the served version is not on disk',
      }),
    );
    return;
  }
  // Set directly: res.set would add a charset to the JSON card, which is bytes here.
  res.setHeader('Content-Type', name.endsWith('.json') ? 'application/json' : 'application/octet-stream');
  res.setHeader('Content-Length', String(file.size));
  res.setHeader('Cache-Control', REVALIDATE);
  res.setHeader('Last-Modified', file.mtime.toUTCString());
  res.setHeader('ETag', `W/"${file.size.toString(16)}-${file.mtime.getTime().toString(16)}"`);
  if (req.fresh || req.method === 'HEAD' || file.size === 0) {
    await handle.close();
    if (req.fresh) res.status(304);
    res.end();
    return;
  }
  // The checked size bounds what is sent, should the file grow meanwhile; the stream closes the handle.
  pipeline(handle.createReadStream({ start: 0, end: file.size - 1 }), res, () => undefined);
}
