"""`torchrun`, for the PyTorch that Debian 12 ships (1.13 on Python 3.11), whose torchrun fails at start-up:

  python3 -m frost_torch.torchrun --nproc_per_node 2 -m frost_torch.train_ddp ...

takes torchrun's own arguments and runs torchrun's own main. Python 3.11 stopped listing a flag enum's zero and
multi-bit members when it is iterated, and torch 1.13 finds `--redirects`/`--tee` values by iterating `Std`, so
their default "0" becomes None and the launcher crashes. Here the value is looked up by number instead. A
newer PyTorch's `torchrun` needs none of this; with it, use `torchrun` itself.
"""

import re
import sys

from torch.distributed.elastic.multiprocessing import api
from torch.distributed.run import main


def _from_str(cls, vm: str):
    if re.match(api._VALUE_REGEX, vm):
        return cls(int(vm))
    if re.match(api._MAPPING_REGEX, vm):
        return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


if [s for s in api.Std] != list(map(api.Std, range(4))):
    api.Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    sys.exit(main())
