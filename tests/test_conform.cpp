// `tqref conform` without a GPU (harness/conform/): module scanning, the static entry-point
// pre-check of PTX, cubin (ELF symbol table) and fatbin files, architecture explanations of load
// failures, --hdim and --suites parsing, the HDIM probe cases and the choice between them,
// reports from synthetic results, the exit-code rules and the no-GPU path of the CLI.
#define BOOST_TEST_MODULE test_conform
#define BOOST_BIND_GLOBAL_PLACEHOLDERS  // boost/property_tree still includes the old bind.hpp
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <sstream>

#include "conform/hdim_probe.h"
#include "conform/module_file.h"
#include "conform/options.h"
#include "conform/report.h"
#include "conform/result.h"
#include "conform/suite_files.h"
#include "io/report_doc.h"
#include "golden_test_util.h"
#include "io/ex2_profile_io.h"
#include "judge/backend.h"
#include "judge/compare.h"

namespace {

using namespace tqref;
using namespace tqref::conform;
using namespace tqref::test;
namespace fs = std::filesystem;

void put16(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  b[at] = uint8_t(v), b[at + 1] = uint8_t(v >> 8);
}
void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}
void put64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = uint8_t(v >> (8 * i));
}

// A minimal CUDA-style ELF64: header (ELF ABI version 8: SM in e_flags bits 8..15), sections
// [null, .strtab, .symtab]; `funcs` become global STT_FUNC symbols, `locals` local ones.
std::vector<uint8_t> fake_cubin(uint32_t sm, const std::vector<std::string>& funcs,
                                const std::vector<std::string>& locals = {}) {
  std::vector<uint8_t> str(1, 0);
  std::vector<std::pair<uint32_t, uint8_t>> syms = {{0, 0}};  // (name offset, st_info)
  auto add = [&](const std::string& n, uint8_t info) {
    syms.push_back({uint32_t(str.size()), info});
    str.insert(str.end(), n.begin(), n.end());
    str.push_back(0);
  };
  for (const auto& n : locals) add(n, 0x02);  // STB_LOCAL, STT_FUNC
  for (const auto& n : funcs) add(n, 0x12);   // STB_GLOBAL, STT_FUNC
  const size_t str_off = 64, sym_off = str_off + str.size(), sym_size = syms.size() * 24;
  const size_t sh_off = (sym_off + sym_size + 7) & ~size_t(7);
  std::vector<uint8_t> b(sh_off + 3 * 64, 0);
  std::memcpy(b.data(), "\x7f" "ELF", 4);
  b[4] = 2, b[5] = 1, b[6] = 1, b[7] = 0x41, b[8] = 8;
  put16(b, 16, 2);               // ET_EXEC
  put16(b, 18, 190);             // EM_CUDA
  put64(b, 40, sh_off);
  put32(b, 48, 0x6000000u | sm << 8 | 2);
  put16(b, 58, 64);
  put16(b, 60, 3);
  std::memcpy(b.data() + str_off, str.data(), str.size());
  for (size_t i = 0; i < syms.size(); ++i) {
    put32(b, sym_off + i * 24, syms[i].first);
    b[sym_off + i * 24 + 4] = syms[i].second;
  }
  const size_t s1 = sh_off + 64, s2 = sh_off + 128;
  put32(b, s1 + 4, 3);  // SHT_STRTAB
  put64(b, s1 + 24, str_off);
  put64(b, s1 + 32, str.size());
  put32(b, s2 + 4, 2);  // SHT_SYMTAB
  put64(b, s2 + 24, sym_off);
  put64(b, s2 + 32, sym_size);
  put32(b, s2 + 40, 1);  // link: .strtab
  put64(b, s2 + 56, 24);
  return b;
}

std::string fake_ptx(const std::string& target, const std::vector<std::string>& entries) {
  std::string s = "//\n// Generated for a test\n//\n\n.version 9.0\n.target " + target + "\n.address_size 64\n\n";
  s += ".func helper_not_an_entry(\n)\n{\n}\n";
  for (const auto& e : entries) s += ".visible .entry " + e + "(\n\t.param .u64 p0\n)\n{\n\tret;\n}\n";
  return s;
}

struct FatEntry {
  uint32_t kind;  // 1 PTX, 2 ELF
  uint32_t sm;
  bool compressed;
  std::vector<uint8_t> payload;
};

// The fatbin container as nvcc writes it: 16-byte header, then 64-byte entry headers + payloads.
std::vector<uint8_t> fake_fatbin(const std::vector<FatEntry>& es) {
  std::vector<uint8_t> body;
  for (const auto& e : es) {
    std::vector<uint8_t> h(64, 0);
    put16(h, 0, e.kind);
    put16(h, 2, 0x101);
    put32(h, 4, 64);
    put64(h, 8, e.payload.size());
    put32(h, 28, e.sm);
    put32(h, 40, e.compressed ? 0x8011 : 0x11);
    body.insert(body.end(), h.begin(), h.end());
    body.insert(body.end(), e.payload.begin(), e.payload.end());
  }
  std::vector<uint8_t> b(16, 0);
  put32(b, 0, 0xBA55ED50u);
  put16(b, 4, 1);
  put16(b, 6, 16);
  put64(b, 8, body.size());
  b.insert(b.end(), body.begin(), body.end());
  return b;
}

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

void write_file(const fs::path& p, const std::vector<uint8_t>& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

const std::string kW3 = "reshape_and_cache_flash_bf16k_turbo3v";
const std::string kD3 = "paged_decode_attn_bf16k_turbo3v";
const std::string kD4 = "paged_decode_attn_bf16k_turbo4v";

}  // namespace

