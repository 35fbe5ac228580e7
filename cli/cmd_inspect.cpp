// `tqref inspect FILE [--case NAME]`: provenance, the cases with kernel, parameters and sizes,
// and the decode skip statistics, read from the file alone.
#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "command.h"
#include "options.h"
#include "io/case_io.h"
#include "io/text_escape.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;
using namespace tqref::golden;

std::string lens_str(const std::vector<int32_t>& v, size_t max) {
  std::string r;
  for (size_t i = 0; i < v.size() && i < max; ++i) {
    if (i) r.push_back(',');
    r.append(std::to_string(v[i]));
  }
  if (v.size() > max) r += ",... (" + std::to_string(v.size()) + ")";
  return r;
}

void summary(const GoldenCase& c, bool detail) {
  std::printf("%s\n  kernel %s  kind %s  seed %llu  dist %s\n", c.name.c_str(),
              kernel_name(c.kind, c.format).c_str(), kind_name(c.kind),
              (unsigned long long)c.seed, c.distribution.c_str());
  if (c.kind == CaseKind::writer) {
    const WriterCase& w = c.w;
    // read_case_summary keeps no pool: their sizes from the geometry, which the reader checked
    // the stored pools against
    const CacheGeometry pools{w.p.num_kv_heads, w.p.head_dim, w.p.block_size, w.num_blocks,
                              w.p.v_block_stride_bytes, w.p.v_data_section_bytes};
    int pads = 0;
    for (int64_t s : w.slot_mapping) pads += s < 0;
    std::printf("  H %u D %u B %u  tokens %u (%d slot<0)  key_stride %u value_stride %u  "
                "v_data_section %llu v_block_stride %llu  blocks %u  grid [%u,1,1]\n"
                "  pools: K %zu bytes, V %zu bytes\n",
                w.p.num_kv_heads, w.p.head_dim, w.p.block_size, w.num_tokens, pads, w.p.key_stride,
                w.p.value_stride, (unsigned long long)w.p.v_data_section_bytes,
                (unsigned long long)w.p.v_block_stride_bytes, w.num_blocks, w.num_tokens,
                size_t(pools.k_pool_bytes()), size_t(pools.v_pool_bytes()));
  } else {
    const DecodeCase& d = c.d;
    const DecodeDiagData& x = d.diag;
    uint64_t skipped = 0, rows_with = 0;
    for (uint32_t n : x.skip_count) {
      skipped += n;
      rows_with += n > 0;
    }
    std::printf("  HDIM %u  q heads %u kv heads %u  B %u  seqs %u  L [%s]  window %u  "
                "max_blocks_per_seq %u  q_stride %u  inv_sqrt_d %.9g  THRESH %.9g\n"
                "  v_data_section %llu v_block_stride %llu  blocks %u  grid [%u,%u,1]  linked %s\n"
                "  skip: %llu of %llu (row, position) pairs skipped, %llu of %zu rows skip\n",
                d.p.hdim, d.p.num_q_heads, d.p.num_kv_heads, d.p.block_size, d.p.num_seqs,
                lens_str(d.seq_lens, 12).c_str(), d.p.sliding_window, d.p.max_blocks_per_seq,
                d.p.q_stride, d.p.inv_sqrt_d, c.threshold,
                (unsigned long long)d.p.v_data_section_bytes,
                (unsigned long long)d.p.v_block_stride_bytes, d.num_blocks, d.p.num_q_heads,
                d.p.num_seqs, c.linked_case.c_str(), (unsigned long long)skipped,
                (unsigned long long)x.skip_offsets.back(), (unsigned long long)rows_with,
                x.skip_count.size());
    if (detail)
      for (size_t r = 0; r < x.skip_count.size(); ++r)
        std::printf("    seq %zu qhead %zu: L %d skipped %u m %.9g l %.9g\n", r / d.p.num_q_heads,
                    r % d.p.num_q_heads, d.seq_lens[r / d.p.num_q_heads], x.skip_count[r], x.m[r], x.l[r]);
  }
  std::printf("  exercises: %s\n", printable(c.exercises).c_str());  // free text from the file
}

int cmd_inspect(const std::vector<std::string>& args) {
  std::string file, only;
  po::options_description desc("usage: tqref inspect FILE [--case NAME]\nOptions");
  desc.add_options()("help,h", "this text")("file", po::value(&file), "golden HDF5 file")(
      "case", po::value(&only), "show one case in detail (per-row skip counts, m, l)");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (const auto rc = parse_options("tqref inspect", args, desc, vm, &pos)) return *rc;
  if (file.empty()) {
    std::cout << desc << "\n";
    return kExitUsage;
  }
  h5::Node root = open_golden_file(file);
  Provenance p = read_provenance(root);
  // Free text from the file, shown escaped (names and identifiers were validated by the reader).
  for (std::string* s : {&p.tqref_version, &p.git_commit, &p.suite, &p.shard, &p.rng, &p.command_line,
                         &p.reproducer_of})
    *s = printable(*s);
  h5::Node cases = root.group("cases");
  if (!only.empty() && !cases.has(only)) {
    std::fprintf(stderr, "tqref inspect: %s has no case '%s'\n", file.c_str(), printable(only).c_str());
    return kExitBadInput;
  }
  // Every case is read and checked before anything is printed: a bad file gives one message
  // (docs/bad-input.md), not a partial listing followed by an error. Summaries: what is shown is
  // kept, the pools and other bulk data are checked (shapes, checksums) and dropped.
  std::vector<GoldenCase> all;
  for (const auto& n : only.empty() ? cases.children() : std::vector<std::string>{only})
    all.push_back(read_case_summary(cases, n));
  std::printf("%s\n  schema_version %lld  tqref %s  commit %s\n  suite %s  shard %s  seed %llu\n"
              "  rng: %s\n  threshold %.9g  ex2 profile %s\n  command: %s\n",
              file.c_str(), (long long)p.schema_version, p.tqref_version.c_str(),
              p.git_commit.c_str(), p.suite.c_str(), p.shard.c_str(), (unsigned long long)p.seed,
              p.rng.c_str(), p.threshold, p.ex2_profile_id.empty() ? "(none)" : p.ex2_profile_id.c_str(),
              p.command_line.c_str());
  if (!p.reproducer_of.empty()) std::printf("  reproducer of %s\n", p.reproducer_of.c_str());
  if (!only.empty()) {
    summary(all[0], true);
    return kExitOk;
  }
  std::printf("  %zu cases\n\n", all.size());
  for (const auto& c : all) summary(c, false);
  return kExitOk;
}

}  // namespace

TQREF_COMMAND("inspect", "summarise a golden-data file (provenance, cases, skips)", cmd_inspect);
