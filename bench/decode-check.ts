/**
 * Before bench:decode times a peer that decodes frost's own weights (CTranslate2), both engines decode a few
 * sentences and must produce the same tokens; otherwise the times would compare two different computations.
 *
 * Both sides emit exactly `len` tokens (frost: minLen = maxLen = len; the peer: min and max decoding length len).
 * Greedy search must give the same tokens. Beam search is compared as the set of the `beam` hypotheses: at the
 * length cap frost closes every beam with a forced </s> and ranks them with its log-probability, while a peer that
 * stops at the cap ranks them without it, so the best may differ between the two while the beams are the same.
 *
 * A deep random model (bench:decode's `--opus-mt-shape`) repeats one token whatever its input, and its other beams
 * are that sequence with one token swapped in at some step: near-ties whose order floating-point rounding decides.
 * There only the best hypotheses are compared (`beams: 'best'`): each side's best must be among the other's.
 */
import { generate } from '../core/decode/generate.ts';
import type { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';

/** Per source, the hypotheses' token ids (no <s> or </s>), best first. */
export type Hypotheses = number[][][];

/** Every difference between frost's and the peer's hypotheses for the same sources, as lines to print; none: same. */
export function hypothesisMismatches(
  frost: Hypotheses,
  peer: Hypotheses,
  beam: number,
  peerLabel: string,
  beams: 'all' | 'best' = 'all',
): string[] {
  const out: string[] = [];
  if (frost.length !== peer.length) return [`frost decoded ${frost.length} sources, ${peerLabel} ${peer.length}`];
  const show = (h: number[]) => `[${h.join(' ')}]`;
  frost.forEach((f, i) => {
    const p = peer[i]!;
    if (beam === 1) {
      if (show(f[0] ?? []) !== show(p[0] ?? []))
        out.push(`source ${i}, greedy: frost ${show(f[0] ?? [])}, ${peerLabel} ${show(p[0] ?? [])}`);
      return;
    }
    const [frostSet, peerSet] = [new Set(f.map(show)), new Set(p.map(show))];
    const differ =
      beams === 'best'
        ? f.length === 0 || p.length === 0 || !peerSet.has(show(f[0]!)) || !frostSet.has(show(p[0]!))
        : f.length !== p.length || f.some((h) => !peerSet.has(show(h)));
    if (differ)
      out.push(
        `source ${i}, beam ${beam}: frost's ${f.length} hypotheses ${f.map(show).join(', ')}; ` +
          `${peerLabel}'s ${p.length} ${p.map(show).join(', ')}`,
      );
  });
  return out;
}

/** frost's `beam` hypotheses of each source, decoded as one batch and forced to `len` tokens. */
export async function frostHypotheses(
  rt: Seq2SeqRuntime,
  sources: number[][],
  beam: number,
  len: number,
): Promise<Hypotheses> {
  const results = await generate(rt.stepModel, await rt.encode(sources), sources.length, {
    beam,
    nBest: beam,
    minLen: len,
    maxLen: len,
  });
  return results.map((hyps) => hyps.map((h) => h.tokens));
}
