/**
 * SentencePiece's model file (`.model`, protobuf `sentencepiece.ModelProto`), read and written with protobufjs's
 * wire-format Reader and Writer. Only the fields frost reads or writes are handled; the reader skips the others,
 * so a model written by `spm_train` still loads. Field numbers and defaults follow google/sentencepiece
 * `src/sentencepiece_model.proto` (proto2).
 *
 * Why `protobufjs/minimal` and a hand-written codec for three messages: this module runs in the browser page,
 * and protobufjs's reflection build (`light`) pulls Node's `fs` into the web bundle.
 *
 * Isomorphic: no Node APIs.
 */
import protobuf from 'protobufjs/minimal.js';

/** sentencepiece.ModelProto.SentencePiece.Type codes. */
export const PieceType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/** sentencepiece.TrainerSpec.ModelType codes. */
export const ModelType = { UNIGRAM: 1, BPE: 2, WORD: 3, CHAR: 4 } as const;

/** Plain-object shapes (snake_case, as in the .proto). Absent optional fields read as their defaults. */
export interface SentencePieceObject {
  piece: string;
  score: number;
  type: number;
}

export interface TrainerSpecObject {
  model_type: number;
  vocab_size: number;
  character_coverage: number;
  max_sentencepiece_length: number;
  byte_fallback: boolean;
  unk_id: number;
  bos_id: number;
  eos_id: number;
  pad_id: number;
  unk_piece: string;
  bos_piece: string;
  eos_piece: string;
  pad_piece: string;
}

export interface NormalizerSpecObject {
  name: string;
  precompiled_charsmap: Uint8Array;
  add_dummy_prefix: boolean;
  remove_extra_whitespaces: boolean;
  escape_whitespaces: boolean;
}

export interface ModelProtoObject {
  pieces: SentencePieceObject[];
  trainer_spec: TrainerSpecObject;
  normalizer_spec: NormalizerSpecObject;
}

/** Protobuf wire types. */
const VARINT = 0;
const LENGTH = 2;
const FIXED32 = 5;
const tag = (field: number, wire: number): number => field * 8 + wire;

const TRAINER_DEFAULTS: TrainerSpecObject = {
  model_type: ModelType.UNIGRAM,
  vocab_size: 8000,
  character_coverage: 0.9995,
  max_sentencepiece_length: 16,
  byte_fallback: false,
  unk_id: 0,
  bos_id: 1,
  eos_id: 2,
  pad_id: -1,
  unk_piece: '<unk>',
  bos_piece: '<s>',
  eos_piece: '</s>',
  pad_piece: '<pad>',
};

const NORMALIZER_DEFAULTS: NormalizerSpecObject = {
  name: '',
  precompiled_charsmap: new Uint8Array(0),
  add_dummy_prefix: true,
  remove_extra_whitespaces: true,
  escape_whitespaces: true,
};

/** TrainerSpec fields frost reads and writes: field number, wire type, kind. */
const TRAINER_FIELDS: Readonly<Record<keyof TrainerSpecObject, [number, 'int32' | 'float' | 'bool' | 'string']>> = {
  model_type: [3, 'int32'],
  vocab_size: [4, 'int32'],
  character_coverage: [10, 'float'],
  max_sentencepiece_length: [20, 'int32'],
  byte_fallback: [35, 'bool'],
  unk_id: [40, 'int32'],
  bos_id: [41, 'int32'],
  eos_id: [42, 'int32'],
  pad_id: [43, 'int32'],
  unk_piece: [45, 'string'],
  bos_piece: [46, 'string'],
  eos_piece: [47, 'string'],
  pad_piece: [48, 'string'],
};