// Would catch: a scanner that misses a suffix, descends in a random order (unstable reports),
// lists a file twice, takes foreign files from a directory, or accepts a named non-module file
// or a missing path silently.
BOOST_AUTO_TEST_CASE(scan_files_and_directories) {
  const fs::path d = scratch("conform_scan");
  write_file(d / "mods/b.ptx", bytes_of("x"));
  write_file(d / "mods/a.cubin", {1});
  write_file(d / "mods/sub/c.fatbin", {1});
  write_file(d / "mods/readme.txt", {1});
  write_file(d / "other/z.ptx", bytes_of("x"));
  const auto v = scan_module_paths({(d / "mods").string(), (d / "other/z.ptx").string(),
                                    (d / "mods/a.cubin").string()});
  BOOST_TEST_REQUIRE(v.size() == 4u);
  BOOST_TEST(fs::path(v[0].path).filename() == "a.cubin");
  BOOST_TEST((v[0].kind == ModuleKind::cubin));
  BOOST_TEST(fs::path(v[1].path).filename() == "b.ptx");
  BOOST_TEST((v[1].kind == ModuleKind::ptx));
  BOOST_TEST(fs::path(v[2].path).filename() == "c.fatbin");
  BOOST_TEST((v[2].kind == ModuleKind::fatbin));
  BOOST_TEST(fs::path(v[3].path).filename() == "z.ptx");
  BOOST_CHECK_THROW(scan_module_paths({(d / "mods/readme.txt").string()}), ModulePathError);
  BOOST_CHECK_THROW(scan_module_paths({(d / "missing").string()}), ModulePathError);
  fs::remove_all(d);
}

// Would catch: a PTX reader that takes .func as entries, misses `.entry` without `.visible`,
// or loses the target's 'f' suffix (sm_121f PTX, as the engine builds it for GB10).
BOOST_AUTO_TEST_CASE(ptx_entries_and_target) {
  std::string ptx = fake_ptx("sm_121f", {kD3, kD4});
  ptx += ".entry " + kW3 + "(\n)\n{\n}\n";
  const ModuleInspection m = inspect_module_bytes(bytes_of(ptx), ModuleKind::ptx);
  BOOST_TEST(m.complete);
  BOOST_TEST(m.entries.size() == 3u);
  BOOST_TEST(m.entries.count(kD3) == 1u);
  BOOST_TEST(m.entries.count(kW3) == 1u);
  BOOST_TEST(m.entries.count("helper_not_an_entry") == 0u);
  BOOST_TEST_REQUIRE(m.targets.size() == 1u);
  BOOST_TEST(m.targets[0].ptx);
  BOOST_TEST(m.targets[0].sm == 121u);
  BOOST_TEST(m.targets[0].suffix == "f");
  BOOST_TEST(m.targets_text() == "compute_121f PTX");
  const ModuleInspection bad = inspect_module_bytes(bytes_of("not ptx at all"), ModuleKind::ptx);
  BOOST_TEST(!bad.complete);
  BOOST_TEST(!bad.problem.empty());
}

// Would catch: reading SM from the wrong e_flags bits, taking local symbols as kernels, or a
// crash / garbage names on a truncated file.
BOOST_AUTO_TEST_CASE(cubin_symbol_table) {
  const auto b = fake_cubin(121, {kD3, kD4}, {"a_local_helper"});
  const ModuleInspection m = inspect_module_bytes(b, ModuleKind::cubin);
  BOOST_TEST(m.complete, m.problem);
  BOOST_TEST(m.entries.size() == 2u);
  BOOST_TEST(m.entries.count(kD4) == 1u);
  BOOST_TEST(m.entries.count("a_local_helper") == 0u);
  BOOST_TEST_REQUIRE(m.targets.size() == 1u);
  BOOST_TEST(m.targets[0].sm == 121u);
  BOOST_TEST(m.targets_text() == "sm_121 SASS");
  for (size_t cut : {size_t(10), size_t(70), b.size() - 30}) {
    const std::vector<uint8_t> t(b.begin(), b.begin() + long(cut));
    const ModuleInspection mt = inspect_module_bytes(t, ModuleKind::cubin);
    BOOST_TEST(!mt.complete, "cut at " << cut);
  }
}

// Would catch: a fatbin walk that stops after the first entry, misreads the SM field, or claims
// completeness (so "kernel absent") when an image was compressed and its names unread.
BOOST_AUTO_TEST_CASE(fatbin_entries) {
  const auto fb = fake_fatbin({{1, 90, false, bytes_of(fake_ptx("sm_90", {kW3}))},
                               {2, 90, false, fake_cubin(90, {kW3})},
                               {2, 121, false, fake_cubin(121, {kW3})}});
  const ModuleInspection m = inspect_module_bytes(fb, ModuleKind::fatbin);
  BOOST_TEST(m.complete, m.problem);
  BOOST_TEST(m.entries.size() == 1u);
  BOOST_TEST(m.targets_text() == "compute_90 PTX, sm_90 SASS, sm_121 SASS");
  const auto fc = fake_fatbin({{2, 90, false, fake_cubin(90, {kW3})}, {1, 121, true, {1, 2, 3, 4}}});
  const ModuleInspection c = inspect_module_bytes(fc, ModuleKind::fatbin);
  BOOST_TEST(!c.complete);
  BOOST_TEST(c.targets_text() == "sm_90 SASS, compute_121 PTX (compressed)");
  BOOST_TEST(!inspect_module_bytes({1, 2, 3}, ModuleKind::fatbin).complete);
}

