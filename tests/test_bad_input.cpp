// Bad input against the real `tqref` binary (docs/bad-input.md): each class of defect in a
// golden file, a sweep file or the command line must give one clear message naming the file,
// object or parameter and the allowed range, the documented exit code (harness/io/exit_code.h),
// and no output file. An interrupted generate must leave neither its output nor a temporary.
#define BOOST_TEST_MODULE bad_input
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <thread>

#include "bad_input_files.h"

namespace fs = std::filesystem;
using namespace tqref::badfiles;

namespace {

// Exit codes of harness/io/exit_code.h (kept literal: the test checks the documented numbers).
constexpr int kUsage = 2, kBadInput = 3, kInterrupted = 130;

struct Run {
  int code = -1;
  std::string output;  // stdout and stderr
};

// Runs `tqref ARGS` (a shell word list) in `dir`, capturing both streams; with `prefix` false,
// ARGS is the whole command line.
Run run_cli(const std::string& args, const fs::path& dir, bool prefix = true) {
  const fs::path log = fs::path(dir.string() + ".cli.log");  // beside `dir`: not a leftover inside it
  const std::string cmd = "cd '" + dir.string() + "' && " + (prefix ? "'" TQREF_CLI "' " : "") + args + " > '" +
                          log.string() + "' 2>&1";
  Run r;
  const int st = std::system(cmd.c_str());
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  fs::remove(log);
  return r;
}

// No file left in `dir` except those in `keep` (the inputs): outputs and temporaries are gone.
std::vector<std::string> leftovers(const fs::path& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> extra;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    bool kept = false;
    for (const auto& k : keep) kept |= rel == k || rel.rfind(k + "/", 0) == 0;
    if (!kept) extra.push_back(rel);
  }
  return extra;
}

