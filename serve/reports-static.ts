/**
 * `/reports/`: the folder `frost report --out reports/NAME` writes, served as static files. A link
 * inside it may point anywhere (`reports/etc-link -> /etc` served /etc/shadow to anyone), so a file
 * is served only when its real path, links resolved, lies inside the folder's real path; the
 * index file of a folder too. What is outside answers the same JSON 404 as what is missing.
 */
import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import express, { type NextFunction, type Request, type Response, Router } from 'express';
import { HttpError } from './errors.ts';
import { PAGE_SECURITY_HEADERS } from './same-origin.ts';

/** Tried in this order for a folder's URL. */
const INDEX_FILES = ['report.html', 'index.html'];

/** The router for the reports folder `dir`; mount it at `/reports`. */
export function reportsRouter(dir: string): Router {
  const root = resolve(dir);
  const router = Router();
  router.use(async (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next();
      return;
    }
    const notFound = new HttpError('FROST_ERR_NOT_FOUND', { method: req.method, path: `${req.baseUrl}${req.path}` });
    let path: string;
    try {
      path = decodeURIComponent(req.path);
    } catch {
      next(notFound);
      return;
    }
    // The real root is read per request: the folder itself may be a link that a deployment moves.
    const realRoot = await realpath(root).catch(() => undefined);
    const target = join(root, path);
    if (realRoot === undefined || path.includes('\0') || !isWithin(root, target)) {
      next(notFound);
      return;
    }
    const real = await realpath(target).catch(() => undefined);
    if (real === undefined) {
      next(); // missing: express.static says so (falling through to the JSON 404)
      return;
    }
    const candidates = (await stat(real)).isDirectory() ? INDEX_FILES.map((f) => join(real, f)) : [real];
    for (const candidate of candidates) {
      const resolved = await realpath(candidate).catch(() => undefined);
      if (resolved !== undefined && !isWithin(realRoot, resolved)) {
        next(notFound);
        return;
      }
    }
    next();
  });
  router.use(
    express.static(root, {
      index: INDEX_FILES,
      dotfiles: 'ignore',
      setHeaders: (res) => res.set(PAGE_SECURITY_HEADERS),
    }),
  );
  return router;
}

/** Whether `path` is `dir` or lies inside it (both absolute and normalised). */
function isWithin(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}
