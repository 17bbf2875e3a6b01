/**
 * The packages a source file loads by name, read from its syntax tree (TypeScript's parser, which
 * also reads JavaScript), for test/import-graph.test.ts's rule that onnxruntime has one module per
 * package.
 */
import ts from 'typescript';

/** One place a file names a package to load. */
export interface PackageImport {
  /** The specifier as written: `onnxruntime-node`, `onnxruntime-node/dist/binding`, ... */
  spec: string;
  /** Erased at run time: `import type`, type-only named imports, `export type`, `typeof import('...')`. */
  typeOnly: boolean;
  /** 1-based. */
  line: number;
}

/**
 * Every package `source` loads by a literal name: `import`/`export ... from`, `import type`,
 * `import('...')` (also as a type, `typeof import('...')`), `import x = require('...')`, and calls of
 * `require`, of `createRequire(...)` and of a name bound to it. What counts is syntax, not text: an
 * import written inside a string (code a test writes into a file of its own) or a comment is none,
 * and resolving a path (`require.resolve`, `createRequire(...).resolve`) loads nothing, so is none.
 */
export function packageImportsOf(file: string, source: string): PackageImport[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest);
  const requires = new Set(['require']);
  const out: PackageImport[] = [];
  const add = (spec: ts.Node | undefined, at: ts.Node, typeOnly: boolean) => {
    if (spec && ts.isStringLiteralLike(spec) && !spec.text.startsWith('.'))
      out.push({ spec: spec.text, typeOnly, line: sf.getLineAndCharacterOfPosition(at.getStart(sf)).line + 1 });
  };
  const isCreateRequire = (e: ts.Node) =>
    ts.isCallExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === 'createRequire';
  const visit = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.initializer &&
      isCreateRequire(node.initializer)
    )
      requires.add(node.name.text);
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, node, importIsTypeOnly(node.importClause));
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, node, node.isTypeOnly);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference))
      add(node.moduleReference.expression, node, node.isTypeOnly);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, node, true);
    else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const loads =
        callee.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(callee) && requires.has(callee.text)) ||
        isCreateRequire(callee);
      if (loads) add(node.arguments[0], node, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** `import type ...`, or only `type` names in braces (no default import beside them). */
function importIsTypeOnly(clause: ts.ImportClause | undefined): boolean {
  if (!clause) return false; // `import 'x'`: run for its effects
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  return (
    clause.name === undefined &&
    named !== undefined &&
    ts.isNamedImports(named) &&
    named.elements.length > 0 &&
    named.elements.every((e) => e.isTypeOnly)
  );
}
