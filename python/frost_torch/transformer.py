"""fairseq's Transformer (fairseq 0.12's `transformer` architecture) restated in plain PyTorch, with one of
frost's heads as its output layer.

Plain PyTorch so that it runs where fairseq does not install (here: no PyPI), and restated from fairseq's
equations and parameter names rather than imported, so that a checkpoint it writes has the keys and
shapes a fairseq `frost_transformer` checkpoint has (python/fairseq_frost): `encoder.embed_tokens.weight`,
`encoder.layers.0.self_attn.k_proj.weight`, ..., the head's parameters under `decoder.output_projection.`.
The frozen matrix of a frozen head is a non-persistent buffer: it is never in the checkpoint.

With `frost_head` empty the output layer is plain fairseq's: `decoder.output_projection`, an nn.Linear without bias,
its weight the decoder's embedding when share_decoder_input_output_embed (or share_all_embeddings) is set.
"""

import math
from dataclasses import asdict, dataclass, field
import torch
import torch.nn.functional as F
from torch import nn

from .embeddings import build_embeddings, build_output_layer, output_logits


@dataclass
class TransformerArgs:
    """The fairseq arguments this model reads, under fairseq's names (a checkpoint's `args`/`cfg`)."""

    encoder_embed_dim: int = 64
    encoder_ffn_embed_dim: int = 128
    encoder_layers: int = 2
    encoder_attention_heads: int = 4
    decoder_embed_dim: int = 64
    decoder_ffn_embed_dim: int = 128
    decoder_layers: int = 2
    decoder_attention_heads: int = 4
    encoder_normalize_before: bool = False
    decoder_normalize_before: bool = False
    share_all_embeddings: bool = False
    share_decoder_input_output_embed: bool = False
    no_scale_embedding: bool = False
    layernorm_embedding: bool = False
    activation_fn: str = "relu"
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    max_source_positions: int = 1024
    max_target_positions: int = 1024
    frost_head: str = "fixed-l2"
    frost_head_seed: int = 1
    frost_head_options: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"arch": "frost_transformer" if self.frost_head else "transformer", **asdict(self)}


def sinusoidal_table(num: int, dim: int, padding_idx: int) -> torch.Tensor:
    """fairseq's SinusoidalPositionalEmbedding.get_embedding: sines then cosines, row `padding_idx` zero."""
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freqs = torch.exp(torch.arange(half, dtype=torch.float) * -step)
    angles = torch.arange(num, dtype=torch.float).unsqueeze(1) * freqs.unsqueeze(0)
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).view(num, -1)
    if dim % 2 == 1:
        table = torch.cat([table, torch.zeros(num, 1)], dim=1)
    table[padding_idx, :] = 0
    return table


