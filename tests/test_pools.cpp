// Pools of production size (docs/golden-schema.md, "Pools of production size"; io/sparse_pool.h,
// cases/large_pool.h): placement of the stored blocks, the file round trip, the launch-id
// translation, the judge's samples, and on the CPU what a kernel with 32-bit offsets would do.
#define BOOST_TEST_MODULE pools
#include <boost/test/unit_test.hpp>

#include <set>

#include "cases/builders.h"
#include "cases/generate.h"
#include "cases/suites.h"
#include "golden_test_util.h"
#include "io/case_io.h"
#include "io/ex2_profile_io.h"
#include "io/sparse_pool.h"
#include "judge/backend.h"
#include "judge/compare.h"
#include "tqref/contract.h"

using namespace tqref;
using namespace tqref::golden;
using namespace tqref::cases;
using namespace tqref::judge;
using namespace tqref::test;
namespace fs = std::filesystem;

namespace {

const Ex2Profile& ex2() {
  static const Ex2Profile p = load_ex2_profile_for_arch("sm_90");
  return p;
}

// Every case of the pools suite, built in memory.
const std::vector<GoldenCase>& pool_cases() {
  static const std::vector<GoldenCase> cases = [] {
    std::vector<GoldenCase> all;
    const std::vector<CaseSpec> specs = suite_specs("pools");
    for (size_t i = 0; i < specs.size(); ++i)
      for (GoldenCase& c : build_cases(specs[i], i, 1000 + i, &ex2())) all.push_back(std::move(c));
    return all;
  }();
  return cases;
}

// Physical blocks that hold a token (writer) or are read (decode: entries in use).
std::set<int64_t> touched(const GoldenCase& c) {
  std::set<int64_t> ids;
  const SparsePool& sp = *c.sparse;
  if (c.kind == CaseKind::writer) {
    for (int64_t s : c.w.slot_mapping)
      if (s >= 0) ids.insert(sp.block_ids[uint64_t(s) / c.w.p.block_size]);
  } else {
    const DecodeParams& p = c.d.p;
    for (uint32_t s = 0; s < p.num_seqs; ++s)  // entries in use: blocks of [window start, L)
      for (uint32_t j = window_start(uint32_t(c.d.seq_lens[s]), p.sliding_window) / p.block_size;
           j * p.block_size < uint32_t(c.d.seq_lens[s]); ++j)
        ids.insert(sp.block_ids[uint32_t(c.d.block_tables[s * p.max_blocks_per_seq + j])]);
  }
  return ids;
}

bool holds_byte(int64_t id, uint64_t block_bytes, uint64_t byte) {
  return uint64_t(id) * block_bytes <= byte && byte < uint64_t(id + 1) * block_bytes;
}

}  // namespace

// Catches: a placement that keeps every block below 2^31 bytes (the bug class would not show),
// leaves the pool's last block or the 2^31/2^32/2^33 boundaries without data, or ids that are not
// in the millions / not the largest int32.
BOOST_AUTO_TEST_CASE(placement_reaches_the_offsets_of_the_bug_class) {
  size_t beyond = 0, maxid = 0;
  for (const GoldenCase& c : pool_cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      BOOST_REQUIRE(c.sparse);
      const SparsePool& sp = *c.sparse;
      const BlockBytes b = block_bytes(c);
      const std::set<int64_t> t = touched(c);
      BOOST_TEST(check_sparse_pool(sp, b, stored_blocks(c)) == "");
      BOOST_TEST(t.count(int64_t(sp.pool_blocks) - 1) == 1u, "the pool's last block holds data");
      if (c.name.find("maxid") != std::string::npos) {
        ++maxid;
        BOOST_TEST(sp.pool_blocks == uint64_t(1) << 31);
        BOOST_TEST(t.count(INT32_MAX) == 1u);
        continue;
      }
      ++beyond;
      BOOST_TEST(sp.pool_blocks > 1000000u);  // ids in the millions
      for (int e : {31, 32, 33}) {
        const uint64_t X = uint64_t(1) << e;
        bool k = false, v = false;
        for (int64_t id : t) k |= holds_byte(id, b.k, X), v |= holds_byte(id, b.v, X);
        BOOST_TEST(k, "a K block holding byte 2^" << e);
        BOOST_TEST(v, "a V block holding byte 2^" << e);
      }
    }
  }
  BOOST_TEST(beyond == 9u);  // per format a writer case and a decode pair
  BOOST_TEST(maxid == 1u);
}

