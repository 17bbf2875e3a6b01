/**
 * The shape of the code as a test: the import graph of the .ts files has no circle of value
 * imports, no circle of any kind between folders, and the layers import only downwards.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { packageImportsOf } from './helpers/package-imports.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CODE_DIRS = ['core', 'models', 'train', 'export', 'serve', 'clients', 'experiments', 'report', 'bench'];
/** The graph covers the tests too (benchmarks reuse their helpers). */
const GRAPH_DIRS = [...CODE_DIRS, 'test'];

interface Edge {
  to: string;
  /** `import type`, `export type`, or every named import marked `type`: erased at run time. */
  typeOnly: boolean;
  /** `import('...')`: may sit in code a test hands to a child process, resolved from elsewhere. */
  dynamic?: true;
}

/** The files under `dir` whose names match `name`. */
function sourceFiles(dir: string, name: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(path, name);
    return name.test(e.name) ? [path] : [];
  });
}

/** The .ts files under `dir`, declaration files aside. */
const tsFiles = (dir: string) => sourceFiles(dir, /(?<!\.d)\.ts$/);

/** Comments could hold example code; strings do not hold these patterns in this code base. */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

/** The relative imports and re-exports of a file's source, resolved to repository paths. */
export function importsOf(file: string, source: string): Edge[] {
  const edges: Edge[] = [];
  const code = withoutComments(source);
  const statement =
    /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;
  for (const m of code.matchAll(statement)) {
    const spec = m[4] ?? m[5] ?? m[6]!;
    if (!spec.startsWith('.')) continue;
    let typeOnly = m[2] !== undefined;
    if (!typeOnly && m[3] !== undefined) {
      const names = /^\{([\s\S]*)\}$/.exec(m[3].trim());
      if (names) {
        const parts = names[1]!
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '');
        typeOnly = parts.length > 0 && parts.every((p) => p.startsWith('type '));
      }
    }
    edges.push({
      to: relative(ROOT, resolve(ROOT, dirname(file), spec)),
      typeOnly,
      ...(m[6] !== undefined ? { dynamic: true as const } : {}),
    });
  }
  return edges;
}