// A small valid golden file: one writer case and one linked writer + decode pair (turbo3v,
// HDIM 128, 2 kv heads, GQA 2, block size 4, lengths 0, 3, 9), made once per test run.
struct Fixture {
  fs::path root;
  fs::path valid;
  CaseNames names;
  Fixture() {
    root = fs::temp_directory_path() / ("tqref_bad_input_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    std::ofstream(root / "tiny.yaml") << "kind: [writer, decode]\nformat: turbo3v\nhead_dim: 128\n"
                                         "num_kv_heads: 2\nq_per_kv: 2\nblock_size: 4\nnum_tokens: 5\n"
                                         "seq_lens: [[0, 3, 9]]\nspare_table_entries: 2\n";
    const Run r = run_cli("generate --config tiny.yaml --out valid.h5 --threads 1", root);
    BOOST_TEST_REQUIRE(r.code == 0, r.output);
    valid = root / "valid.h5";
    names = find_cases(valid.string());
    BOOST_TEST_REQUIRE(!names.writer.empty());
    BOOST_TEST_REQUIRE(!names.decode.empty());
  }
  ~Fixture() { fs::remove_all(root); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// One class of bad golden file: how to damage a copy, and what `tqref check` must say.
struct BadFile {
  std::string name;
  std::function<void(const fs::path& file, const CaseNames& n)> damage;
  std::vector<std::string> says;  // substrings of the message (besides the file name)
};

// `tqref check` (with every output option) and `tqref inspect` on the damaged copy: exit 3,
// the file name and each expected substring in the output, and nothing written.
void expect_refused(const BadFile& b) {
  BOOST_TEST_CONTEXT("bad file class '" << b.name << "'") {
    const fs::path dir = fixture().root / ("case_" + b.name);
    fs::create_directories(dir);
    const fs::path bad = dir / "bad.h5";
    fs::copy_file(fixture().valid, bad);
    b.damage(bad, fixture().names);
    for (const std::string cmd : {"check bad.h5 --backend model --report r.json --junit r.xml --reproducer-dir repro",
                                  "inspect bad.h5"}) {
      const Run r = run_cli(cmd, dir);
      BOOST_TEST(r.code == kBadInput, cmd << " exited " << r.code << ":\n" << r.output);
      BOOST_TEST(r.output.find("bad.h5") != std::string::npos, r.output);
      for (const auto& s : b.says) BOOST_TEST(r.output.find(s) != std::string::npos, "'" << s << "' not in: " << r.output);
      // Strings from the file are escaped: no control character but newlines reaches the terminal.
      BOOST_TEST(std::none_of(r.output.begin(), r.output.end(),
                              [](char c) { return (unsigned char)c < 0x20 && c != '\n'; }), r.output);
      // One message, not a stack of library errors: at most a few lines on a refusal.
      BOOST_TEST(std::count(r.output.begin(), r.output.end(), '\n') <= 3, r.output);
      const auto extra = leftovers(dir, {"bad.h5"});
      BOOST_TEST(extra.empty(), cmd << " left " << (extra.empty() ? "" : extra[0]));
    }
    fs::remove_all(dir);
  }
}

std::string in(const std::string& c, const std::string& rel) { return c + "/" + rel; }

}  // namespace

// Would catch: a corrupt, truncated, foreign or missing file reaching HDF5 calls that crash,
// print HDF5's error stack, or exit with an undocumented code.
BOOST_AUTO_TEST_CASE(damaged_files_are_refused_with_exit_3) {
  const std::vector<BadFile> classes = {
      {"empty_file", [](const fs::path& f, const CaseNames&) { std::ofstream(f, std::ios::trunc); },
       {"not a readable HDF5 file"}},
      {"truncated_half", [](const fs::path& f, const CaseNames&) { truncate_copy(fixture().valid, f, 0.5); }, {}},
      {"truncated_superblock", [](const fs::path& f, const CaseNames&) { truncate_copy(fixture().valid, f, 0.001); },
       {"cannot open HDF5 file (truncated or corrupt"}},
      {"flipped_signature", [](const fs::path& f, const CaseNames&) { flip_bytes(f, 0, 8); },
       {"not a readable HDF5 file"}},
      {"flipped_superblock_addresses", [](const fs::path& f, const CaseNames&) { flip_bytes(f, 24, 16); }, {}},
      {"not_hdf5_text", [](const fs::path& f, const CaseNames&) { std::ofstream(f, std::ios::trunc) << "kind: writer\n"; },
       {"not a readable HDF5 file"}},
  };
  for (const auto& b : classes) expect_refused(b);
}

// Would catch: a reader that trusts the schema (missing or mistyped attributes, groups,
// datasets; wrong schema version) and fails later with a confusing or no message.
BOOST_AUTO_TEST_CASE(schema_defects_are_refused_with_exit_3) {
  const std::vector<BadFile> classes = {
      {"schema_version_2", [](const fs::path& f, const CaseNames&) { set_int_attr(f, "/", "schema_version", 2); },
       {"schema_version = 2", "schema version 1"}},
      {"schema_version_missing", [](const fs::path& f, const CaseNames&) { delete_attr(f, "/", "schema_version"); },
       {"schema_version", "missing"}},
      {"schema_version_string", [](const fs::path& f, const CaseNames&) { set_string_attr(f, "/", "schema_version", "1"); },
       {"schema_version", "not an integer"}},
      {"cases_group_missing", [](const fs::path& f, const CaseNames&) { delete_link(f, "/cases"); },
       {"/cases", "missing"}},
      {"kind_unknown", [](const fs::path& f, const CaseNames& n) { set_string_attr(f, n.writer, "kind", "encoder"); },
       {"kind = 'encoder'", "allowed: writer, decode"}},
      {"format_unknown", [](const fs::path& f, const CaseNames& n) { set_string_attr(f, n.writer, "format", "turbo5v"); },
       {"format = 'turbo5v'", "allowed: turbo2v, turbo3v, turbo4v"}},
      {"kernel_mismatch", [](const fs::path& f, const CaseNames& n) {
         set_string_attr(f, n.decode, "kernel", "paged_decode_attn_bf16k_turbo4v"); },
       {"kernel = 'paged_decode_attn_bf16k_turbo4v'", "does not match"}},
      {"head_dim_attr_missing", [](const fs::path& f, const CaseNames& n) { delete_attr(f, n.writer, "head_dim"); },
       {"head_dim", "missing"}},
      {"head_dim_attr_float", [](const fs::path& f, const CaseNames& n) { set_double_attr(f, n.writer, "head_dim", 128.0); },
       {"head_dim", "not an integer"}},
      {"key_dataset_missing", [](const fs::path& f, const CaseNames& n) { delete_link(f, in(n.writer, "inputs/key")); },
       {"inputs/key", "missing"}},
      {"expected_group_missing", [](const fs::path& f, const CaseNames& n) { delete_link(f, in(n.decode, "expected")); },
       {"expected", "missing"}},
      {"key_dtype_float32", [](const fs::path& f, const CaseNames& n) {
         rewrite_dataset<float>(f, in(n.writer, "inputs/key"), std::vector<float>(5 * 256), {5, 256}); },
       {"inputs/key", "wrong dtype; expected uint16"}},
      {"block_tables_dtype_int64", [](const fs::path& f, const CaseNames& n) {
         rewrite_dataset<int64_t>(f, in(n.decode, "inputs/block_tables"), std::vector<int64_t>(3 * 5), {3, 5}); },
       {"inputs/block_tables", "wrong dtype; expected int32"}},
      {"slot_mapping_signed_as_unsigned", [](const fs::path& f, const CaseNames& n) {
         rewrite_dataset<uint64_t>(f, in(n.writer, "inputs/slot_mapping"), std::vector<uint64_t>(5), {5}); },
       {"inputs/slot_mapping", "wrong dtype; expected int64"}},
      {"key_shape_short", [](const fs::path& f, const CaseNames& n) {
         rewrite_dataset<uint16_t>(f, in(n.writer, "inputs/key"), std::vector<uint16_t>(4 * 256), {4, 256}); },
       {"inputs/key", "shape [4, 256]; expected [5, 256]"}},
      {"v_cache_rank_wrong", [](const fs::path& f, const CaseNames& n) {
         rewrite_dataset<uint8_t>(f, in(n.writer, "expected/v_cache"), std::vector<uint8_t>(16), {16}); },
       {"expected/v_cache", "shape [16]; expected"}},
      {"skip_offsets_not_monotonic", [](const fs::path& f, const CaseNames& n) {
         edit_dataset<uint64_t>(f, in(n.decode, "diagnostics/skip_offsets"), [](auto& v) { v[1] = v.back(); }); },
       {"diagnostics/skip_offsets[1]", "allowed:"}},
  };
  for (const auto& b : classes) expect_refused(b);
}

// Would catch: SPEC violations (section 3-5 ranges) and launches that would read or write
// outside their buffers, reaching a backend instead of being refused up front.
BOOST_AUTO_TEST_CASE(parameters_outside_spec_are_refused_with_exit_3) {
  const std::vector<BadFile> classes = {
      {"head_dim_not_multiple_of_16", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.writer, "head_dim", 120); },
       {"head_dim = 120", "multiple of 16"}},
      // head_dim != hdim is a launch outside the contract (docs/spec.md section 5.1), legal in a
      // file; changed alone, the pools no longer have its shape.
      {"head_dim_changed_alone", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.decode, "head_dim", 64); },
       {"initial/k_cache: shape [5, 4, 2, 128]", "expected [5, 4, 2, 64]"}},
      {"hdim_not_a_build", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.decode, "hdim", 192); },
       {"hdim = 192", "128, 256"}},
      {"q_heads_not_multiple_of_kv_heads", [](const fs::path& f, const CaseNames& n) {
         set_int_attr(f, n.decode, "num_q_heads", 3); },
       {"num_q_heads = 3", "multiple of num_kv_heads = 2"}},
      {"block_size_0", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.writer, "block_size", 0); },
       {"block_size = 0", "allowed: >= 1"}},
      {"num_blocks_0", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.decode, "num_blocks", 0); },
       {"num_blocks = 0", "allowed: 1 .."}},
      {"num_seqs_above_grid_y", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.decode, "num_seqs", 70000); },
       {"num_seqs = 70000", "allowed: 1 .. 65535"}},
      {"key_stride_shorter_than_row", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.writer, "key_stride", 128); },
       {"key_stride = 128", "allowed: >= num_kv_heads*head_dim = 256"}},
      {"key_stride_not_multiple_of_4", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.writer, "key_stride", 258); },
       {"key_stride = 258", "multiple of 4"}},
      {"value_stride_shorter_than_row", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.writer, "value_stride", 255); },
       {"value_stride = 255", ">= num_kv_heads*head_dim = 256"}},
      {"q_stride_shorter_than_row", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.decode, "q_stride", 500); },
       {"q_stride = 500", ">= num_q_heads*head_dim = 512"}},
      {"v_data_section_shorter_than_codes", [](const fs::path& f, const CaseNames& n) {
         set_int_attr(f, n.writer, "v_data_section_bytes", 100); },
       {"v_data_section_bytes = 100", "allowed: >= block_size*n*b/8 = 384"}},
      {"v_block_stride_shorter_than_sections", [](const fs::path& f, const CaseNames& n) {
         set_int_attr(f, n.decode, "v_block_stride_bytes", 390); },
       {"v_block_stride_bytes = 390", "allowed: >= v_data_section_bytes + block_size*n/16"}},
      {"slot_beyond_pool", [](const fs::path& f, const CaseNames& n) {
         edit_dataset<int64_t>(f, in(n.writer, "inputs/slot_mapping"), [](auto& v) { v[0] = 1000000; }); },
       {"slot_mapping[0] = 1000000", "allowed: negative (padding) or 0 .. num_blocks*block_size-1"}},
      {"slot_repeated", [](const fs::path& f, const CaseNames& n) {
         edit_dataset<int64_t>(f, in(n.writer, "inputs/slot_mapping"), [](auto& v) {
           for (auto& s : v) if (s >= 0) s = 3; }); },
       {"repeats an earlier token's slot"}},
      {"block_table_entry_in_use_beyond_pool", [](const fs::path& f, const CaseNames& n) {
         edit_dataset<int32_t>(f, in(n.decode, "inputs/block_tables"), [](auto& v) { v[5] = 999; }); },
       {"block_tables[1][0] = 999 (in use", "allowed: 0 .. num_blocks-1"}},
      {"block_table_entry_negative", [](const fs::path& f, const CaseNames& n) {
         edit_dataset<int32_t>(f, in(n.decode, "inputs/block_tables"), [](auto& v) { v[10] = -7; }); },
       {"block_tables[2][0] = -7"}},
      {"seq_len_beyond_table_capacity", [](const fs::path& f, const CaseNames& n) {
         edit_dataset<int32_t>(f, in(n.decode, "inputs/seq_lens"), [](auto& v) { v[2] = 21; }); },
       {"seq_lens[2] = 21", "allowed: 0 .. max_blocks_per_seq*block_size = 20"}},
      {"seq_len_negative", [](const fs::path& f, const CaseNames& n) {
         edit_dataset<int32_t>(f, in(n.decode, "inputs/seq_lens"), [](auto& v) { v[0] = -1; }); },
       {"seq_lens[0] = -1"}},
  };
  for (const auto& b : classes) expect_refused(b);
}

