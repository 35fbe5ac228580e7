// GPU benchmark of the writer and decoder kernels (`tqref bench`, docs/gpu-performance.md): inputs
// generated on the device (bench_util module + the reference-order writer), CUDA-event timing after warm-up,
// median of many runs, inputs rotated over several pool copies (more memory than the L2), a
// device-to-device copy measured in the same run as the bandwidth reference, and a bit-for-bit
// conformance check of every benchmarked kernel on the benchmark inputs before it is timed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/driver.h"
#include "tqref/format.h"

namespace tqref::bench {

struct Timing {
  double median_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0;
  int runs = 0;
};

struct Settings {
  int warmup = 5;
  int runs = 30;
  uint64_t rotate_bytes = 256ull << 20;  // pool copies are added until they exceed this
  uint64_t seed = 1;
};

// One decode problem: every sequence has seq_len positions in shuffled physical blocks.
struct DecodeShape {
  Format format = Format::turbo3v;
  uint32_t hdim = 128, num_seqs = 32, num_q_heads = 32, num_kv_heads = 8, seq_len = 16384;
  uint32_t block_size = 16;
  float q_sigma = 1.0f;  // q ~ N(0, q_sigma^2), K and V ~ N(0, 1): sets the skip rate
  std::string model;     // the real model whose head counts these are ("" for synthetic shapes)
  std::string label() const;
  uint64_t pairs() const { return uint64_t(num_seqs) * num_q_heads * seq_len; }  // (q head, position)
};

struct DecodeResult {
  DecodeShape shape;
  std::string kernel;     // entry point
  uint32_t heads_per_cta = 0;  // 0 = reference-order kernel, grid [num_q_heads, num_seqs]
  Timing t;
  uint64_t k_bytes = 0, v_bytes_full = 0, v_bytes_needed = 0, qo_bytes = 0;
  double skip_rate = 0;   // skipped (head, position) pairs / all pairs
  bool conformant = false;
  uint64_t mismatches = 0;  // output elements differing from the reference-order kernel (summed
                            // over the checks before and after timing)
  bool model_checked = false, model_equal = false;  // reference-order kernel vs CPU model, on a sequence subset
};

// One writer problem: `tokens` tokens of num_kv_heads x hdim values, scattered over a shuffled
// slot mapping that uses every slot of the pool once (engine geometry, block size 16).
struct WriterShape {
  Format format = Format::turbo3v;
  uint32_t hdim = 128, num_kv_heads = 8, tokens = 16384, block_size = 16;
  std::string label() const;
};

struct WriterResult {
  WriterShape shape;
  std::string kernel;     // entry point
  bool fast = false;      // writers_fast (grid [ceil(tokens / TPC)]) or the reference-order writer
  uint32_t grid_x = 0;    // grid [grid_x, 1, 1], block [256, 1, 1]
  uint32_t launches = 0;  // launches of this kernel for this result (checks, warm-up, timed runs)
  Timing t;
  Timing copy;            // cuMemcpyDtoD moving the same bytes (bytes/2 copied), in the same run
  uint64_t bytes = 0;     // key + value read, K row + V row written
  bool conformant = false;  // every pool copy equals the CPU writer model, before and after timing
  uint64_t mismatches = 0;  // differing pool bytes, summed over the checks
  double fraction_of_copy() const { return t.median_ms > 0 ? copy.median_ms / t.median_ms : 0.0; }
};

struct CopyResult {
  uint64_t bytes = 0;     // copied bytes (the bandwidth counts read + write)
  Timing t;
  double gbps() const { return t.median_ms > 0 ? 2.0 * double(bytes) / (t.median_ms * 1e6) : 0; }
};

// Every heads-per-CTA the GQA decoders take, widest first (gqa::kMaxHT .. 1): what
// `tqref bench` passes to GpuBench::decode, which leaves out those a shape does not allow.
std::vector<uint32_t> all_heads_per_cta();

class GpuBench {
 public:
  GpuBench(const gpu::Context& ctx, Settings s);
  ~GpuBench();
  CopyResult copy(uint64_t bytes);
  // The reference-order kernel plus the GQA kernels for every heads-per-CTA in `hts` that they
  // accept for the shape (gqa::heads_per_cta, 1 to 8); each checked against the reference-order kernel's output on
  // one launch before timing and on the output of its last timed launch.
  std::vector<DecodeResult> decode(const DecodeShape& shape, const std::vector<uint32_t>& hts,
                                   uint32_t model_check_seqs);
  // The reference-order writer and the bandwidth writer on the same inputs, each checked against
  // the CPU model on every pool copy, with the copy baseline of the same bytes.
  std::vector<WriterResult> writers(const WriterShape& shape);

 private:
  struct Impl;
  Impl* impl_;
};

std::string format_name(Format f);

}  // namespace tqref::bench
