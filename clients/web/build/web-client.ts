/**
 * The browser client as `frost serve` serves it: the page, bundled on the first request for it,
 * with onnxruntime-web's runtime files and the cross-origin isolation headers. The CLI hands this
 * to the server (serve/ does not build or locate the page itself).
 */
import type { WebClient } from '../../../serve/static.ts';
import { bundleWebApp, type BundleOptions } from './bundle.ts';
import { ISOLATION_HEADERS } from './isolation.ts';
import { ORT_RUNTIME_FILES, ortContentType, ortDistDir } from './ort-files.ts';

export function webClient(opts: BundleOptions = {}): WebClient {
  return {
    bundle: () => bundleWebApp(opts),
    headers: ISOLATION_HEADERS,
    ort: { files: ORT_RUNTIME_FILES, dir: ortDistDir(), contentType: ortContentType },
  };
}
