"""fairseq's LightConv / DynamicConv model (fairseq 0.12's `lightconv` architectures, fairseq/models/lightconv.py)
restated in plain PyTorch, with one of frost's heads as its output layer if asked.

Restated from fairseq's equations and parameter names (facebookresearch/fairseq at 3d262bb, the CPU modules
LightweightConv1dTBC and DynamicConv_scripatable, fairseq/modules/unfold.py), not imported, so that a checkpoint it
writes has the keys and shapes a fairseq `lightconv` checkpoint has:

  encoder.embed_tokens.weight, decoder.embed_tokens.weight
  encoder.layers.N.linear1 (d -> 2d with encoder_glu, else d), .conv.weight [H, 1, K] (lightweight) or
      .conv.weight_linear.weight [H*K, d] (dynamic, no bias) with .conv.conv_bias [1, 1, d] (DynamicConv_scripatable
      registers it always; it is added only with conv_bias, which lightconv never sets), .linear2, .fc1, .fc2,
      .layer_norm1 (the conv block's), .layer_norm2 (the feed-forward block's)
  decoder.layers.N.linear1, .conv.*, .linear2, .conv_layer_norm, .encoder_attn.{q,k,v,out}_proj,
      .encoder_attn_layer_norm, .fc1, .fc2, .final_layer_norm
  encoder.layer_norm, decoder.layer_norm (with *_normalize_before), decoder.output_projection.weight (no bias; the
      decoder's embedding when share_decoder_input_output_embed / share_all_embeddings)

Equations (time-major in fairseq, batch-first here; the same numbers):
  embed        x = sqrt(d) E[token] + sinusoids from padding_idx + 1 (fairseq's make_positions); always sqrt(d)
  conv block   residual; (pre: LN); u = linear1(x); GLU (first half * sigmoid(second half)) with *_glu; encoder: padded
               positions of u zeroed; y = conv(u); linear2(y); + residual; (post: LN)
  conv         y[t, c] = sum_k w[h, k] u[t + k - padding_l, c], h = c // (d / H), u zero outside the sequence;
               w = softmax_K(weight) (lightweight, [H, K]) or softmax_K(weight_linear(u[t])) (dynamic, per position);
               padding_l = K // 2 in the encoder (odd K: fairseq's encoder cannot run an even K, its padding_l being a
               tuple there), K - 1 in the decoder (causal)
  decoder      conv block, then attention over the encoder output (fairseq's MultiheadAttention), then the
               feed-forward block (ReLU), each residual as above

The decoder runs two ways, as fairseq's does: whole sequences (teacher forcing: DynamicConv_scripatable's unfolded
path, which cuts a causal kernel longer than the sequence to its last T taps *before* the softmax) and one step at a
time with an input buffer of the last K - 1 conv inputs (generation: the softmax over all K taps, then only the taps
that have an input). `Decoder.step` is the second, which is what fairseq-generate runs.
"""

import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .embeddings import build_embeddings, build_output_layer, output_logits
from .transformer import MultiheadAttention, SinusoidalPositions, residual


@dataclass
class LightConvArgs:
    """The fairseq arguments this model reads, under fairseq's names (a checkpoint's `args`/`cfg`)."""

    encoder_embed_dim: int = 64
    encoder_conv_dim: int = 64
    encoder_ffn_embed_dim: int = 128
    encoder_layers: int = 2
    encoder_attention_heads: int = 4
    decoder_embed_dim: int = 64
    decoder_conv_dim: int = 64
    decoder_ffn_embed_dim: int = 128
    decoder_layers: int = 2
    decoder_attention_heads: int = 4
    encoder_kernel_size_list: list = field(default_factory=lambda: [3, 7])
    decoder_kernel_size_list: list = field(default_factory=lambda: [3, 7])
    encoder_glu: bool = True
    decoder_glu: bool = True
    encoder_conv_type: str = "dynamic"
    decoder_conv_type: str = "dynamic"
    weight_softmax: bool = True
    encoder_normalize_before: bool = False
    decoder_normalize_before: bool = False
    share_all_embeddings: bool = False
    share_decoder_input_output_embed: bool = False
    dropout: float = 0.1
    attention_dropout: float = 0.0
    relu_dropout: float = 0.0
    input_dropout: float = 0.0
    weight_dropout: float = 0.0
    max_source_positions: int = 1024
    max_target_positions: int = 1024
    encoder_learned_pos: bool = False
    decoder_learned_pos: bool = False
    no_token_positional_embeddings: bool = False
    adaptive_softmax_cutoff: object = None
    decoder_output_dim: int = 64
    decoder_input_dim: int = 64
    frost_head: str = ""
    frost_head_seed: int = 1
    frost_head_options: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"arch": "lightconv", **asdict(self)}


