#!/usr/bin/python3
"""
PyTorch peer of frost's LightConv (and, through bench/peer/dynamicconv.py, DynamicConv) for bench/train-speed.ts
(`npm run bench:train -- --arch lightconv`): the model of Wu et al. (2019), "Pay Less Attention with Lightweight
and Dynamic Convolutions", written in plain PyTorch as fairseq writes it (fairseq is what PyTorch users of these
models run, and is not installed here), timed the same way as bench/peer/rnn_attn.py (whose reader and timing loop
it uses).

    /usr/bin/python3 bench/peer/lightconv.py --batches FILE --head learned --steps 10 --warmup 2 --threads 2 \
        [--conv expanded|unfold] \
        --config '{"encoderLayers":3,"decoderLayers":3,"model":256,"heads":4,"ff":1024,"encoderKernels":[3,7,15],
                   "decoderKernels":[3,7,15],"glu":true,"weightDropout":0.1,"dropout":0.1,"attentionDropout":0.1,
                   "activationDropout":0,"norm":"post","positions":"sinusoidal","maxPositions":256}'

The model follows fairseq/models/lightconv.py (LightConvEncoderLayer, LightConvDecoderLayer), the convolutions
fairseq/modules/lightweight_convolution.py (LightweightConv1dTBC) and fairseq/modules/dynamic_convolution.py
(DynamicConv1dTBC, DynamicConv_scripatable), facebookresearch/fairseq at 3d262bb2, all in time-major T x B x C:
  embed    x = dropout(sqrt(d) E[token] + P[position]); P sinusoidal ([sin | cos], frost's layout, as
           bench/peer/transformer.py) or a learned table; jointEmbedding: one nn.Embedding for source and target
  conv     residual; (norm=pre: LayerNorm); dropout(inputDropout, fairseq's input_dropout, 0 unless the config
  block    says); Linear(d -> 2d) + GLU (glu) or Linear(d -> d); source padding zeroed (encoder); the convolution
           with H = heads, kernel width K of the layer, padding_l = K//2 (odd K) or (K-1)//2 (even) in the
           encoder, K-1 (causal) in the decoder; Linear(d -> d); dropout; + residual; (norm=post: LayerNorm)
           lightweight: one kernel [H, K] per layer, softmax over K, DropConnect (weightDropout), no bias
           dynamic:     kernels softmax_K(Linear(d -> H*K, no bias)(x)) per position, DropConnect
  attention (decoder) residual; (pre LN); nn.MultiheadAttention over the encoder output (attentionDropout,
           source padding as key_padding_mask, as bench/peer/transformer.py's layers); dropout; + residual; (post LN)
  ffn      residual; (pre LN); Linear(d -> ff), ReLU, dropout(activationDropout), Linear(ff -> d); dropout; + residual;
           (post LN). norm=pre: one more LayerNorm ends each stack.
  head     bench/peer/heads.py over every padded target position (--targets padded, what fairseq does) or only
           the real ones (--targets packed, what frost does)
  loss     label-smoothed cross-entropy, masked, summed / tokens; Adam with the recipe's betas and clipping
Initialisation as fairseq's: Linear xavier-uniform with zero bias, embeddings N(0, 1/d), kernels xavier-uniform.

--conv picks how the convolution runs (default expanded, or the FROST_PEER_CONV environment variable, which is how
bench:train's peer is switched):
  expanded  fairseq's CPU training path, `_forward_expanded`: the kernels written into a band matrix
            [B*H, T, T+K-1] with as_strided, narrowed to [B*H, T, T], and one bmm with x [B*H, T, C/H] (quadratic
            in T). LightweightConv1dTBC always runs it in training; DynamicConv1dTBC runs it for T <= 512 and
            unfolds above, as here. DropConnect: lightweight drops entries of the band matrix, dynamic the kernels.
  unfold    `_forward_unfolded`: x padded and viewed as windows [T*B*H, C/H, K] with as_strided, one bmm with the
            kernels [T*B*H, K, 1] (linear in T*K). Note that fairseq's lightconv.py builds its dynamic layers
            from DynamicConv_scripatable, whose only path this is: current fairseq trains DynamicConv this way.
"""
import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # the peers import each other; leave no __pycache__ in the tree
from heads import make_head  # noqa: E402
from rnn_attn import main  # noqa: E402
from transformer import pack_targets, sinusoidal, target_loss  # noqa: E402

