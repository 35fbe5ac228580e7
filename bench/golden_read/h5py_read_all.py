#!/usr/bin/env python3
"""h5py's full read of every dataset of an HDF5 file (inflate, unshuffle and fletcher32 done by
libhdf5): the reference bench/golden_read/run.sh times tqref's readers against.
Usage: /usr/bin/python3 bench/golden_read/h5py_read_all.py FILE"""
import sys

import h5py

total = 0
with h5py.File(sys.argv[1], "r") as f:
    def read(name, obj):
        global total
        if isinstance(obj, h5py.Dataset):
            total += obj[()].nbytes
    f.visititems(read)
print(f"{total} bytes of data read")