def unfold1d(x, K: int, padding_l: int):
    """fairseq/modules/unfold.py, batch-first: x [B, T, C] as its windows [B, T, C, K], zeros outside."""
    if K == 1:
        return x.unsqueeze(3)
    B, T, C = x.shape
    x = F.pad(x, (0, 0, padding_l, K - 1 - padding_l))
    return x.unfold(1, K, 1)  # [B, T, C, K]


class Conv(nn.Module):
    """LightweightConv1dTBC or DynamicConv_scripatable, weight_softmax, no bias, over u [B, T, C]."""

    def __init__(self, dim: int, K: int, padding_l: int, heads: int, kind: str, weight_softmax: bool):
        super().__init__()
        self.dim, self.K, self.padding_l, self.heads, self.kind = dim, K, padding_l, heads, kind
        self.weight_softmax = weight_softmax
        if kind == "lightweight":
            self.weight = nn.Parameter(torch.empty(heads, 1, K))
            nn.init.xavier_uniform_(self.weight)
        elif kind == "dynamic":
            self.weight_linear = nn.Linear(dim, heads * K, bias=False)
            nn.init.xavier_uniform_(self.weight_linear.weight)
            # DynamicConv_scripatable: nn.Parameter(torch.Tensor(input_size).view(1, 1, -1)), uninitialised and unused.
            self.conv_bias = nn.Parameter(torch.empty(dim).view(1, 1, -1))
        else:
            raise ValueError(f"conv type {kind!r}")

    def logits(self, u):
        """The kernels before the softmax: [1, 1, H, K] (lightweight) or [B, T, H, K] (dynamic)."""
        if self.kind == "lightweight":
            return self.weight.view(1, 1, self.heads, self.K)
        B, T, _ = u.shape
        return self.weight_linear(u).view(B, T, self.heads, self.K)

    def _normalise(self, w):
        return torch.softmax(w, dim=-1) if self.weight_softmax else w

    def _mix(self, windows, w):
        """windows [B, T, C, k], w [B or 1, T or 1, H, k] → [B, T, C]."""
        B, T, C, k = windows.shape
        H = self.heads
        out = windows.view(B, T, H, C // H, k) * w.unsqueeze(3)
        return out.sum(-1).reshape(B, T, C)

    def forward(self, u):
        """A whole sequence, as fairseq's non-incremental forward (the unfolded path)."""
        B, T, C = u.shape
        K, P = self.K, self.padding_l
        w = self.logits(u)
        if self.kind == "dynamic" and K > T and P == K - 1:
            # DynamicConv_scripatable._forward_unfolded: the kernel cut to its last T taps before the softmax.
            w = w[..., K - T :]
            K, P = T, T - 1
        w = self._normalise(w)
        return self._mix(unfold1d(u, K, P), w)

    def step(self, u, buffer):
        """One step (fairseq's incremental path): u [B, 1, C], buffer [B, C, k ≤ K - 1] or None → y, new buffer."""
        x_unfold = u.transpose(1, 2) if buffer is None else torch.cat([buffer, u.transpose(1, 2)], dim=2)
        new_buffer = x_unfold[:, :, -self.K + 1 :] if self.K > 1 else None
        w = self._normalise(self.logits(u))[..., -x_unfold.shape[2] :]
        return self._mix(x_unfold.unsqueeze(1), w), new_buffer


class ConvBlock(nn.Module):
    """linear1 (+ GLU), the convolution, linear2: LightConvEncoderLayer's / LightConvDecoderLayer's first block."""

    def __init__(self, args: LightConvArgs, K: int, decoder: bool):
        super().__init__()
        pre = "decoder" if decoder else "encoder"
        d, conv_dim = getattr(args, f"{pre}_embed_dim"), getattr(args, f"{pre}_conv_dim")
        self.glu = getattr(args, f"{pre}_glu")
        self.linear1 = nn.Linear(d, 2 * conv_dim if self.glu else conv_dim)
        if not decoder and K % 2 == 0:
            raise ValueError(f"fairseq's encoder cannot run an even kernel ({K}): its padding_l is a tuple")
        padding_l = K - 1 if decoder else K // 2
        heads = getattr(args, f"{pre}_attention_heads")
        self.conv = Conv(conv_dim, K, padding_l, heads, getattr(args, f"{pre}_conv_type"), args.weight_softmax)
        self.linear2 = nn.Linear(conv_dim, d)

    def project_in(self, x, pad=None):
        u = self.linear1(x)
        if self.glu:
            u = F.glu(u, dim=-1)
        if pad is not None:
            u = u.masked_fill(pad.unsqueeze(2), 0)
        return u


class EncoderLayer(nn.Module):
    def __init__(self, args: LightConvArgs, K: int):
        super().__init__()
        self.args = args
        d = args.encoder_embed_dim
        self.block = ConvBlock(args, K, decoder=False)
        self.fc1, self.fc2 = nn.Linear(d, args.encoder_ffn_embed_dim), nn.Linear(args.encoder_ffn_embed_dim, d)
        self.layer_norm1, self.layer_norm2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x, pad):
        a, pre = self.args, self.args.encoder_normalize_before
        b = self.block
        conv = lambda y: b.linear2(b.conv(b.project_in(y, pad)))  # noqa: E731
        x = residual(x, self.layer_norm1, pre, conv, a.dropout, self.training)
        ffn = lambda y: self.fc2(F.relu(self.fc1(y)))  # noqa: E731
        return residual(x, self.layer_norm2, pre, ffn, a.dropout, self.training)


