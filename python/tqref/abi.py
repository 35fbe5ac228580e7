"""The kernel ABI of docs/spec.md sections 4-5: parameter names in declaration order, and the
arguments of one launch of a golden case laid out in that order."""
import numpy as np

WRITER_ABI = ("key", "value", "k_cache", "v_cache", "slot_mapping", "num_kv_heads", "head_dim",
              "block_size", "key_stride", "value_stride", "k_block_stride_bytes",
              "v_block_stride_bytes", "v_data_section_bytes")
DECODE_ABI = ("q", "k_cache", "v_cache", "output", "block_tables", "seq_lens",
              "max_blocks_per_seq", "num_q_heads", "num_kv_heads", "head_dim", "block_size",
              "inv_sqrt_d", "q_stride", "v_block_stride_bytes", "v_data_section_bytes",
              "sliding_window")
# The pointer parameters, in the same order (the device buffers of a launch).
WRITER_BUFFERS = WRITER_ABI[:5]
DECODE_BUFFERS = DECODE_ABI[:6]


def abi_names(kind):
    return WRITER_ABI if kind == "writer" else DECODE_ABI


def scalar_args(case):
    """{name: value} of the case's scalar ABI parameters, from its attributes. inv_sqrt_d comes
    from its binary32 bits (authoritative in the file) as an exact Python float."""
    names = abi_names(case.kind)
    buffers = WRITER_BUFFERS if case.kind == "writer" else DECODE_BUFFERS
    out = {}
    for n in names:
        if n in buffers:
            continue
        if n == "inv_sqrt_d":
            out[n] = float(np.uint32(case.attrs["inv_sqrt_d_bits"]).view(np.float32))
        else:
            out[n] = int(case.attrs[n])
    return out


def buffer_layout(case, name):
    """(shape, numpy dtype, is_bf16) of launch buffer `name`, as stored for the case: the input
    dataset of that name, or the buffer's initial contents."""
    for group in ("inputs/", "initial/"):
        key = group + name
        if key in case.arrays:
            a = case.arrays[key]
            return a.shape, a.dtype, case.encodings[key] == "bf16"
    raise KeyError(f"{case.name}: no dataset for launch buffer {name!r}")
