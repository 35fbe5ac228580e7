"""Decode-error part of the report (study 3) and the summary at the top of README.md."""
import os

import matplotlib.pyplot as plt
import numpy as np

from studylib import check_finite, fmt, md_table, pct, study_formats, thr_label

# The kernels' default THRESH (TQ_PLUS_SPARSE_V_THRESHOLD: model/tqref/format.h kSparseVThreshold,
# in Python tqref.SPARSE_V_THRESHOLD), one value of the study's grid and its headline. The tables
# do not mark which of their thresholds is the default, and this report runs under Debian's
# python3 without tqref (CTest study_report_quick), so the analysis side states it here, once.
DEFAULT_THRESH = 1e-3
LINESTYLES = ("-", "--", "-.", ":")  # the study's thresholds, smallest (0) first
BUDGETS = [0.01, 0.02, 0.05, 0.10, 0.20, 0.50]
DPI = 80


def thresholds(t):
    return sorted(set(float(x) for x in t["threshold"]))


def grid_of(regs):
    """Every THRESH the study ran, over all regimes, smallest (0) first."""
    return sorted({th for _, t in regs for th in thresholds(t)})


def style(th, grid):
    return LINESTYLES[grid.index(th) % len(LINESTYLES)]


def at(grid, value):
    """The grid's threshold equal to `value` (as float32 in the tables; rtol 1e-6)."""
    for th in grid:
        if np.isclose(th, value, rtol=1e-6, atol=0):
            return th
    raise LookupError(f"decode tables: no THRESH {value:g} among {grid}")


def per_context(t, col, fn=np.median):
    ctx = sorted(set(t["context"]))
    return np.array(ctx), np.array([fn(t[col][t["context"] == c]) for c in ctx])


def savefig(fig, out, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=DPI)
    plt.close(fig)
    return name


def regimes(T):
    """(label, table) pairs: each synthetic score spread, then the real traces."""
    out = []
    de = T.get("decode_error")
    if de is not None:
        for s in de.unique("source"):
            out.append((s, de.where(source=s)))
    dt = T.get("decode_trace")
    if dt is not None and dt.n:
        out.append((f"{dt['source'][0]} (real)", dt))
    return out