class DecoderLayer(nn.Module):
    def __init__(self, args: LightConvArgs, K: int):
        super().__init__()
        self.args = args
        d = args.decoder_embed_dim
        self.block = ConvBlock(args, K, decoder=True)
        self.conv_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = MultiheadAttention(d, args.decoder_attention_heads, args.attention_dropout)
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, args.decoder_ffn_embed_dim), nn.Linear(args.decoder_ffn_embed_dim, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def _rest(self, x, enc, enc_pad):
        a, pre = self.args, self.args.decoder_normalize_before
        x = residual(
            x, self.encoder_attn_layer_norm, pre, lambda y: self.encoder_attn(y, enc, enc_pad), a.dropout, self.training
        )
        ffn = lambda y: self.fc2(F.relu(self.fc1(y)))  # noqa: E731
        return residual(x, self.final_layer_norm, pre, ffn, a.dropout, self.training)

    def forward(self, x, enc, enc_pad):
        b, pre = self.block, self.args.decoder_normalize_before
        conv = lambda y: b.linear2(b.conv(b.project_in(y)))  # noqa: E731
        x = residual(x, self.conv_layer_norm, pre, conv, self.args.dropout, self.training)
        return self._rest(x, enc, enc_pad)

    def step(self, x, enc, enc_pad, buffer):
        b, pre = self.block, self.args.decoder_normalize_before
        out = {}

        def conv(y):
            z, out["buffer"] = b.conv.step(b.project_in(y), buffer)
            return b.linear2(z)

        x = residual(x, self.conv_layer_norm, pre, conv, self.args.dropout, self.training)
        return self._rest(x, enc, enc_pad), out["buffer"]


class Stack(nn.Module):
    """LightConvEncoder or LightConvDecoder, less the output layer."""

    def __init__(self, args: LightConvArgs, embed_tokens: nn.Embedding, padding_idx: int, decoder: bool):
        super().__init__()
        pre = "decoder" if decoder else "encoder"
        d = getattr(args, f"{pre}_embed_dim")
        self.args, self.padding_idx, self.decoder = args, padding_idx, decoder
        self.embed_tokens = embed_tokens
        self.embed_scale = math.sqrt(d)
        max_positions = args.max_target_positions if decoder else args.max_source_positions
        self.embed_positions = SinusoidalPositions(d, padding_idx, max_positions)
        kernels = list(getattr(args, f"{pre}_kernel_size_list"))
        layers = getattr(args, f"{pre}_layers")
        if len(kernels) == 1:
            kernels = kernels * layers
        if len(kernels) != layers:
            raise ValueError(f"{pre}_kernel_size_list {kernels} does not match {pre}_layers {layers}")
        Layer = DecoderLayer if decoder else EncoderLayer
        self.layers = nn.ModuleList(Layer(args, K) for K in kernels)
        self.layer_norm = nn.LayerNorm(d) if getattr(args, f"{pre}_normalize_before") else None

    def embed(self, tokens):
        x = self.embed_scale * self.embed_tokens(tokens) + self.embed_positions(tokens)
        return F.dropout(x, self.args.dropout, self.training)

    def _end(self, x):
        return self.layer_norm(x) if self.layer_norm is not None else x

    def forward(self, tokens, enc=None, enc_pad=None):
        x = self.embed(tokens)
        if self.decoder:
            for layer in self.layers:
                x = layer(x, enc, enc_pad)
        else:
            pad = tokens.eq(self.padding_idx)
            for layer in self.layers:
                x = layer(x, pad if pad.any() else None)
        return self._end(x)

    def step(self, tokens, enc, enc_pad, buffers):
        """The decoder's output for the last of `tokens` [B, T] (positions from the whole prefix), and the buffers."""
        x = self.embed(tokens)[:, -1:]
        new = []
        for layer, buffer in zip(self.layers, buffers or [None] * len(self.layers)):
            x, b = layer.step(x, enc, enc_pad, buffer)
            new.append(b)
        return self._end(x), new


class LightConvModel(nn.Module):
    """Source tokens [B, S] and previous target tokens [B, T] (fairseq's prev_output_tokens) to logits [B, T, |V|]."""

    def __init__(self, args: LightConvArgs, src_vocab: int, tgt_vocab: int, padding_idx: int, seed: int = 1):
        super().__init__()
        torch.manual_seed(seed)
        self.args = args
        for pre in ("encoder", "decoder"):
            if getattr(args, f"{pre}_conv_dim") != getattr(args, f"{pre}_embed_dim"):
                raise ValueError(f"{pre}_conv_dim must be {pre}_embed_dim here")
        if args.share_all_embeddings:
            args.share_decoder_input_output_embed = True  # fairseq's LightConvModel.build_model sets it so
        enc_embed, dec_embed = build_embeddings(args, src_vocab, tgt_vocab, padding_idx)
        self.encoder = Stack(args, enc_embed, padding_idx, decoder=False)
        self.decoder = Stack(args, dec_embed, padding_idx, decoder=True)
        self.decoder.output_projection = build_output_layer(args, dec_embed, tgt_vocab)

    def logits(self, f):
        return output_logits(self.decoder, f)

    def forward(self, src_tokens, prev_output_tokens):
        pad = src_tokens.eq(self.encoder.padding_idx)
        enc = self.encoder(src_tokens)
        return self.logits(self.decoder(prev_output_tokens, enc, pad))

    def checkpoint_tensors(self) -> dict:
        """The state_dict under fairseq's names: a layer's conv block's modules sit on the layer itself."""
        out = {}
        for k, v in self.state_dict().items():
            out[k.replace(".block.", ".")] = v.detach().contiguous()
        return out

    def load_checkpoint_tensors(self, tensors: dict, strict: bool = True):
        names = {k.replace(".block.", "."): k for k in self.state_dict()}
        missing = set(names) - set(tensors)
        extra = set(tensors) - set(names)
        if strict and (missing or extra):
            raise KeyError(f"missing {sorted(missing)}, unexpected {sorted(extra)}")
        self.load_state_dict({names[k]: v for k, v in tensors.items() if k in names}, strict=strict)


def build(args: LightConvArgs, src_vocab: int, tgt_vocab: int, padding_idx: int, seed: int = 1) -> LightConvModel:
    return LightConvModel(args, src_vocab, tgt_vocab, padding_idx, seed)


def load_args(d: dict) -> LightConvArgs:
    known = {k: v for k, v in d.items() if k in LightConvArgs.__dataclass_fields__}
    return LightConvArgs(**known)
