"""
A reference Marian translator in PyTorch, written from the equations of transformers' modeling_marian.py and
tokenization_marian.py, independent of frost: it reads the Hugging Face folder itself (config.json,
model.safetensors parsed by marian_files.py, vocab.json, source.spm through `spm_encode`), never a frost run folder.

  source ids  = vocab.json[spm pieces] (unknown pieces → <unk>) + [eos]            (MarianTokenizer)
  encoder     = post-norm layers over s·E[ids] + P[0..S-1]; s = √d when scale_embedding; P sinusoidal, sin in the
                first half and cos in the second (MarianSinusoidalPositionalEmbedding)
  layer       = LN(x + SelfAttn(x)), LN(x + fc2(act(fc1(x))))                     (MarianEncoderLayer)
  decoder     = the same with causal self-attention and attention over the encoder (MarianDecoderLayer), from
                decoder_start_token_id (= pad)
  logits      = h · sharedᵀ + final_logits_bias; log_softmax; bad_words_ids (pad) → −inf

Search is frost's documented search (core/decode), so that the comparison is of the model, token for token:
greedy (argmax, lowest id on ties) and fairseq-style beam search (a </s> ranked within the top K finishes a
hypothesis, scored logProb / (len + 1)^lengthPenalty; an input is done with K finished; at the length cap
min(maxLen, 2·|source| + 10) every live row is closed with </s>).

Usage: marian_reference.py MODEL_DIR SENTENCES_FILE --beam K [--max-len N] [--length-penalty 1.0]
Prints one JSON line per sentence: {"source": [pieces], "pieces": [output pieces], "log_prob": float}.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import torch
from marian_files import read_safetensors, sinusoids

torch.set_num_threads(1)

ACT = {
    "swish": torch.nn.functional.silu,
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "relu": torch.relu,
}


class Marian:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = json.load(f)
        self.w = read_safetensors(os.path.join(folder, "model.safetensors"))
        with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        self.pieces = {i: p for p, i in self.vocab.items()}
        self.folder = folder
        c = self.cfg
        self.d = c["d_model"]
        self.scale = math.sqrt(self.d) if c.get("scale_embedding", False) else 1.0
        self.act = ACT[c["activation_function"]]
        self.E = self.w["model.shared.weight"]
        self.bias = self.w["final_logits_bias"][0]
        self.P = sinusoids(c["max_position_embeddings"], self.d)
        self.pad = c["pad_token_id"]
        self.eos = c["eos_token_id"]
        self.start = c["decoder_start_token_id"]
        self.unk = self.vocab["<unk>"]
        self.bad = [ids[0] for ids in c.get("bad_words_ids") or [] if len(ids) == 1]

    def lin(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(x, (self.d,), self.w[name + ".weight"], self.w[name + ".bias"], 1e-5)

    def attention(self, x, kv, name, heads, mask):
        B, Lq, _ = x.shape
        Lk = kv.shape[1]
        hd = self.d // heads
        q = self.lin(x, name + ".q_proj").view(B, Lq, heads, hd).transpose(1, 2)
        k = self.lin(kv, name + ".k_proj").view(B, Lk, heads, hd).transpose(1, 2)
        v = self.lin(kv, name + ".v_proj").view(B, Lk, heads, hd).transpose(1, 2)
        scores = (q @ k.transpose(2, 3)) * hd**-0.5
        if mask is not None:
            scores = scores + mask
        a = torch.softmax(scores, dim=-1) @ v
        return self.lin(a.transpose(1, 2).reshape(B, Lq, self.d), name + ".out_proj")

    def encode(self, ids):
        c = self.cfg
        S = ids.shape[1]
        x = self.E[ids] * self.scale + self.P[:S]
        for l in range(c["encoder_layers"]):
            p = f"model.encoder.layers.{l}"
            x = self.ln(x + self.attention(x, x, p + ".self_attn", c["encoder_attention_heads"], None), p + ".self_attn_layer_norm")
            x = self.ln(x + self.lin(self.act(self.lin(x, p + ".fc1")), p + ".fc2"), p + ".final_layer_norm")
        return x

    def next_log_probs(self, enc, prefix):
        """Log-probabilities [rows, V] of the next token after each row's prefix [rows, t] (decoder start first)."""
        c = self.cfg
        rows, T = prefix.shape
        y = self.E[prefix] * self.scale + self.P[:T]
        causal = torch.triu(torch.full((T, T), torch.finfo(torch.float32).min), diagonal=1)
        memory = enc.expand(rows, -1, -1)
        for l in range(c["decoder_layers"]):
            p = f"model.decoder.layers.{l}"
            h = c["decoder_attention_heads"]
            y = self.ln(y + self.attention(y, y, p + ".self_attn", h, causal), p + ".self_attn_layer_norm")
            y = self.ln(y + self.attention(y, memory, p + ".encoder_attn", h, None), p + ".encoder_attn_layer_norm")
            y = self.ln(y + self.lin(self.act(self.lin(y, p + ".fc1")), p + ".fc2"), p + ".final_layer_norm")
        logits = y[:, -1] @ self.E.T + self.bias
        lp = torch.log_softmax(logits.double(), dim=-1)
        for t in self.bad:
            lp[:, t] = -math.inf
        return lp

    def source_pieces(self, sentences):
        spm = os.path.join(self.folder, "source.spm")
        text = "".join(s + "\n" for s in sentences)
        out = subprocess.run(
            ["spm_encode", f"--model={spm}", "--output_format=piece"],
            input=text.encode("utf-8"),
            stdout=subprocess.PIPE,
            check=True,
        ).stdout.decode("utf-8")
        return [line.split(" ") if line else [] for line in out.split("\n")[: len(sentences)]]

    def source_ids(self, pieces):
        return [self.vocab.get(p, self.unk) for p in pieces] + [self.eos]