/** Serialises a model. */
export function encodeModelProto(model: ModelProtoObject): Uint8Array {
  const w = protobuf.Writer.create();
  for (const p of model.pieces) {
    w.uint32(tag(1, LENGTH)).fork();
    w.uint32(tag(1, LENGTH)).string(p.piece);
    w.uint32(tag(2, FIXED32)).float(p.score);
    w.uint32(tag(3, VARINT)).int32(p.type);
    w.ldelim();
  }
  w.uint32(tag(2, LENGTH)).fork();
  for (const [key, [field, kind]] of Object.entries(TRAINER_FIELDS)) {
    const value = model.trainer_spec[key as keyof TrainerSpecObject];
    if (kind === 'float') w.uint32(tag(field, FIXED32)).float(value as number);
    else if (kind === 'string') w.uint32(tag(field, LENGTH)).string(value as string);
    else if (kind === 'bool') w.uint32(tag(field, VARINT)).bool(value as boolean);
    else w.uint32(tag(field, VARINT)).int32(value as number);
  }
  w.ldelim();
  const n = model.normalizer_spec;
  w.uint32(tag(3, LENGTH)).fork();
  w.uint32(tag(1, LENGTH)).string(n.name);
  if (n.precompiled_charsmap.length > 0) w.uint32(tag(2, LENGTH)).bytes(n.precompiled_charsmap);
  w.uint32(tag(3, VARINT)).bool(n.add_dummy_prefix);
  w.uint32(tag(4, VARINT)).bool(n.remove_extra_whitespaces);
  w.uint32(tag(5, VARINT)).bool(n.escape_whitespaces);
  w.ldelim();
  return w.finish();
}

/**
 * Parses model bytes; missing fields come back with their proto2 defaults. Throws protobufjs's error on bytes
 * that are not a protobuf message (callers add the file's path).
 */
export function decodeModelProto(bytes: Uint8Array): ModelProtoObject {
  const r = protobuf.Reader.create(bytes);
  const model: ModelProtoObject = {
    pieces: [],
    trainer_spec: { ...TRAINER_DEFAULTS },
    normalizer_spec: { ...NORMALIZER_DEFAULTS },
  };
  while (r.pos < r.len) {
    const t = r.uint32();
    const field = Math.floor(t / 8);
    if (field === 1 && t % 8 === LENGTH) model.pieces.push(readPiece(r, r.uint32()));
    else if (field === 2 && t % 8 === LENGTH) readTrainerSpec(r, r.uint32(), model.trainer_spec);
    else if (field === 3 && t % 8 === LENGTH) readNormalizerSpec(r, r.uint32(), model.normalizer_spec);
    else r.skipType(t % 8);
  }
  return model;
}

function readPiece(r: protobuf.Reader, length: number): SentencePieceObject {
  const end = r.pos + length;
  const piece: SentencePieceObject = { piece: '', score: 0, type: PieceType.NORMAL };
  while (r.pos < end) {
    const t = r.uint32();
    const field = Math.floor(t / 8);
    if (field === 1 && t % 8 === LENGTH) piece.piece = r.string();
    else if (field === 2 && t % 8 === FIXED32) piece.score = r.float();
    else if (field === 3 && t % 8 === VARINT) piece.type = r.int32();
    else r.skipType(t % 8);
  }
  return piece;
}

const TRAINER_BY_FIELD = new Map(Object.entries(TRAINER_FIELDS).map(([key, [field, kind]]) => [field, { key, kind }]));

function readTrainerSpec(r: protobuf.Reader, length: number, spec: TrainerSpecObject): void {
  const end = r.pos + length;
  const out = spec as unknown as Record<string, unknown>;
  while (r.pos < end) {
    const t = r.uint32();
    const known = TRAINER_BY_FIELD.get(Math.floor(t / 8));
    const wire = t % 8;
    if (known?.kind === 'float' && wire === FIXED32) out[known.key] = r.float();
    else if (known?.kind === 'string' && wire === LENGTH) out[known.key] = r.string();
    else if (known?.kind === 'bool' && wire === VARINT) out[known.key] = r.bool();
    else if (known?.kind === 'int32' && wire === VARINT) out[known.key] = r.int32();
    else r.skipType(wire);
  }
}

function readNormalizerSpec(r: protobuf.Reader, length: number, spec: NormalizerSpecObject): void {
  const end = r.pos + length;
  while (r.pos < end) {
    const t = r.uint32();
    const field = Math.floor(t / 8);
    const wire = t % 8;
    if (field === 1 && wire === LENGTH) spec.name = r.string();
    else if (field === 2 && wire === LENGTH) spec.precompiled_charsmap = r.bytes();
    else if (field === 3 && wire === VARINT) spec.add_dummy_prefix = r.bool();
    else if (field === 4 && wire === VARINT) spec.remove_extra_whitespaces = r.bool();
    else if (field === 5 && wire === VARINT) spec.escape_whitespaces = r.bool();
    else r.skipType(wire);
  }
}
