#!/usr/bin/env bash
# Which `a*b + c` sites nvcc contracts into FMA in the plain-operator kernels (mutant 22
# `plain_nvcc_default`, kernels/testing/mutants/plain_rules.cuh) built with nvcc's default flags,
# per source site, for one arch and one decoder HDIM. This is the evidence behind
# docs/nvcc-fmad.md (the definition of the CPU model variant `nvcc-fmad`).
#
#   scripts/nvcc-fmad-sites.sh [ARCH [HDIM]]     ARCH 90 (default) or 121, HDIM 128 (default) or 256
#
# It compiles the writer module and the HDIM decoder module twice, exactly as mutant 22 and the
# control build them (kernels/testing/CMakeLists.txt: -std=c++20 -O3 -I model
# -DTQREF_MUTANT_RULES=tqref::gpu::mutant::plain_nvcc_default [-DHDIM=H], nvcc's defaults against
# --fmad=false), plus -lineinfo, which changes no instruction (the cubins' code sections are
# byte-identical with and without it). It prints, per source site (the project's inline chain,
# innermost first; the kernel's own line is left out), the f32 fma/mul/add/sub counts of each
# format's kernel, then every fma with what its three operands are (the defining instruction and
# its site), which is the operand pairing. It also checks that ptxas contracts nothing more: the
# default PTX assembled with ptxas --fmad=true and --fmad=false must give the same code sections.
# With nvdisasm on PATH or beside nvcc (the GPU machine has it; the development machine does not),
# it prints the SASS counts (FFMA/FMUL/FADD, from `nvdisasm -gi`) as well. The FFMAs of the
# correctly rounded division and square root sequences appear in both builds; the difference
# between the two builds is the contraction.
#
# Takes about 10 s for the PTX and the ptxas check on 2 cores (nvcc runs one at a time); about 15 s
# with the SASS on the GPU machine. Needs nvcc (NVCC, default /usr/local/cuda/bin/nvcc or the one
# on PATH) and python3 (PYTHON). Temporary files go to a fresh directory under ${TMPDIR:-/tmp},
# removed at the end (KEEP=1 keeps it and prints its path).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ARCH=${1:-90}
HDIM=${2:-128}
case $ARCH in 90 | 121) ;; *) echo "usage: $0 [90|121 [128|256]]" >&2; exit 2 ;; esac
case $HDIM in 128 | 256) ;; *) echo "usage: $0 [90|121 [128|256]]" >&2; exit 2 ;; esac
NVCC=${NVCC:-}
if [[ -z $NVCC ]]; then
  NVCC=/usr/local/cuda/bin/nvcc
  [[ -x $NVCC ]] || NVCC=$(command -v nvcc)
fi
NVBIN=$(dirname "$(readlink -f "$NVCC")")
PTXAS=$NVBIN/ptxas
NVDISASM=$(command -v nvdisasm || true)
[[ -z $NVDISASM && -x $NVBIN/nvdisasm ]] && NVDISASM=$NVBIN/nvdisasm
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nvcc-fmad-sites.XXXXXX")
if [[ ${KEEP:-0} == 1 ]]; then echo "keeping $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi

MUT=$ROOT/kernels/testing/mutants
BASE=(-std=c++20 -O3 "-I$ROOT/model" -DTQREF_MUTANT_RULES=tqref::gpu::mutant::plain_nvcc_default)
FLAGS=("${BASE[@]}" -lineinfo)
echo "# nvcc-fmad-sites: sm_$ARCH, decoder HDIM=$HDIM"
"$NVCC" --version | tail -2 | sed 's/^/# /'
echo "# nvcc ${FLAGS[*]} [-DHDIM=$HDIM] [--fmad=false]" \
     "-arch=compute_$ARCH -ptx | -arch=sm_$ARCH -cubin"

# build <name> <source> <extra flags...>: PTX and (with nvdisasm) SASS, default and --fmad=false
build() {
  local name=$1 src=$2
  shift 2
  local mode extra
  for mode in def nof; do
    extra=()
    [[ $mode == nof ]] && extra=(--fmad=false)
    "$NVCC" "${FLAGS[@]}" "$@" "${extra[@]}" -arch="compute_$ARCH" -ptx "$src" \
      -o "$WORK/$name.$mode.ptx"
    if [[ -n $NVDISASM ]]; then
      "$NVCC" "${FLAGS[@]}" "$@" "${extra[@]}" -arch="sm_$ARCH" -cubin "$src" \
        -o "$WORK/$name.$mode.cubin"
      "$NVDISASM" -gi -c "$WORK/$name.$mode.cubin" > "$WORK/$name.$mode.sass"
    fi
  done
  # ptxas adds no contraction of its own: the default PTX (no line info) assembled both ways.
  "$NVCC" "${BASE[@]}" "$@" -arch="compute_$ARCH" -ptx "$src" -o "$WORK/$name.nl.ptx"
  "$PTXAS" -arch="sm_$ARCH" -m64 "$WORK/$name.nl.ptx" -o "$WORK/$name.ptxas_fmad_true.cubin"
  "$PTXAS" -arch="sm_$ARCH" -m64 --fmad false "$WORK/$name.nl.ptx" \
    -o "$WORK/$name.ptxas_fmad_false.cubin"
}
build writers "$MUT/writers_mutant.cu"
build decode "$MUT/decode_mutant.cu" "-DHDIM=$HDIM"

