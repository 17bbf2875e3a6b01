"""Training a frost-headed model in PyTorch, on one process or many (`torchrun`, DDP), with fairseq's model
layout and file formats so that its checkpoint comes into frost the way a fairseq checkpoint does.
PyTorch and the standard library only. See docs/scale.md."""