// Would catch: wrong load explanations (the message the brief asks for: "built for sm_121, this
// GPU is sm_90"), or blaming the architecture for a module that would load.
BOOST_AUTO_TEST_CASE(architecture_explanations) {
  ModuleInspection c121;
  c121.targets = {{false, 121, "", false}};
  const std::string msg = load_mismatch(c121, 90);
  BOOST_TEST(msg.find("built for sm_121") == 0u, msg);
  BOOST_TEST(msg.find("this GPU is sm_90") != std::string::npos, msg);
  ModuleInspection ptx121f;
  ptx121f.targets = {{true, 121, "f", false}};
  BOOST_TEST(load_mismatch(ptx121f, 90).find("built for sm_121f") == 0u);
  BOOST_TEST(load_mismatch(ptx121f, 121).empty());
  ModuleInspection ptx90;
  ptx90.targets = {{true, 90, "", false}};
  BOOST_TEST(load_mismatch(ptx90, 121).empty());  // PTX is JIT-compiled forward
  ModuleInspection c90;
  c90.targets = {{false, 90, "", false}};
  BOOST_TEST(!load_mismatch(c90, 121).empty());   // SASS does not cross major versions
  BOOST_TEST(load_mismatch(c90, 90).empty());
  ModuleInspection mixed;
  mixed.targets = {{false, 121, "", false}, {true, 90, "", false}};
  BOOST_TEST(load_mismatch(mixed, 90).empty());   // the PTX image suits sm_90
  ModuleInspection a;
  a.targets = {{true, 120, "a", false}};
  BOOST_TEST(!load_mismatch(a, 121).empty());     // 'a' pins the exact architecture
}

// Would catch: accepting an HDIM other than 128/256, a malformed assignment, conflicting
// repeats, names that match no module (silently probing instead), or failing to match a module
// by path, file name or stem.
BOOST_AUTO_TEST_CASE(hdim_arguments) {
  const auto h = parse_hdim_args({"decode.sm_121.cubin=256", "dir/dec128.ptx=128", "w=128"});
  BOOST_TEST(h.size() == 3u);
  const ModuleFile f1{"x/decode.sm_121.cubin", ModuleKind::cubin}, f2{"dir/dec128.ptx", ModuleKind::ptx},
      f3{"a/decode.sm_121.ptx", ModuleKind::ptx}, f4{"q/other.fatbin", ModuleKind::fatbin};
  BOOST_TEST(hdim_for(h, f1) == 256u);
  BOOST_TEST(hdim_for(h, f2) == 128u);
  BOOST_TEST(hdim_for(h, f4) == 0u);
  BOOST_TEST(hdim_for(parse_hdim_args({"decode.sm_121=128"}), f3) == 128u);  // by stem
  for (const char* bad : {"decode=64", "decode", "=128", "decode=", "decode=128x"})
    BOOST_CHECK_THROW(parse_hdim_args({bad}), OptionError);
  BOOST_CHECK_THROW(parse_hdim_args({"m=128", "m=256"}), OptionError);
  BOOST_CHECK_NO_THROW(parse_hdim_args({"m=128", "m=128"}));
  BOOST_CHECK_THROW(check_hdim_names(parse_hdim_args({"typo=128"}), {f1, f2}), OptionError);
  BOOST_CHECK_THROW(hdim_for(parse_hdim_args({"decode.sm_121.cubin=256", "decode.sm_121=128"}), f1),
                    OptionError);
}

// Would catch: empty items, unknown names taken as suites, or duplicates run twice.
BOOST_AUTO_TEST_CASE(suite_list) {
  const auto s = parse_suites("smoke,standard,real,smoke,extra/my.h5");
  BOOST_TEST(s.size() == 4u);
  BOOST_TEST(s[3] == "extra/my.h5");
  for (const char* bad : {"", "smoke,", "smoke,,real", "stress", "smoke;real"})
    BOOST_CHECK_THROW(parse_suites(bad), OptionError);
}

// Would catch: a conform run that validates a suite and loads its EX2 profile again for each
// module (not shared), or one that dies on a suite it cannot open instead of leaving each module
// to report it.
BOOST_AUTO_TEST_CASE(suite_files_are_opened_once_for_all_modules) {
  const fs::path d = scratch("conform_suite_files");
  const std::string bad = (d / "bad.h5").string();
  write_file(bad, bytes_of("not an HDF5 file"));
  std::vector<SuiteFile> suites = {find_suite_file("smoke"), find_suite_file(bad),
                                   find_suite_file((d / "missing.h5").string())};
  BOOST_TEST_REQUIRE(!suites[0].path.empty());
  BOOST_TEST(suites[2].path.empty());
  open_suite_files(suites);
  BOOST_TEST_REQUIRE(suites[0].opened != nullptr);
  BOOST_TEST(suites[0].opened->root.group("cases").children().size() > 0u);
  BOOST_TEST(suites[0].opened->ex2.has_value());  // smoke holds decode cases: their profile
  BOOST_TEST(suites[0].opened->prov.seed == 1u);
  BOOST_TEST(suites[1].opened == nullptr);
  BOOST_TEST(suites[2].opened == nullptr);
}

// Would catch: suites of one EX2 profile each loading it again (0.15 s a load), a profile found
// for one id served for another, or a loaded profile not kept for the next file.
BOOST_AUTO_TEST_CASE(suites_of_one_profile_share_its_load) {
  const std::string smoke = find_suite_file("smoke").path;
  BOOST_TEST_REQUIRE(!smoke.empty());
  Ex2ByFileId loaded;
  const OpenedSuite a = open_suite(smoke, &loaded);
  BOOST_TEST_REQUIRE(a.ex2.has_value());
  BOOST_TEST(loaded.size() == 1u);
  BOOST_TEST(loaded.count(a.prov.ex2_profile_id) == 1u);
  // A stand-in under the same id (another unit's table) shows the next file takes it from there.
  loaded.at(a.prov.ex2_profile_id) = Ex2Profile::from_table(a.prov.ex2_profile_id, "sm_90", ex2_reference_table());
  const OpenedSuite b = open_suite(smoke, &loaded);
  BOOST_TEST_REQUIRE(b.ex2.has_value());
  BOOST_TEST((b.ex2->fraction_table() == ex2_reference_table()));
  Ex2ByFileId other = {{"sm_90-ex2-v1-0000000000000000", std::nullopt}};
  const OpenedSuite c = open_suite(smoke, &other);
  BOOST_TEST((c.ex2->fraction_table() == a.ex2->fraction_table()));
  BOOST_TEST(other.size() == 2u);
}