"$PYTHON" - "$WORK" "$ROOT" <<'PY'
import collections, re, struct, sys

work, root = sys.argv[1], sys.argv[2]

def short(path):
    name = path.split("/")[-1]
    return (name.replace("paged_decode_attn.cuh", "decode.cuh")
            .replace("reshape_and_cache_turbo.cuh", "writer.cuh"))

def project_frame(path):
    # the project's device sources, without the module file (its line is the entry point)
    return "/kernels/" in path and not path.endswith("_mutant.cu")

# ---- PTX: instructions with their inline chain (from .loc ... inlined_at) ----
def parse_ptx(path):
    """{kernel: [(op, operands, site, predicated, dests, label)]}; label entries have op None."""
    files, parent, funcs = {}, {}, collections.defaultdict(list)
    func, cur = None, None
    for line in open(path):
        m = re.match(r"\s*\.file\s+(\d+)\s+\"([^\"]+)\"", line)
        if m:
            files[m.group(1)] = m.group(2)
            continue
        m = re.search(r"\.entry\s+(\w+)", line)
        if m:
            func, cur, parent = m.group(1).split("_")[-1], None, {}
            continue
        if not func:
            continue
        m = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)", line)
        if m:
            cur = m.group(1, 2, 3)
            ia = re.search(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)", m.group(4))
            parent[cur] = ia.group(1, 2, 3) if ia else None
            continue
        m = re.match(r"\s*(\$\w+):", line)
        if m:
            funcs[func].append((None, [], "", False, [], m.group(1)))
            continue
        text = line.strip()
        if text.startswith("{") and text.endswith("}"):  # inline asm: { cvt.f32.f16 %f1, %rs1;}
            text = text[1:-1].strip()
        m = re.match(r"(@!?%p\d+\s+)?([a-z][\w.]*)\s*([^;]*);", text)
        if not m:
            continue
        op, rest = m.group(2), m.group(3).strip()
        if rest.startswith("{"):  # vector destination {%r1, %r2}, [addr]
            dests = re.findall(r"%\w+", rest[:rest.index("}")])
            tail = rest[rest.index("}") + 1:].split(",")
            ops = ["{vec}"] + [o.strip() for o in tail if o.strip()]
        else:
            ops = [o.strip() for o in rest.split(",")] if rest else []
            dests = ([ops[0].split("|")[0]] if ops and ops[0].startswith("%")
                     and not op.startswith(("st.", "bra", "bar", "red.", "atom.")) else [])
        chain, k = [], cur
        while k is not None and len(chain) < 12:
            chain.append(k)
            k = parent.get(k)
        funcs[func].append((op, ops, chain, bool(m.group(1)), dests, None))
    def site(chain):  # the .file table comes at the end of the PTX
        frames = [(files.get(fi, fi), ln) for fi, ln, _ in chain]
        frames = [f"{short(p)}:{ln}" for p, ln in frames if project_frame(p)]
        return " < ".join(frames[:3]) or "-"
    return {f: [(x[0], x[1], site(x[2]) if x[0] else "", *x[3:]) for x in insts]
            for f, insts in funcs.items()}

F32 = re.compile(r"^(fma|mul|add|sub)\.(rn\.)?f32$")

def count_ptx(named):
    c = collections.Counter()
    for f, insts in named.items():
        for op, ops, site, *_ in insts:
            if op and F32.match(op):
                c[(site, op.split(".")[0], f)] += 1
    return c

