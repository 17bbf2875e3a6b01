"""
Builds a tiny Marian model folder with random weights, stored as Hugging Face publishes opus-mt models
(Helsinki-NLP/opus-mt-*): config.json, generation_config.json, model.safetensors, source.spm, target.spm,
vocab.json, tokenizer_config.json. PyTorch and the standard library only (no transformers, no safetensors
package): the facts come from transformers' modeling_marian.py, configuration_marian.py, tokenization_marian.py
and convert_marian_to_pytorch.py.

- vocab.json is one vocabulary for both sides (share_encoder_decoder_embeddings): '</s>' = 0, '<unk>' = 1, then the
  pieces of both SentencePiece models, and '<pad>' last (the converter appends it), so pad_token_id =
  decoder_start_token_id = vocab_size - 1 and eos_token_id = 0.
- model.safetensors holds model.shared.weight [V, d], final_logits_bias [1, V] (a buffer) and every layer's
  q/k/v/out projections, layer norms and fc1/fc2 as nn.Linear stores them ([out, in] weights); lm_head.weight and
  the encoder's and decoder's embed_tokens are tied to model.shared and left out, as save_pretrained drops tied
  copies, and embed_positions (sinusoidal, _keys_to_ignore_on_save) is not stored.
- The SentencePiece models are trained by spm_train on a little Multi30k text (unigram, SentencePiece's default
  normaliser, no byte fallback: what Marian's own models are).

Usage: tiny_marian.py OUT_DIR MULTI30K_DIR [--seed N] [--d 32] [--layers 2] [--heads 4] [--ffn 64]
       [--activation swish] [--scale-embedding 1] [--dtype F32|F16|BF16] [--src de --tgt en]
       [--extra-positions] (also store embed_positions, as some older conversions did)
       [--vocab-size N] (vocab.json padded to N entries with pieces neither SentencePiece model produces, for a model
       of a published one's shape: bench:decode's opus-mt-de-en shape is --d 512 --layers 6 --heads 8 --ffn 2048
       --vocab-size 58101)
"""

import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
from marian_files import sinusoids, write_safetensors


def read_lines(path, n):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        out = []
        for line in f:
            out.append(line.rstrip("\n"))
            if len(out) >= n:
                break
    return out