CONVS = ('expanded', 'unfold')
KINDS = ('lightweight', 'dynamic')
# DynamicConv1dTBC.forward: `unfold = x.size(0) > 512` (the band matrix's memory is quadratic in T).
DYNAMIC_EXPANDED_MAX_T = 512


def unfold1d(F, x, K, padding_l):
    """fairseq/modules/unfold.py: x [T, B, C] as its windows [T, B, C, K] (a strided view of the padded input)."""
    if K == 1:
        return x.unsqueeze(3)
    T, B, C = x.shape
    x = F.pad(x, (0, 0, 0, 0, padding_l, K - 1 - padding_l))
    return x.as_strided((T, B, C, K), (B * C, C, 1, B * C))


def band(w, T, K, P):
    """
    The band matrix of `_forward_expanded`: kernels w [B*H, T, K] written as rows of [B*H, T, T+K-1] (row t starts at
    column t), narrowed to the T columns that face x: [B*H, T, T].
    """
    BH = w.shape[0]
    expanded = w.new_zeros(BH, T, T + K - 1, requires_grad=False)
    expanded.as_strided((BH, T, K), (T * (T + K - 1), T + K, 1)).copy_(w)
    return expanded.narrow(2, P, T)


def lightweight_expanded(torch, F, x, weight, P, drop, training):
    """LightweightConv1dTBC._forward_expanded (weight_softmax, no bias): x [T, B, C], weight [H, K]."""
    T, B, C = x.shape
    H, K = weight.shape
    w = F.softmax(weight, dim=1)
    w = w.view(1, H, K).expand(T * B, H, K).contiguous().view(T, B * H, K).transpose(0, 1)
    x = x.view(T, B * H, C // H).transpose(0, 1)
    if K > T and P == K - 1:
        w = w.narrow(2, K - T, T)
        K, P = T, T - 1
    w = F.dropout(band(w, T, K, P), drop, training)
    return torch.bmm(w, x).transpose(0, 1).contiguous().view(T, B, C)


def lightweight_unfolded(torch, F, x, weight, P, drop, training):
    """LightweightConv1dTBC._forward_unfolded (weight_softmax, no bias)."""
    T, B, C = x.shape
    H, K = weight.shape
    windows = unfold1d(F, x, K, P).view(T * B * H, C // H, K)
    w = F.softmax(weight, dim=1).view(1, H, K).expand(T * B, H, K).contiguous().view(T * B * H, K, 1)
    return torch.bmm(windows, F.dropout(w, drop, training)).view(T, B, C)


def dynamic_expanded(torch, F, x, logits, H, P, drop, training):
    """DynamicConv1dTBC._forward_expanded (weight_softmax, no renorm_padding): logits [T, B, H*K] made from x."""
    T, B, C = x.shape
    w = F.dropout(F.softmax(logits.view(T * B * H, -1), dim=1), drop, training)
    K = w.shape[1]
    w = w.view(T, B * H, K).transpose(0, 1)
    x = x.view(T, B * H, C // H).transpose(0, 1)
    if K > T and P == K - 1:
        w = w.narrow(2, K - T, T)
        K, P = T, T - 1
    return torch.bmm(band(w, T, K, P), x).transpose(0, 1).contiguous().view(T, B, C)


def dynamic_unfolded(torch, F, x, logits, H, P, drop, training):
    """
    DynamicConv_scripatable._forward_unfolded (weight_softmax, no renorm_padding). As there, a causal kernel longer
    than the sequence is cut to its last T taps before the softmax.
    """
    T, B, C = x.shape
    w = logits.view(T * B * H, -1)
    K = w.shape[1]
    if K > T and P == K - 1:
        w = w.narrow(1, K - T, T)
        K, P = T, T - 1
    windows = unfold1d(F, x, K, P).view(T * B * H, C // H, K)
    w = F.dropout(F.softmax(w, dim=1), drop, training)
    return torch.bmm(windows, w.unsqueeze(2)).view(T, B, C)


def build(torch, nn, src_vocab, tgt_vocab, head, cfg, kind='lightweight', conv='expanded'):
    d, p, H = cfg['model'], cfg['dropout'], cfg['heads']
    F = nn.functional
    pre = cfg['norm'] == 'pre'
    smoothing = cfg.get('labelSmoothing', 0.0)
    joint = cfg.get('jointEmbedding', False)
    input_drop = cfg.get('inputDropout', 0.0)
    if joint and src_vocab != tgt_vocab:
        raise SystemExit(f'jointEmbedding needs one vocabulary, got {src_vocab} and {tgt_vocab}')
    if d % H:
        raise SystemExit(f'{d} channels do not split into {H} heads')

    def kernels(key, layers):
        ks = list(cfg[key])
        return ks * layers if len(ks) == 1 else ks  # fairseq: one width stands for every layer

    def linear(n_in, n_out, bias=True):
        m = nn.Linear(n_in, n_out, bias)
        nn.init.xavier_uniform_(m.weight)
        if bias:
            nn.init.constant_(m.bias, 0.0)
        return m

    class Conv(nn.Module):
        """LightweightConv1dTBC / DynamicConv1dTBC over x [T, B, d]."""

        def __init__(self, K, padding_l):
            super().__init__()
            self.K, self.P = K, padding_l
            if kind == 'lightweight':
                self.weight = nn.Parameter(torch.empty(H, 1, K))
                nn.init.xavier_uniform_(self.weight)
            else:
                self.weight_linear = linear(d, H * K, bias=False)

        def forward(self, x):
            drop = cfg['weightDropout']
            if kind == 'lightweight':
                f = lightweight_expanded if conv == 'expanded' else lightweight_unfolded
                return f(torch, F, x, self.weight.view(H, self.K), self.P, drop, self.training)
            expanded = conv == 'expanded' and x.shape[0] <= DYNAMIC_EXPANDED_MAX_T
            f = dynamic_expanded if expanded else dynamic_unfolded
            return f(torch, F, x, self.weight_linear(x), H, self.P, drop, self.training)

    class Block(nn.Module):
        """One residual block: residual + dropout(f(LN?(x))), LayerNorm before (pre) or after (post)."""

        def __init__(self, body):
            super().__init__()
            self.body = body
            self.norm = nn.LayerNorm(d)

        def forward(self, x, *rest):
            y = self.body(self.norm(x) if pre else x, *rest)
            x = x + F.dropout(y, p, self.training)
            return x if pre else self.norm(x)

    class ConvBody(nn.Module):
        def __init__(self, K, padding_l):
            super().__init__()
            self.linear1 = linear(d, 2 * d if cfg['glu'] else d)
            self.conv = Conv(K, padding_l)
            self.linear2 = linear(d, d)

        def forward(self, x, pad=None):
            x = self.linear1(F.dropout(x, input_drop, self.training))
            if cfg['glu']:
                x = F.glu(x, dim=2)
            if pad is not None:  # the encoder's source padding, [S, B, 1]
                x = x.masked_fill(pad, 0)
            return self.linear2(self.conv(x))

    class FfnBody(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = linear(d, cfg['ff'])
            self.fc2 = linear(cfg['ff'], d)

        def forward(self, x):
            return self.fc2(F.dropout(F.relu(self.fc1(x)), cfg['activationDropout'], self.training))

    class AttentionBody(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, H, dropout=cfg['attentionDropout'])

        def forward(self, x, memory, src_pad):
            return self.attn(x, memory, memory, key_padding_mask=src_pad, need_weights=False)[0]

    class EncoderLayer(nn.Module):
        def __init__(self, K):
            super().__init__()
            self.conv = Block(ConvBody(K, K // 2 if K % 2 == 1 else (K - 1) // 2))
            self.ffn = Block(FfnBody())

        def forward(self, x, pad):
            return self.ffn(self.conv(x, pad))

    class DecoderLayer(nn.Module):
        def __init__(self, K):
            super().__init__()
            self.conv = Block(ConvBody(K, K - 1))
            self.attn = Block(AttentionBody())
            self.ffn = Block(FfnBody())

        def forward(self, x, memory, src_pad):
            return self.ffn(self.attn(self.conv(x), memory, src_pad))

    def embedding(n):
        m = nn.Embedding(n, d)
        nn.init.normal_(m.weight, mean=0, std=d ** -0.5)
        return m

    class LightConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.tgt_emb = embedding(tgt_vocab)
            self.src_emb = self.tgt_emb if joint else embedding(src_vocab)
            if cfg['positions'] == 'learned':
                self.src_pos = nn.Embedding(cfg['maxPositions'], d)
                self.tgt_pos = nn.Embedding(cfg['maxPositions'], d)
            self.encoder = nn.ModuleList(
                [EncoderLayer(k) for k in kernels('encoderKernels', cfg['encoderLayers'])])
            self.decoder = nn.ModuleList(
                [DecoderLayer(k) for k in kernels('decoderKernels', cfg['decoderLayers'])])
            if pre:
                self.encoder_norm = nn.LayerNorm(d)
                self.decoder_norm = nn.LayerNorm(d)
            self.head = make_head(torch, nn, head, d, d, tgt_vocab, p, self.tgt_emb)

        def embed(self, E, P, ids):
            """[L, B, d], time-major as fairseq's layers take it."""
            L = ids.shape[1]
            pos = P(torch.arange(L)) if P is not None else sinusoidal(torch, L, d)
            return F.dropout(E(ids) * math.sqrt(d) + pos[None], p, self.training).transpose(0, 1)

        def forward(self, b):
            S = b['S']
            src_pad = torch.arange(S)[None, :] >= b['src_len'][:, None]  # [B, S], True = padding
            if not src_pad.any():  # fairseq passes no mask when nothing is padded
                src_pad = None
            x = self.embed(self.src_emb, getattr(self, 'src_pos', None), b['src'])
            conv_pad = None if src_pad is None else src_pad.transpose(0, 1)[:, :, None]
            for layer in self.encoder:
                x = layer(x, conv_pad)
            memory = self.encoder_norm(x) if pre else x
            y = self.embed(self.tgt_emb, getattr(self, 'tgt_pos', None), b['tgt_in'])
            for layer in self.decoder:
                y = layer(y, memory, src_pad)
            if pre:
                y = self.decoder_norm(y)
            return target_loss(F, self.head, y.transpose(0, 1), b, smoothing)

    return LightConv()


def run(kind):
    """Times `kind` ('lightweight' or 'dynamic') convolutions, run the way --conv says."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument('--conv', choices=CONVS, default=os.environ.get('FROST_PEER_CONV', 'expanded'))
    known, rest = ap.parse_known_args()
    sys.argv[1:] = rest  # the rest is rnn_attn.main's

    def build_kind(torch, nn, src_vocab, tgt_vocab, head, cfg):
        return build(torch, nn, src_vocab, tgt_vocab, head, cfg, kind, known.conv)

    build_kind.pack_targets = pack_targets
    build_kind.report = {'conv': f'{kind} {known.conv}'}
    return main(build_kind)


if __name__ == '__main__':
    sys.exit(run('lightweight'))