def decode_section(T, out, facts):
    regs = regimes(T)
    if not regs:
        return "## 6. Decode\n\nNo decode tables in the results.\n"
    for _, t in regs:
        check_finite(t, ["rel_l2", "cosine", "max_abs", "skip_rate", "skipped_mass"])
        if not np.all(t["ref_norm"] > 0):
            raise ValueError("decode: an fp64 reference output is all zero")
    formats, _, colors = study_formats(T)
    grid = grid_of(regs)
    top = grid[-1]
    # Figure 1: error vs context per format (THRESH 0 and the largest), one column per regime; rows:
    # median relative L2, median 1 - cosine, largest absolute error.
    fig, axs = plt.subplots(3, len(regs), figsize=(3.3 * len(regs), 7.2), sharex="col", sharey="row")
    axs = np.array(axs).reshape(3, len(regs))
    for j, (name, t) in enumerate(regs):
        for f in formats:
            for th in (0.0, top):
                s = t.where(format=f, threshold=th)
                c, y = per_context(s, "rel_l2")
                axs[0, j].loglog(c, y, style(th, grid), color=colors[f], label=f"{f} THRESH {thr_label(th)}")
                c, y = per_context(s, "cosine")
                axs[1, j].loglog(c, 1.0 - y, style(th, grid), color=colors[f])
                c, y = per_context(s, "max_abs", np.max)
                axs[2, j].loglog(c, y, style(th, grid), color=colors[f])
            axs[0, j].axhline(np.sqrt(facts[f"writer_gauss_{f}"]), color=colors[f], lw=0.6, alpha=0.6)
        axs[0, j].set_title(name, fontsize=8)
        axs[2, j].set_xlabel("context length")
        for i in range(3):
            axs[i, j].grid(True, which="both", alpha=0.3)
    axs[0, 0].set_ylabel("median rel. L2 error")
    axs[1, 0].set_ylabel("median 1 - cosine")
    axs[2, 0].set_ylabel("max abs error")
    axs[0, 0].legend(fontsize=6)
    fig1 = savefig(fig, out, "fig_decode_error.png")
    # Figure 2: skip rate, skipped mass, and the extra error the skip causes.
    fig, axs = plt.subplots(1, 3, figsize=(10.5, 3.4))
    marks = ["o", "s", "^", "v"]
    for (name, t), mk in zip(regs, marks):
        s4 = t.where(format="turbo4v")
        for th in thresholds(t):
            if th == 0:
                continue
            s = s4.where(threshold=th)
            c, y = per_context(s, "skip_rate", np.mean)
            axs[0].semilogx(c, y, style(th, grid), marker=mk, ms=3, label=f"{name[:18]} {thr_label(th)}")
            c, y = per_context(s, "skipped_mass", np.mean)
            axs[1].loglog(c[y > 0], y[y > 0], style(th, grid), marker=mk, ms=3)  # zero mass: nothing skipped
            m = s["skipped_mass"] > 0
            axs[2].loglog(s["skipped_mass"][m], s["rel_l2_vs_deq"][m], marker=mk, ls="none", ms=2, alpha=0.4)
    axs[0].set_ylabel("fraction of positions skipped")
    axs[1].set_ylabel("final softmax mass of skipped positions")
    axs[2].set_ylabel("rel. error vs fp64 (dequantised V)")
    axs[2].set_xlabel("skipped softmax mass (per query)")
    for ax in axs[:2]:
        ax.set_xlabel("context length")
    for ax in axs:
        ax.grid(True, which="both", alpha=0.3)
    axs[0].legend(fontsize=5)
    fig2 = savefig(fig, out, "fig_skip.png")
    # Figure 3: decisions of the running-max factor against the final weights.
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for (name, t), mk in zip(regs, marks):
        s4 = t.where(format="turbo4v")
        for th in thresholds(t):
            if th == 0:
                continue
            s = s4.where(threshold=th)
            c = sorted(set(s["context"]))
            y = [s["kept_tiny"][s["context"] == x].sum() / max(1, s["n_tiny"][s["context"] == x].sum()) for x in c]
            ax.semilogx(c, y, style(th, grid), marker=mk, ms=3, label=f"{name[:18]} {thr_label(th)}")
    ax.set_xlabel("context length")
    ax.set_ylabel("kept / all positions with weight < THRESH/100")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=5)
    fig3 = savefig(fig, out, "fig_skip_decisions.png")
    # Tables at the longest context of each regime.
    rows = []
    total_false, total_above = 0, 0
    for name, t in regs:
        cmax = max(t["context"]) if "real" not in name else None
        for f in formats:
            for th in thresholds(t):
                s = t.where(format=f, threshold=th)
                if cmax is not None:
                    s = s.where(context=cmax)
                rows.append([name, "all <= %d" % max(t["context"]) if cmax is None else int(cmax), f, thr_label(th),
                             pct(np.median(s["rel_l2"])), pct(np.percentile(s["rel_l2"], 95)),
                             fmt(np.min(s["cosine"]), 5), fmt(np.max(s["max_abs"]), 3),
                             pct(np.mean(s["rel_l2_vs_deq"])), pct(np.mean(s["skip_rate"]), 3),
                             fmt(np.mean(s["skipped_mass"]), 2), int(s["false_skips"].sum()),
                             f"{int(s['kept_tiny'].sum())}/{int(s['n_tiny'].sum())}"])
    tab = md_table(["source", "context", "format", "THRESH", "median rel L2", "p95 rel L2", "min cosine",
                    "max abs err", "mean rel L2 vs dequantised-V reference", "skip rate", "skipped mass",
                    "false skips", "kept with w < THRESH/100"], rows)
    for _, t in regs:  # every row with a non-zero threshold, all contexts
        m = t["threshold"] > 0
        total_false += int(t["false_skips"][m].sum())
        total_above += int(t["n_above_thresh"][m].sum())
    facts["false_skips"] = total_false
    facts["above_thresh"] = total_above
    # Theory check: quantisation-only output error vs sqrt(nmse) on synthetic (zero-mean, independent V).
    theo = []
    for name, t in regs:
        if "real" in name:
            continue
        for f in formats:
            s = t.where(format=f, threshold=0.0)
            rms = np.sqrt(np.mean(s["rel_l2_quant_only"] ** 2))
            theo.append([name, f, pct(rms), pct(np.sqrt(facts[f"writer_gauss_{f}"])),
                         f"{rms / np.sqrt(facts[f'writer_gauss_{f}']):.3f}"])
    for name, t in regs:
        if "real" not in name or "trace_nmse" not in facts:
            continue
        for f in formats:
            s = t.where(format=f, threshold=0.0)
            rms = np.sqrt(np.mean(s["rel_l2_quant_only"] ** 2))
            ref = np.sqrt(np.mean(facts["trace_nmse"][f]))
            theo.append([name, f, pct(rms), pct(ref) + " (trace V nmse, mean over layers)", f"{rms / ref:.3f}"])
    ttab = md_table(["source", "format", "RMS over queries of rel L2 (fp64, dequantised vs bf16 V)",
                     "sqrt(V nmse): writer on Gaussian V, or on the trace's V", "ratio"], theo)
    bf16_floor = np.median(regs[0][1].where(threshold=0.0)["rel_l2_vs_deq"])
    facts["bf16_floor"] = bf16_floor
    # How much each threshold changes the median error, relative to THRESH = 0, worst case.
    facts["thr_effect"] = {}
    for th in grid[1:]:
        worst = 0.0
        for _, t in regs:
            for f in formats:
                c0, y0 = per_context(t.where(format=f, threshold=0.0), "rel_l2")
                c1, y1 = per_context(t.where(format=f, threshold=th), "rel_l2")
                worst = max(worst, float(np.max(np.abs(y1 - y0) / y0)))
        facts["thr_effect"][th] = worst
    return f"""## 6. Decode: the kernel-order model against the fp64 reference

`paged_decode_model` (bit-exact model of the decode kernel, with the measured sm_90 EX2 unit)
against `reference_attention` in fp64 with the *unquantised* bf16 V (`decode_error.csv`,
`decode_trace.csv`; one row per sequence x q head x format x THRESH). Synthetic batches: 2 KV
heads, 4 q heads (GQA 2), head_dim 128, block 16, Gaussian K and V, q scaled so the scores have
standard deviation 1 (flat softmax) or 3 (peaked), four sequences per context 64 .. 8192. Real
traces: stories15M, query at every 8th position of each sequence attending to all earlier
positions (causal decode), head_dim 48 zero-padded to the HDIM=128 model (exact: padded K and q
add exact zeros to the scores, padded V groups are all zero and decode to 0) with the model's own
scale 1/sqrt(48). The skip statistics use the final softmax weights w computed in fp64.

![decode error]({fig1})

Rows: median relative L2 error, median 1 - cosine similarity, and the largest absolute error per
context length; solid THRESH = 0, dotted THRESH = {thr_label(top)}; thin lines sqrt(nmse) of the V
quantisation (below). The absolute error falls with context for the flat softmax because the
output itself shrinks (an average of more independent V rows); the relative error does not.

{tab}

**The output error is the V quantisation error.** For zero-mean V rows with independent errors,
o = sum_j w_j v_j and e = sum_j w_j eps_j give E|e|^2 / E|o|^2 = E|eps|^2 / E|v|^2 = nmse for
*any* weights, so the relative output error should be about sqrt(nmse) of section 2, independent
of context length and softmax shape (thin horizontal lines in the figure). Measured:

{ttab}

The synthetic rows agree with the prediction to about 1-2 %. For the real traces the reference
is the layers' own V nmse (section 5, mean over layers) and the measured error is 15-18 % lower.
The derivation assumes V rows that are zero-mean and independent; real V rows are neither (per
channel means and correlated neighbouring tokens), so a shared component survives the attention
average while the quantisation errors, independent per group, still average out. That is the
likely cause; the study does not isolate it.
The model's operation order, EX2 and the bf16 rounding of the output add a floor of about
{pct(bf16_floor)} (rel L2 vs the dequantised-V reference at THRESH = 0: the bf16 output rounding
alone is 2^-9 relative per element).

**The skip.** A position is skipped when its factor exp(s_j - m_running) <= THRESH, where
m_running is the running maximum of its warp so far. Since m_running <= the global maximum M,
the final weight w_j = exp(s_j - M) / sum_k exp(s_k - M) <= exp(s_j - M) <= the factor. So a
skipped position always has w_j <= THRESH: **false skips (w_j > THRESH but skipped) should never
happen** except by the approximate EX2 and fp32 score rounding right at the boundary. Measured:
{total_false} false skips among {total_above} positions with w > THRESH, over all rows with
THRESH > 0 (every context, every source). The
converse is loose: the factor overestimates w_j by the normaliser sum_k exp(s_k - M) (up to the
context length for a flat softmax) and by the warp-local maximum, so many positions with
w_j < THRESH/100 are still loaded (figure below): with 8 warps each warp's running maximum
starts over, and a flat softmax keeps nearly everything. The skip therefore saves most on long
contexts with peaked attention.

![skip]({fig2})

The extra error from skipping is bounded by the skipped mass: |e_skip| <= (sum over skipped w_j)
* max |v_j|, so the rel. error against the dequantised-V reference grows linearly with the skipped
mass (right panel). At THRESH = {thr_label(DEFAULT_THRESH)} the skipped mass stays far below the quantisation error, so
the end-to-end error barely moves; at {thr_label(top)} on 8192-token peaked contexts it becomes visible.

![decisions]({fig3})
"""