// Catches: a schema round trip that loses the sparse description, or a reader that accepts a
// broken one (duplicate id, id past the pool, offset that is not id x block size).
BOOST_AUTO_TEST_CASE(sparse_description_round_trip_and_refusals) {
  const fs::path d = tqref::test::scratch("pools_round_trip");
  const GoldenCase& c = pool_cases().back();  // the max-id writer
  const auto write_read = [&](const GoldenCase& x) {
    const std::string f = (d / "p.h5").string();
    {
      h5::Node root = h5::Node::create_file(f);
      Provenance prov;
      write_provenance(root, prov);
      write_case(root.create_group("cases"), x);
    }
    h5::Node root = h5::Node::open_file(f);
    return read_case(root.group("cases"), x.name);
  };
  const GoldenCase back = write_read(c);
  BOOST_REQUIRE(back.sparse);
  BOOST_TEST(back.sparse->block_ids == c.sparse->block_ids);
  BOOST_TEST(back.sparse->pool_blocks == c.sparse->pool_blocks);
  BOOST_TEST(back.sparse->background == c.sparse->background);
  BOOST_TEST(back.w.k_expected == c.w.k_expected);
  const std::pair<std::function<void(SparsePool&)>, std::string> broken[] = {
      {[](SparsePool& s) { s.block_ids[1] = s.block_ids[0]; }, "allowed: distinct ids"},
      {[](SparsePool& s) { s.block_ids[0] = int64_t(s.pool_blocks); }, "allowed: distinct ids in 0 .. pool_blocks-1"},
      {[](SparsePool& s) { s.k_offsets[2] += 1; }, "sparse/k_offsets, v_offsets[2]"},
      {[](SparsePool& s) { s.pool_blocks = (uint64_t(1) << 31) + 1; }, "pool_blocks = 2147483649"}};
  for (const auto& [edit, want] : broken) {
    GoldenCase bad = c;
    edit(*bad.sparse);
    try {
      write_read(bad);
      BOOST_ERROR("accepted: " << want);
    } catch (const BadCase& e) {
      BOOST_TEST(std::string(e.what()).find(want) != std::string::npos, e.what());
    }
  }
  fs::remove_all(d);
}

// Catches: launch ids that point elsewhere than the stored block, or out-of-range markers that
// become valid ids of the whole pool (a kernel would read them).
BOOST_AUTO_TEST_CASE(launch_ids_keep_their_meaning) {
  SparsePool sp;
  sp.block_ids = {7, 3000000, 12};
  sp.pool_blocks = 4000000;
  BOOST_TEST(physical_slot(sp, 16, 16 + 5) == 3000000 * 16 + 5);
  BOOST_TEST(physical_slot(sp, 16, -1) == -1);
  BOOST_TEST(physical_table_entry(sp, 3, 2) == 12);
  BOOST_TEST(physical_table_entry(sp, 3, -1) == -1);
  BOOST_TEST(physical_table_entry(sp, 3, INT32_MIN) == INT32_MIN);
  BOOST_TEST(physical_table_entry(sp, 3, 3) == 4000000);          // "num_blocks" marker: past the pool
  BOOST_TEST(physical_table_entry(sp, 3, 100003) == 4100000);
  BOOST_TEST(physical_table_entry(sp, 3, INT32_MAX) == INT32_MAX);  // capped, still out of range
}

