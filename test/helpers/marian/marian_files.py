"""
What tiny_marian.py (which writes a Marian folder) and marian_reference.py (which reads it) share of Hugging Face's
files: the safetensors layout in the dtypes Marian models are published in, and Marian's sinusoidal position table.
Both scripts run from this folder, so Python finds this module beside them.
"""

import json
import struct

import torch

DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2)}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, size = DTYPES[entry["dtype"]]
        b, e = entry["data_offsets"]
        raw = bytearray(data[base + b : base + e])
        if size == 2:
            t = torch.frombuffer(raw, dtype=torch.int16).view(dtype)
        else:
            t = torch.frombuffer(raw, dtype=torch.float32)
        out[name] = t.reshape(entry["shape"]).to(torch.float32)
    return out


def write_safetensors(path, tensors, dtype_name):
    """The safetensors layout: u64 header length, JSON header (8-byte aligned with spaces), raw little-endian data."""
    dtype, size = DTYPES[dtype_name]
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].to(dtype).contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if size == 2 else t.numpy().tobytes()
        header[name] = {"dtype": dtype_name, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def sinusoids(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding._init_weight: sin in the first half, cos in the second."""
    import numpy as np

    enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = torch.empty(n_pos, dim)
    out[:, : dim // 2] = torch.FloatTensor(np.sin(enc[:, 0::2]))
    out[:, dim // 2 :] = torch.FloatTensor(np.cos(enc[:, 1::2]))
    return out
