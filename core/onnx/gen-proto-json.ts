/**
 * Build-time, Node-only script: regenerates `onnx-proto.json` from `onnx.proto`.
 *
 * Run: `npx tsx core/onnx/gen-proto-json.ts`
 *
 * Why a JSON descriptor: the emitter must run in browsers, where there is no
 * `fs` to read the .proto at run time. protobufjs-cli (pbjs) is not a
 * dependency, so this uses protobufjs's own `parse()` and `Root.toJSON()`,
 * which is what `pbjs -t json` does. `keepCase` keeps ONNX's snake_case field
 * names (`ir_version`, `raw_data`, ...) so the code reads like the spec.
 * This file is the only place in core/onnx that touches Node APIs, and nothing
 * imports it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

const source = readFileSync(here('./onnx.proto'), 'utf8');
const { root } = protobuf.parse(source, { keepCase: true });
const json = root.toJSON({ keepComments: false });
writeFileSync(here('./onnx-proto.json'), `${JSON.stringify(json, null, 1)}\n`);
console.log('wrote core/onnx/onnx-proto.json');
