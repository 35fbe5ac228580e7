"""Helpers for analysis/make_report.py: reading the tidy tables of `tqref study` (CSV directory
or HDF5 file) and small numeric utilities. numpy only; no pandas on the Debian image."""
import csv
import math
import os

import numpy as np


class Table:
    """Column-oriented table: t['col'] is a numpy array (float or str)."""

    def __init__(self, name, columns):
        self.name = name
        self.cols = {}
        for k, v in columns.items():
            try:
                self.cols[k] = np.array([float(x) for x in v], dtype=float)
            except ValueError:
                self.cols[k] = np.array(v, dtype=object)
        lens = {len(v) for v in self.cols.values()}
        if len(lens) != 1:
            raise ValueError(f"table {name}: ragged columns")
        self.n = lens.pop()

    def __getitem__(self, k):
        if k not in self.cols:
            raise KeyError(f"table {self.name}: no column '{k}' (has {sorted(self.cols)})")
        return self.cols[k]

    def where(self, **eq):
        """Rows whose columns equal the given values (floats compared with a relative 1e-6)."""
        m = np.ones(self.n, dtype=bool)
        for k, v in eq.items():
            c = self[k]
            if c.dtype == object:
                m &= c == v
            else:
                m &= np.isclose(c, v, rtol=1e-6, atol=0)
        return Table(self.name, {k: list(c[m]) for k, c in self.cols.items()}) if m.any() else \
            Table(self.name, {k: [] for k in self.cols})

    def one(self, col, **eq):
        t = self.where(**eq)
        if t.n != 1:
            raise LookupError(f"table {self.name}: {t.n} rows for {eq}, expected 1")
        return t[col][0]

    def unique(self, col):
        seen = []
        for x in self[col]:
            if x not in seen:
                seen.append(x)
        return seen


def load_results(path):
    """Reads every table of a `tqref study` output: a CSV directory or an .h5 file."""
    tables = {}
    if path.endswith(".h5"):
        import h5py
        def text(v):  # fixed-length HDF5 strings come back as bytes
            return v.decode() if isinstance(v, bytes) else str(v)

        with h5py.File(path, "r") as f:
            for name, g in f.items():
                cols = {}
                for c in text(g.attrs["columns"]).split(","):
                    d = g[c][()]
                    if "categories" in g[c].attrs:
                        labels = text(g[c].attrs["categories"]).split("\n")
                        d = [labels[i] for i in d]
                    cols[c] = list(d)
                tables[name] = Table(name, cols)
        return tables
    for fn in sorted(os.listdir(path)):
        if not fn.endswith(".csv"):
            continue
        with open(os.path.join(path, fn), newline="") as f:
            r = csv.reader(f)
            header = next(r)
            data = {h: [] for h in header}
            for row in r:
                for h, v in zip(header, row):
                    data[h].append(v)
        tables[fn[:-4]] = Table(fn[:-4], data)
    return tables


def check_finite(t, cols):
    """Guards against reporting on broken data: numeric columns must be finite and not all 0."""
    for c in cols:
        a = t[c]
        if not np.all(np.isfinite(a)):
            raise ValueError(f"table {t.name}: column {c} has non-finite values")


# Plot colours of the formats, coarsest first (turbo2v red, turbo3v orange, turbo4v blue).
FORMAT_COLORS = ("tab:red", "tab:orange", "tab:blue", "tab:olive", "tab:cyan", "tab:brown")


def study_formats(T):
    """(names, bits, colours) of the formats a study covered, coarsest first, from its theory
    table: `tqref study` loops over kFormats (model/tqref/format.h), so the report names none."""
    th = T["theory"]
    bits = {}
    for f, b in zip(th["format"], th["bits"]):
        bits.setdefault(f, int(b))
    names = sorted(bits, key=bits.get)
    if len(names) > len(FORMAT_COLORS):
        raise ValueError(f"table theory: {len(names)} formats; FORMAT_COLORS has {len(FORMAT_COLORS)} colours")
    return names, bits, dict(zip(names, FORMAT_COLORS))


def fmt(x, digits=3):
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    e = math.floor(math.log10(abs(x)))
    if -3 <= e < 4:
        return f"{x:.{max(0, digits - 1 - e)}f}"
    return f"{x:.{digits - 1}e}"


def pct(x, digits=2):
    return fmt(100.0 * x, digits) + " %"


def thr_label(t):
    return "0" if t == 0 else f"{t:.0e}".replace("e-0", "e-")


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)
