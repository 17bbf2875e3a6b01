"""Trains a frost-headed Transformer on one process or many with PyTorch's DistributedDataParallel:

  torchrun --nproc_per_node 2 -m frost_torch.train_ddp --data ../shared/data/multi30k --src de --tgt en \\
      --head fixed-l2 --steps 200 --out runs/ddp

(PYTHONPATH=python; gloo on CPUs, nccl on GPUs; `torchrun --nnodes N --node_rank R --rdzv_endpoint HOST:PORT`
or `srun torchrun ...` on many machines, docs/scale.md). Each step every rank takes its own slice of one global
batch and DDP averages the gradients, so the ranks stay one model: after every step each rank's parameter digest
is gathered and written to steps.jsonl, and a step whose digests differ stops the run. The checkpoint is
fairseq's (`checkpoint_last.pt`: cfg, model) with fairseq's dictionaries; convert_checkpoint.py turns it into
safetensors and JSON for `frost import fairseq`.
"""

import argparse
import gzip
import hashlib
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from .dictionary import EOS, PAD, Dictionary
from .transformer import TransformerArgs, build


def read_lines(data: str, split: str, lang: str, limit: int) -> list:
    path = os.path.join(data, f"{split}.{lang}.gz")
    opener = gzip.open if os.path.exists(path) else open
    path = path if os.path.exists(path) else path[: -len(".gz")]
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.strip() for _, line in zip(range(limit), f)]


def pad_batch(rows: list) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)


def digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m frost_torch.train_ddp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a folder of train.LANG(.gz) files, one sentence per line")
    parser.add_argument("--src", required=True)
    parser.add_argument("--tgt", required=True)
    parser.add_argument("--lines", type=int, default=2000, help="training pairs read from the top of the files")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=16, help="sentence pairs per rank and step")
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--head", default="fixed-l2", help="frost's output head (frost_heads.HEADS)")
    parser.add_argument("--head-seed", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--share-all-embeddings", action="store_true")
    parser.add_argument("--out", required=True)
    opts = parser.parse_args(argv)

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    src_lines = read_lines(opts.data, "train", opts.src, opts.lines)
    tgt_lines = read_lines(opts.data, "train", opts.tgt, opts.lines)
    if opts.share_all_embeddings:
        src_dict = tgt_dict = Dictionary.build(src_lines + tgt_lines)
    else:
        src_dict, tgt_dict = Dictionary.build(src_lines), Dictionary.build(tgt_lines)
    args = TransformerArgs(
        encoder_embed_dim=opts.dim,
        decoder_embed_dim=opts.dim,
        encoder_ffn_embed_dim=2 * opts.dim,
        decoder_ffn_embed_dim=2 * opts.dim,
        encoder_layers=opts.layers,
        decoder_layers=opts.layers,
        share_all_embeddings=opts.share_all_embeddings,
        share_decoder_input_output_embed=opts.share_all_embeddings,
        frost_head=opts.head,
        frost_head_seed=opts.head_seed,
    )
    model = build(args, len(src_dict), len(tgt_dict), PAD, seed=opts.seed)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=opts.lr)
    pairs = [(src_dict.encode(s), tgt_dict.encode(t)) for s, t in zip(src_lines, tgt_lines)]
    os.makedirs(opts.out, exist_ok=True)
    log = open(os.path.join(opts.out, "steps.jsonl"), "w") if rank == 0 else None
    torch.manual_seed(opts.seed + rank)  # each rank its own dropout masks
    for step in range(1, opts.steps + 1):
        start = ((step - 1) * opts.batch * world + rank * opts.batch) % len(pairs)
        mine = [pairs[(start + i) % len(pairs)] for i in range(opts.batch)]
        src = pad_batch([s for s, _ in mine])
        target = pad_batch([t for _, t in mine])
        prev = pad_batch([[EOS] + t[:-1] for _, t in mine])  # fairseq's prev_output_tokens
        logits = ddp(src, prev)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        digests = [None] * world
        dist.all_gather_object(digests, digest(model))
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        if rank == 0:
            log.write(json.dumps({"step": step, "loss": mean_loss.item() / world, "digests": digests}) + "\n")
            log.flush()
        if len(set(digests)) != 1:
            print(f"step {step}: the ranks' parameters differ: {digests}", file=sys.stderr)
            return 1
    if rank == 0:
        log.close()
        src_dict.save(os.path.join(opts.out, f"dict.{opts.src}.txt"))
        tgt_dict.save(os.path.join(opts.out, f"dict.{opts.tgt}.txt"))
        cfg = {"model": args.as_dict(), "task": {"_name": "translation", "source_lang": opts.src, "target_lang": opts.tgt}}
        state = {"cfg": cfg, "args": None, "model": model.checkpoint_tensors(), "world_size": world}
        tmp = os.path.join(opts.out, f"checkpoint_last.pt.tmp-{os.getpid()}")
        torch.save(state, tmp)
        os.replace(tmp, os.path.join(opts.out, "checkpoint_last.pt"))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
