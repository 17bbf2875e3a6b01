"""Writes what frost_heads computes, as raw little-endian float32, so other programs (frost's test
test/pytorch-heads.test.ts) can compare it with frost's own, bit for bit.

  python3 -m frost_heads.dump --head fixed-l2 --seed 1 --vocab 37 --dim 8 [--option limit=5] [--out FILE]
      a frozen head's target matrix [vocab, dim], row-major, to FILE or stdout
  python3 -m frost_heads.dump --forward SPEC.json [--out FILE]
      a head's logits [N, vocab] for the inputs in SPEC (in eval mode)
  python3 -m frost_heads.dump --batch JOBS.json
      many of either in one process ({"jobs": [{"kind": "matrix"|"forward", ..., "out": FILE}]}); prints one
      JSON object: the heads, and a result per job, {"ok": true} (forward jobs add the head's initial parameters and
      its state_dict's keys) or the error

SPEC: {"head", "seed", "vocab", "dim", "embedding_dim"?, "options"?, "f": T, "embedding"?: T,
       "params"?: {frost name ('head/b'): T}}
where a tensor T is {"shape": [...]} with "file" (raw little-endian float32), "base64" (the same bytes) or
"data" (numbers).
"""

import argparse
import array
import base64
import ctypes
import json
import sys
import traceback

import torch

from .frozen import frozen_matrix
from .heads import HEADS, build_head


def tensor_bytes(t: torch.Tensor) -> bytes:
    """A tensor's float32 values as little-endian bytes (no numpy: ctypes copies the buffer)."""
    t = t.detach().to("cpu", torch.float32).contiguous()
    if sys.byteorder == "little":
        return ctypes.string_at(t.data_ptr(), t.numel() * 4)
    values = array.array("f", t.flatten().tolist())
    values.byteswap()
    return values.tobytes()


def bytes_tensor(data: bytes, shape) -> torch.Tensor:
    if sys.byteorder == "little":
        t = torch.frombuffer(bytearray(data), dtype=torch.float32)
    else:
        values = array.array("f", data)
        values.byteswap()
        t = torch.tensor(values.tolist(), dtype=torch.float32)
    return t.reshape(shape)


def read_tensor(spec: dict) -> torch.Tensor:
    shape = spec["shape"]
    if "file" in spec:
        with open(spec["file"], "rb") as fh:
            return bytes_tensor(fh.read(), shape)
    if "base64" in spec:
        return bytes_tensor(base64.b64decode(spec["base64"]), shape)
    return torch.tensor(spec["data"], dtype=torch.float32).reshape(shape)


def encode_tensor(t: torch.Tensor) -> dict:
    return {"shape": list(t.shape), "base64": base64.b64encode(tensor_bytes(t)).decode("ascii")}


def write_out(data: bytes, out) -> None:
    if out is None or out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        with open(out, "wb") as fh:
            fh.write(data)


def matrix(job: dict) -> torch.Tensor:
    return frozen_matrix(job["head"], job["seed"], job["vocab"], job["dim"], **job.get("options", {}))


def forward(spec: dict):
    """The logits for SPEC's inputs, and the head as built (before SPEC's params were loaded)."""
    head = build_head(
        spec["head"], spec["vocab"], spec["dim"], spec.get("embedding_dim"), spec["seed"], spec.get("options")
    )
    built = {"initial": {name: t.clone() for name, t in head.frost_state_dict().items()}}
    built["state_dict"] = list(head.state_dict())
    if "params" in spec:
        head.load_frost_state_dict({name: read_tensor(t) for name, t in spec["params"].items()})
    head.eval()
    embedding = read_tensor(spec["embedding"]) if "embedding" in spec else None
    with torch.no_grad():
        return head(read_tensor(spec["f"]), embedding), built


def run_batch(path: str) -> dict:
    with open(path) as fh:
        jobs = json.load(fh)["jobs"]
    results = []
    for job in jobs:
        try:
            if job["kind"] == "matrix":
                write_out(tensor_bytes(matrix(job)), job["out"])
                results.append({"ok": True})
            elif job["kind"] == "forward":
                logits, built = forward(job)
                write_out(tensor_bytes(logits), job["out"])
                initial = {name: encode_tensor(t) for name, t in built["initial"].items()}
                results.append({"ok": True, "initial": initial, "state_dict": built["state_dict"]})
            else:
                raise ValueError(f"unknown job kind {job['kind']!r}")
        except Exception:  # one bad job is reported with its traceback; the others still run
            results.append({"ok": False, "error": traceback.format_exc()})
    heads = {name: {"frozen": cls.frozen} for name, cls in HEADS.items()}
    return {"torch": torch.__version__, "heads": heads, "results": results}


def parse_option(text: str):
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--option wants key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m frost_heads.dump", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--head", choices=[n for n, cls in HEADS.items() if cls.frozen], help="a frozen head's matrix")
    mode.add_argument("--forward", metavar="SPEC.json", help="a head's logits for the inputs in SPEC")
    mode.add_argument("--batch", metavar="JOBS.json", help="many jobs in one process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--dim", type=int)
    parser.add_argument("--option", type=parse_option, action="append", default=[], help="a head option, key=value")
    parser.add_argument("--out", help="output file (default: stdout)")
    args = parser.parse_args(argv)
    if args.batch:
        json.dump(run_batch(args.batch), sys.stdout)
        sys.stdout.write("\n")
        return 0
    if args.forward:
        with open(args.forward) as fh:
            logits, _ = forward(json.load(fh))
        write_out(tensor_bytes(logits), args.out)
        return 0
    if args.vocab is None or args.dim is None:
        parser.error("--head needs --vocab and --dim")
    job = {"head": args.head, "seed": args.seed, "vocab": args.vocab, "dim": args.dim, "options": dict(args.option)}
    write_out(tensor_bytes(matrix(job)), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