def train_spm(lines, prefix, vocab_size):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        text = f.name
    try:
        subprocess.run(
            [
                "spm_train",
                f"--input={text}",
                f"--model_prefix={prefix}",
                f"--vocab_size={vocab_size}",
                "--model_type=unigram",
                "--character_coverage=1.0",
                "--num_threads=1",
                "--minloglevel=2",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    finally:
        os.unlink(text)
    pieces = []
    with open(prefix + ".vocab", encoding="utf-8") as f:
        for line in f:
            pieces.append(line.split("\t")[0])
    return pieces


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("data")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=64)
    ap.add_argument("--activation", default="swish")
    ap.add_argument("--scale-embedding", type=int, default=1)
    ap.add_argument("--dtype", default="F32")
    ap.add_argument("--src", default="de")
    ap.add_argument("--tgt", default="en")
    ap.add_argument("--spm-lines", type=int, default=3000)
    ap.add_argument("--spm-vocab", type=int, default=400)
    ap.add_argument("--extra-positions", action="store_true")
    ap.add_argument("--vocab-size", type=int)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    src_lines = read_lines(os.path.join(args.data, f"train.{args.src}.gz"), args.spm_lines)
    tgt_lines = read_lines(os.path.join(args.data, f"train.{args.tgt}.gz"), args.spm_lines)
    src_pieces = train_spm(src_lines, os.path.join(args.out, "source"), args.spm_vocab)
    tgt_pieces = train_spm(tgt_lines, os.path.join(args.out, "target"), args.spm_vocab)
    for side in ("source", "target"):
        os.replace(os.path.join(args.out, side + ".model"), os.path.join(args.out, side + ".spm"))
        os.unlink(os.path.join(args.out, side + ".vocab"))

    # One vocabulary over both models' pieces, as Marian's vocab.yml: </s> 0, <unk> 1, pieces, then <pad>.
    vocab = {"</s>": 0, "<unk>": 1}
    for piece in src_pieces + tgt_pieces:
        if piece in ("<unk>", "<s>", "</s>") or piece in vocab:
            continue
        vocab[piece] = len(vocab)
    if args.vocab_size is not None:
        if args.vocab_size < len(vocab) + 1:
            sys.exit(f"--vocab-size {args.vocab_size}: the pieces and <pad> need {len(vocab) + 1}")
        # Whole-word pieces of no language: the tokenizer never emits them, the model scores them all.
        while len(vocab) < args.vocab_size - 1:
            vocab[f"\u2581filler{len(vocab)}"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    V = len(vocab)
    pad = vocab["<pad>"]
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=2)

    d, L, h, ffn = args.d, args.layers, args.heads, args.ffn
    config = {
        "_name_or_path": "tiny-marian-random",
        "activation_dropout": 0.0,
        "activation_function": args.activation,
        "architectures": ["MarianMTModel"],
        "attention_dropout": 0.0,
        "bad_words_ids": [[pad]],
        "bos_token_id": 0,
        "classif_dropout": 0.0,
        "classifier_dropout": 0.0,
        "d_model": d,
        "decoder_attention_heads": h,
        "decoder_ffn_dim": ffn,
        "decoder_layerdrop": 0.0,
        "decoder_layers": L,
        "decoder_start_token_id": pad,
        "decoder_vocab_size": V,
        "dropout": 0.1,
        "encoder_attention_heads": h,
        "encoder_ffn_dim": ffn,
        "encoder_layerdrop": 0.0,
        "encoder_layers": L,
        "eos_token_id": 0,
        "forced_eos_token_id": 0,
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "max_length": 512,
        "max_position_embeddings": 512,
        "model_type": "marian",
        "normalize_before": False,
        "normalize_embedding": False,
        "num_beams": 4,
        "num_hidden_layers": L,
        "pad_token_id": pad,
        "scale_embedding": bool(args.scale_embedding),
        "share_encoder_decoder_embeddings": True,
        "static_position_embeddings": True,
        "tie_word_embeddings": True,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[args.dtype],
        "transformers_version": "4.44.0",
        "use_cache": True,
        "vocab_size": V,
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    generation = {
        "bad_words_ids": [[pad]],
        "bos_token_id": 0,
        "decoder_start_token_id": pad,
        "eos_token_id": 0,
        "forced_eos_token_id": 0,
        "max_length": 512,
        "num_beams": 4,
        "pad_token_id": pad,
        "transformers_version": "4.44.0",
    }
    with open(os.path.join(args.out, "generation_config.json"), "w") as f:
        json.dump(generation, f, indent=2)
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(
            {
                "eos_token": "</s>",
                "model_max_length": 512,
                "pad_token": "<pad>",
                "separate_vocabs": False,
                "source_lang": args.src,
                "target_lang": args.tgt,
                "sp_model_kwargs": {},
                "tokenizer_class": "MarianTokenizer",
                "unk_token": "<unk>",
            },
            f,
            indent=2,
        )

    # Random weights, large enough that each step's distribution is peaked (a reference comparison token for token
    # should not hinge on near-ties), and eos likely enough that outputs end at different lengths.
    g = torch.Generator().manual_seed(args.seed)

    def normal(*shape, std=1.0, mean=0.0):
        return torch.randn(*shape, generator=g) * std + mean

    t = {}
    t["model.shared.weight"] = normal(V, d, std=0.5)
    bias = normal(1, V, std=1.0)
    bias[0, 0] += 9.0  # eos
    t["final_logits_bias"] = bias

    def linear(prefix, out_dim, in_dim, gain=1.0):
        t[prefix + ".weight"] = normal(out_dim, in_dim, std=gain / math.sqrt(in_dim))
        t[prefix + ".bias"] = normal(out_dim, std=0.1)

    def norm(prefix, gain=1.0):
        t[prefix + ".weight"] = normal(d, std=0.1, mean=gain)
        t[prefix + ".bias"] = normal(d, std=0.1)

    def attention(prefix):
        for p in ("k_proj", "v_proj", "q_proj"):
            linear(f"{prefix}.{p}", d, d, gain=2.0)
        # Residual branches larger than the token's own embedding, so each step's output depends on more than the
        # previous token (a random model otherwise repeats one token to its length cap).
        linear(f"{prefix}.out_proj", d, d, gain=3.0)

    for l in range(L):
        e = f"model.encoder.layers.{l}"
        attention(e + ".self_attn")
        norm(e + ".self_attn_layer_norm")
        linear(e + ".fc1", ffn, d)
        linear(e + ".fc2", d, ffn, gain=3.0)
        norm(e + ".final_layer_norm")
    for l in range(L):
        e = f"model.decoder.layers.{l}"
        attention(e + ".self_attn")
        norm(e + ".self_attn_layer_norm")
        attention(e + ".encoder_attn")
        norm(e + ".encoder_attn_layer_norm")
        linear(e + ".fc1", ffn, d)
        linear(e + ".fc2", d, ffn, gain=3.0)
        # The decoder's last norm sets the logits' spread: peaked enough for a stable comparison.
        norm(e + ".final_layer_norm", gain=1.5 if l == L - 1 else 1.0)
    if args.extra_positions:
        t["model.encoder.embed_positions.weight"] = sinusoids(512, d)
        t["model.decoder.embed_positions.weight"] = sinusoids(512, d)
    write_safetensors(os.path.join(args.out, "model.safetensors"), t, args.dtype)
    print(json.dumps({"vocab_size": V, "pad": pad, "tensors": len(t)}))


if __name__ == "__main__":
    sys.exit(main())