// Would catch: a probe whose expected bytes depend on the EX2 unit (it would then be wrong on a
// GPU without a profile), a probe the model itself does not pass, one whose unwritten dims
// (what an HDIM=128 build leaves in a head_dim=256 launch) equal the expectation by accident, or
// a correct launch that the write evidence would not call its own HDIM.
BOOST_AUTO_TEST_CASE(hdim_probe_cases) {
  const Ex2Profile sm90 = load_ex2_profile_for_arch("sm_90");
  const Ex2Profile ref = Ex2Profile::from_table("reference-ex2", "reference", ex2_reference_table());
  BOOST_TEST_REQUIRE(sm90.fraction_table() != ref.fraction_table());  // two different units
  for (const auto& t : kFormats)
    for (uint32_t hdim : {128u, 256u}) {
      const golden::GoldenCase a = hdim_probe_case(t.format, hdim, kSparseVThreshold, sm90);
      const golden::GoldenCase b = hdim_probe_case(t.format, hdim, kSparseVThreshold, ref);
      BOOST_TEST((a.d.out_expected == b.d.out_expected), t.name << " hdim " << hdim);
      BOOST_TEST(a.d.p.head_dim == hdim);
      BOOST_TEST(a.d.p.hdim == hdim);
      auto model = judge::make_model_backend(&ref);
      const judge::CaseVerdict v = judge::compare_case(a, model->run(a));
      BOOST_TEST(v.pass, t.name << " hdim " << hdim);
      const WriteEvidence own = hdim_from_writes(observe_probe_writes(a, model->run(a)));
      BOOST_TEST(own.hdim == hdim, own.why);
      if (hdim != 256) continue;
      // An HDIM=128 build writes dims 0..127 of each row only.
      judge::CaseResult r = model->run(a);
      uint16_t* out = reinterpret_cast<uint16_t*>(r.buffers.at("output").data());
      const size_t rows = a.d.out_init.size() / 256;
      for (size_t row = 0; row < rows; ++row)
        for (size_t d = 128; d < 256; ++d) out[row * 256 + d] = a.d.out_init[row * 256 + d];
      const judge::CaseVerdict half = judge::compare_case(a, r);
      BOOST_TEST(!half.pass);
      BOOST_TEST(half.categories.count("row-not-written") == 1u);
    }
}

// Would catch: choosing an HDIM whose probe was not exact when the writes decide nothing,
// calling an ambiguous or failed probe decided (decoders would then be judged at level D against
// the wrong build), or preferring a launch error over a measured difference.
BOOST_AUTO_TEST_CASE(hdim_choice_by_values) {
  const ProbeAtHdim ok128{128, 3, 3, 0, "", {}}, ok256{256, 3, 3, 0, "", {}};
  const ProbeAtHdim bad128{128, 3, 0, 5000, "", {}}, bad256{256, 3, 1, 900, "", {}};
  const ProbeAtHdim err256{256, 3, 0, 0, "CUDA_ERROR_ILLEGAL_ADDRESS", {}};
  HdimChoice c = choose_hdim(ok128, bad256);
  BOOST_TEST(c.hdim == 128u);
  BOOST_TEST(c.decided);
  BOOST_TEST(c.evidence == "values");
  BOOST_TEST(c.why.find("at head_dim 256: 2 of 3 decoders differ (900 bytes)") != std::string::npos, c.why);
  c = choose_hdim(bad128, ok256);
  BOOST_TEST(c.hdim == 256u);
  BOOST_TEST(c.decided);
  c = choose_hdim(bad128, bad256);
  BOOST_TEST(!c.decided);
  BOOST_TEST(c.evidence == "none");
  BOOST_TEST(c.hdim == 256u);  // fewer differing bytes
  BOOST_TEST(c.why.find("level T") != std::string::npos);
  c = choose_hdim(bad128, err256);
  BOOST_TEST(!c.decided);
  BOOST_TEST(c.hdim == 128u);
  c = choose_hdim(ok128, ok256);
  BOOST_TEST(!c.decided);
}

// Synthetic kernel output on the probe case c: the poisoned output with `count` elements written
// (value 0x1234, which is not the expectation's) from the start of every active row.
judge::CaseResult synthetic_writes(const golden::GoldenCase& c, uint32_t count, bool l0_rows_too = false) {
  judge::CaseResult r;
  std::vector<uint8_t> init(c.d.out_init.size() * 2);
  std::memcpy(init.data(), c.d.out_init.data(), init.size());
  judge::GuardedBuffer out = judge::GuardedBuffer::with_guards(init);
  uint16_t* o = reinterpret_cast<uint16_t*>(out.data());
  const uint32_t D = c.d.p.head_dim;
  for (uint32_t s = 0; s < c.d.p.num_seqs; ++s)
    if (c.d.seq_lens[s] > 0 || l0_rows_too)
      for (uint32_t k = 0; k < count; ++k) o[s * D + k] = 0x1234;
  r.buffers["output"] = std::move(out);
  return r;
}

