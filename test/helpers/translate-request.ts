import assert from 'node:assert/strict';

/**
 * The server's translation of `text` (POST /v1/translate with beam width `beam`, to `model`, or the default
 * model when undefined): checks the answer is 200 and valid UTF-8, and returns its first translation.
 * JSON.stringify writes lone surrogates as \ud800 escapes, as a hostile client would send them.
 */
export async function serverTranslation(
  serverUrl: string,
  model: string | undefined,
  text: string,
  beam: number,
): Promise<string> {
  const res = await fetch(`${serverUrl}/v1/translate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, text, beam }),
  });
  assert.equal(res.status, 200, text);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const body = new TextDecoder('utf-8', { fatal: true }).decode(bytes); // throws on invalid UTF-8
  return (JSON.parse(body) as { translations: { text: string }[] }).translations[0]!.text;
}