class Reaching:
    """Reaching definitions over the PTX control-flow graph: NVVM reuses a virtual register for
    loop-carried values and for unrelated values initialised from one that holds 0, so the
    definition of an operand is found through the CFG, not by the register's name."""
    def __init__(self, insts):
        self.insts = insts
        n = len(insts)
        self.defs_of = collections.defaultdict(list)
        for i, x in enumerate(insts):
            for d in x[4]:
                self.defs_of[d].append(i)
        leaders = {0}
        labels = {}
        for i, x in enumerate(insts):
            if x[0] is None:
                leaders.add(i)
                labels[x[5]] = i
            elif x[0].startswith(("bra", "ret", "exit")):
                leaders.add(i + 1)
        starts = sorted(l for l in leaders if l < n)
        self.block_of = [0] * n
        blocks = []
        for bi, st in enumerate(starts):
            en = starts[bi + 1] if bi + 1 < len(starts) else n
            blocks.append((st, en))
            for i in range(st, en):
                self.block_of[i] = bi
        start_block = {st: bi for bi, (st, en) in enumerate(blocks)}
        succ = []
        for bi, (st, en) in enumerate(blocks):
            last = insts[en - 1]
            s = []
            if last[0] and last[0].startswith("bra"):
                s.append(start_block[labels[last[1][0]]])
                if last[3] and bi + 1 < len(blocks):
                    s.append(bi + 1)
            elif not (last[0] and last[0].startswith(("ret", "exit"))) and bi + 1 < len(blocks):
                s.append(bi + 1)
            succ.append(s)
        allmask = {r: sum(1 << i for i in ds) for r, ds in self.defs_of.items()}
        gen, kill = [], []
        for st, en in blocks:
            g, k = 0, 0
            for i in range(st, en):
                for d in insts[i][4]:
                    if not insts[i][3]:  # a predicated definition does not kill
                        g &= ~allmask[d]
                        k |= allmask[d]
                    g |= 1 << i
            gen.append(g)
            kill.append(k)
        pred = [[] for _ in blocks]
        for bi, s in enumerate(succ):
            for t in s:
                pred[t].append(bi)
        self.blocks, self.IN = blocks, [0] * len(blocks)
        out = list(gen)
        changed = True
        while changed:
            changed = False
            for bi in range(len(blocks)):
                inn = 0
                for p in pred[bi]:
                    inn |= out[p]
                o = gen[bi] | (inn & ~kill[bi])
                if inn != self.IN[bi] or o != out[bi]:
                    self.IN[bi], out[bi], changed = inn, o, True
        self.allmask = allmask

    def at(self, pos, reg):
        """Positions of the definitions of reg that reach instruction pos."""
        st, en = self.blocks[self.block_of[pos]]
        for i in range(pos - 1, st - 1, -1):
            if reg in self.insts[i][4]:
                if not self.insts[i][3]:
                    return [i]
        mask = self.IN[self.block_of[pos]] & self.allmask.get(reg, 0)
        found = [i for i in self.defs_of.get(reg, []) if mask >> i & 1]
        found += [i for i in range(st, pos) if reg in self.insts[i][4]]  # predicated ones
        return sorted(set(found))

def describe(insts):
    """Each fma with its operands: the instruction(s) that define each source operand (through
    register moves), found by reaching definitions."""
    rd = Reaching(insts)
    def name(i):
        op, ops, site = insts[i][:3]
        parts = site.split(" < ")
        return f"{op.split('.')[0]}@{parts[0]}" + (f"<{parts[1]}" if len(parts) > 1 else "")
    def roots(reg, pos, depth, seen):
        if not reg.startswith("%"):
            return {"0" if reg in ("0", "0f00000000") else reg}
        out = set()
        for i in rd.at(pos, reg):
            if i in seen:
                continue
            seen.add(i)
            op, ops = insts[i][:2]
            if op.startswith("mov") and len(ops) == 2:
                out |= roots(ops[1], i, depth, seen)
            elif op == "shl.b32" and ops[2] == "16":  # bf16 -> f32 of a low half or a 2-byte load
                loads = [insts[j] for j in rd.at(i, ops[1])]
                offs = [re.search(r"\+(\d+)\]", x[1][1]) if x[0].endswith(".u16") else None
                        for x in loads]
                out |= {"bf16 odd" if o and int(o.group(1)) % 4 else "bf16 even" for o in offs}
            elif op == "and.b32" and ops[2] == "-65536":  # bf16 -> f32 of a high half
                out.add("bf16 odd")
            elif op.startswith("ld."):
                out.add("ld")
            elif op.startswith("mul") and op.endswith("f32") and depth == 0:
                args = [", ".join(sorted(roots(r, i, 1, set()))) for r in ops[1:3]]
                out.add(name(i) + "(" + " * ".join("{" + a + "}" for a in args) + ")")
            else:
                out.add(name(i))
        return out
    shapes = collections.Counter()
    for i, (op, ops, site, *_) in enumerate(insts):
        if op and op.startswith("fma") and op.endswith("f32"):
            d = ["{" + ", ".join(sorted(roots(r, i, 0, set()))) + "}" for r in ops[1:4]]
            shapes[(site, f"fma({d[0]}, {d[1]}, {d[2]})")] += 1
    return shapes

