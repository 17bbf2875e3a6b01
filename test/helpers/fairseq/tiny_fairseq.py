"""
Builds a tiny fairseq transformer or lightconv checkpoint with random weights, as fairseq-train saves one, and
fairseq's dictionaries beside it: python/frost_torch/transformer.py or lightconv.py (fairseq 0.12's Transformer and
LightConv/DynamicConv restated in plain PyTorch, with fairseq's key names) builds the model, whose weights are then redrawn large so that each decoding step's choice
is clear; the checkpoint is a pickle {"cfg": {"model", "task", "bpe"}, "model": state_dict} holding what fairseq's
state_dict holds besides (encoder.version, decoder.version, embed_positions._float_tensor), and dict.LANG.txt are
fairseq's ("word count" lines, most frequent first) over the first Multi30k training lines, whitespace words.

Usage: tiny_fairseq.py OUT_DIR MULTI30K_DIR --kind KIND [--seed N] [--lines N], KIND one of
  post-learned: post-norm, separate embeddings, a separate output_projection.weight (plain fairseq), relu
  pre-shared:   pre-norm, share_all_embeddings (one dictionary; the output layer is the embedding), gelu,
                layernorm_embedding, no_scale_embedding
  frost-head:   post-norm, separate embeddings, frost's fixed-l2 head (frost_head, frost_head_seed)
  dynamicconv:  fairseq's `lightconv` arch with dynamic convolutions (conv type `dynamic`, its default): post-norm,
                GLU, separate embeddings, a separate output_projection.weight; kernels 3, 7 (encoder), 4, 9 (decoder)
  lightconv:    lightweight convolutions: pre-norm, no GLU, share_all_embeddings; kernels 5, 3 / 3, 6
Writes OUT_DIR/checkpoint_best.pt, OUT_DIR/dict.de.txt, OUT_DIR/dict.en.txt; with --convert DIR also what
frost_torch.convert_checkpoint writes from it (model.safetensors, fairseq.json) and the dictionaries, into DIR, in the
same process (torch starts once).
"""

import argparse
import gzip
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
from frost_torch.dictionary import EOS, PAD, Dictionary  # noqa: E402
from frost_torch import lightconv  # noqa: E402
from frost_torch.transformer import TransformerArgs, build  # noqa: E402
from frost_torch.convert_checkpoint import convert  # noqa: E402

CONV_KINDS = {"dynamicconv": "dynamic", "lightconv": "lightweight"}


