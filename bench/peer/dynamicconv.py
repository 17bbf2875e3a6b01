#!/usr/bin/python3
"""
PyTorch peer of frost's DynamicConv for bench/train-speed.ts (`npm run bench:train -- --arch dynamicconv`):
bench/peer/lightconv.py's model with dynamic convolutions (kernels predicted per position), which that file
describes; it takes the same arguments, --conv expanded|unfold included.
"""
import sys

sys.dont_write_bytecode = True  # the peers import each other; leave no __pycache__ in the tree
from lightconv import run  # noqa: E402

if __name__ == '__main__':
    sys.exit(run('dynamic'))
