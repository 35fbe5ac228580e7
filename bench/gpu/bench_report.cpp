#include "bench/gpu/bench_report.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "io/report_doc.h"

namespace tqref::bench {

namespace {

using report::Json;

// Figures as the report always gave them: times to the nanosecond (6 decimals of a ms), the
// derived rates and fractions to 6 significant digits.
Json ms(double x) { return report::json_number(x, "%.6f"); }
Json fig(double x) { return report::json_number(x, "%g"); }

Json timing_json(const Timing& t) {
  return {{"median_ms", ms(t.median_ms)}, {"min_ms", ms(t.min_ms)}, {"p10_ms", ms(t.p10_ms)},
          {"p90_ms", ms(t.p90_ms)}, {"runs", t.runs}};
}

// The table's kernel column: the reference-order kernel or a GQA decoder.
const char* variant_of(const DecodeResult& d) { return d.heads_per_cta == 0 ? "ref-order" : "gqa"; }

}  // namespace

uint32_t decode_launches(const Settings& s) { return 1 + uint32_t(s.warmup + s.runs); }

void write_json(const std::string& path, const Report& r) {
  Json decode = Json::array();
  for (const DecodeResult& d : r.decode) {
    const DecodeShape& s = d.shape;
    const uint64_t need = needed_bytes(d), full = d.k_bytes + d.v_bytes_full + d.qo_bytes;
    decode.push_back({{"kernel", d.kernel},
                      {"variant", variant_of(d)},
                      {"heads_per_cta", d.heads_per_cta},
                      {"format", format_name(s.format)},
                      {"hdim", s.hdim},
                      {"num_seqs", s.num_seqs},
                      {"num_q_heads", s.num_q_heads},
                      {"num_kv_heads", s.num_kv_heads},
                      {"seq_len", s.seq_len},
                      {"block_size", s.block_size},
                      {"q_sigma", fig(s.q_sigma)},
                      {"model", s.model},
                      {"pairs", s.pairs()},
                      {"grid_x", d.heads_per_cta ? s.num_q_heads / d.heads_per_cta : s.num_q_heads},
                      {"launches", decode_launches(r.settings)},
                      {"timing", timing_json(d.t)},
                      {"k_bytes", d.k_bytes},
                      {"v_bytes_full", d.v_bytes_full},
                      {"v_bytes_needed", d.v_bytes_needed},
                      {"qo_bytes", d.qo_bytes},
                      {"bytes_needed", need},
                      {"gbps_needed", fig(gbps(need, d.t))},
                      {"floor_full_ms", fig(r.copy.gbps() > 0 ? double(full) / (r.copy.gbps() * 1e6) : 0.0)},
                      {"fraction_of_copy", fig(r.copy.gbps() > 0 ? gbps(need, d.t) / r.copy.gbps() : 0.0)},
                      {"skip_rate", fig(d.skip_rate)},
                      {"conformant", d.conformant},
                      {"mismatches", d.mismatches},
                      {"model_checked", d.model_checked},
                      {"model_equal", d.model_equal}});
  }
  Json writer = Json::array();
  for (const WriterResult& w : r.writer) {
    const WriterShape& s = w.shape;
    writer.push_back({{"kernel", w.kernel},
                      {"fast", w.fast},
                      {"format", format_name(s.format)},
                      {"hdim", s.hdim},
                      {"num_kv_heads", s.num_kv_heads},
                      {"tokens", s.tokens},
                      {"block_size", s.block_size},
                      {"grid_x", w.grid_x},
                      {"launches", w.launches},
                      {"timing", timing_json(w.t)},
                      {"bytes", w.bytes},
                      {"gbps", fig(gbps(w.bytes, w.t))},
                      {"copy_same_bytes", timing_json(w.copy)},
                      {"copy_gbps", fig(gbps(w.bytes, w.copy))},
                      {"fraction_of_copy", fig(w.fraction_of_copy())},
                      {"conformant", w.conformant},
                      {"mismatches", w.mismatches}});
  }
  const Json j = {{"schema", "tqref.bench/1"},
                  {"device", {{"name", r.device}, {"arch", r.arch}, {"driver", r.driver}, {"sm_count", r.sm_count}}},
                  {"command_line", r.command_line},
                  {"settings", {{"warmup", r.settings.warmup},
                                {"runs", r.settings.runs},
                                {"rotate_bytes", r.settings.rotate_bytes},
                                {"seed", r.settings.seed}}},
                  {"copy", {{"bytes", r.copy.bytes}, {"gbps_read_write", fig(r.copy.gbps())}, {"timing", timing_json(r.copy.t)}}},
                  {"decode", std::move(decode)},
                  {"writer", std::move(writer)}};
  std::ofstream f(path);
  if (!f) throw std::runtime_error("tqref bench: cannot write --json file " + path);
  f << report::json_text(j);
  if (!f) throw std::runtime_error("tqref bench: write to " + path + " failed");
}

void print_table(const Report& r) {
  std::printf("\ndevice %s (%s, %d SMs); device-to-device copy %.0f GB/s (read+write, %.0f MiB, median of %d)\n",
              r.device.c_str(), r.arch.c_str(), r.sm_count, r.copy.gbps(), double(r.copy.bytes) / (1 << 20),
              r.copy.t.runs);
  std::printf("%-56s %-9s %3s %9s %8s %6s %9s %6s %5s %s\n", "decode shape", "kernel", "HT", "median_ms",
              "GB/s", "%copy", "floor_ms", "skip%", "x", "bits");
  double ref_order_ms = 0;  // the shape's reference-order kernel: the speed-up baseline
  for (const DecodeResult& d : r.decode) {
    if (d.heads_per_cta == 0) ref_order_ms = d.t.median_ms;
    const uint64_t full = d.k_bytes + d.v_bytes_full + d.qo_bytes;
    const double floor_ms = r.copy.gbps() > 0 ? double(full) / (r.copy.gbps() * 1e6) : 0.0;
    std::printf("%-56s %-9s %3u %9.4f %8.0f %6.1f %9.4f %6.2f %5.2f %s\n", d.shape.label().c_str(),
                variant_of(d), d.heads_per_cta, d.t.median_ms, gbps(needed_bytes(d), d.t),
                r.copy.gbps() > 0 ? 100.0 * gbps(needed_bytes(d), d.t) / r.copy.gbps() : 0.0, floor_ms,
                100.0 * d.skip_rate, d.t.median_ms > 0 ? ref_order_ms / d.t.median_ms : 0.0,
                d.conformant ? (d.heads_per_cta ? "= ref-order" : (d.model_checked ? "= model" : "written"))
                             : "MISMATCH");
  }
  std::printf("%-36s %-9s %9s %8s %9s %6s %5s %s\n", "writer", "kernel", "median_ms", "GB/s", "copy_ms",
              "%copy", "x", "bits");
  double ref_writer_ms = 0;  // the shape's reference-order writer: the speed-up baseline
  for (const WriterResult& w : r.writer) {
    if (!w.fast) ref_writer_ms = w.t.median_ms;
    std::printf("%-36s %-9s %9.4f %8.0f %9.4f %6.1f %5.2f %s\n", w.shape.label().c_str(),
                w.fast ? "fast" : "ref-order", w.t.median_ms, gbps(w.bytes, w.t), w.copy.median_ms,
                100.0 * w.fraction_of_copy(), w.t.median_ms > 0 ? ref_writer_ms / w.t.median_ms : 0.0,
                w.conformant ? "= model" : "MISMATCH");
  }
}

}  // namespace tqref::bench
