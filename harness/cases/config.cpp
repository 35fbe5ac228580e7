// --config FILE: a declarative YAML sweep. Every key maps to a list of values (a scalar counts as
// a one-element list); the specs are the cross product of the lists, per kind, in key order:
//   kind, format, head_dim, num_kv_heads, q_per_kv, block_size, seq_lens (a list of lists),
//   num_tokens, padding_tokens, sliding_window, layout, dist, key_pad, value_pad, q_pad,
//   v_data_pad, v_block_pad, spare_blocks, spare_table_entries, threshold.
// `threshold` is the decoder build's TQ_PLUS_SPARSE_V_THRESHOLD the cases are built for (default
// 1e-3): a finite float in (0, 1), one value per file, since a golden file is checked against
// one build (its provenance records it).
// Writer specs ignore the decode-only keys (q_per_kv, seq_lens, sliding_window, q_pad) and decode
// specs ignore num_tokens, so no duplicate cases arise. Unknown keys, a key given twice (YAML
// forbids it; yaml-cpp would let the later one win) and an empty list of sequence lengths are
// errors naming the file, the line and the key. Keys and values from the file reach messages
// through printable() (an escape sequence in a value never reaches the terminal raw).
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "cases/spec_checks.h"
#include "cases/suites.h"
#include "io/text_escape.h"
#include "tqref/contract.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

// Points (specs) one sweep file may describe.
constexpr uint64_t kMaxSweepPoints = 100000;
// seq_lens entries summed over the points: each point converts its list anew, and YAML aliases let
// a 250 KB file repeat one 65535-entry list 40000 times (minutes of parsing before the memory
// bound above stops it).
constexpr uint64_t kMaxSweepSequences = uint64_t(1) << 20;

using Setter = std::function<void(CaseSpec&, const YAML::Node&)>;

[[noreturn]] void bad(const std::string& file, const std::string& key, const std::string& what) {
  throw std::invalid_argument(printable(file) + ": key '" + printable(key) + "': " + printable(what));
}

// "line N" of a node, for messages (yaml-cpp counts from 0).
std::string line_of(const YAML::Node& n) { return "line " + std::to_string(n.Mark().line + 1); }

uint32_t as_u32(const std::string& file, const std::string& key, const YAML::Node& n) {
  try {
    const int64_t v = n.as<int64_t>();
    if (v < 0 || v > int64_t(UINT32_MAX)) bad(file, key, "value " + n.Scalar() + " outside 0 .. 2^32-1");
    return uint32_t(v);
  } catch (const YAML::Exception&) {
    bad(file, key, "value '" + n.Scalar() + "' is not an integer");
  }
}

