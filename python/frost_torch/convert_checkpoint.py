"""A fairseq checkpoint (a PyTorch pickle) to what frost reads without unpickling anything:

  python3 -m frost_torch.convert_checkpoint checkpoint_best.pt OUT_DIR

writes OUT_DIR/model.safetensors (the model's tensors, float32) and OUT_DIR/fairseq.json (the model's
arguments and the task's languages, from the checkpoint's `cfg` or, for older checkpoints, its `args`).
torch.load unpickles: run it only on checkpoints you trust, the way you would run fairseq on them; frost then
reads only the two files it writes. Needs torch and the standard library; fairseq need not be installed for
checkpoints whose cfg is plain data (fairseq >= 0.10 saves it so; older ones pickle an argparse.Namespace,
which is the standard library's)."""

import argparse
import json
import os
import sys

import torch

from .safetensors_file import write_safetensors


def plain(value):
    """argparse.Namespace and nested dicts as JSON-able data."""
    if isinstance(value, argparse.Namespace):
        value = vars(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def convert(checkpoint: str, out: str) -> dict:
    state = torch.load(checkpoint, map_location="cpu")
    if "model" not in state:
        raise SystemExit(f"{checkpoint}: no 'model' in the checkpoint (keys: {sorted(state)})")
    cfg = plain(state.get("cfg") or {})
    args = plain(state.get("args") or {})
    model_args = cfg.get("model") or args
    task = cfg.get("task") or {k: args.get(k) for k in ("source_lang", "target_lang") if k in args}
    if not model_args:
        raise SystemExit(f"{checkpoint}: neither cfg.model nor args describes the model")
    os.makedirs(out, exist_ok=True)
    tensors = {k: v for k, v in state["model"].items() if torch.is_tensor(v) and v.is_floating_point()}
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt", "source": "fairseq"})
    bpe = cfg.get("bpe") or args.get("bpe")
    bpe = bpe.get("_name") if isinstance(bpe, dict) else bpe
    meta = {"model": model_args, "task": task, "source": os.path.basename(checkpoint)}
    if bpe:
        meta["bpe"] = bpe
    tmp = os.path.join(out, f"fairseq.json.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
    os.replace(tmp, os.path.join(out, "fairseq.json"))
    return meta


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m frost_torch.convert_checkpoint", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    opts = parser.parse_args(argv)
    convert(opts.checkpoint, opts.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