// Would catch: data from outside the file followed (a dataset whose bytes are /etc/passwd read as
// K data and printed in mismatch lines), links libhdf5 resolves elsewhere, filters tqref never
// writes (plugins run code), and one changed byte of stored data read as a kernel mismatch
// instead of a corrupt file (every dataset tqref writes carries a fletcher32 checksum).
BOOST_AUTO_TEST_CASE(untrusted_file_policy_refuses_with_exit_3) {
  const fs::path other = fixture().root / "other.h5";  // outside the case directories
  if (!fs::exists(other)) fs::copy_file(fixture().valid, other);
  const std::vector<BadFile> classes = {
      {"external_link", [&](const fs::path& f, const CaseNames& n) {
         replace_with_external_link(f, in(n.writer, "inputs/key"), other, in(n.writer, "inputs/key")); },
       {"inputs/key: is an external link", "allowed: objects stored in this file"}},
      {"soft_link", [](const fs::path& f, const CaseNames& n) {
         replace_with_soft_link(f, in(n.writer, "inputs/key"), in(n.writer, "inputs/value")); },
       {"inputs/key: is a soft link"}},
      {"user_defined_link", [](const fs::path& f, const CaseNames& n) {
         replace_with_user_defined_link(f, in(n.writer, "inputs/key")); },
       {"inputs/key: is a user-defined link"}},
      {"external_storage_etc_passwd", [](const fs::path& f, const CaseNames& n) {
         replace_with_external_storage(f, in(n.writer, "inputs/key"), "/etc/passwd"); },
       {"inputs/key: stores its data in 1 external file(s)", "allowed: data stored in this file"}},
      {"virtual_dataset", [&](const fs::path& f, const CaseNames& n) {
         replace_with_virtual(f, in(n.writer, "inputs/key"), other, in(n.writer, "inputs/key")); },
       {"inputs/key: is a virtual dataset"}},
      {"filter_not_written_by_tqref", [](const fs::path& f, const CaseNames& n) {
         replace_with_scaleoffset(f, in(n.writer, "inputs/slot_mapping")); },
       {"inputs/slot_mapping: uses filter 6", "allowed: deflate (1), shuffle (2), fletcher32 (3)"}},
      {"one_byte_changed_in_stored_data", [](const fs::path& f, const CaseNames& n) {
         flip_stored_byte(f, in(n.writer, "expected/k_cache"), 10); },
       {"expected/k_cache", "corrupt file", "checksum"}},
      // libhdf5 converts any precision the metadata claims (fuzz finding 7): refused before any
      // value is read, in the validating pass and in the readers.
      {"integer_attribute_of_40_bits_in_8_bytes", [](const fs::path& f, const CaseNames& n) {
         set_narrow_int_attr(f, n.writer, "num_blocks", 4, 40); },
       {"attribute 'num_blocks': corrupt file: an integer type of 8 bytes with 40 bits of precision",
        "allowed: 8-, 16-, 32- or 64-bit integers using all their bits"}},
      {"float_attribute_not_ieee", [](const fs::path& f, const CaseNames& n) {
         set_rebiased_double_attr(f, n.decode, "inv_sqrt_d", 0.125, 1000); },
       {"attribute 'inv_sqrt_d': corrupt file: a float type of 8 bytes that is not IEEE binary32 or binary64"}},
  };
  for (const auto& b : classes) expect_refused(b);
}

// Would catch: values that are not numbers or outside their documented ranges reaching a backend
// (reported as a kernel mismatch, or level T judging with them), 64-bit attributes truncated to
// their 32-bit fields or clamped by libhdf5, strings from the file reaching the terminal with raw
// escape sequences, and an identifier from the file used as a path (ex2_profile_id ../../..).
BOOST_AUTO_TEST_CASE(unchecked_values_are_refused_with_exit_3) {
  auto set_float = [](const fs::path& f, const std::string& obj, const std::string& name, float v) {
    set_double_attr(f, obj, name, double(v));
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    set_int_attr(f, obj, name + "_bits", int64_t(bits));
  };
  const std::vector<BadFile> classes = {
      {"inv_sqrt_d_inf", [&](const fs::path& f, const CaseNames& n) {
         set_float(f, n.decode, "inv_sqrt_d", std::numeric_limits<float>::infinity()); },
       {"inv_sqrt_d = inf", "allowed: a finite float > 0"}},
      {"inv_sqrt_d_nan", [&](const fs::path& f, const CaseNames& n) {
         set_float(f, n.decode, "inv_sqrt_d", std::numeric_limits<float>::quiet_NaN()); },
       {"inv_sqrt_d = nan", "allowed: a finite float > 0"}},
      {"inv_sqrt_d_negative", [&](const fs::path& f, const CaseNames& n) { set_float(f, n.decode, "inv_sqrt_d", -0.125f); },
       {"inv_sqrt_d = -0.125", "allowed: a finite float > 0"}},
      {"threshold_nan", [&](const fs::path& f, const CaseNames& n) {
         set_float(f, n.decode, "threshold", std::numeric_limits<float>::quiet_NaN()); },
       {"threshold = nan", "0 < threshold < 1"}},
      {"threshold_above_1", [&](const fs::path& f, const CaseNames&) { set_float(f, "/", "threshold", 2.0f); },
       {"threshold = 2", "0 < threshold < 1"}},
      {"float_and_bits_disagree", [](const fs::path& f, const CaseNames& n) { set_double_attr(f, n.decode, "inv_sqrt_d", 0.5); },
       {"inv_sqrt_d", "disagree"}},
      {"bits_attr_above_32_bits", [](const fs::path& f, const CaseNames& n) {
         set_int_attr(f, n.decode, "threshold_bits", (int64_t(1) << 32) + 0x3A83126F); },
       {"threshold_bits = 5276635759", "allowed: 0 .. 2^32-1"}},
      {"uint64_attr_above_int64", [](const fs::path& f, const CaseNames& n) {
         set_uint64_attr(f, n.writer, "num_tokens", (uint64_t(1) << 63) + 5); },
       {"num_tokens' = 9223372036854775813", "allowed: at most 2^63-1"}},
      {"num_tokens_above_32_bits", [](const fs::path& f, const CaseNames& n) {
         set_int_attr(f, n.writer, "num_tokens", (int64_t(1) << 32) + 5); },
       {"num_tokens = 4294967301", "allowed: 0 .."}},
      {"seed_negative", [](const fs::path& f, const CaseNames& n) { set_int_attr(f, n.writer, "seed", -1); },
       {"seed = -1", "allowed: 0 .. 2^63-1"}},
      {"escape_sequence_in_case_name", [](const fs::path& f, const CaseNames& n) {
         rename_link(f, n.writer, "/cases/evil\x1b[2J\x1b]0;pwned\x07"); },
       {"case name 'evil\\x1b[2J\\x1b]0;pwned\\x07'", "allowed: 1 .. 200 characters"}},
      {"escape_sequence_in_attribute", [](const fs::path& f, const CaseNames& n) {
         set_string_attr(f, n.writer, "kind", "\x1b[31mwriter"); },
       {"kind = '\\x1b[31mwriter'"}},
      {"ex2_profile_id_path_traversal", [](const fs::path& f, const CaseNames&) {
         set_string_attr(f, "/", "ex2_profile_id", "../../../etc-ex2-v1-0123456789ab"); },
       {"ex2_profile_id = '../../../etc-ex2-v1-0123456789ab'", "allowed: <arch>-ex2-v1-<12 hex digits>"}},
  };
  for (const auto& b : classes) expect_refused(b);
}