def greedy(m, enc, cap, banned):
    prefix = [m.start]
    total = 0.0
    while True:
        lp = m.next_log_probs(enc, torch.tensor([prefix]))[0]
        for t in banned:
            lp[t] = -math.inf
        t = len(prefix) - 1
        if t >= cap:
            return prefix[1:], total + lp[m.eos].item()
        tok = int(torch.argmax(lp).item())  # the first maximum: lowest id on ties
        total += lp[tok].item()
        if tok == m.eos:
            return prefix[1:], total
        prefix.append(tok)


def beam_search(m, enc, K, cap, banned, length_penalty):
    rows = [([], 0.0)]  # (history, cumulative log-prob)
    finished = []

    def finish(history, logp):
        finished.append((logp / math.pow(len(history) + 1, length_penalty), logp, history))

    t = 0
    while rows:
        prefix = torch.tensor([[m.start] + h for h, _ in rows])
        lp = m.next_log_probs(enc, prefix)
        for b in banned:
            lp[:, b] = -math.inf
        if t >= cap:
            for (h, c), row in zip(rows, lp):
                finish(h, c + row[m.eos].item())
            break
        cands = []
        for r, ((h, c), row) in enumerate(zip(rows, lp)):
            vals, toks = torch.sort(row, descending=True, stable=True)
            for v, tok in zip(vals[: K + 1].tolist(), toks[: K + 1].tolist()):
                cands.append((c + v, r, tok))
        # Rank by score; equal scores keep the order above (row by row, lower id first).
        order = sorted(range(len(cands)), key=lambda i: -cands[i][0])[: 2 * K]
        for i in order[:K]:
            s, r, tok = cands[i]
            if s == -math.inf:
                break
            if tok == m.eos:
                finish(rows[r][0], s)
        if len(finished) >= K:
            break
        nxt = []
        for i in order:
            s, r, tok = cands[i]
            if len(nxt) == K or s == -math.inf:
                break
            if tok == m.eos:
                continue
            nxt.append((rows[r][0] + [tok], s))
        if not nxt and not finished:
            for (h, c), row in zip(rows, lp):
                finish(h, c + row[m.eos].item())
            break
        rows = nxt
        t += 1
    best = sorted(finished, key=lambda f: -f[0])[0]
    return best[2], best[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("sentences")
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--max-len", type=int, default=200)
    ap.add_argument("--length-penalty", type=float, default=1.0)
    ap.add_argument("--forbid-unk", action="store_true")
    ap.add_argument(
        "--runs",
        help="several decodes in one process (torch starts once): BEAM:unk|nounk,... e.g. 1:unk,4:nounk; each line"
        " then says its beam and whether <unk> was forbidden",
    )
    args = ap.parse_args()
    m = Marian(args.model)
    with open(args.sentences, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f]
    runs = (
        [(int(b), u == "nounk") for b, u in (r.split(":") for r in args.runs.split(","))]
        if args.runs
        else [(args.beam, args.forbid_unk)]
    )
    with torch.no_grad():
        for beam, forbid in runs:
            banned = [m.unk] if forbid else []
            for pieces in m.source_pieces(sentences):
                ids = m.source_ids(pieces)
                enc = m.encode(torch.tensor([ids]))
                cap = max(0, min(args.max_len, math.floor(2 * len(ids) + 10)))
                if beam == 1:
                    out, logp = greedy(m, enc, cap, banned)
                else:
                    out, logp = beam_search(m, enc, beam, cap, banned, args.length_penalty)
                row = {"source": pieces, "pieces": [m.pieces[i] for i in out], "log_prob": logp}
                if args.runs:
                    row.update(beam=beam, forbid_unk=forbid)
                print(json.dumps(row, ensure_ascii=False))
                sys.stdout.flush()

if __name__ == "__main__":
    main()