// Would catch: an HDIM taken from the values when the writes tell it (a module whose values are
// wrong at both HDIMs was judged at the closer one and blamed for its mismatched launch's guard
// writes), a probe layout in which an HDIM=256 build's spill past a head_dim=128 row is not
// visible, or writes of L == 0 rows mistaken for that spill. The outputs are synthetic: what an
// HDIM=128 and an HDIM=256 build write, with values that are wrong everywhere.
BOOST_AUTO_TEST_CASE(hdim_decided_by_writes) {
  const Ex2Profile ref = Ex2Profile::from_table("reference-ex2", "reference", ex2_reference_table());
  const golden::GoldenCase p128 = hdim_probe_case(Format::turbo3v, 128, kSparseVThreshold, ref);
  const golden::GoldenCase p256 = hdim_probe_case(Format::turbo3v, 256, kSparseVThreshold, ref);
  // HDIM=256 build: 256 elements per CTA. At head_dim 128 that is its row and the next (L == 0).
  WriteEvidence e = hdim_from_writes(observe_probe_writes(p128, synthetic_writes(p128, 256)));
  BOOST_TEST(e.hdim == 256u, e.why);
  BOOST_TEST(e.why.find("past their 128-element rows") != std::string::npos, e.why);
  const WriteEvidence e256 = hdim_from_writes(observe_probe_writes(p256, synthetic_writes(p256, 256)));
  BOOST_TEST(e256.hdim == 256u, e256.why);
  // HDIM=128 build: 128 elements per CTA.
  const WriteEvidence f128 = hdim_from_writes(observe_probe_writes(p128, synthetic_writes(p128, 128)));
  BOOST_TEST(f128.hdim == 128u, f128.why);
  const WriteEvidence f256 = hdim_from_writes(observe_probe_writes(p256, synthetic_writes(p256, 128)));
  BOOST_TEST(f256.hdim == 128u, f256.why);
  BOOST_TEST(f256.why.find("dims 128-255 of every row untouched") != std::string::npos, f256.why);
  // Writing the rows of L == 0 sequences, or nothing, or failing, decides nothing.
  BOOST_TEST(hdim_from_writes(observe_probe_writes(p128, synthetic_writes(p128, 128, true))).hdim == 0u);
  BOOST_TEST(hdim_from_writes(observe_probe_writes(p128, synthetic_writes(p128, 0))).hdim == 0u);
  judge::CaseResult failed;
  failed.error = "CUDA_ERROR_LAUNCH_FAILED";
  BOOST_TEST(hdim_from_writes(observe_probe_writes(p128, failed)).hdim == 0u);
  // The values are wrong at both head_dims, yet the writes decide HDIM 256: judged there (level D).
  ProbeAtHdim a{128, 1, 0, 700, "", {e}}, b{256, 1, 0, 1024, "", {e256}};
  HdimChoice c = choose_hdim(a, b);
  BOOST_TEST(c.decided);
  BOOST_TEST(c.hdim == 256u);
  BOOST_TEST(c.evidence == "writes");
  BOOST_TEST(c.why.find("decided by what the decoders write") != std::string::npos, c.why);
  // Two decoders of one module that disagree decide nothing by writes; the values then decide.
  ProbeAtHdim mixed{128, 2, 2, 0, "", {e, f128}};
  c = choose_hdim(mixed, ProbeAtHdim{256, 2, 0, 90, "", {e256, f256}});
  BOOST_TEST(c.evidence == "values");
  BOOST_TEST(c.hdim == 128u);
}

namespace {
// The probe of one head_dim run by the CPU model as a decoder build of HDIM `build` (the model
// computes launches whose head_dim differs from the build's HDIM by docs/spec.md section 5.1, as
// tqref's own decoders do): its values and its writes, as conform's probe() gathers them.
ProbeAtHdim model_build_probe(uint32_t head_dim, uint32_t build, const Ex2Profile& ex2) {
  auto model = judge::make_model_backend(&ex2);
  ProbeAtHdim p;
  p.hdim = head_dim;
  for (const auto& t : kFormats) {
    golden::GoldenCase c = hdim_probe_case(t.format, head_dim, kSparseVThreshold, ex2);
    c.d.p.hdim = build;
    const judge::CaseResult r = model->run(c);
    ++p.kernels;
    p.writes.push_back(hdim_from_writes(observe_probe_writes(c, r)));
    const judge::CaseVerdict v = judge::compare_case(c, r);
    p.exact += v.pass;
    p.bytes_differing += v.bytes_differing;
  }
  return p;
}
}  // namespace