// Would catch: a checker that refuses what SPEC allows. Block-table entries past a sequence's
// last block are never read (docs/spec.md section 7: "unused entries holding out-of-range values").
BOOST_AUTO_TEST_CASE(unused_out_of_range_table_entries_are_accepted) {
  const fs::path dir = fixture().root / "unused_entries";
  fs::create_directories(dir);
  fs::copy_file(fixture().valid, dir / "ok.h5");
  // Sequence 1 (L = 3) uses entry 0 only; entries 1..4 may hold anything.
  edit_dataset<int32_t>(dir / "ok.h5", in(fixture().names.decode, "inputs/block_tables"),
                        [](auto& v) { v[6] = 1 << 30; v[9] = -5; });
  const Run r = run_cli("check ok.h5 --backend model", dir);
  BOOST_TEST(r.code == 0, r.output);
  fs::remove_all(dir);
}

// Would catch: command-line values outside their ranges accepted (or crashing), and their exit
// code differing from kExitUsage; sweep files with bad keys or SPEC violations reaching the
// builders; outputs created although the command refused to run.
BOOST_AUTO_TEST_CASE(bad_command_lines_and_sweeps) {
  const fs::path dir = fixture().root / "cli";
  fs::create_directories(dir);
  fs::copy_file(fixture().valid, dir / "ok.h5");
  auto yaml = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  yaml("bad_syntax.yaml", "format: [turbo3v\n");
  yaml("unknown_key.yaml", "fromat: turbo3v\n");
  yaml("head_dim_100.yaml", "kind: writer\nhead_dim: 100\n");
  yaml("block_size_0.yaml", "kind: writer\nblock_size: 0\n");
  yaml("decode_head_dim_272.yaml", "kind: decode\nhead_dim: 272\n");
  yaml("huge_tokens.yaml", "kind: writer\nnum_tokens: 4000000000\n");
  yaml("negative.yaml", "kind: writer\nnum_kv_heads: -2\n");
  yaml("explosion.yaml", "kind: writer\nkey_pad: [0,4,8,12,16,20,24,28,32,36]\nvalue_pad: [0,1,2,3,4,5,6,7,8,9]\n"
                          "v_data_pad: [0,1,2,3,4,5,6,7,8,9]\nv_block_pad: [0,1,2,3,4,5,6,7,8,9]\n"
                          "spare_blocks: [0,1,2,3,4,5,6,7,8,9]\npadding_tokens: [0,1,2,3,4,5,6,7,8,9]\n");
  yaml("key_not_scalar.yaml", "? [a, b]\n: 1\n");
  yaml("huge.yaml", "kind: writer\n# " + std::string(size_t(1) << 20, 'x') + "\n");
  // 40 points of about 6.5 GiB each (65536 tokens of 2 x 4096 values; within the 8 GiB budget one
  // by one): more than the 256 GiB a sweep may build, refused before anything is built.
  std::string pads;
  for (int i = 0; i < 40; ++i) pads += std::string(i ? "," : "") += std::to_string(i);
  yaml("too_much.yaml", "kind: writer\nhead_dim: 4096\nnum_kv_heads: 2\nnum_tokens: 65536\npadding_tokens: [" +
                            pads + "]\n");
  // One 65535-sequence list repeated by YAML aliases (130 KB): each point converts its list anew,
  // so the sequences over all points are bounded before they are parsed.
  std::string ones = "1";
  for (int i = 1; i < 65535; ++i) ones += ",1";
  std::string aliases;
  for (int i = 0; i < 100; ++i) aliases += ", *a";
  yaml("aliases.yaml", "kind: decode\nhead_dim: 128\nnum_kv_heads: 1\nseq_lens: [&a [" + ones + "]" + aliases + "]\n");
  // A user's model table (generate --suite models --models) whose one model has 2^16 kv heads of
  // head_dim 256: pools of gigabytes per block, refused like a sweep point.
  yaml("models.yaml", "schema: 1\nmodels:\n  - name: Huge\n    source: x\n    checked: x\n    num_q_heads: 65536\n"
                      "    num_kv_heads: 65536\n    head_dim: 256\n    head_dim_field: head_dim\n    hidden_size: 1\n"
                      "    sliding_windows: []\n    layer_pattern: none\n    context: 4096\n");
  // YAML forbids a key twice (yaml-cpp let the later one win); a decode sweep needs a sequence;
  // escape sequences in keys and values are shown escaped.
  yaml("duplicate_key.yaml", "kind: writer\nhead_dim: 128\nblock_size: 4\nhead_dim: 64\n");
  yaml("no_sequences.yaml", "kind: decode\nhead_dim: 128\nseq_lens: []\n");
  yaml("no_sequences_nested.yaml", "kind: decode\nseq_lens: [[1, 2],\n  []]\n");
  yaml("escape_value.yaml", "kind: writer\nformat: \"\\e[31mred\\e]0;pwned\\a\"\n");
  yaml("escape_key.yaml", "kind: writer\n\"\\e[2J\": 1\n");
  yaml("models_duplicate_key.yaml", "schema: 1\nmodels:\n  - name: A\n    name: B\n");
  yaml("models_escape.yaml", "schema: 1\nmodels:\n  - name: \"\\e[2JHuge\"\n    source: x\n");
  BOOST_TEST_REQUIRE(::mkfifo((dir / "fifo.h5").c_str(), 0600) == 0);
  fs::create_symlink("ok.h5", dir / "link.h5");  // other names of the input
  fs::create_hard_link(dir / "ok.h5", dir / "hard.h5");
  struct Cli {
    std::string args;
    int code;
    std::vector<std::string> says;
    long max_lines = 4;  // one message (usage listings and validators' problem lists are longer)
  };
  const std::vector<Cli> cases = {
      {"nosuchcommand", kUsage, {"unknown command 'nosuchcommand'", "usage: tqref"}, 40},
      {"check", kUsage, {"give the golden FILE"}},
      {"check ok.h5 --level X", kUsage, {"--level X", "allowed: exact (W/D), T or I"}},
      {"check ok.h5 --kind encoder", kUsage, {"--kind encoder", "allowed: writer, decode"}},
      {"check ok.h5 --inject melt", kUsage, {"--inject melt", "allowed: none"}},
      {"check ok.h5 --show many", kUsage, {"show"}},
      {"check ok.h5 --bogus", kUsage, {"bogus"}},
      {"check ok.h5 --case nosuch", kBadInput, {"no case 'nosuch'"}},
      // filters that leave no case: exit 3 and no report (a "0 cases, 0 failures" report is green in CI)
      {"check ok.h5 --filter nomatch --report r.json --junit r.xml", kBadInput,
       {"no case of ok.h5 was checked", "no report written"}},
      {"check ok.h5 --filter writer --kind decode --level I --report r.json", kBadInput, {"no case of ok.h5 was checked"}},
      {"check missing.h5", kBadInput, {"missing.h5", "not a readable HDF5 file"}},
      {"check ok.h5 --report nodir/r.json", kUsage, {"--report nodir/r.json", "directory"}},
      {"inspect missing.h5", kBadInput, {"missing.h5"}},
      {"generate --suite nosuch --out o.h5", kUsage, {"unknown suite 'nosuch'", "smoke, standard, stress"}},
      {"generate --suite smoke", kUsage, {"--out"}},
      {"generate --suite smoke --config x.yaml --out o.h5", kUsage, {"exactly one of --suite, --config"}},
      {"generate --suite smoke --out o.h5 --shard 3/2", kUsage, {"--shard 3/2", "0 <= I < N"}},
      {"generate --suite smoke --out o.h5 --seed 9223372036854775808", kUsage, {"--seed", "2^63-1"}},
      {"generate --suite smoke --out o.h5 --threads 0", kUsage, {"--threads 0", "allowed: 1 .."}},
      {"generate --suite smoke --out nodir/o.h5", kUsage, {"--out nodir/o.h5", "directory"}},
      {"generate --config missing.yaml --out o.h5", kBadInput, {"missing.yaml"}},
      {"generate --config bad_syntax.yaml --out o.h5", kBadInput, {"bad_syntax.yaml", "not valid YAML"}},
      {"generate --config unknown_key.yaml --out o.h5", kBadInput, {"unknown_key.yaml", "'fromat'", "unknown key"}},
      {"generate --config head_dim_100.yaml --out o.h5", kBadInput, {"head_dim_100.yaml", "head_dim = 100", "multiple of 16"}},
      {"generate --config block_size_0.yaml --out o.h5", kBadInput, {"block_size = 0", "allowed: 1 .. 4096"}},
      {"generate --config decode_head_dim_272.yaml --out o.h5", kBadInput, {"head_dim = 272", "16 .. 256"}},
      {"generate --config huge_tokens.yaml --out o.h5", kBadInput, {"num_tokens = 4000000000"}},
      {"generate --config negative.yaml --out o.h5", kBadInput, {"num_kv_heads", "-2"}},
      {"generate --config explosion.yaml --out o.h5", kBadInput, {"explosion.yaml", "1000000 points", "allowed: <= 100000"}},
      {"generate --config key_not_scalar.yaml --out o.h5", kBadInput, {"key_not_scalar.yaml"}},
      {"generate --config duplicate_key.yaml --out o.h5", kBadInput,
       {"duplicate_key.yaml: key 'head_dim': line 4: given again (first on line 2)",
        "allowed: each key once (YAML forbids duplicate keys)"}},
      {"generate --config no_sequences.yaml --out o.h5", kBadInput,
       {"no_sequences.yaml: key 'seq_lens': line 3: an empty list of sequence lengths", "allowed: 1 .. 65535"}},
      {"generate --config no_sequences_nested.yaml --out o.h5", kBadInput,
       {"no_sequences_nested.yaml: key 'seq_lens': line 3: an empty list of sequence lengths"}},
      {"generate --config escape_value.yaml --out o.h5", kBadInput, {"key 'format': '\\x1b[31mred\\x1b]0;pwned\\x07'"}},
      {"generate --config escape_key.yaml --out o.h5", kBadInput, {"key '\\x1b[2J': unknown key"}},
      {"generate --suite models --models models_duplicate_key.yaml --out o.h5", kBadInput,
       {"models_duplicate_key.yaml: key 'name': line 4: given again (first on line 3)"}},
      {"generate --suite models --models models_escape.yaml --out o.h5", kBadInput, {"model '\\x1b[2JHuge'"}},
      {"trace-validate ok.h5", kBadInput, {"ok.h5", "tqref.trace", "attribute 'schema' missing"}, 12},
      {"study --threads -3", kUsage, {"--threads -3"}},
      // before any GPU work (exit 2, not 4 "no GPU" on a machine without one)
      {"calibrate ex2 --raw-out nodir/f.raw", kUsage, {"--raw-out nodir/f.raw", "directory"}},
      {"calibrate ex2 --raw-out .", kUsage, {"--raw-out . is a directory"}},
      {"study --out nodir/x.h5 --only theory --quick", kUsage, {"--out nodir/x.h5", "directory"}},
      // a CSV directory under a file: was exit 5, "internal error: filesystem error", after the work
      {"study --out ok.h5/sub --only theory --quick", kUsage, {"--out ok.h5/sub: ok.h5 exists and is not a directory"}},
      // non-finite and out-of-range float options (level T passed an injected fault with these)
      {"check ok.h5 --level T --t-margin inf", kUsage, {"--t-margin inf", "allowed: 0 .. 0.1"}},
      {"check ok.h5 --level T --t-margin nan", kUsage, {"--t-margin nan", "allowed: 0 .. 0.1"}},
      {"check ok.h5 --level T --t-margin -0.5", kUsage, {"--t-margin -0.5", "allowed: 0 .. 0.1"}},
      {"check ok.h5 --threshold nan", kUsage, {"--threshold nan", "0 < threshold < 1"}},
      {"check ok.h5 --launch-timeout inf", kUsage, {"--launch-timeout inf"}},
      // the variant decoders: GPU only, built-in only, named ones only
      {"check ok.h5 --variant gqa", kUsage, {"--variant needs --backend gpu"}},
      {"check ok.h5 --backend gpu --variant fast", kUsage, {"--variant fast", "allowed: gqa"}},
      {"check ok.h5 --backend gpu --variant gqa --module m.cubin", kUsage, {"--variant", "not with --module"}},
      // outputs that would destroy an input, each other, or a device, checked before any work
      {"check ok.h5 --report ok.h5", kUsage, {"--report ok.h5 is the same file as ok.h5"}},
      {"check ok.h5 --report ./sub/../ok.h5", kUsage, {"is the same file as ok.h5"}},
      {"check ok.h5 --report link.h5", kUsage, {"--report link.h5 is the same file as ok.h5"}},
      {"check ok.h5 --junit hard.h5", kUsage, {"--junit hard.h5 is the same file as ok.h5"}},
      {"check ok.h5 --report r.json --junit r.json", kUsage, {"--report r.json is the same file as r.json"}},
      {"check ok.h5 --report /dev/null", kUsage, {"--report /dev/null is a character device", "allowed: a regular file"}},
      {"generate --config huge.yaml --out huge.yaml", kUsage, {"--out huge.yaml is the same file as huge.yaml"}},
      // ordinary output problems: exit 2 up front, never 5
      {"check ok.h5 --reproducer-dir ok.h5/repro", kUsage, {"--reproducer-dir ok.h5/repro", "not a directory"}},
      {"check ok.h5 --reproducer-dir /proc/self/repro", kUsage, {"--reproducer-dir /proc/self/repro", "cannot create"}},
      {"check ok.h5 --report /proc/self/report.json", kUsage, {"--report /proc/self/report.json", "cannot create"}},
      {"check ok.h5 --report " + std::string(300, 'r') + ".json", kUsage, {"File name too long"}},
      // inputs that are not regular files, or too large to be a sweep
      {"check fifo.h5", kBadInput, {"fifo.h5 is a FIFO", "allowed: a regular file"}},
      {"check /dev/zero", kBadInput, {"/dev/zero is a character device"}},
      {"inspect .", kBadInput, {"is a directory"}},
      {"generate --config /dev/zero --out o.h5", kBadInput, {"--config /dev/zero is a character device"}},
      {"generate --config fifo.h5 --out o.h5", kBadInput, {"--config fifo.h5 is a FIFO"}},
      {"generate --config huge.yaml --out o.h5", kBadInput, {"huge.yaml", "allowed: at most 1048576"}},
      {"generate --config too_much.yaml --out o.h5", kBadInput, {"too_much.yaml", "sweep point 39 (writer): the file's cases need more than",
                                                                 "allowed: <= 274877906944 (256 GiB"}},
      {"--max-memory 1G generate --config too_much.yaml --out o.h5", kBadInput,
       {"sweep point 0", "building the spec", "allowed: at most the memory budget, 1073741824 bytes"}},
      {"generate --config aliases.yaml --out o.h5", kBadInput,
       {"aliases.yaml", "key 'seq_lens'", "1114095 sequences over the sweep's points by point 16", "allowed: <= 1048576"}},
      {"generate --suite models --models models.yaml --out o.h5", kBadInput,
       {"models.yaml: model 'Huge'", "num_kv_heads = 65536; allowed: 1 .. 128"}},
      {"quantize --format turbo3v --file /dev/zero", kBadInput, {"--file /dev/zero is a character device"}},
      // demo at its documented maxima (each option alone is in range): was bad_alloc, exit 5
      {"--max-memory 1G demo --tokens 1048576 --heads 256 --head-dim 1024 --block-size 1024", kUsage,
       {"--tokens 1048576 --heads 256 --head-dim 1024 --block-size 1024 (K and V tensors, pools, slots) needs",
        "allowed: at most the memory budget, 1073741824 bytes"}},
      {"demo --tokens 1048576 --heads 8 --head-dim 1024", kUsage, {"allowed: at most the memory budget, 8589934592 bytes"}},
      // the memory budget option
      {"--max-memory 0 check ok.h5", kUsage, {"--max-memory 0", "allowed: 1M"}},
      {"check ok.h5 --max-memory lots", kUsage, {"--max-memory lots"}},
      // an HDF5 input larger than the budget whose every case fits (the 2.5 MB smoke file in 1 MiB):
      // memory follows the case being judged, not the file (was refused: "the validated copy of
      // the file (twice its size) needs 5097900 bytes")
      {"--max-memory 1M check " TQREF_SOURCE_DIR "/data/golden/smoke.h5 --backend model", 0,
       {"29 cases, 29 passed, 0 failed"}},
      // a query list that leaves no position: refused, not a segfault
      {"generate --trace " TQREF_SOURCE_DIR "/data/traces/stories15M.h5 --trace-queries 1000000 --out t.h5", kBadInput,
       {"--trace-queries: no position inside sequence", "allowed: -"}},
  };
  for (const Cli& c : cases) {
    BOOST_TEST_CONTEXT("tqref " << c.args) {
      const Run r = run_cli(c.args, dir);
      BOOST_TEST(r.code == c.code, "exit " << r.code << ":\n" << r.output);
      for (const auto& s : c.says) BOOST_TEST(r.output.find(s) != std::string::npos, "'" << s << "' not in: " << r.output);
      BOOST_TEST(std::count(r.output.begin(), r.output.end(), '\n') <= c.max_lines, r.output);
      // Nothing from a file or an option drives the terminal: no control character but newlines.
      BOOST_TEST(std::none_of(r.output.begin(), r.output.end(),
                              [](char ch) { return (unsigned char)ch < 0x20 && ch != '\n'; }), r.output);
      std::vector<std::string> keep = {"ok.h5", "fifo.h5", "link.h5", "hard.h5"};
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".yaml") keep.push_back(e.path().filename().string());
      const auto extra = leftovers(dir, keep);
      BOOST_TEST(extra.empty(), "left " << (extra.empty() ? "" : extra[0]));
    }
  }
  fs::remove_all(dir);
}

