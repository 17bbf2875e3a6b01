"""
A reference fairseq translator in PyTorch, independent of frost's TypeScript: it reads the converted folder itself
(model.safetensors parsed by ../marian/marian_files.py, fairseq.json, dict.SRC.txt and dict.TGT.txt) and runs the model as fairseq does,
restated in python/frost_torch/transformer.py or, for fairseq.json's arch `lightconv*`, lightconv.py (fairseq 0.12's
equations and key names; frost's heads from python/frost_heads, whose frozen matrices are rebuilt from the seed):

  source ids  = dict[tokenize_line(line)] (unknown words → <unk> = 3) + [</s> = 2]     (Dictionary.encode_line)
  decoder     = from </s> (prev_output_tokens start with eos; sequence_generator's bos is eos)
  positions   = fairseq's sinusoids from padding_idx + 1 = 2 (make_positions)
  search      = log_softmax over the whole dictionary, then <pad> → −inf (sequence_generator)
  lightconv   = the decoder run one step at a time with each convolution's input buffer, as fairseq-generate runs
                it (incremental_state: the softmax over all K taps, then only the taps that have an input), each
                hypothesis's buffers kept under its prefix

Search is frost's documented search (the Marian reference's, core/decode), so that the comparison is of the model,
token for token. Prints one JSON line per sentence: {"source": [ids], "tokens": [symbols], "log_prob": float};
fairseq's own <s> (id 0) is printed as frost names it, '<s>@fairseq'.

Usage: fairseq_reference.py FOLDER SENTENCES_FILE --beam K [--max-len N]
"""

import argparse
import json
import math
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "marian"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from marian_files import read_safetensors  # noqa: E402
from marian_reference import beam_search, greedy  # noqa: E402
from frost_torch import lightconv  # noqa: E402
from frost_torch.transformer import build, load_args  # noqa: E402

torch.set_num_threads(1)
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
BOS, PAD, EOS, UNK = range(4)


def read_dict(path):
    with open(path, encoding="utf-8") as f:
        return SPECIALS + [line.rstrip().rsplit(" ", 1)[0] for line in f if line.strip()]


class Fairseq:
    def __init__(self, folder):
        with open(os.path.join(folder, "fairseq.json")) as f:
            meta = json.load(f)
        src, tgt = meta["task"]["source_lang"], meta["task"]["target_lang"]
        self.src_words = read_dict(os.path.join(folder, f"dict.{src}.txt"))
        self.tgt_words = read_dict(os.path.join(folder, f"dict.{tgt}.txt"))
        self.src_index = {w: i for i, w in enumerate(self.src_words)}
        tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
        tensors = {k: v for k, v in tensors.items() if not re.search(r"\.(version|_float_tensor)$", k)}
        self.incremental = str(meta["model"]["arch"]).startswith("lightconv")
        if self.incremental:
            args = lightconv.load_args(meta["model"])
            self.model = lightconv.build(args, len(self.src_words), len(self.tgt_words), PAD)
            self.model.load_checkpoint_tensors(tensors)
        else:
            args = load_args(meta["model"])
            self.model = build(args, len(self.src_words), len(self.tgt_words), PAD)
            self.model.load_state_dict(tensors, strict=True)
        self.model.eval()
        self.start = EOS
        self.eos = EOS

    def source_ids(self, line):
        words = re.sub(r"\s+", " ", line).strip().split()
        return [self.src_index.get(w, UNK) for w in words] + [EOS]

    def encode(self, ids):
        src = torch.tensor([ids])
        self.buffers = {(): None}  # lightconv: each prefix's convolution input buffers, per layer
        return (src, self.model.encoder(src))

    def step(self, prefix, out, pad):
        """lightconv's decoder output for the last token of each row, from the buffers of the row's prefix."""
        states = [self.buffers[tuple(r[:-1].tolist())] for r in prefix]
        layers = len(self.model.decoder.layers)
        buffers = None
        if states[0] is not None:
            buffers = [None if states[0][l] is None else torch.cat([s[l] for s in states]) for l in range(layers)]
        f, new = self.model.decoder.step(prefix, out, pad, buffers)
        for i, r in enumerate(prefix):
            self.buffers[tuple(r.tolist())] = [None if b is None else b[i : i + 1] for b in new]
        return f

    def next_log_probs(self, enc, prefix):
        src, out = enc
        rows = prefix.shape[0]
        memory, pad = out.expand(rows, -1, -1), src.eq(PAD).expand(rows, -1)
        if self.incremental:
            last = self.step(prefix, memory, pad)[:, -1]
        else:
            last = self.model.decoder(prefix, memory, pad)[:, -1]
        head = self.model.decoder.output_projection
        if isinstance(head, torch.nn.Linear):
            logits = head(last)
        else:
            logits = head(last, self.model.decoder.embed_tokens.weight if head.uses_embedding else None)
        lp = torch.log_softmax(logits.double(), dim=-1)
        lp[:, PAD] = -math.inf
        return lp

    def symbol(self, i):
        return "<s>@fairseq" if i == BOS else self.tgt_words[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("sentences")
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--beams", help="several beam widths in one process (torch starts once), e.g. 1,4; each line says its beam")
    ap.add_argument("--max-len", type=int, default=200)
    args = ap.parse_args()
    beams = [int(b) for b in args.beams.split(",")] if args.beams else [args.beam]
    m = Fairseq(args.folder)
    with open(args.sentences, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f]
    with torch.no_grad():
        for beam in beams:
            for line in sentences:
                ids = m.source_ids(line)
                enc = m.encode(ids)
                cap = max(0, min(args.max_len, math.floor(2 * len(ids) + 10)))
                if beam == 1:
                    out, logp = greedy(m, enc, cap, [])
                else:
                    out, logp = beam_search(m, enc, beam, cap, [], 1.0)
                row = {"source": ids, "tokens": [m.symbol(i) for i in out], "log_prob": logp}
                if args.beams:
                    row["beam"] = beam
                print(json.dumps(row, ensure_ascii=False))
                sys.stdout.flush()

if __name__ == "__main__":
    main()