def budget_table(T, facts):
    """For each output-error budget: which format/THRESH combinations meet it, cheapest first."""
    regs = regimes(T)
    real = [t for n, t in regs if "real" in n]
    synth = [(n, t) for n, t in regs if "real" not in n]
    rows = []
    evidence = {}
    formats = study_formats(T)[0]
    for f in formats:
        for th in grid_of(regs):
            worst = []
            if real:
                s = real[0].where(format=f, threshold=th)
                if s.n:
                    worst.append(np.percentile(s["rel_l2"], 95))
            for n, t in synth:
                s = t.where(format=f, threshold=th)
                if s.n:
                    c, y = per_context(s, "rel_l2")
                    worst.append(float(np.max(y)))
            if worst:
                evidence[(f, th)] = max(worst)
    for b in BUDGETS:
        ok = [(f, th) for (f, th), e in evidence.items() if e <= b]
        if not ok:
            rows.append([pct(b, 2), "none of the formats", "-", "-"])
            continue
        f = next(x for x in formats if any(g == x for g, _ in ok))  # formats: coarsest first
        ths = sorted(th for g, th in ok if g == f)
        rows.append([pct(b, 2), f"**{f}**", thr_label(max(ths)),
                     pct(evidence[(f, max(ths))], 2)])
    return md_table(["output error budget (relative L2)", "cheapest format", "largest THRESH tested that fits",
                     "its worst case"], rows), evidence