// Would catch: a write failure ignored (a corrupt file renamed into place, a crash in libhdf5's
// exit handler, a reproducer committed truncated) or a file-size limit that kills tqref and leaves
// its temporary. RLIMIT_FSIZE stands in for a full disk: with SIGXFSZ ignored, writes past the
// limit fail with EFBIG as they fail with ENOSPC on a full disk; with SIGXFSZ at its default,
// tqref's handler removes the temporary and exits 130.
BOOST_AUTO_TEST_CASE(full_disk_and_file_size_limit_leave_nothing) {
  const fs::path dir = fixture().root / "full_disk";
  fs::create_directories(dir);
  fs::copy_file(fixture().valid, dir / "ok.h5");
  // bash's ulimit -f counts 1024-byte blocks; trap "" XFSZ leaves SIGXFSZ ignored across exec.
  auto limited = [](const std::string& kib, bool ignore, const std::string& args) {
    return "bash -c '" + std::string(ignore ? "trap \"\" XFSZ; " : "") + "ulimit -f " + kib + "; exec \"" TQREF_CLI "\" " +
           args + "'";
  };
  struct Limited {
    std::string kib;
    bool ignore;
    std::string args;
    int code;
    std::vector<std::string> says;
  };
  const std::vector<Limited> cases = {
      {"300", true, "generate --suite smoke --out s.h5", kBadInput, {"s.h5", "write failed", "disk full or file-size limit"}},
      {"300", false, "generate --suite smoke --out s.h5", kInterrupted, {"file size limit exceeded (SIGXFSZ)", "exit 130"}},
      {"1", true, "check ok.h5 --report r.json", kBadInput, {"cannot write --report", "r.json"}},
      {"20", true, "check ok.h5 --inject flip-code-bit --reproducer-dir repro", kBadInput, {"repro/", "write failed"}},
  };
  for (const Limited& c : cases) {
    BOOST_TEST_CONTEXT(c.kib << " KiB, SIGXFSZ " << (c.ignore ? "ignored" : "default") << ": tqref " << c.args) {
      const Run r = run_cli(limited(c.kib, c.ignore, c.args), dir, false);
      BOOST_TEST(r.code == c.code, "exit " << r.code << ":\n" << r.output);
      for (const auto& w : c.says) BOOST_TEST(r.output.find(w) != std::string::npos, "'" << w << "' not in: " << r.output);
      std::vector<std::string> extra = leftovers(dir, {"ok.h5", "repro"});
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename() == "repro" && !fs::is_empty(e.path())) extra.push_back("repro/...");
      BOOST_TEST(extra.empty(), "left " << (extra.empty() ? "" : extra[0]));
    }
  }
  fs::remove_all(dir);
}