// Would catch: a probe that cannot tell the HDIM of decoders following section 5.1 (tqref's own:
// an HDIM=128 build writes bf16 NaN rows at head_dim 256, an HDIM=256 build leaves its inactive
// lanes unwritten at head_dim 128 and is exact there), which judged our own HDIM=256 modules at
// level T and decided the HDIM=128 ones by values only (seen on an H100, 2026-12-05); a head_dim
// 128 row written alone taken as proof of HDIM 128 against a launch that shows 256; NaN rows
// read as an HDIM=256 build's full rows.
BOOST_AUTO_TEST_CASE(hdim_decided_by_writes_of_section_5_1_builds) {
  const Ex2Profile ref = Ex2Profile::from_table("reference-ex2", "reference", ex2_reference_table());
  for (uint32_t build : {128u, 256u}) {
    const ProbeAtHdim a = model_build_probe(128, build, ref), b = model_build_probe(256, build, ref);
    for (const WriteEvidence& e : a.writes) {
      BOOST_TEST(e.hdim == 128u, e.why);
      BOOST_TEST(e.weak, e.why);  // both builds write exactly their head_dim=128 rows
    }
    for (const WriteEvidence& e : b.writes) {
      BOOST_TEST(e.hdim == build, e.why);
      BOOST_TEST(!e.weak, e.why);
    }
    BOOST_TEST(a.exact == a.kernels);  // section 5.1: both builds are exact at head_dim 128
    BOOST_TEST((b.exact == b.kernels) == (build == 256));
    const HdimChoice c = choose_hdim(a, b);
    BOOST_TEST(c.decided, c.why);
    BOOST_TEST(c.hdim == build, c.why);
    BOOST_TEST(c.evidence == "writes", c.why);
  }
  const ProbeAtHdim nan256 = model_build_probe(256, 128, ref);
  BOOST_TEST(nan256.writes.front().why.find("bf16 NaN over every element") != std::string::npos,
             nan256.writes.front().why);
  // Weak evidence alone (the head_dim 256 launch failed) still decides; against strong, it yields.
  const ProbeAtHdim a = model_build_probe(128, 256, ref);
  const ProbeAtHdim failed{256, 3, 0, 0, "CUDA_ERROR_LAUNCH_FAILED", {WriteEvidence{0, "launch failed"}}};
  const HdimChoice alone = choose_hdim(a, failed);
  BOOST_TEST(alone.hdim == 128u);
  BOOST_TEST(alone.evidence == "writes");
}

namespace {

judge::CaseVerdict verdict(const std::string& name, const std::string& kernel, bool pass) {
  judge::CaseVerdict v;
  v.name = name;
  v.kernel = kernel;
  v.kind = is_decoder_kernel(kernel) ? "decode" : "writer";
  v.pass = pass;
  v.bytes_compared = 1000;
  if (!pass) {
    v.bytes_differing = 2;
    v.categories = {{"output-value", 1}, {"guard", 1}};
    judge::Mismatch m;
    m.buffer = "output";
    m.offset = 42;
    m.category = "output-value";
    m.where = "seq 0 qhead 1 dim 21";
    m.expected = 0x3f80;
    m.got = 0x3f81;
    m.initial = 0x7fc1;
    m.width = 2;
    v.first.push_back(m);
    v.explanation = {"dims 8-127 wrong in every row with L > 0: suspect per-lane addressing",
                     "reproduced bit for bit by neighbour-lane-v", "hypothesis:neighbour-lane-v",
                     report::Json{{"diagnosis", "hypothesis:neighbour-lane-v"}}};
  }
  return v;
}

judge::LevelIVerdict invariance(const std::string& name, const std::string& kernel, bool pass) {
  judge::LevelIVerdict v;
  v.name = name;
  v.kernel = kernel;
  v.kind = "decode";
  v.pass = pass;
  v.checks.push_back({"placement", "batch of 33", pass, "", 1024, pass ? 0u : 1024u,
                      pass ? "" : "seq 2 (L 5, at index 9): 1024 of 1024 elements differ"});
  if (!pass) {
    v.broken = {"placement"};
    v.sentence = "output bits change with the sequence's place and company in the batch";
    v.diagnosis = "invariance:placement";
  }
  return v;
}

// Three modules: writers passing, decoders with one failing case, one that cannot load.
ConformResult synthetic() {
  ConformResult r;
  r.command_line = "tqref conform --modules mods";
  r.device = "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB), CUDA driver API 13.0";
  r.arch = "sm_90";
  r.ex2_profile_id = "sm_90-ex2-v1-abc";
  r.ex2_profile_path = "data/hw/sm_90/ex2.h5";
  r.threshold = kSparseVThreshold;
  r.tqref_version = "0.1";
  r.git_commit = "deadbeef";
  r.suites = {{"smoke", "data/golden/smoke.h5"}};
  ModuleResult w;
  w.file = {"mods/writers.cubin", ModuleKind::cubin};
  w.tag = "m01-writers.cubin";
  w.sha256 = std::string(64, 'a');
  w.found = {kW3};
  SuiteRun ws;
  ws.suite = "smoke";
  ws.file = "data/golden/smoke.h5";
  ws.verdicts = {verdict("0000_writer", kW3, true), verdict("0001_writer", kW3, true)};
  w.suites.push_back(ws);
  ModuleResult d;
  d.file = {"mods/decode.ptx", ModuleKind::ptx};
  d.tag = "m02-decode.ptx";
  d.sha256 = std::string(64, 'b');
  d.found = {kD3};
  d.hdim = 128;
  d.hdim_why = "HDIM 128 chosen by probe";
  SuiteRun ds;
  ds.suite = "smoke";
  ds.file = "data/golden/smoke.h5";
  ds.verdicts = {verdict("0002_decode", kD3, true), verdict("0003_decode", kD3, false)};
  ds.skipped = {{"the case is for an HDIM=256 build", 2}};
  ds.skipped_per_kernel = {{kD3, 2}};
  ds.reproducers = {{"0003_decode", "out/reproducers/m02-decode.ptx/smoke/0003_decode.h5"}};
  ds.invariance = {invariance("0002_decode", kD3, false), invariance("0003_decode", kD3, true)};
  d.suites.push_back(ds);
  d.launch_times = {30, 0.25, 1.5, 0.75};
  ModuleResult n;
  n.file = {"mods/gb10.sm_121.cubin", ModuleKind::cubin};
  n.tag = "m03-gb10.sm_121.cubin";
  n.inspection.targets = {{false, 121, "", false}};
  n.inspection.entries = {kD4};
  n.inspection.complete = true;
  n.load_error = "cuModuleLoadDataEx: CUDA_ERROR_NO_BINARY_FOR_GPU";
  n.load_explanation = load_mismatch(n.inspection, 90);
  r.modules = {w, d, n};
  return r;
}

}  // namespace