function importGraph(): Map<string, Edge[]> {
  const graph = new Map<string, Edge[]>();
  for (const file of GRAPH_DIRS.flatMap(tsFiles))
    graph.set(file, importsOf(file, readFileSync(join(ROOT, file), 'utf8')));
  return graph;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, Edge[]>, keep: (e: Edge) => boolean): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const e of (graph.get(v) ?? []).filter(keep)) {
      if (!graph.has(e.to)) continue;
      if (!index.has(e.to)) {
        visit(e.to);
        low.set(v, Math.min(low.get(v)!, low.get(e.to)!));
      } else if (onStack.has(e.to)) {
        low.set(v, Math.min(low.get(v)!, index.get(e.to)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const selfLoop = (graph.get(v) ?? []).some((e) => keep(e) && e.to === v);
      if (component.length > 1 || selfLoop) out.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const folderOf = (file: string) => file.split('/')[0]!;

describe('import graph', () => {
  const graph = importGraph();

  test('the parser sees value, type-only and side-effect imports', () => {
    const edges = importsOf(
      'core/x.ts',
      [
        "import { a } from './a.ts';",
        "import type { B } from '../models/b.ts';",
        "import { type C, type D } from './c.ts';",
        "import { type E, f } from './e.ts';",
        "export type * from './g.ts';",
        "export { h } from './h.ts';",
        "import './side.ts';",
        "import {\n  i,\n  type J,\n} from './i.ts';",
        '// import { k } from "./comment.ts";',
        "import * as z from 'zod';",
      ].join('\n'),
    );
    assert.deepEqual(edges, [
      { to: 'core/a.ts', typeOnly: false },
      { to: 'models/b.ts', typeOnly: true },
      { to: 'core/c.ts', typeOnly: true },
      { to: 'core/e.ts', typeOnly: false },
      { to: 'core/g.ts', typeOnly: true },
      { to: 'core/h.ts', typeOnly: false },
      { to: 'core/side.ts', typeOnly: false },
      { to: 'core/i.ts', typeOnly: false },
    ]);
  });

  test('the cycle finder finds a circle, and only that', () => {
    const g = new Map<string, Edge[]>([
      ['a', [{ to: 'b', typeOnly: false }]],
      ['b', [{ to: 'c', typeOnly: false }]],
      [
        'c',
        [
          { to: 'a', typeOnly: true },
          { to: 'd', typeOnly: false },
        ],
      ],
      ['d', []],
    ]);
    assert.deepEqual(
      cycles(g, () => true),
      [['a', 'b', 'c']],
    );
    assert.deepEqual(
      cycles(g, (e) => !e.typeOnly),
      [],
    );
  });

  test('every relative import names a file that exists', () => {
    const missing = [...graph].flatMap(([file, edges]) =>
      edges
        .filter((e) => !e.dynamic && !graph.has(e.to) && !/\.(json|js)$/.test(e.to))
        .map((e) => `${file} -> ${e.to}`),
    );
    assert.deepEqual(missing, []);
  });

  test('no circle of value imports between files', () => {
    assert.deepEqual(
      cycles(graph, (e) => !e.typeOnly),
      [],
    );
  });

  test('no circle of any imports that crosses folders', () => {
    const crossing = cycles(graph, () => true).filter((c) => new Set(c.map(folderOf)).size > 1);
    assert.deepEqual(crossing, []);
  });

  test('the layers import downwards only', () => {
    // Folders each folder must never import (types included).
    const forbidden: Record<string, string[]> = {
      core: ['models', 'train', 'export', 'serve', 'clients', 'experiments', 'report', 'bench'],
      models: ['train', 'export', 'serve', 'clients', 'experiments', 'report', 'bench'],
      train: ['export', 'serve', 'clients', 'experiments', 'report', 'bench'],
      export: ['serve', 'clients', 'experiments', 'report', 'bench'],
      serve: ['models', 'train', 'export', 'clients', 'experiments', 'report', 'bench'],
      report: ['serve', 'clients', 'experiments', 'bench'],
      // Experiments run grids through `frost` children and judge the papers' claims on reports: above report/,
      // below the clients that start them.
      experiments: ['serve', 'clients', 'bench'],
    };
    const wrong = [...graph].flatMap(([file, edges]) =>
      edges.filter((e) => forbidden[folderOf(file)]?.includes(folderOf(e.to))).map((e) => `${file} -> ${e.to}`),
    );
    assert.deepEqual(wrong, []);
  });

  test('report/ renders what it is handed: no file under report/ imports experiments/', () => {
    // The papers' claims and verdicts are experiments/'s; report/ lays out the sections a caller hands it.
    const wrong = [...graph]
      .filter(([file]) => folderOf(file) === 'report')
      .flatMap(([file, edges]) =>
        edges.filter((e) => folderOf(e.to) === 'experiments').map((e) => `${file} -> ${e.to}`),
      );
    assert.deepEqual(wrong, []);
  });

  test('export/ and report/ read run folders through train/run-folder.ts only, never the trainer', () => {
    const wrong = [...graph]
      .filter(([file]) => ['export', 'report'].includes(folderOf(file)))
      .flatMap(([file, edges]) =>
        edges
          .filter((e) => ['train/trainer.ts', 'train/prepare-data.ts', 'train/checkpoint.ts'].includes(e.to))
          .map((e) => `${file} -> ${e.to}`),
      );
    assert.deepEqual(wrong, []);
  });
});

test("report/ and experiments/ run models through frost's runtime only, never onnxruntime directly", () => {
  const direct = ['report', 'experiments']
    .flatMap(tsFiles)
    .filter((file) =>
      /from\s*['"]onnxruntime-(node|web)['"]/.test(withoutComments(readFileSync(join(ROOT, file), 'utf8'))),
    );
  assert.deepEqual(direct, []);
});

test('onnxruntime-node sessions are created in one place (core/runtime/ort-node.ts)', () => {
  const creators = CODE_DIRS.flatMap(tsFiles).filter((file) =>
    /InferenceSession\.create\(/.test(withoutComments(readFileSync(join(ROOT, file), 'utf8'))),
  );
  // seq2seq.ts, lm.ts and materialise-constants.ts are isomorphic: they run on whichever ORT module they are
  // given (materialise-constants.ts computes a seeded graph's constants once, for node sessions and the page).
  assert.deepEqual(creators.sort(), [
    'core/onnx/materialise-constants.ts',
    'core/runtime/lm.ts',
    'core/runtime/ort-node.ts',
    'core/runtime/seq2seq.ts',
  ]);
});

/** The one module that imports each onnxruntime package (docs/code-shape.md, "The runtime"). */
const ORT_OWNERS: Readonly<Record<string, string>> = {
  'onnxruntime-node': 'core/runtime/ort-node.ts',
  'onnxruntime-web': 'core/runtime/ort-web.ts',
};

/** `onnxruntime-node/dist/binding` → `onnxruntime-node`; undefined for a package that is not onnxruntime's. */
function ortPackage(spec: string): string | undefined {
  return /^(onnxruntime(?:-[a-z-]+)?)(?:\/|$)/.exec(spec)?.[1];
}

/**
 * Why an import breaks the rule, or undefined: onnxruntime-node and onnxruntime-web are imported by
 * their owners only; their shared types (onnxruntime-common) anywhere, type-only, being erased.
 */
function ortImportProblem(file: string, spec: string, typeOnly: boolean): string | undefined {
  const pkg = ortPackage(spec);
  if (pkg === undefined || ORT_OWNERS[pkg] === file) return undefined;
  if (pkg === 'onnxruntime-common') return typeOnly ? undefined : 'onnxruntime-common is for types only (import type)';
  const owner = ORT_OWNERS[pkg];
  return owner ? `import ${pkg} through ${owner}` : `${pkg} is not one of frost's runtimes`;
}

describe('onnxruntime is imported in two places: core/runtime/ort-node.ts and core/runtime/ort-web.ts', () => {
  test('the scanner sees every kind of import, and no string or comment', () => {
    const source = [
      "import * as a from 'onnxruntime-node';",
      "import type { B } from 'onnxruntime-web';",
      "import { type C } from 'onnxruntime-common';",
      "export { D } from 'onnxruntime-node/dist/binding';",
      "type E = typeof import('onnxruntime-web');",
      "const f = await import('onnxruntime-web/wasm');",
      "const g = require('onnxruntime-node');",
      'const req = createRequire(import.meta.url);',
      "const h = req('onnxruntime-node/package.json');",
      "const i = createRequire(import.meta.url)('onnxruntime-node');",
      "import j = require('onnxruntime-node');",
      // Not imports: a string holding one (a test writes it into a file of its own), a comment, a path resolved.
      "writeFile(entry, \"import * as ort from 'onnxruntime-node';\\nimport('onnxruntime-web');\");",
      "// import * as k from 'onnxruntime-node';",
      "/* require('onnxruntime-node') */",
      "const wasm = createRequire(import.meta.url).resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm');",
      "const dir = require.resolve('onnxruntime-node');",
      "import * as z from 'zod';",
      "import { l } from './l.ts';",
    ].join('\n');
    assert.deepEqual(packageImportsOf('x.ts', source), [
      { spec: 'onnxruntime-node', typeOnly: false, line: 1 },
      { spec: 'onnxruntime-web', typeOnly: true, line: 2 },
      { spec: 'onnxruntime-common', typeOnly: true, line: 3 },
      { spec: 'onnxruntime-node/dist/binding', typeOnly: false, line: 4 },
      { spec: 'onnxruntime-web', typeOnly: true, line: 5 },
      { spec: 'onnxruntime-web/wasm', typeOnly: false, line: 6 },
      { spec: 'onnxruntime-node', typeOnly: false, line: 7 },
      { spec: 'onnxruntime-node/package.json', typeOnly: false, line: 9 },
      { spec: 'onnxruntime-node', typeOnly: false, line: 10 },
      { spec: 'onnxruntime-node', typeOnly: false, line: 11 },
      { spec: 'zod', typeOnly: false, line: 17 },
    ]);
  });

  test('the rule: each package in its owner only, onnxruntime-common for types only', () => {
    assert.equal(ortImportProblem('core/runtime/ort-node.ts', 'onnxruntime-node/dist/binding', false), undefined);
    assert.equal(ortImportProblem('core/runtime/ort-web.ts', 'onnxruntime-web/webgpu', false), undefined);
    assert.equal(ortImportProblem('core/runtime/seq2seq.ts', 'onnxruntime-common', true), undefined);
    assert.equal(ortImportProblem('bench/x.ts', 'zod', false), undefined);
    assert.equal(
      ortImportProblem('test/x.test.ts', 'onnxruntime-node', true),
      'import onnxruntime-node through core/runtime/ort-node.ts',
    );
    assert.equal(
      ortImportProblem('core/runtime/ort-node.ts', 'onnxruntime-web', false),
      'import onnxruntime-web through core/runtime/ort-web.ts',
    );
    assert.equal(
      ortImportProblem('core/x.ts', 'onnxruntime-common', false),
      'onnxruntime-common is for types only (import type)',
    );
    assert.equal(
      ortImportProblem('core/x.ts', 'onnxruntime-react-native', false),
      "onnxruntime-react-native is not one of frost's runtimes",
    );
  });

  test('no other file imports onnxruntime (code, benchmarks, tests, bin)', () => {
    const files = [...GRAPH_DIRS, 'bin'].flatMap((dir) => sourceFiles(dir, /\.(ts|mts|cts|js|mjs|cjs)$/));
    const imports = files.map((file) => {
      const source = readFileSync(join(ROOT, file), 'utf8');
      // Only files with a string that starts so go through the parser (a tenth of them; it is the slow part).
      return { file, imports: /['"`]onnxruntime/.test(source) ? packageImportsOf(file, source) : [] };
    });
    const wrong = imports.flatMap(({ file, imports }) =>
      imports.flatMap(({ spec, typeOnly, line }) => {
        const problem = ortImportProblem(file, spec, typeOnly);
        return problem ? [`${file}:${line}: '${spec}': ${problem}`] : [];
      }),
    );
    assert.deepEqual(wrong, []);
    // And the owners are where the scan looks: each imports its package.
    for (const [pkg, owner] of Object.entries(ORT_OWNERS)) {
      const found = imports.find((f) => f.file === owner)?.imports ?? [];
      assert.ok(
        found.some((i) => ortPackage(i.spec) === pkg),
        `${owner} imports ${pkg}`,
      );
    }
  });
});