def read_lines(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.strip() for _, line in zip(range(n), f)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("data")
    ap.add_argument("--kind", required=True, choices=["post-learned", "pre-shared", "frost-head", *CONV_KINDS])
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--lines", type=int, default=3000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--sharpen", type=float, default=3.0, help="the decoder's last layer norm's gain")
    ap.add_argument("--eos-boost", type=float, default=6.0)
    ap.add_argument("--convert", metavar="DIR", help="also convert the checkpoint into DIR, with the dictionaries")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    src = read_lines(os.path.join(args.data, "train.de.gz"), args.lines)
    tgt = read_lines(os.path.join(args.data, "train.en.gz"), args.lines)
    shared = args.kind in ("pre-shared", "lightconv")
    if shared:
        src_dict = tgt_dict = Dictionary.build(src + tgt, min_count=2)
    else:
        src_dict, tgt_dict = Dictionary.build(src, min_count=2), Dictionary.build(tgt, min_count=2)
    d = args.d
    # What every kind's args say alike, under the names fairseq's transformer and lightconv share.
    common = dict(
        encoder_embed_dim=d,
        decoder_embed_dim=d,
        encoder_ffn_embed_dim=2 * d,
        decoder_ffn_embed_dim=2 * d,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_normalize_before=shared,
        decoder_normalize_before=shared,
        share_all_embeddings=shared,
        share_decoder_input_output_embed=shared,
    )
    if args.kind in CONV_KINDS:
        conv = CONV_KINDS[args.kind]
        dynamic = conv == "dynamic"
        targs = lightconv.LightConvArgs(
            **common,
            encoder_conv_dim=d,
            decoder_conv_dim=d,
            decoder_input_dim=d,
            decoder_output_dim=d,
            encoder_kernel_size_list=[3, 7] if dynamic else [5, 3],
            decoder_kernel_size_list=[4, 9] if dynamic else [3, 6],
            encoder_glu=dynamic,
            decoder_glu=dynamic,
            encoder_conv_type=conv,
            decoder_conv_type=conv,
        )
        model = lightconv.build(targs, len(src_dict), len(tgt_dict), PAD, seed=args.seed)
    else:
        targs = TransformerArgs(
            **common,
            no_scale_embedding=shared,
            layernorm_embedding=shared,
            activation_fn="gelu" if shared else "relu",
            frost_head="fixed-l2" if args.kind == "frost-head" else "",
            frost_head_seed=11,
        )
        model = build(targs, len(src_dict), len(tgt_dict), PAD, seed=args.seed)
    g = torch.Generator().manual_seed(args.seed)

    def normal(shape, std=1.0, mean=0.0):
        return torch.randn(*shape, generator=g) * std + mean

    # Random weights, large enough that each step's distribution is peaked (a comparison token for token should not
    # hinge on near-ties), with residual branches larger than the token's own embedding.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.copy_(normal(p.shape, std=0.5))
                if not shared or name.startswith("encoder"):
                    p[PAD] = 0
            elif name.endswith("conv_bias"):
                p.fill_(7.0)  # fairseq's uninitialised, unused conv_bias: an import that added it would show
            elif name.endswith("conv.weight"):
                p.copy_(normal(p.shape, std=1.0))  # a lightweight kernel's logits, softmaxed over K
            elif "layer_norm" in name or "layernorm" in name:
                p.copy_(normal(p.shape, std=0.1, mean=1.0 if name.endswith("weight") else 0.0))
            elif name.endswith(".bias"):
                p.copy_(normal(p.shape, std=0.1))
            elif name == "decoder.output_projection.weight":
                p.copy_(normal(p.shape, std=1.0 / math.sqrt(d)))
            elif name.endswith(".weight"):
                gain = 3.0 if ("out_proj" in name or "fc2" in name or "linear2" in name) else 2.0
                p.copy_(normal(p.shape, std=gain / math.sqrt(p.shape[1])))
        # eos likely enough that outputs end at different lengths: the decoder's last norm leans towards eos's row.
        head = model.decoder.output_projection
        if isinstance(head, torch.nn.Linear):
            row = head.weight[EOS]
        else:
            row = head.targets[EOS] if hasattr(head, "targets") else model.decoder.embed_tokens.weight[EOS]
        last = model.decoder.layer_norm if model.decoder.layer_norm is not None else model.decoder.layers[-1].final_layer_norm
        last.weight.mul_(args.sharpen)
        last.bias.add_(row / row.norm() * args.eos_boost)
    state = model.checkpoint_tensors()
    # What fairseq's modules keep besides their weights.
    for stack in ("encoder", "decoder"):
        state[f"{stack}.version"] = torch.Tensor([2 if args.kind in CONV_KINDS else 3])
        state[f"{stack}.embed_positions._float_tensor"] = torch.FloatTensor(1)
    os.makedirs(args.out, exist_ok=True)
    cfg = {
        "model": targs.as_dict(),
        "task": {"_name": "translation", "source_lang": "de", "target_lang": "en"},
        "bpe": None,
    }
    torch.save({"cfg": cfg, "args": None, "model": state}, os.path.join(args.out, "checkpoint_best.pt"))
    src_dict.save(os.path.join(args.out, "dict.de.txt"))
    tgt_dict.save(os.path.join(args.out, "dict.en.txt"))
    if args.convert:
        convert(os.path.join(args.out, "checkpoint_best.pt"), args.convert)
        src_dict.save(os.path.join(args.convert, "dict.de.txt"))
        tgt_dict.save(os.path.join(args.convert, "dict.en.txt"))


if __name__ == "__main__":
    main()
