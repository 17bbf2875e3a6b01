/**
 * The part of onnxruntime's C API that frost's MLAS GEMMs use, called through koffi on the libonnxruntime that
 * onnxruntime-node ships (the library its N-API binding loads, so one ORT per process).
 *
 * Why not the package's binding: it hands every output back as a fresh JS ArrayBuffer, a copy even when the caller
 * pre-allocated the output. For a training step's products that copy (and the page faults of a new buffer the size
 * of the logits) cost more than MLAS's lead over OpenBLAS: a Transformer step's logits, `[2780×256]·[256×13643]`, took
 * 105.8 ms through the binding and 45.6 ms here (npm run bench:gemm). Here the inputs and the output are OrtValues
 * over the caller's own memory (the wasm heap), so MLAS reads and writes it in place.
 *
 * The functions are read from the OrtApi table by position. The table only ever grows at its end (ORT's ABI
 * promise), so positions taken from onnxruntime_c_api.h hold for every release that answers GetApi(API_VERSION).
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { loadKoffi, type KoffiFunction } from './koffi.ts';

/** The API version of the header these positions were read from (onnxruntime 1.13's); later releases answer it too. */
const API_VERSION = 13;

/** Positions in struct OrtApi (onnxruntime_c_api.h). */
const INDEX = {
  GetErrorMessage: 2,
  CreateEnv: 3,
  CreateSessionFromArray: 8,
  Run: 9,
  CreateSessionOptions: 10,
  SetSessionGraphOptimizationLevel: 23,
  SetIntraOpNumThreads: 24,
  SetInterOpNumThreads: 25,
  CreateTensorWithDataAsOrtValue: 49,
  CreateCpuMemoryInfo: 69,
  ReleaseStatus: 93,
  ReleaseSession: 95,
  ReleaseValue: 96,
  ReleaseSessionOptions: 100,
  AddSessionConfigEntry: 130,
} as const;

const TABLE_LENGTH = Math.max(...Object.values(INDEX)) + 1;
const ORT_LOGGING_LEVEL_ERROR = 3;
const ORT_ENABLE_ALL = 99;
const ORT_DEVICE_ALLOCATOR = 0;
const ORT_MEM_TYPE_DEFAULT = 0;
const ONNX_FLOAT = 1;

/** An opaque native pointer, as koffi hands it over. */
type Pointer = object;

/** A float32 tensor over caller-owned memory: its data and its dimensions. */
export type FloatTensor = readonly [Float32Array, readonly number[]];

export interface OrtCSession {
  /** Runs the graph with every input and output over the caller's memory; throws ORT's message on failure. */
  run(inputs: readonly FloatTensor[], outputs: readonly FloatTensor[]): void;
  dispose(): void;
}

export interface OrtCApi {
  /** ORT's version string, e.g. "1.30.0". */
  readonly version: string;
  /**
   * A session over an ONNX model's bytes, its inputs and outputs named by `inputNames` and `outputNames`, on `threads`
   * intra-op threads (the caller's included) that sleep between runs: frost's other pools need the cores then.
   */
  session(model: Uint8Array, inputNames: string[], outputNames: string[], threads: number): OrtCSession;
}

/** libonnxruntime as onnxruntime-node lays it out: bin/napi-v6/<platform>/<arch>/. */
function libraryPath(): string {
  const require = createRequire(import.meta.url);
  const dir = join(
    dirname(require.resolve('onnxruntime-node/package.json')),
    'bin',
    'napi-v6',
    process.platform,
    process.arch,
  );
  const name = readdirSync(dir).find((f) => /^(lib)?onnxruntime(\.\d+)*\.(so(\.\d+)*|dylib|dll)$/.test(f));
  if (name == null) throw new Error(`no onnxruntime library in ${dir}`);
  return join(dir, name);
}

let loaded: OrtCApi | Error | undefined;

/** onnxruntime's C API (loaded once), or an Error saying why not (koffi or the library missing, a table too old). */
export function loadOrtCApi(): OrtCApi | Error {
  loaded ??= load();
  return loaded;
}

