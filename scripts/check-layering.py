#!/usr/bin/python3
"""The one-way dependency rule of docs/architecture.md, checked on includes and on CMake links.

Each stage folder may use only the folders listed for it in ALLOWED (and itself). A file that
includes a header of a folder above its own, anything outside cli/ that includes the CLI,
an include that resolves to no file, or a CMake target_link_libraries of a stage library that
names a library of a stage above it, is reported with file and line, and the exit status is 1.

usage: check-layering.py [--root DIR]     check the tree at DIR (default: this repository)
       check-layering.py --self-test      plant one violation of each kind in a temporary tree
                                          and fail unless every one is reported
"""
import argparse
import pathlib
import re
import sys
import tempfile

# Folder -> the folders its sources may include and its libraries may link, besides itself.
# The chain: model <- io <- {capture, cases, study} ; cases <- judge <- {anatomy, testing, conform};
# {anatomy, conform} <- gpu <- bench/gpu; the CLI on top of everything. kernels/ is the GPU
# implementation (its embedded fatbins).
BELOW_CASES = {"model", "harness/io"}
ALLOWED = {
    "model": set(),
    "harness/io": {"model"},
    "harness/capture": BELOW_CASES,
    "analysis/study": BELOW_CASES,
    "harness/cases": BELOW_CASES,
    "harness/judge": BELOW_CASES | {"harness/cases"},
    "harness/anatomy": BELOW_CASES | {"harness/cases", "harness/judge"},
    "harness/testing": BELOW_CASES | {"harness/cases", "harness/judge"},
    "harness/conform": BELOW_CASES | {"harness/cases", "harness/judge"},
    "harness/gpu": BELOW_CASES | {"harness/cases", "harness/judge", "harness/anatomy", "harness/conform",
                                  "kernels"},
    "bench/gpu": BELOW_CASES | {"harness/cases", "harness/judge", "harness/anatomy", "harness/gpu", "kernels"},
}
ALLOWED["cli"] = set(ALLOWED) | {"kernels"}
# The C interface of the Python API: a top layer beside the CLI, on the host stages only.
ALLOWED["python/capi"] = BELOW_CASES | {"harness/cases", "harness/judge"}
# Tests may use every stage but the CLI (they run the tqref binary instead).
ALLOWED["tests"] = set(ALLOWED) - {"cli"} | {"kernels"}

# Include roots, in the order the build's include directories make them visible.
INCLUDE_ROOTS = ["harness", ".", "model", "kernels/builtin/include"]
# Headers generated into the build tree, and the folder whose CMakeLists.txt generates them.
GENERATED = {"tqref/build_info.h": "harness/io"}
# Libraries -> the folder that defines them.
TARGETS = {
    "tqref_model": "model", "tqref_io": "harness/io", "tqref_capture": "harness/capture",
    "tqref_cases": "harness/cases", "tqref_judge": "harness/judge",
    "tqref_anatomy": "harness/anatomy", "tqref_testing": "harness/testing",
    "tqref_conform": "harness/conform", "tqref_gpu": "harness/gpu",
    "tqref_gpu_backend_registration": "harness/gpu", "tqref_gpu_none": "harness/gpu",
    "tqref_kernels_fatbin": "kernels", "tqref_study": "analysis/study",
    "tqref_gpu_bench": "bench/gpu", "tqref_c": "python/capi",
}
SOURCE_SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LINK = re.compile(r"target_link_libraries\s*\(([^)]*)\)", re.S)


def folder_of(rel: pathlib.PurePosixPath) -> str | None:
    """The stage folder holding `rel` (longest matching prefix), 'kernels', or None."""
    s = rel.as_posix()
    best = None
    for f in list(ALLOWED) + ["kernels"]:
        if (s == f or s.startswith(f + "/")) and (best is None or len(f) > len(best)):
            best = f
    return best