// Would catch: a 9 MB file that makes tqref allocate 8.5 GB (the K pools of a case, zeros
// compressed 1000:1), i.e. sizes from a file allocated before they are checked against the memory
// budget. Scaled down: pools of 2 x 256 MiB against --max-memory 256M (the 8.5 GB form against the
// default 8 GiB budget is recorded in docs/reliability.md).
BOOST_AUTO_TEST_CASE(case_larger_than_memory_budget_is_refused) {
  const fs::path dir = fixture().root / "budget";
  fs::create_directories(dir);
  const fs::path f = dir / "big.h5";
  fs::copy_file(fixture().valid, f);
  const CaseNames& n = fixture().names;
  // 2 kv heads x head_dim 128 x block_size 4 x 2 bytes = 2 KiB per block: 2^17 blocks = 256 MiB.
  const uint64_t blocks = uint64_t(1) << 17;
  set_int_attr(f, n.writer, "num_blocks", int64_t(blocks));
  for (const char* g : {"initial/k_cache", "expected/k_cache"}) write_zero_dataset(f, in(n.writer, g), {blocks, 4, 2, 128}, 512);
  BOOST_TEST(fs::file_size(f) < (uint64_t(8) << 20));
  const Run r = run_cli("--max-memory 256M check big.h5 --report r.json", dir);
  BOOST_TEST(r.code == kBadInput, r.output);
  BOOST_TEST(r.output.find("needs") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("allowed: at most the memory budget, 268435456 bytes") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("num_blocks = 131072") != std::string::npos, r.output);
  const auto extra = leftovers(dir, {"big.h5"});
  BOOST_TEST(extra.empty(), "left " << (extra.empty() ? "" : extra[0]));
  fs::remove_all(dir);
}