def summary(T, facts):
    btab, ev = budget_table(T, facts)
    regs = regimes(T)
    real = [t for n, t in regs if "real" in n]
    formats, bits, _ = study_formats(T)
    grid = grid_of(regs)
    d, top = at(grid, DEFAULT_THRESH), grid[-1]
    lines = ["## Summary", ""]
    lines.append("Headline numbers (details and evidence in the sections below):")
    lines.append("")
    lines.append("* **V quantisation error** (MSE / variance, Gaussian V, bit-exact writer): " + ", ".join(
        f"{f} {fmt(facts[f'writer_gauss_{f}'], 3)} ({facts[f'writer_gauss_{f}'] / facts[f'lm_{f}']:.2f}x Lloyd-Max "
        f"{fmt(facts[f'lm_{f}'], 4)})" for f in formats) +
        ". Each format stores b + 0.5 bits per value (the fp8 group scale); see [section 1](#1-theory-lloyd-max-the-spec-tables-and-the-turboquant-bounds) "
        "and [fig_theory.png](fig_theory.png).")
    lines.append(f"* **The four-decimal codebook costs nothing**: at most "
                 f"{fmt(max(facts[f'cb_cost_ppm_{f}'] for f in formats), 2)} ppm distortion against the exact "
                 "Lloyd-Max solution. Levels not within four-decimal rounding of the exact ones: "
                 f"{', '.join(facts['not_rounded']) or 'none'}, without measurable cost "
                 "([section 1](#1-theory-lloyd-max-the-spec-tables-and-the-turboquant-bounds)).")
    lines.append(f"* **fp8 E4M3 scale**: adds {fmt(facts['fp8_gap']['turbo4v'], 3)} of the signal power to turbo4v "
                 f"(averaged over magnitudes; theory {fmt(facts['fp8_pred'], 3)}), {pct(facts['fp8_gap']['turbo4v'] / facts['writer_gauss_turbo4v'], 2)} "
                 f"of turbo4v's error; usable for sigma in {facts['fp8_ok_gauss4']} (Gaussian, turbo4v), outside it the "
                 "scale underflows or saturates ([section 3](#3-fp8-scale-underflow-and-saturation-versus-magnitude)).")
    lines.append("* **Matched-norm scale vs plain absmax**: absmax has " + ", ".join(
        f"{facts['abs_ratio'][f]:.2f}x" for f in formats) + " the error of the writer's matched norm "
        f"({'/'.join(formats)}; [section 2](#2-what-turbo-v-costs-v-quantisation-error-per-format-and-design-choice)).")
    if "trace_nmse4" in facts:
        lines.append(f"* **Real V (stories15M)**: turbo4v nmse {fmt(min(facts['trace_nmse4']), 3)} .. "
                     f"{fmt(max(facts['trace_nmse4']), 3)} over the 6 layers; a Hadamard rotation helps the "
                     "heavy-tailed layer 0 and heavy-tailed synthetic sources, and does nothing for Gaussian "
                     "data ([section 4](#4-random-sign-hadamard-rotation-of-v-before-quantisation), "
                     "[section 5](#5-real-traces-v-quantisation-per-layer)).")
    if real:
        r = real[0]
        lines.append("* **Decode output error on real traces** (median / p95 relative L2 vs fp64 with unquantised V, "
                     f"THRESH {thr_label(d)}): " + ", ".join(
                         f"{f} {pct(np.median(r.where(format=f, threshold=d)['rel_l2']))} / "
                         f"{pct(np.percentile(r.where(format=f, threshold=d)['rel_l2'], 95))}" for f in formats) +
                     "; the error is the V quantisation error (about sqrt(nmse)), not the skip "
                     "([section 6](#6-decode-the-kernel-order-model-against-the-fp64-reference)).")
    syn = [(n, t) for n, t in regs if "real" not in n]
    if syn:
        n, t = syn[-1]
        cmax = max(t["context"])
        s = t.where(format="turbo4v", threshold=d, context=cmax)
        s2 = t.where(format="turbo4v", threshold=top, context=cmax)
        lines.append(f"* **Sparse-V skip** ({n}, context {int(cmax)}): THRESH {thr_label(d)} skips "
                     f"{pct(np.mean(s['skip_rate']), 2)} of positions holding {fmt(np.mean(s['skipped_mass']), 2)} of the "
                     f"softmax mass; {thr_label(top)} skips {pct(np.mean(s2['skip_rate']), 2)} ({fmt(np.mean(s2['skipped_mass']), 2)} mass). "
                     f"False skips (final weight > THRESH): {facts['false_skips']} of {facts['above_thresh']}, as the "
                     "running-max bound predicts; the factor is conservative, so many negligible positions are still "
                     "loaded ([fig_skip.png](fig_skip.png), [fig_skip_decisions.png](fig_skip_decisions.png)).")
    lines.append("")
    lines.append("**Which format and threshold fit which accuracy budget** (worst case over the p95 of real-trace "
                 "queries and the median at every synthetic context length 64 .. 8192, bf16 output vs fp64 "
                 "attention with unquantised V; from `decode_error.csv` and `decode_trace.csv`):")
    lines.append("")
    lines.append(btab)
    lines.append("")
    te = facts["thr_effect"]
    lines.append(f"Budgets below the {formats[-1]} row need more than {bits[formats[-1]]} bits per code (the bf16 "
                 "output itself costs "
                 f"about {pct(facts['bf16_floor'])}). Within a format the threshold matters far less than the "
                 "format: relative to THRESH = 0 the median output error grows or shrinks by at most "
                 + ", ".join(f"{pct(te[th], 2)} at THRESH {thr_label(th)}" for th in te) +
                 " of itself (worst format, context and source).")
    lines.append("")
    return "\n".join(lines)