class SinusoidalPositions(nn.Module):
    """Positions count from padding_idx + 1 over the non-padding tokens (fairseq's make_positions)."""

    def __init__(self, dim: int, padding_idx: int, max_positions: int):
        super().__init__()
        self.padding_idx = padding_idx
        self.register_buffer("table", sinusoidal_table(max_positions + padding_idx + 1, dim, padding_idx), False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = tokens.ne(self.padding_idx).int()
        positions = (torch.cumsum(mask, dim=1) * mask).long() + self.padding_idx
        return self.table[positions]


class MultiheadAttention(nn.Module):
    """fairseq's MultiheadAttention: q, k, v and out projections with biases, q scaled by head_dim^-0.5."""

    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.head_dim, self.dropout = heads, dim // heads, dropout
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, query, key, key_padding_mask=None, causal=False):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        split = lambda x, T: x.view(B, T, self.heads, self.head_dim).transpose(1, 2)  # noqa: E731
        q = split(self.q_proj(query) * self.head_dim**-0.5, Tq)
        k, v = split(self.k_proj(key), Tk), split(self.v_proj(key), Tk)
        scores = q @ k.transpose(-1, -2)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        if causal:
            future = torch.triu(torch.ones(Tq, Tk, dtype=torch.bool, device=query.device), diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
        weights = F.dropout(torch.softmax(scores, dim=-1), self.dropout, self.training)
        return self.out_proj((weights @ v).transpose(1, 2).reshape(B, Tq, D))


def residual(x, norm, pre_norm, fn, dropout, training):
    """A sublayer `fn` with its residual and layer norm: pre-norm x + F(LN(x)) or post-norm LN(x + F(x))."""
    if pre_norm:
        return x + F.dropout(fn(norm(x)), dropout, training)
    return norm(x + F.dropout(fn(x), dropout, training))


class Layer(nn.Module):
    """One encoder or decoder layer; post-norm LN(x + F(x)) as in the paper, or pre-norm x + F(LN(x))."""

    def __init__(self, dim, ffn, heads, args: TransformerArgs, decoder: bool):
        super().__init__()
        self.args, self.decoder = args, decoder
        self.pre_norm = args.decoder_normalize_before if decoder else args.encoder_normalize_before
        self.self_attn = MultiheadAttention(dim, heads, args.attention_dropout)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        if decoder:
            self.encoder_attn = MultiheadAttention(dim, heads, args.attention_dropout)
            self.encoder_attn_layer_norm = nn.LayerNorm(dim)
        self.fc1, self.fc2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def _block(self, x, norm, fn):
        return residual(x, norm, self.pre_norm, fn, self.args.dropout, self.training)

    def forward(self, x, pad_mask, enc=None, enc_pad_mask=None):
        x = self._block(x, self.self_attn_layer_norm, lambda y: self.self_attn(y, y, pad_mask, causal=self.decoder))
        if self.decoder:
            x = self._block(x, self.encoder_attn_layer_norm, lambda y: self.encoder_attn(y, enc, enc_pad_mask))
        act = getattr(F, self.args.activation_fn)
        ffn = lambda y: self.fc2(F.dropout(act(self.fc1(y)), self.args.activation_dropout, self.training))  # noqa: E731
        return self._block(x, self.final_layer_norm, ffn)


class Stack(nn.Module):
    """fairseq's TransformerEncoder or TransformerDecoder, less the output layer."""

    def __init__(self, args: TransformerArgs, embed_tokens: nn.Embedding, padding_idx: int, decoder: bool):
        super().__init__()
        pre = "decoder" if decoder else "encoder"
        dim = getattr(args, f"{pre}_embed_dim")
        self.padding_idx, self.decoder, self.args = padding_idx, decoder, args
        self.embed_tokens = embed_tokens
        self.embed_scale = 1.0 if args.no_scale_embedding else math.sqrt(dim)
        max_positions = args.max_target_positions if decoder else args.max_source_positions
        self.embed_positions = SinusoidalPositions(dim, padding_idx, max_positions)
        ffn, heads = getattr(args, f"{pre}_ffn_embed_dim"), getattr(args, f"{pre}_attention_heads")
        self.layers = nn.ModuleList(Layer(dim, ffn, heads, args, decoder) for _ in range(getattr(args, f"{pre}_layers")))
        self.layer_norm = nn.LayerNorm(dim) if getattr(args, f"{pre}_normalize_before") else None
        self.layernorm_embedding = nn.LayerNorm(dim) if args.layernorm_embedding else None

    def forward(self, tokens, enc=None, enc_pad_mask=None):
        pad = tokens.eq(self.padding_idx)
        x = self.embed_scale * self.embed_tokens(tokens) + self.embed_positions(tokens)
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = F.dropout(x, self.args.dropout, self.training)
        for layer in self.layers:
            x = layer(x, None if self.decoder else pad, enc, enc_pad_mask)
        return self.layer_norm(x) if self.layer_norm is not None else x


class FrostTransformer(nn.Module):
    """Source tokens [B, S] and previous target tokens [B, T] (fairseq's prev_output_tokens) to logits [B, T, |V|]."""

    def __init__(self, args: TransformerArgs, src_vocab: int, tgt_vocab: int, padding_idx: int, seed: int = 1):
        super().__init__()
        torch.manual_seed(seed)
        self.args = args
        enc_embed, dec_embed = build_embeddings(args, src_vocab, tgt_vocab, padding_idx)
        self.encoder = Stack(args, enc_embed, padding_idx, decoder=False)
        self.decoder = Stack(args, dec_embed, padding_idx, decoder=True)
        self.decoder.output_projection = build_output_layer(args, dec_embed, tgt_vocab)

    def forward(self, src_tokens, prev_output_tokens):
        pad = src_tokens.eq(self.encoder.padding_idx)
        enc = self.encoder(src_tokens)
        return output_logits(self.decoder, self.decoder(prev_output_tokens, enc, pad))

    def checkpoint_tensors(self) -> dict:
        """The state_dict as fairseq names it, each tensor once (a shared embedding under both names, as fairseq
        saves it); no frozen matrix, since those buffers are not persistent."""
        return {k: v.detach().contiguous() for k, v in self.state_dict().items()}


def build(args: TransformerArgs, src_vocab: int, tgt_vocab: int, padding_idx: int, seed: int = 1) -> FrostTransformer:
    return FrostTransformer(args, src_vocab, tgt_vocab, padding_idx, seed)


def load_args(d: dict) -> TransformerArgs:
    known = {k: v for k, v in d.items() if k in TransformerArgs.__dataclass_fields__}
    return TransformerArgs(**known)

