/**
 * `config.json` and `generation_config.json`. The model declares `model_type: 'marian'`, the encoder-decoder
 * family transformers.js and Optimum map to an encoder plus merged decoder with `past_key_values.{i}.{decoder,
 * encoder}.{key,value}` caches: the fields they read (layers, heads, d_model, the token ids) describe frost's
 * graphs; the graphs themselves carry the computation, so nothing else of Marian's architecture applies.
 * `transformers.js_config.dtype` makes fp32 the default everywhere (the browser's default would otherwise be
 * `q8`, a `_quantized` file this layout does not have).
 *
 * Generation follows `frost translate --beam 1`: start from `<s>`, never emit `<pad>`, `<s>` or `<unk>`, at most
 * 200 tokens and then a forced `</s>`. frost's other cap, 2 · source length + 10 tokens, has no generation
 * config field, so a longer output stops later than frost's would.
 */
import type { ModelCard } from '../../core/runtime/model-card.ts';
import type { TransformerShape } from './transformer-shape.ts';

/** frost's default output cap (core/decode/search-options.ts, `maxLen`). */
const MAX_OUTPUT_TOKENS = 200;

export function modelConfig(card: ModelCard, shape: TransformerShape): Record<string, unknown> {
  const arch = card.config.archConfig as Record<string, unknown> | undefined;
  const { pad, eos, bos } = card.specials;
  return {
    architectures: ['MarianMTModel'],
    model_type: 'marian',
    is_encoder_decoder: true,
    vocab_size: shape.vocab,
    d_model: shape.model,
    encoder_layers: arch?.encoderLayers,
    decoder_layers: shape.decoderLayers,
    num_hidden_layers: arch?.encoderLayers,
    encoder_attention_heads: shape.heads,
    decoder_attention_heads: shape.heads,
    encoder_ffn_dim: arch?.ff,
    decoder_ffn_dim: arch?.ff,
    activation_function: arch?.activation,
    normalize_before: arch?.norm === 'pre',
    scale_embedding: true,
    max_position_embeddings: arch?.positions === 'learned' ? arch.maxPositions : 1024,
    pad_token_id: pad,
    bos_token_id: bos,
    eos_token_id: eos,
    decoder_start_token_id: bos,
    forced_eos_token_id: eos,
    use_cache: true,
    'transformers.js_config': { dtype: 'fp32' },
    frost: { name: card.name, arch: card.arch, head: card.head.name, preset: card.preset },
  };
}

export function generationConfig(card: ModelCard): Record<string, unknown> {
  const { pad, unk, eos, bos } = card.specials;
  return {
    decoder_start_token_id: bos,
    bos_token_id: bos,
    eos_token_id: eos,
    pad_token_id: pad,
    forced_eos_token_id: eos,
    suppress_tokens: [...new Set([pad, bos, unk])].filter((id) => id !== eos),
    // The start token, MAX_OUTPUT_TOKENS tokens, then the forced </s>.
    max_length: MAX_OUTPUT_TOKENS + 2,
    num_beams: 1,
    do_sample: false,
  };
}