def resolve(root: pathlib.Path, src: pathlib.Path, name: str) -> str | None:
    """The folder of the header `name` included from `src`, or None when no file matches."""
    for base in [src.parent] + [root / r for r in INCLUDE_ROOTS]:
        p = base / name
        if p.is_file():
            return folder_of(pathlib.PurePosixPath(p.resolve().relative_to(root.resolve())))
    return GENERATED.get(name)


def check_includes(root: pathlib.Path, counted: list[int]) -> list[str]:
    problems = []
    for folder, allowed in ALLOWED.items():
        for src in sorted((root / folder).rglob("*")):
            if src.suffix not in SOURCE_SUFFIXES or not src.is_file():
                continue
            rel = src.relative_to(root).as_posix()
            own = folder_of(pathlib.PurePosixPath(rel))
            if own != folder:
                continue  # a deeper stage folder scans it
            text = src.read_text(errors="replace")
            for m in INCLUDE.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                counted[0] += 1
                target = resolve(root, src, m.group(1))
                where = f'{rel}:{line}: #include "{m.group(1)}"'
                if target is None:
                    problems.append(f"{where}: no such header under {', '.join(INCLUDE_ROOTS)}")
                elif target == "cli" and folder != "cli":
                    problems.append(f"{where}: only cli may include the CLI")
                elif target != folder and target not in allowed:
                    problems.append(f"{where}: {folder} may not use {target} (a stage above it)")
    return problems


def check_links(root: pathlib.Path) -> list[str]:
    problems = []
    for folder, allowed in ALLOWED.items():
        if folder == "tests":
            continue
        for cm in sorted((root / folder).rglob("CMakeLists.txt")):
            rel = cm.relative_to(root).as_posix()
            if folder_of(pathlib.PurePosixPath(rel)) != folder:
                continue
            text = cm.read_text()
            for m in LINK.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                for word in m.group(1).split()[1:]:
                    target = TARGETS.get(word)
                    if target and target != folder and target not in allowed:
                        problems.append(f"{rel}:{line}: links {word}: {folder} may not use {target}")
    return problems


def check(root: pathlib.Path, counted: list[int] | None = None) -> list[str]:
    return check_includes(root, counted if counted is not None else [0]) + check_links(root)


def self_test() -> int:
    """Plants one violation of each kind; fails unless each is reported and nothing else is."""
    files = {
        "harness/io/golden_case.h": "",
        "harness/judge/compare.h": '#include "io/golden_case.h"\n',  # allowed: downward
        "harness/io/bad_up.cpp": '#include "judge/compare.h"\n',  # upward include
        "cli/command.h": "",
        "harness/gpu/bad_cli.cpp": '#include "cli/command.h"\n',  # CLI from below
        "tests/bad_cli_test.cpp": '#include "cli/command.h"\n',  # CLI from a test
        "harness/cases/bad_missing.cpp": '#include "cases/gone.h"\n',  # stale include
        "harness/io/CMakeLists.txt": "target_link_libraries(tqref_io PUBLIC tqref_judge)\n",
        "harness/judge/CMakeLists.txt": "target_link_libraries(tqref_judge PUBLIC tqref_io)\n",
    }
    expected = ["harness/io/bad_up.cpp:1", "harness/gpu/bad_cli.cpp:1", "tests/bad_cli_test.cpp:1",
                "harness/cases/bad_missing.cpp:1", "harness/io/CMakeLists.txt:1"]
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        problems = check(root)
    ok = len(problems) == len(expected) and all(
        any(p.startswith(e + ":") for p in problems) for e in expected)
    print("\n".join(problems))
    print("self-test:", "every planted violation reported" if ok else "FAILED (expected " +
          ", ".join(expected) + ")")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    counted = [0]
    problems = check(a.root, counted)
    for p in problems:
        print(p)
    if counted[0] == 0:  # a wrong --root must not pass as a clean tree
        print(f"layering: no include found under {a.root}")
        return 1
    print(f"layering: {len(problems)} problem(s) in {counted[0]} includes" if problems else
          f"layering: all {counted[0]} includes and every link point down")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
