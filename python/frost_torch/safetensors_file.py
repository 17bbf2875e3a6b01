"""Writing a safetensors file with the standard library (the format: an 8-byte little-endian header length, a
JSON header of dtype, shape and byte range per tensor, the tensors' bytes), atomically: the file is written
beside its target and renamed over it, so a crash leaves the previous checkpoint whole."""

import json
import os
import struct

import torch


def write_safetensors(path: str, tensors: dict, metadata: dict = None) -> None:
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).contiguous().cpu()
        raw = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text.encode()) % 8)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text.encode())) + text.encode())
        for chunk in chunks:
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
