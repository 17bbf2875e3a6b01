/**
 * SentencePiece's model file (`.model`, protobuf `sentencepiece.ModelProto`), read and written with
 * protobufjs. Only the fields frost reads or writes are declared; protobuf skips the others when reading, so
 * a model written by `spm_train` still loads. Field numbers and defaults follow google/sentencepiece
 * `src/sentencepiece_model.proto` (proto2).
 *
 * Isomorphic: the descriptor is plain data, so no file system is needed (browsers included).
 */
import protobuf from 'protobufjs/light.js';

const descriptor: protobuf.INamespace = {
  nested: {
    sentencepiece: {
      nested: {
        TrainerSpec: {
          fields: {
            model_type: { type: 'int32', id: 3, options: { default: 1 } },
            vocab_size: { type: 'int32', id: 4, options: { default: 8000 } },
            character_coverage: { type: 'float', id: 10, options: { default: 0.9995 } },
            max_sentencepiece_length: { type: 'int32', id: 20, options: { default: 16 } },
            byte_fallback: { type: 'bool', id: 35, options: { default: false } },
            unk_id: { type: 'int32', id: 40, options: { default: 0 } },
            bos_id: { type: 'int32', id: 41, options: { default: 1 } },
            eos_id: { type: 'int32', id: 42, options: { default: 2 } },
            pad_id: { type: 'int32', id: 43, options: { default: -1 } },
            unk_piece: { type: 'string', id: 45, options: { default: '<unk>' } },
            bos_piece: { type: 'string', id: 46, options: { default: '<s>' } },
            eos_piece: { type: 'string', id: 47, options: { default: '</s>' } },
            pad_piece: { type: 'string', id: 48, options: { default: '<pad>' } },
          },
        },
        NormalizerSpec: {
          fields: {
            name: { type: 'string', id: 1 },
            precompiled_charsmap: { type: 'bytes', id: 2 },
            add_dummy_prefix: { type: 'bool', id: 3, options: { default: true } },
            remove_extra_whitespaces: { type: 'bool', id: 4, options: { default: true } },
            escape_whitespaces: { type: 'bool', id: 5, options: { default: true } },
          },
        },
        ModelProto: {
          fields: {
            pieces: { rule: 'repeated', type: 'SentencePiece', id: 1 },
            trainer_spec: { type: 'TrainerSpec', id: 2 },
            normalizer_spec: { type: 'NormalizerSpec', id: 3 },
          },
          nested: {
            SentencePiece: {
              fields: {
                piece: { type: 'string', id: 1 },
                score: { type: 'float', id: 2 },
                type: { type: 'int32', id: 3, options: { default: 1 } },
              },
            },
          },
        },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(descriptor);

/** sentencepiece.ModelProto. */
export const SentencePieceModelProto: protobuf.Type = root.lookupType('sentencepiece.ModelProto');

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

/** Serialises a model. */
export function encodeModelProto(model: ModelProtoObject): Uint8Array {
  const message = SentencePieceModelProto.fromObject(model);
  return SentencePieceModelProto.encode(message).finish();
}

/**
 * Parses model bytes; missing fields come back with their proto2 defaults. Throws protobufjs's error on bytes
 * that are not a protobuf message (callers add the file's path).
 */
export function decodeModelProto(bytes: Uint8Array): ModelProtoObject {
  const message = SentencePieceModelProto.decode(bytes);
  const object = SentencePieceModelProto.toObject(message, { defaults: true, arrays: true, bytes: Uint8Array });
  const spec = (o: unknown, name: string): unknown => {
    if (o !== undefined && o !== null) return o;
    const type = root.lookupType(`sentencepiece.${name}`);
    return type.toObject(type.create(), { defaults: true, bytes: Uint8Array });
  };
  const pieces = (object.pieces as Partial<SentencePieceObject>[]).map((p) => ({
    piece: p.piece ?? '',
    score: p.score ?? 0,
    type: p.type ?? PieceType.NORMAL,
  }));
  return {
    pieces,
    trainer_spec: spec(object.trainer_spec, 'TrainerSpec') as TrainerSpecObject,
    normalizer_spec: spec(object.normalizer_spec, 'NormalizerSpec') as NormalizerSpecObject,
  };
}