// Would catch: commands that disagree on one corrupt byte (`check` passed, 8 of 8 runs, while
// `inspect` of the same bytes exited 3): the size of the root `config_yaml` string, one up or
// down in its low byte or its second one, both where the attribute sits in a checksummed heap
// block (a short sweep: every change is refused) and where it is a "huge" heap object, stored
// without a checksum (a sweep above 4 KiB: 256 bytes more is refused). Each command must give the
// same verdict and, when it refuses, the same message. (Where the huge form is not refused, every
// command reads the same shorter or slightly longer string: docs/bad-input.md says why the HDF5
// 1.10 format cannot tell.)
BOOST_AUTO_TEST_CASE(corrupt_config_yaml_size_is_judged_alike) {
  const fs::path dir = fixture().root / "config_yaml";
  fs::create_directories(dir);
  std::string comments;
  for (int i = 0; i < 100; ++i) comments += "# a comment line that makes the sweep longer than 4 KiB\n";
  std::ofstream(dir / "short.yaml") << "kind: writer\nhead_dim: 128\nnum_tokens: 3\n";
  std::ofstream(dir / "long.yaml") << "kind: writer\nhead_dim: 128\nnum_tokens: 3\n" << comments;
  for (const std::string sweep : {"short", "long"}) {
    BOOST_TEST_REQUIRE(run_cli("generate --config " + sweep + ".yaml --out " + sweep + ".h5", dir).code == 0);
    std::ifstream in(dir / (sweep + ".h5"), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t name = bytes.find(std::string("config_yaml", 12));
    BOOST_TEST_REQUIRE(name != std::string::npos);
    // Attribute message version 3: the name, then the string datatype (4 bytes of class and
    // flags, 4 bytes of size, little-endian).
    const uint64_t size_at = name + 12 + 4;
    uint32_t stored = 0;
    std::memcpy(&stored, bytes.data() + size_at, 4);
    BOOST_TEST_REQUIRE(stored == fs::file_size(dir / (sweep + ".yaml")));
    for (const uint64_t byte : {size_at, size_at + 1})
      for (const int step : {1, -1}) {
        BOOST_TEST_CONTEXT(sweep << " sweep, size byte " << (byte - size_at) << (step > 0 ? " + 1" : " - 1")) {
          fs::copy_file(dir / (sweep + ".h5"), dir / "bad.h5", fs::copy_options::overwrite_existing);
          {
            std::fstream f(dir / "bad.h5", std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(std::streamoff(byte));
            f.put(char(bytes[byte] + step));
          }
          std::vector<Run> runs;
          for (const std::string cmd : {"check bad.h5 --report r.json", "inspect bad.h5"}) runs.push_back(run_cli(cmd, dir));
          BOOST_TEST(runs[0].code == runs[1].code, "check: " << runs[0].output << "\ninspect: " << runs[1].output);
          if (sweep == "short" || (byte > size_at && step > 0)) BOOST_TEST(runs[0].code == kBadInput, runs[0].output);
          if (runs[0].code == kBadInput) {
            // tqref's own lines, after the command name: under ASan the validating child's
            // sanitizer report (its pid and addresses differ from run to run) shares the output.
            const auto message = [](const std::string& out) {
              std::string mine, line;
              std::istringstream in(out);
              while (std::getline(in, line))
                if (line.rfind("tqref", 0) == 0) mine += line.substr(std::min(line.size(), line.find(": ") + 2)) + "\n";
              return mine;
            };
            BOOST_TEST(!message(runs[0].output).empty(), runs[0].output);
            BOOST_TEST(runs[0].output.find("bad.h5:/") != std::string::npos, runs[0].output);
            BOOST_TEST(runs[0].output.find("corrupt file") != std::string::npos, runs[0].output);
            BOOST_TEST(message(runs[0].output) == message(runs[1].output));
            BOOST_TEST(!fs::exists(dir / "r.json"));
          }
          fs::remove(dir / "r.json");
        }
      }
  }
  fs::remove_all(dir);
}

// Would catch: the cheap check of a case's memory (from its attributes) made only after the
// validating pass inflated every dataset: this 9 MB file declares K pools of 2 x 4 GiB of zeros
// (2^21 blocks), which took 99 to 152 s to inflate before the same refusal. The check now runs in
// the validating child between its structure and data phases (golden::check_case_memory), for
// every command that reads golden files: refused in about a second.
BOOST_AUTO_TEST_CASE(case_over_budget_is_refused_before_inflating) {
  const fs::path dir = fixture().root / "inflate";
  fs::create_directories(dir);
  const fs::path f = dir / "big.h5";
  fs::copy_file(fixture().valid, f);
  const CaseNames& n = fixture().names;
  const uint64_t blocks = uint64_t(1) << 21;  // 2 KiB per block: 4 GiB per K pool
  set_int_attr(f, n.writer, "num_blocks", int64_t(blocks));
  for (const char* g : {"initial/k_cache", "expected/k_cache"}) write_zero_dataset(f, in(n.writer, g), {blocks, 4, 2, 128}, 512);
  BOOST_TEST(fs::file_size(f) < (uint64_t(10) << 20), fs::file_size(f) << " bytes");
  for (const std::string cmd : {"check big.h5 --report r.json --junit r.xml", "inspect big.h5"}) {
    BOOST_TEST_CONTEXT(cmd) {
      const auto t0 = std::chrono::steady_clock::now();
      const Run r = run_cli(cmd, dir);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      BOOST_TEST(r.code == kBadInput, r.output);
      BOOST_TEST(r.output.find("big.h5:/cases/") != std::string::npos, r.output);
      BOOST_TEST(r.output.find("the case (num_blocks = 2097152, read and run) needs") != std::string::npos, r.output);
      BOOST_TEST(r.output.find("allowed: at most the memory budget, 8589934592 bytes") != std::string::npos, r.output);
      BOOST_TEST(secs < 30.0, "refused after " << secs << " s");  // inflating first took 99 s or more
      const auto extra = leftovers(dir, {"big.h5"});
      BOOST_TEST(extra.empty(), "left " << (extra.empty() ? "" : extra[0]));
    }
  }
  fs::remove_all(dir);
}

// Would catch: --trace-padding-tokens taken as given (4e9: 6 GB, then bad_alloc, exit 5, or the
// OOM killer; 1e7: 90 s, then bad_alloc), and a budget refusal whose allowed range is not the
// padding that really fits (the bound named must be accepted, one more refused).
BOOST_AUTO_TEST_CASE(trace_golden_padding_tokens_are_bounded) {
  const fs::path dir = fixture().root / "trace_padding";
  fs::create_directories(dir);
  const std::string trace = "trace-golden --trace " TQREF_SOURCE_DIR "/data/traces/stories15M.h5 --out t.h5 ";
  const auto t0 = std::chrono::steady_clock::now();
  Run r = run_cli(trace + "--trace-padding-tokens 4000000000", dir);
  BOOST_TEST(r.code == kUsage, r.output);
  BOOST_TEST(r.output.find("--trace-padding-tokens 4000000000; allowed: 0 .. 65536") != std::string::npos, r.output);
  BOOST_TEST(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 10.0);
  r = run_cli("--max-memory 128M " + trace + "--trace-padding-tokens 65536", dir);
  BOOST_TEST(r.code == kUsage, r.output);
  BOOST_TEST(r.output.find("--trace-padding-tokens 65536: building the 36 cases of stories15M.h5 needs") != std::string::npos,
             r.output);
  BOOST_TEST(r.output.find("allowed: at most the memory budget, 134217728 bytes") != std::string::npos, r.output);
  const std::string said = "--trace-padding-tokens 0 .. ";
  const size_t at = r.output.find(said);
  BOOST_TEST_REQUIRE(at != std::string::npos, r.output);
  const long most = std::stol(r.output.substr(at + said.size()));
  BOOST_TEST(most > 0);
  BOOST_TEST(most < 65536);
  r = run_cli("--max-memory 128M " + trace + "--trace-padding-tokens " + std::to_string(most + 1), dir);
  BOOST_TEST(r.code == kUsage, r.output);
  BOOST_TEST(r.output.find(said + std::to_string(most) + "\n") != std::string::npos, r.output);
  BOOST_TEST(leftovers(dir, {}).empty());
  r = run_cli("--max-memory 128M " + trace + "--trace-padding-tokens " + std::to_string(most), dir);
  BOOST_TEST(r.code == 0, r.output);
  BOOST_TEST(fs::exists(dir / "t.h5"));
  fs::remove(dir / "t.h5");
  // The trace's cases alone past the budget: the file's sequences and layers, not the option.
  r = run_cli("--max-memory 8M " + trace, dir);
  BOOST_TEST(r.code == kBadInput, r.output);
  BOOST_TEST(r.output.find("building the 36 cases of stories15M.h5 needs") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("choose fewer --trace-sequences or --trace-layers") != std::string::npos, r.output);
  BOOST_TEST(leftovers(dir, {}).empty());
  fs::remove_all(dir);
}

namespace {

// Starts `tqref ARGS...` in `dir` with stderr to `err`; returns the child's pid.
pid_t spawn(const fs::path& dir, const std::vector<std::string>& args, const fs::path& err) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    FILE* e = std::freopen(err.c_str(), "w", stderr);
    FILE* o = std::freopen("/dev/null", "w", stdout);
    (void)e;
    (void)o;
    std::vector<char*> argv{const_cast<char*>(TQREF_CLI)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(TQREF_CLI, argv.data());
    _exit(127);
  }
  return pid;
}

bool has_partial(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".partial-") != std::string::npos) return true;
  return false;
}

}  // namespace

