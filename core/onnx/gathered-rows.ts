/**
 * How many rows the tables that a graph input indexes have: for `src_ids`, the encoder's source embedding, so that
 * a card's source vocabulary can be checked against it at load (a larger vocabulary fails mid-request on an id past
 * the table, a smaller one silently maps words to the wrong rows). Isomorphic (protobufjs only).
 */
import { decodeModel } from './proto.ts';

interface Node {
  input: string[];
  output: string[];
  op_type: string;
  domain?: string;
  attribute?: Array<{ name: string; i?: number }>;
}

interface Graph {
  node?: Node[];
  initializer?: Array<{ name: string; dims?: number[] }>;
}

/** Ops that pass ids on unchanged in value: what lies between an ids input and the Gather that reads it. */
const CARRY_IDS = new Set(['Cast', 'Identity', 'Unsqueeze', 'Squeeze', 'Reshape', 'Flatten', 'Transpose']);

/** Ops whose output has as many rows as their first input: what lies between a stored table and its Gather. */
const KEEP_ROWS = new Set(['Cast', 'Identity', 'DequantizeLinear', 'Mul', 'Div', 'Add', 'Sub', 'LpNormalization']);

/** A table a graph input indexes: the initializer it is stored as, and its rows. */
export interface GatheredTable {
  initializer: string;
  rows: number;
}

/**
 * The stored tables whose rows the ids of graph input `input` select: each axis-0 `Gather` reading them, traced back
 * through ops that keep rows (a cast, a dequantisation, a normalisation) to an initializer. A table computed some
 * other way (a generator, a Hadamard transform) cannot be sized here and is not listed; nor is anything in a
 * subgraph.
 */
export function gatheredTables(bytes: Uint8Array, input: string): GatheredTable[] {
  const graph = (decodeModel(bytes) as { graph?: Graph }).graph ?? {};
  const nodes = graph.node ?? [];
  const dims = new Map((graph.initializer ?? []).map((t) => [t.name, t.dims ?? []]));
  const producer = new Map<string, Node>();
  for (const n of nodes) for (const o of n.output) producer.set(o, n);

  const ids = new Set([input]);
  for (let grew = true; grew;) {
    grew = false;
    for (const n of nodes) {
      if (!CARRY_IDS.has(n.op_type) || !ids.has(n.input[0] ?? '')) continue;
      for (const o of n.output) if (!ids.has(o)) grew = ids.add(o) !== undefined;
    }
  }
  const tables: GatheredTable[] = [];
  for (const n of nodes) {
    const axis = n.attribute?.find((a) => a.name === 'axis')?.i ?? 0;
    if (n.op_type !== 'Gather' || (n.domain ?? '') !== '' || axis !== 0 || !ids.has(n.input[1] ?? '')) continue;
    let value = n.input[0] ?? '';
    for (let hops = 0; hops < 16 && !dims.has(value); hops++) {
      const from = producer.get(value);
      if (!from || !KEEP_ROWS.has(from.op_type)) break;
      value = from.input[0] ?? '';
    }
    const rows = dims.get(value)?.[0];
    if (rows !== undefined) tables.push({ initializer: value, rows: Number(rows) });
  }
  return tables;
}