std::map<std::string, Setter> setters(const std::string& file) {
  std::map<std::string, Setter> m;
  auto u32 = [&file](const char* key, uint32_t CaseSpec::*field) {
    return Setter([&file, key, field](CaseSpec& s, const YAML::Node& n) {
      s.*field = as_u32(file, key, n);
    });
  };
  m["format"] = [&file](CaseSpec& s, const YAML::Node& n) {
    if (!parse_format(n.as<std::string>(), &s.format))
      bad(file, "format", "'" + n.Scalar() + "'; allowed: " + format_names());
  };
  m["head_dim"] = u32("head_dim", &CaseSpec::head_dim);
  m["num_kv_heads"] = u32("num_kv_heads", &CaseSpec::num_kv_heads);
  m["q_per_kv"] = u32("q_per_kv", &CaseSpec::q_per_kv);
  m["block_size"] = u32("block_size", &CaseSpec::block_size);
  m["num_tokens"] = u32("num_tokens", &CaseSpec::num_tokens);
  m["padding_tokens"] = u32("padding_tokens", &CaseSpec::padding_tokens);
  m["sliding_window"] = u32("sliding_window", &CaseSpec::sliding_window);
  m["key_pad"] = u32("key_pad", &CaseSpec::key_pad);
  m["value_pad"] = u32("value_pad", &CaseSpec::value_pad);
  m["q_pad"] = u32("q_pad", &CaseSpec::q_pad);
  m["v_data_pad"] = u32("v_data_pad", &CaseSpec::v_data_pad);
  m["v_block_pad"] = u32("v_block_pad", &CaseSpec::v_block_pad);
  m["spare_blocks"] = u32("spare_blocks", &CaseSpec::spare_blocks);
  m["spare_table_entries"] = u32("spare_table_entries", &CaseSpec::spare_table_entries);
  m["seq_lens"] = [&file](CaseSpec& s, const YAML::Node& n) {
    if (!n.IsSequence()) bad(file, "seq_lens", "each value must be a list of lengths, e.g. [0, 1, 37]");
    if (n.size() == 0)
      bad(file, "seq_lens", line_of(n) + ": an empty list of sequence lengths; allowed: 1 .. " +
                            std::to_string(kMaxGridY) + " lengths per value (a decode case runs at least one sequence)");
    s.seq_lens.clear();
    for (const auto& x : n) s.seq_lens.push_back(int32_t(as_u32(file, "seq_lens", x)));
  };
  m["layout"] = [&file](CaseSpec& s, const YAML::Node& n) {
    if (!parse_layout(n.as<std::string>(), &s.layout))
      bad(file, "layout", "'" + n.Scalar() + "'; allowed: sequential, shuffled, shared");
  };
  m["dist"] = [&file](CaseSpec& s, const YAML::Node& n) {
    if (!parse_dist(n.as<std::string>(), &s.dist))
      bad(file, "dist", "'" + n.Scalar() + "'; allowed: " + dist_names_list());
  };
  m["threshold"] = [&file](CaseSpec& s, const YAML::Node& n) {
    double v = 0;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      bad(file, "threshold", "value '" + n.Scalar() + "' is not a number");
    }
    const float f = float(v);
    if (!std::isfinite(v) || !(f > 0.0f) || !(f < 1.0f))
      bad(file, "threshold", "value " + n.Scalar() + "; allowed: a finite float with 0 < threshold < 1");
    s.threshold = f;
  };
  return m;
}

// The sweep's specs; *key_at names the key being read (for errors yaml-cpp raises).
std::vector<CaseSpec> specs_of(const YAML::Node& root, const std::string& file, std::string* key_at);

}  // namespace

std::vector<CaseSpec> config_specs(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(printable(file) + ": not valid YAML: " + printable(e.what()));
  }
  if (!root.IsMap()) throw std::invalid_argument(file + ": expected a mapping of key: [values]");
  // A key or value of the wrong YAML kind (a map where a scalar belongs, found by fuzzing) makes
  // yaml-cpp throw from as<>(); it is reported as bad input naming the key, not as a crash.
  std::string key_at = "(a key)";
  try {
    return specs_of(root, file, &key_at);
  } catch (const YAML::Exception& e) {
    bad(file, key_at, "not a scalar or a list of scalars (" + e.msg + ")");
  }
}