// Would catch: totals that miscount (per kernel, skipped, guard violations), a verdict line
// that hides the failure, reports that drop the decoded mismatch, the reproducer's replay
// command (it must name the module and its HDIM), the load explanation, or JSON/XML that a CI
// system cannot parse.
BOOST_AUTO_TEST_CASE(reports_from_synthetic_results) {
  const ConformResult r = synthetic();
  const auto t = kernel_totals(r.modules[1]);
  BOOST_TEST(t.at(kD3).cases == 2u);
  BOOST_TEST(t.at(kD3).failed == 1u);
  BOOST_TEST(t.at(kD3).skipped == 2u);
  BOOST_TEST(t.at(kD3).guard_violations == 1u);
  BOOST_TEST((t.at(kD3).level == judge::Level::D));
  const std::string md = report_markdown(r, 8);
  BOOST_TEST(t.at(kD3).i_cases == 2u);
  BOOST_TEST(t.at(kD3).i_failed == 1u);
  BOOST_TEST(md.find("**FAIL (exit 1): 1 case(s) failed and 1 failed level I in 1 kernel(s)**") != std::string::npos, md);
  // the failure anatomy of the failing case and the level I failure, each with its sentence
  BOOST_TEST(md.find("    anatomy: dims 8-127 wrong in every row with L > 0: suspect per-lane addressing") !=
             std::string::npos);
  BOOST_TEST(md.find("    hypotheses: reproduced bit for bit by neighbour-lane-v") != std::string::npos);
  BOOST_TEST(md.find("### m02-decode.ptx / smoke / 0002_decode (level I)") != std::string::npos, md);
  BOOST_TEST(md.find("anatomy: output bits change with the sequence's place and company in the batch") !=
             std::string::npos);
  BOOST_TEST(md.find("output-value: output byte 42 (seq 0 qhead 1 dim 21): expected 0x3f80 got 0x3f81") !=
             std::string::npos);
  BOOST_TEST(md.find("tqref check out/reproducers/m02-decode.ptx/smoke/0003_decode.h5 --backend gpu "
                     "--module mods/decode.ptx --hdim 128`") != std::string::npos);
  BOOST_TEST(md.find("built for sm_121 (sm_121 SASS), this GPU is sm_90") != std::string::npos);
  BOOST_TEST(md.find(std::string(64, 'b')) != std::string::npos);
  BOOST_TEST(md.find("Not found in any loaded module: reshape_and_cache_flash_bf16k_turbo2v") !=
             std::string::npos);
  BOOST_TEST(md.find("| m02-decode.ptx | " + kD3 + " | D (exact) | 2 | 1 | 1 | 2 | 1 | 1/2 **FAIL** | **FAIL** |") !=
             std::string::npos);
  namespace pt = boost::property_tree;
  pt::ptree j;
  std::istringstream js(report_json(r));
  BOOST_CHECK_NO_THROW(pt::read_json(js, j));
  BOOST_TEST(j.get<int>("exit_code") == 1);
  const pt::ptree& dsj = std::next(j.get_child("modules").begin())->second.get_child("suites").begin()->second;
  size_t inv = 0;
  for (const auto& c : dsj.get_child("invariance.cases")) inv += c.second.get<std::string>("diagnosis") == "invariance:placement";
  BOOST_TEST(inv == 1u);
  size_t anat = 0;
  for (const auto& c : dsj.get_child("check.results"))
    anat += c.second.get<std::string>("anatomy.diagnosis", "") == "hypothesis:neighbour-lane-v";
  BOOST_TEST(anat == 1u);
  BOOST_TEST(j.get_child("modules").size() == 3u);
  const std::string xml = report_junit(r);
  BOOST_TEST(xml.find("<?xml") == 0u);
  BOOST_TEST(xml.find("<?xml", 1) == std::string::npos);
  BOOST_TEST(xml.find("<testsuites name=\"tqref-conform\">") != std::string::npos);
  BOOST_TEST(xml.find("name=\"tqref-check-m02-decode.ptx:smoke:I\" tests=\"2\" failures=\"1\"") !=
             std::string::npos, xml);
  BOOST_TEST(xml.find("name=\"tqref-check-m02-decode.ptx:smoke\" tests=\"2\" failures=\"1\"") !=
             std::string::npos, xml);
  BOOST_TEST(xml.find("cannot be loaded: built for sm_121") != std::string::npos);
}

// Would catch: a module's launch times (what its GPU work cost, beside the run's wall time)
// dropped from the Markdown or the JSON, or put on another module.
BOOST_AUTO_TEST_CASE(launch_times_in_the_reports) {
  const ConformResult r = synthetic();
  const std::string md = report_markdown(r, 8);
  BOOST_TEST(md.find("- GPU time: 30 launches; buffers to the device 0.2 s, kernels 1.5 s, buffers back 0.8 s") !=
             std::string::npos, md);
  BOOST_TEST(md.find("GPU time: 30") == md.rfind("GPU time:"));  // the modules without launches say nothing
  namespace pt = boost::property_tree;
  pt::ptree j;
  std::istringstream js(report_json(r));
  pt::read_json(js, j);
  const pt::ptree& d = std::next(j.get_child("modules").begin())->second;
  BOOST_TEST(d.get<int>("launch_times.launches") == 30);
  BOOST_TEST(d.get<double>("launch_times.kernel_s") == 1.5);
  BOOST_TEST(d.get<double>("launch_times.download_s") == 0.75);
  BOOST_TEST(j.get_child("modules").begin()->second.get<int>("launch_times.launches") == 0);
}