// Catches: a judge that does not look at the unstored blocks (a stray write beyond the stored
// ones would pass), or one that fails a clean read-back.
BOOST_AUTO_TEST_CASE(judge_checks_the_sampled_blocks) {
  const GoldenCase& c = pool_cases().front();  // beyond_4g writer
  CaseResult r = make_model_backend(&ex2())->run(c);
  BOOST_REQUIRE(compare_case(c, r).pass);
  const BlockBytes b = block_bytes(c);
  const std::vector<uint64_t> ids = sampled_blocks(*c.sparse, b.k);
  r.buffers["k_cache_samples"] = GuardedBuffer::with_guards(std::vector<uint8_t>(ids.size() * b.k, c.sparse->background));
  r.buffers["v_cache_samples"] = GuardedBuffer::with_guards(std::vector<uint8_t>(ids.size() * b.v, c.sparse->background));
  BOOST_TEST(compare_case(c, r).pass);
  r.buffers["k_cache_samples"].data()[3 * b.k + 10] ^= 0x40;
  const CaseVerdict v = compare_case(c, r);
  BOOST_TEST(!v.pass);
  BOOST_TEST(v.categories.at("untouched-modified") == 1u);
  BOOST_TEST(v.first.at(0).where == "K pool block " + std::to_string(ids[3]) + " byte 10 (unstored, read back after the launch)");
}

// The CPU mirror of mutant 21 (32-bit offset arithmetic, docs/mutants.md): with byte offsets
// computed modulo 2^32, every stored block whose offset passes 2^32 would be written (or read) at
// offset mod 2^32. Catches: a suite on which such a kernel could pass: each pool must have a
// touched block whose offset wraps, and its wrap image must be a block the judge reads back
// (sampled or stored), so the stray write shows as untouched-modified and the real block as
// row-not-written (writer), or the read returns background/other data (decoder).
BOOST_AUTO_TEST_CASE(offsets_that_wrap_at_32_bits_are_seen) {
  for (const GoldenCase& c : pool_cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      const BlockBytes b = block_bytes(c);
      for (const uint64_t bytes : {b.k, b.v}) {
        const std::vector<uint64_t> samples = sampled_blocks(*c.sparse, bytes);
        const std::set<uint64_t> seen(samples.begin(), samples.end());
        const std::set<int64_t> stored(c.sparse->block_ids.begin(), c.sparse->block_ids.end());
        size_t wrapping = 0;
        for (int64_t id : touched(c)) {
          const uint64_t off = uint64_t(id) * bytes;
          if (off + bytes <= (uint64_t(1) << 32)) continue;
          ++wrapping;
          const uint64_t image = (off % (uint64_t(1) << 32)) / bytes;
          BOOST_TEST((seen.count(image) || stored.count(int64_t(image))), "block " << id << " wraps to " << image);
        }
        BOOST_TEST(wrapping >= 2u);
      }
    }
  }
}

// Catches: cases of production size that the model (on the compact pools) does not reproduce.
BOOST_AUTO_TEST_CASE(model_backend_passes_every_pool_case) {
  auto m = make_model_backend(&ex2());
  for (const GoldenCase& c : pool_cases()) BOOST_TEST(compare_case(c, m->run(c)).pass, c.name);
}

// Catches: a memory budget that counts a sparse case's whole pools (9 GiB and 64 GiB here) on the
// host instead of the stored blocks, which would refuse every pools case on a 24 GiB machine; and
// a file of the pools suite that the reader's validation (checksums, chunk sizes) refuses.
BOOST_AUTO_TEST_CASE(pools_file_passes_validation_within_a_small_budget) {
  const fs::path d = scratch("pools_budget");
  BOOST_REQUIRE_EQUAL(run_cli("generate --suite pools --threads 2 --out " + (d / "pools.h5").string(), d), 0);
  BOOST_TEST(run_cli("--max-memory 64M check " + (d / "pools.h5").string(), d) == 0, slurp(d / "last.log"));
  fs::remove_all(d);
}