namespace {

std::vector<CaseSpec> specs_of(const YAML::Node& root, const std::string& file, std::string* key_at) {
  const auto set = setters(file);
  // keys in file order, each with its list of values
  std::vector<std::pair<std::string, std::vector<YAML::Node>>> axes;
  std::vector<CaseKind> kinds = {CaseKind::writer, CaseKind::decode};
  std::map<std::string, std::string> seen;  // key -> where it was first given
  for (const auto& kv : root) {
    *key_at = "(a key)";
    const std::string key = kv.first.as<std::string>();
    *key_at = key;
    if (const auto [first, fresh] = seen.emplace(key, line_of(kv.first)); !fresh)
      bad(file, key, line_of(kv.first) + ": given again (first on " + first->second +
                         "); allowed: each key once (YAML forbids duplicate keys)");
    std::vector<YAML::Node> values;
    // seq_lens: a list of lists; a flat list is one value
    const bool nested = key == "seq_lens" && kv.second.IsSequence() && kv.second.size() > 0 &&
                        kv.second[0].IsSequence();
    if (kv.second.IsSequence() && (key != "seq_lens" || nested))
      for (const auto& x : kv.second) values.push_back(x);
    else values.push_back(kv.second);
    if (values.empty()) bad(file, key, "empty list");
    if (key == "threshold" && values.size() > 1)
      bad(file, key, std::to_string(values.size()) + " values; allowed: one (a golden file is "
                     "checked against one decoder build's THRESH)");
    if (key == "kind") {
      kinds.clear();
      for (const auto& x : values) {
        const std::string k = x.as<std::string>();
        if (k == "writer") kinds.push_back(CaseKind::writer);
        else if (k == "decode") kinds.push_back(CaseKind::decode);
        else bad(file, key, "'" + k + "'; allowed: writer, decode");
      }
      continue;
    }
    if (!set.count(key)) bad(file, key, "unknown key");
    axes.emplace_back(key, std::move(values));
  }
  static const std::set<std::string> decode_only = {"q_per_kv", "seq_lens", "sliding_window", "q_pad"};
  using Axis = std::pair<std::string, std::vector<YAML::Node>>;
  auto used_axes = [&](CaseKind kind) {
    std::vector<const Axis*> used;
    for (const auto& a : axes) {
      const bool skip = kind == CaseKind::writer ? decode_only.count(a.first) > 0 : a.first == "num_tokens";
      if (!skip) used.push_back(&a);
    }
    return used;
  };
  // The cross product is counted before it is built: a few long lists multiply quickly.
  uint64_t points = 0;
  for (CaseKind kind : kinds) {
    uint64_t n = 1;
    for (const Axis* a : used_axes(kind))
      if (__builtin_mul_overflow(n, uint64_t(a->second.size()), &n)) n = UINT64_MAX;
    points = n > kMaxSweepPoints || points + n > kMaxSweepPoints ? kMaxSweepPoints + 1 : points + n;
    if (points > kMaxSweepPoints) {
      const std::string count = n == UINT64_MAX ? "more than 2^64" : std::to_string(n);
      throw std::invalid_argument(file + ": the sweep has " + count + " points; allowed: <= " +
                                  std::to_string(kMaxSweepPoints) + " (split it into several files)");
    }
  }
  std::vector<CaseSpec> out;
  SpecTotal total;
  uint64_t sequences = 0;  // seq_lens entries summed, counted before each list is converted
  for (CaseKind kind : kinds) {
    const std::vector<const Axis*> used = used_axes(kind);
    std::vector<size_t> idx(used.size(), 0);
    for (;;) {
      CaseSpec s;
      s.kind = kind;
      if (kind == CaseKind::writer) s.num_tokens = 37;
      else s.seq_lens = {0, 1, 37};
      for (size_t i = 0; i < used.size(); ++i) {
        *key_at = used[i]->first;
        const YAML::Node& value = used[i]->second[idx[i]];
        if (used[i]->first == "seq_lens" && value.IsSequence()) {
          sequences += value.size();  // each list is at most the 1 MiB file: no overflow before the check
          if (sequences > kMaxSweepSequences)
            bad(file, "seq_lens", std::to_string(sequences) + " sequences over the sweep's points by point " +
                                      std::to_string(out.size()) + "; allowed: <= " +
                                      std::to_string(kMaxSweepSequences) + " in all (split it into several files)");
        }
        set.at(used[i]->first)(s, value);
      }
      // SPEC ranges and the generator's size limits (docs/bad-input.md) before anything is
      // built; the total bounded as the points are made, so a sweep of huge points stops early.
      if (const std::string why = total.add(s); !why.empty())
        throw std::invalid_argument(file + ": sweep point " + std::to_string(out.size()) + " (" +
                                    kind_name(kind) + "): " + why);
      out.push_back(s);
      size_t i = used.size();
      while (i > 0 && ++idx[i - 1] == used[i - 1]->second.size()) idx[--i] = 0;
      if (i == 0) break;
    }
  }
  return out;
}

}  // namespace

}  // namespace tqref::cases