function load(): OrtCApi | Error {
  try {
    const koffi = loadKoffi();
    if (koffi instanceof Error) return koffi;
    const lib = koffi.load(libraryPath());
    const base = lib.func('void *OrtGetApiBase()')() as Pointer;
    const [getApi, getVersion] = koffi.decode(base, koffi.array('void *', 2)) as [Pointer, Pointer];
    const version = String(
      (koffi.decode(getVersion, koffi.proto('const char *GetVersionString()')) as KoffiFunction)(),
    );
    const api = (koffi.decode(getApi, koffi.proto('void *GetApi(uint32_t version)')) as KoffiFunction)(
      API_VERSION,
    ) as Pointer;
    if (api == null) throw new Error(`onnxruntime ${version} has no C API version ${API_VERSION}`);
    const table = koffi.decode(api, koffi.array('void *', TABLE_LENGTH)) as Pointer[];
    const fn = (name: keyof typeof INDEX, signature: string): KoffiFunction =>
      koffi.decode(table[INDEX[name]], koffi.proto(signature)) as KoffiFunction;

    const getErrorMessage = fn('GetErrorMessage', 'const char *GetErrorMessage(void *status)');
    const releaseStatus = fn('ReleaseStatus', 'void ReleaseStatus(void *status)');
    /** Throws ORT's message when a call returned a status (null means success). */
    const check = (status: unknown, what: string): void => {
      if (status == null) return;
      const message = String(getErrorMessage(status));
      releaseStatus(status);
      throw new Error(`onnxruntime ${what}: ${message}`);
    };
    const createEnv = fn('CreateEnv', 'void *CreateEnv(int level, const char *logid, _Out_ void **env)');
    const createSessionFromArray = fn(
      'CreateSessionFromArray',
      'void *CreateSessionFromArray(void *env, const uint8_t *model, size_t length, void *options, _Out_ void **session)',
    );
    const run = fn(
      'Run',
      'void *Run(void *session, void *runOptions, const char **inputNames, void **inputs, size_t inputCount, ' +
        'const char **outputNames, size_t outputCount, void **outputs)',
    );
    const createSessionOptions = fn('CreateSessionOptions', 'void *CreateSessionOptions(_Out_ void **options)');
    const setOptimization = fn(
      'SetSessionGraphOptimizationLevel',
      'void *SetSessionGraphOptimizationLevel(void *options, int level)',
    );
    const setIntraThreads = fn('SetIntraOpNumThreads', 'void *SetIntraOpNumThreads(void *options, int n)');
    const setInterThreads = fn('SetInterOpNumThreads', 'void *SetInterOpNumThreads(void *options, int n)');
    const addConfig = fn(
      'AddSessionConfigEntry',
      'void *AddSessionConfigEntry(void *options, const char *key, const char *value)',
    );
    const createTensor = fn(
      'CreateTensorWithDataAsOrtValue',
      'void *CreateTensorWithDataAsOrtValue(void *info, void *data, size_t bytes, const int64_t *shape, ' +
        'size_t rank, int type, _Out_ void **value)',
    );
    const createCpuMemoryInfo = fn(
      'CreateCpuMemoryInfo',
      'void *CreateCpuMemoryInfo(int allocator, int memType, _Out_ void **info)',
    );
    const releaseSession = fn('ReleaseSession', 'void ReleaseSession(void *session)');
    const releaseValue = fn('ReleaseValue', 'void ReleaseValue(void *value)');
    const releaseSessionOptions = fn('ReleaseSessionOptions', 'void ReleaseSessionOptions(void *options)');

    const out: (Pointer | null)[] = [null];
    // One OrtEnv per process (ORT hands back the binding's when it already made one); it and the memory info live
    // as long as the process.
    check(createEnv(ORT_LOGGING_LEVEL_ERROR, 'frost', out), 'CreateEnv');
    const env = out[0];
    check(createCpuMemoryInfo(ORT_DEVICE_ALLOCATOR, ORT_MEM_TYPE_DEFAULT, out), 'CreateCpuMemoryInfo');
    const memoryInfo = out[0];

    /** An OrtValue over `data` (not copied: ORT reads and writes the caller's memory). */
    const value = ([data, dims]: FloatTensor): Pointer => {
      check(
        createTensor(memoryInfo, data, data.byteLength, BigInt64Array.from(dims, BigInt), dims.length, ONNX_FLOAT, out),
        'CreateTensorWithDataAsOrtValue',
      );
      return out[0] as Pointer;
    };

    return {
      version,
      session(model, inputNames, outputNames, threads) {
        check(createSessionOptions(out), 'CreateSessionOptions');
        const options = out[0];
        let session: Pointer | null = null;
        try {
          check(setOptimization(options, ORT_ENABLE_ALL), 'SetSessionGraphOptimizationLevel');
          check(setIntraThreads(options, threads), 'SetIntraOpNumThreads');
          check(setInterThreads(options, 1), 'SetInterOpNumThreads');
          check(addConfig(options, 'session.intra_op.allow_spinning', '0'), 'AddSessionConfigEntry');
          check(addConfig(options, 'session.inter_op.allow_spinning', '0'), 'AddSessionConfigEntry');
          check(createSessionFromArray(env, model, model.byteLength, options, out), 'CreateSessionFromArray');
          session = out[0];
        } finally {
          releaseSessionOptions(options);
        }
        return {
          run(inputs, outputs) {
            const ins: Pointer[] = [];
            const outs: Pointer[] = [];
            try {
              for (const t of inputs) ins.push(value(t));
              for (const t of outputs) outs.push(value(t));
              check(run(session, null, inputNames, ins, ins.length, outputNames, outs.length, outs), 'Run');
            } finally {
              for (const v of ins) releaseValue(v);
              for (const v of outs) releaseValue(v);
            }
          },
          dispose() {
            if (session != null) releaseSession(session);
            session = null;
          },
        };
      },
    };
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}