// Would catch: an interrupt that leaves a half-written golden file or its temporary behind, or
// exits with a status other than the documented 130 (kExitInterrupted).
BOOST_AUTO_TEST_CASE(sigterm_and_sigint_leave_no_partial_output) {
  for (int sig : {SIGTERM, SIGINT}) {
    BOOST_TEST_CONTEXT("signal " << sig) {
      const fs::path dir = fixture().root / ("signal_" + std::to_string(sig));
      fs::create_directories(dir);
      const pid_t pid = spawn(dir, {"generate", "--suite", "standard", "--out", "std.h5", "--threads", "1"},
                              dir / "err.txt");
      BOOST_TEST_REQUIRE(pid > 0);
      // Wait until the temporary exists (the run is mid-write), then a little longer.
      const auto t0 = std::chrono::steady_clock::now();
      while (!has_partial(dir) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      BOOST_TEST_REQUIRE(has_partial(dir), "generate never created its temporary");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      BOOST_TEST_REQUIRE(kill(pid, sig) == 0);
      int st = 0;
      BOOST_TEST_REQUIRE(waitpid(pid, &st, 0) == pid);
      BOOST_TEST(WIFEXITED(st));
      BOOST_TEST(WEXITSTATUS(st) == kInterrupted);
      std::ifstream e(dir / "err.txt");
      std::stringstream ss;
      ss << e.rdbuf();
      BOOST_TEST(ss.str().find(sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted (SIGINT)") != std::string::npos,
                 ss.str());
      const auto extra = leftovers(dir, {"err.txt"});
      BOOST_TEST(extra.empty(), "left " << (extra.empty() ? "" : extra[0]));
      fs::remove_all(dir);
    }
  }
}
