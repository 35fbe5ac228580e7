"""One launch of a Python kernel on the buffers of a golden case, the way the GPU harness launches
a CUDA kernel (harness/gpu): every device buffer is allocated with guard bands of GUARD_BYTES on
both sides, filled with the case's initial bytes (poison where the kernel must not read), handed
to the callable as typed views laid out exactly as the kernel ABI (docs/spec.md sections 4-5),
and read back whole, guards included, for the judge.

A kernel is a callable taking the ABI's parameters positionally (tqref.abi), and also the
keyword `format` when its signature has a parameter of that name or **kwargs. It writes its
outputs in place and returns nothing. Raising tqref.testing.Skip marks a case it does not support.
"""
import inspect
from dataclasses import dataclass

import numpy as np

from . import abi
from .errors import BadArgument
from .judge import GUARD_BYTES, with_guards

_TORCH_DTYPES = {np.dtype(np.uint8): "uint8", np.dtype(np.int32): "int32",
                 np.dtype(np.int64): "int64"}


@dataclass
class Buffer:
    name: str
    initial: np.ndarray  # uint8 bytes before the launch
    shape: tuple         # typed shape the kernel sees
    dtype: np.dtype      # element type as stored (uint16 for bf16)
    bf16: bool
    output: bool


@dataclass
class LaunchSpec:
    """Everything one launch needs: kind ("writer" | "decode"), format name, the buffers in ABI
    order and the scalar parameters by name."""
    kind: str
    format: str
    buffers: list
    scalars: dict

    def buffer(self, name):
        return next(b for b in self.buffers if b.name == name)


def spec_of(case):
    """The launch of a golden case as stored."""
    bufs = []
    for name, init, is_out in case.launch_buffers():
        shape, dtype, bf16 = abi.buffer_layout(case, name)
        bufs.append(Buffer(name, init, shape, dtype, bf16, is_out))
    return LaunchSpec(case.kind, case.format, bufs, abi.scalar_args(case))


def _torch():
    try:
        import torch
    except ImportError as e:
        raise BadArgument("device: a torch device needs torch (pip install torch, or "
                          "device='numpy' for numpy kernels)") from e
    return torch


def _device_buffer(b, device):
    """(guarded buffer on the device, the kernel's typed view of its interior)."""
    host = with_guards(b.initial)
    n = b.initial.nbytes
    if device == "numpy":
        return host, host[GUARD_BYTES:GUARD_BYTES + n].view(b.dtype).reshape(b.shape)
    torch = _torch()
    g = torch.from_numpy(host).to(device)
    dt = torch.bfloat16 if b.bf16 else getattr(torch, _TORCH_DTYPES[np.dtype(b.dtype)])
    return g, g[GUARD_BYTES:GUARD_BYTES + n].view(dt).view(b.shape)


def _to_host(g, device):
    if device == "numpy":
        return g
    return g.cpu().numpy()


def takes_format(fn):
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "format" or p.kind is p.VAR_KEYWORD for p in ps)


def allocate(spec, device):
    """The launch's buffers on the device: ({name: guarded buffer}, {name: the kernel's view})."""
    guarded, views = {}, {}
    for b in spec.buffers:
        guarded[b.name], views[b.name] = _device_buffer(b, device)
    return guarded, views


def run(spec, fn, device, buffers=None):
    """Runs fn once on freshly guarded buffers (or those of allocate()); returns {name: guarded
    bytes (uint8)} of every buffer, outputs and inputs, as found afterwards."""
    guarded, views = buffers or allocate(spec, device)
    args = [views[n] if n in views else spec.scalars[n] for n in abi.abi_names(spec.kind)]
    kwargs = {"format": spec.format} if takes_format(fn) else {}
    fn(*args, **kwargs)
    if device != "numpy" and str(device).startswith("cuda"):
        _torch().cuda.synchronize(device)
    return {n: _to_host(g, device) for n, g in guarded.items()}