// Would catch: a coverage summary ("what this run could have seen") that is dropped from either
// report, miscounted or loses its blind entries; and one printed when it was not computed.
BOOST_AUTO_TEST_CASE(coverage_in_the_reports) {
  ConformResult r = synthetic();
  BOOST_TEST(report_markdown(r, 8).find("What this run could have seen") == std::string::npos);
  r.coverage = {459, 462, {"paged_decode_attn_bf16k_turbo2v HDIM 128: fma:batch-l"}};
  const std::string md = report_markdown(r, 8);
  BOOST_TEST(md.find("## What this run could have seen") != std::string::npos);
  BOOST_TEST(md.find(": 459 of 462 coverage entries") != std::string::npos, md);
  BOOST_TEST(md.find("- paged_decode_attn_bf16k_turbo2v HDIM 128: fma:batch-l\n") != std::string::npos);
  namespace pt = boost::property_tree;
  pt::ptree j;
  std::istringstream js(report_json(r));
  BOOST_CHECK_NO_THROW(pt::read_json(js, j));
  BOOST_TEST(j.get<int>("coverage.observable") == 459);
  BOOST_TEST(j.get<int>("coverage.total") == 462);
  BOOST_TEST(j.get_child("coverage.blind").size() == 1u);
}

// Would catch: a zero exit while something failed (level I included), faulted or was not
// checked; the wrong order when several apply (a fault outranks a mismatch, which outranks a
// module problem).
BOOST_AUTO_TEST_CASE(exit_codes) {
  ConformResult r = synthetic();
  BOOST_TEST(exit_code(r) == 1);
  r.modules[0].fault = "smoke/0001_writer";
  BOOST_TEST(exit_code(r) == 6);
  r = synthetic();
  r.modules[1].suites[0].verdicts[1].pass = true;
  BOOST_TEST(exit_code(r) == 1);  // level I failed alone: still a mismatch
  r.modules[1].suites[0].invariance[0].pass = true;
  BOOST_TEST(exit_code(r) == 3);  // m03 cannot load
  r.modules.pop_back();
  BOOST_TEST(exit_code(r) == 0);
  BOOST_TEST(verdict_line(r).find("PASS (exit 0)") == 0u);
  r.modules[1].decoder_level = judge::Level::T;
  BOOST_TEST(verdict_line(r).find("level T") != std::string::npos);
  r.modules[1].found.insert(kD4);  // found, but given no case
  BOOST_TEST(exit_code(r) == 3);
  BOOST_TEST(verdict_line(r).find(kD4 + " of module mods/decode.ptx was given no case") != std::string::npos);
  r.modules[1].found.erase(kD4);
  // A module with none of the six kernels (another kernel of the engine) is not judged ...
  r.modules[1].found.clear();
  r.modules[1].suites.clear();
  BOOST_TEST(exit_code(r) == 0);
  // ... nor is one that cannot load when its file shows no contract kernel; it counts when the
  // file holds one, or when the pre-check could not read every image.
  ModuleResult other = synthetic().modules[2];
  other.inspection.entries = {"some_other_kernel"};
  other.inspection.complete = true;
  r.modules.push_back(other);
  BOOST_TEST(exit_code(r) == 0);
  r.modules.back().inspection.complete = false;
  BOOST_TEST(exit_code(r) == 3);
  r.modules.pop_back();
  r.modules[0].found.clear();
  r.modules[0].suites.clear();
  BOOST_TEST(exit_code(r) == 3);  // nothing checked at all
  BOOST_TEST(verdict_line(r).find("nothing was checked") != std::string::npos);
  r.modules.clear();
  BOOST_TEST(exit_code(r) == 3);
}

// Would catch: the module facts recorded without a GPU being wrong (sha256 against the FIPS 180-4
// "abc" example) or a tag that is not unique per module.
BOOST_AUTO_TEST_CASE(module_facts) {
  const fs::path d = scratch("conform_facts");
  write_file(d / "abc.ptx", bytes_of("abc"));
  const ModuleResult m = new_module_result({(d / "abc.ptx").string(), ModuleKind::ptx}, 7);
  BOOST_TEST(m.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(m.bytes == 3u);
  BOOST_TEST(m.tag == "m07-abc.ptx");
  fs::remove_all(d);
}

// Would catch: the CLI crashing, running, or exiting 0 without a GPU; a bad command line or a
// missing module path reported with the wrong code. On a machine with a GPU the no-GPU check is
// skipped with a message (the command would run for real).
BOOST_AUTO_TEST_CASE(cli_without_gpu) {
  const fs::path d = scratch("conform_cli");
  write_file(d / "mods/decode.compute_121.ptx", bytes_of(fake_ptx("sm_121f", {kD3})));
  const std::string mods = (d / "mods").string(), out = (d / "out").string();
  BOOST_TEST(run_cli("conform", d) == 2);
  BOOST_TEST(run_cli("conform --modules " + mods + " --hdim nonsense", d) == 2);
  BOOST_TEST(run_cli("conform --modules " + mods + " --hdim typo=128", d) == 2);
  BOOST_TEST(run_cli("conform --modules " + mods + " --suites smoke,bogus", d) == 2);
  BOOST_TEST(run_cli("conform --modules " + (d / "nope").string(), d) == 3);
  if (fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0")) {
    BOOST_TEST_MESSAGE("a GPU device node exists: the no-GPU exit code is not checked here");
  } else {
    BOOST_TEST(run_cli("conform --modules " + mods + " --suites smoke --out " + out, d) == 4);
    const std::string log = slurp(d / "last.log");
    BOOST_TEST(log.find("no usable GPU") != std::string::npos, log);
    BOOST_TEST(log.find("compute_121f PTX; contract kernels: " + kD3) != std::string::npos, log);
    BOOST_TEST(!fs::exists(out + "/conform.md"));
  }
  fs::remove_all(d);
}