# ---- SASS (nvdisasm -gi): instructions with their inline chain ----
def count_sass(path):
    c = collections.Counter()
    func, chain, fresh = None, [], True
    for line in open(path):
        m = re.match(r"\s*\.text\.(\w+):", line)
        if m:
            func, chain, fresh = m.group(1).split("_")[-1], [], True
            continue
        m = re.match(r"\s*//## File \"([^\"]+)\", line (\d+)", line)
        if m:
            if fresh:
                chain, fresh = [], False
            chain.append((m.group(1), m.group(2)))
            continue
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and func:
            fresh = True
            op = m.group(2).split(".")[0]
            if op in ("UFFMA", "UFMUL", "UFADD"):  # the uniform datapath (sm_100 and later)
                op = op[1:]
            if op in ("FFMA", "FMUL", "FADD"):
                frames = [f"{short(p)}:{ln}" for p, ln in chain if project_frame(p)]
                c[(" < ".join(frames[:3]) or "-", op, func)] += 1
    return c

def elf_sections(path):
    b = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    hs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    so = hs[shstrndx][4]
    name = lambda o: b[so + o:b.index(b"\0", so + o)].decode()
    return {name(h[0]): (b[h[4]:h[4] + h[5]] if h[1] != 8 else b"") for h in hs}

def table(title, cdef, cnof, ops, kernels):
    sites = sorted({k[0] for k in cdef} | {k[0] for k in cnof})
    print(f"\n## {title}: counts per kernel ({'/'.join(kernels)})")
    cols = [f"default {o}" for o in ops] + [f"--fmad=false {o}" for o in ops]
    print(f"{'site (innermost first)':54s}" + "".join(f"{c:>18s}" for c in cols))
    total = lambda c, o: "/".join(str(sum(v for k, v in c.items() if k[1] == o and k[2] == kn))
                                  for kn in kernels)
    for s in sites + ["total"]:
        if s == "total":
            cells = [total(cdef, o) for o in ops] + [total(cnof, o) for o in ops]
        else:
            cells = ["/".join(str(c.get((s, o, k), 0)) for k in kernels)
                     for c in (cdef, cnof) for o in ops]
        print(f"{s:54s}" + "".join(f"{c:>18s}" for c in cells))

for mod in ("writers", "decode"):
    ddef = parse_ptx(f"{work}/{mod}.def.ptx")
    dnof = parse_ptx(f"{work}/{mod}.nof.ptx")
    kernels = list(ddef)  # the module's kernels by format suffix, in the PTX's order (kFormats')
    print(f"\n# {mod}")
    table(f"{mod} PTX", count_ptx(ddef), count_ptx(dnof), ["fma", "mul", "add", "sub"], kernels)
    print(f"\n## {mod} PTX, nvcc defaults: each fma(a, b, c) = a*b + c rounded once, with what "
          "defines a, b and c (reaching definitions through moves; a set: several reach, e.g. a "
          "loop-carried o or l, or the zeros of a skipped V or an inactive lane; bf16 even/odd: "
          "q[2i]/k[2i] or q[2i+1]/k[2i+1])")
    per = {k: describe(ddef[k]) for k in kernels}
    keys = sorted(set().union(*[set(v) for v in per.values()]))
    for site, shape in keys:
        n = "/".join(str(per[k].get((site, shape), 0)) for k in kernels)
        print(f"{n:>10s}  {site}\n            {shape}")
    a = elf_sections(f"{work}/{mod}.ptxas_fmad_true.cubin")
    b = elf_sections(f"{work}/{mod}.ptxas_fmad_false.cubin")
    code = sorted(k for k in set(a) | set(b) if k.startswith(".text."))
    same = all(a.get(k) == b.get(k) for k in code)
    print(f"\n## {mod}: default PTX through ptxas --fmad=true vs --fmad=false: "
          + ("code sections identical (ptxas contracts nothing more)" if same else
             "CODE DIFFERS: ptxas contracts mul.f32/add.f32 pairs itself; read the SASS table"))
    try:
        sdef = count_sass(f"{work}/{mod}.def.sass")
        snof = count_sass(f"{work}/{mod}.nof.sass")
        table(f"{mod} SASS (nvdisasm -gi; the FFMAs of the --fmad=false build are the div.rn, "
              "sqrt.rn and rcp.rn sequences, whose line info points at nearby sites; ptxas "
              "duplicates some code, so counts can exceed the PTX's)",
              sdef, snof, ["FFMA", "FMUL", "FADD"], kernels)
    except FileNotFoundError:
        print(f"\n## {mod} SASS: skipped (no nvdisasm)")
PY
