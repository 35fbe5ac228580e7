#include "cases/model_table.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <stdexcept>

#include "io/text_escape.h"

namespace tqref::cases {

// The text of data/models/attention.yaml, generated into the build tree by CMake (model_table_text.cpp.in).
extern const char* const kBuiltinModelTableText;

namespace {

// The decoders' largest HDIM: a model with a larger head_dim has no build to dispatch to.
constexpr uint32_t kMaxModelHeadDim = 256;

// Names and values from the file reach messages through printable().
[[noreturn]] void bad(const std::string& file, const std::string& model, const std::string& what) {
  throw std::invalid_argument(printable(file) + ": model '" + printable(model) + "': " + printable(what));
}

// "" or the first key of map `m` given twice, with both lines (YAML forbids duplicate keys;
// yaml-cpp's lookup would take one of them silently).
std::string duplicate_key(const YAML::Node& m) {
  std::map<std::string, int> seen;
  for (const auto& kv : m) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const int line = kv.first.Mark().line + 1;
    if (const auto [first, fresh] = seen.emplace(key, line); !fresh)
      return "key '" + printable(key) + "': line " + std::to_string(line) + ": given again (first on line " +
             std::to_string(first->second) + "); allowed: each key once (YAML forbids duplicate keys)";
  }
  return "";
}

std::string text(const std::string& file, const std::string& model, const YAML::Node& m,
                 const char* key, bool required) {
  const YAML::Node n = m[key];
  if (!n) {
    if (required) bad(file, model, std::string("field '") + key + "' is missing");
    return "";
  }
  if (!n.IsScalar()) bad(file, model, std::string("field '") + key + "' must be a string");
  return n.Scalar();
}

uint32_t count(const std::string& file, const std::string& model, const YAML::Node& n,
               const std::string& key) {
  if (!n || !n.IsScalar()) bad(file, model, "field '" + key + "' is missing or not a number");
  try {
    const int64_t v = n.as<int64_t>();
    if (v < 1 || v > int64_t(UINT32_MAX)) bad(file, model, "field '" + key + "' = " + n.Scalar() + "; allowed: 1 .. 2^32-1");
    return uint32_t(v);
  } catch (const YAML::Exception&) {
    bad(file, model, "field '" + key + "' = '" + n.Scalar() + "' is not an integer");
  }
}

ModelGeometry parse_model(const std::string& file, const YAML::Node& m) {
  if (!m.IsMap()) throw std::invalid_argument(file + ": every entry of 'models' must be a map");
  if (const std::string twice = duplicate_key(m); !twice.empty())
    throw std::invalid_argument(printable(file) + ": " + twice);
  ModelGeometry g;
  g.name = text(file, "?", m, "name", true);
  g.source = text(file, g.name, m, "source", true);
  g.checked = text(file, g.name, m, "checked", true);
  g.num_q_heads = count(file, g.name, m["num_q_heads"], "num_q_heads");
  g.num_kv_heads = count(file, g.name, m["num_kv_heads"], "num_kv_heads");
  g.head_dim = count(file, g.name, m["head_dim"], "head_dim");
  g.head_dim_field = text(file, g.name, m, "head_dim_field", true);
  g.hidden_size = count(file, g.name, m["hidden_size"], "hidden_size");
  g.layer_pattern = text(file, g.name, m, "layer_pattern", true);
  g.context = count(file, g.name, m["context"], "context");
  g.notes = text(file, g.name, m, "notes", false);
  const YAML::Node w = m["sliding_windows"];
  if (!w || !w.IsSequence()) bad(file, g.name, "field 'sliding_windows' must be a list ([] = none)");
  for (const auto& x : w) g.sliding_windows.push_back(count(file, g.name, x, "sliding_windows"));

  if (g.num_q_heads % g.num_kv_heads != 0)
    bad(file, g.name, "num_q_heads = " + std::to_string(g.num_q_heads) +
                          "; allowed: a multiple of num_kv_heads = " + std::to_string(g.num_kv_heads));
  if (g.head_dim % 16 != 0 || g.head_dim > kMaxModelHeadDim)
    bad(file, g.name, "head_dim = " + std::to_string(g.head_dim) +
                          "; allowed: a multiple of 16 up to 256 (docs/spec.md sections 3 and 5)");
  if (g.head_dim_field == "hidden_size/num_attention_heads") {
    if (uint64_t(g.head_dim) * g.num_q_heads != g.hidden_size)
      bad(file, g.name, "head_dim = " + std::to_string(g.head_dim) + " is not hidden_size / num_q_heads = " +
                            std::to_string(g.hidden_size) + " / " + std::to_string(g.num_q_heads));
  } else if (g.head_dim_field != "head_dim") {
    bad(file, g.name, "head_dim_field = '" + g.head_dim_field +
                          "'; allowed: head_dim, hidden_size/num_attention_heads");
  }
  const std::set<std::string> patterns = {"none", "all", "alternating"};
  const bool ratio = g.layer_pattern.find(':') != std::string::npos;
  if (!patterns.count(g.layer_pattern) && !ratio)
    bad(file, g.name, "layer_pattern = '" + g.layer_pattern + "'; allowed: none, all, alternating, <sliding>:<full>");
  if ((g.layer_pattern == "none") != g.sliding_windows.empty())
    bad(file, g.name, "layer_pattern '" + g.layer_pattern + "' and sliding_windows disagree (none <=> [])");
  for (uint32_t win : g.sliding_windows)
    if (win > g.context)
      bad(file, g.name, "sliding_windows entry " + std::to_string(win) +
                            "; allowed: 1 .. context = " + std::to_string(g.context));
  return g;
}

}  // namespace

std::vector<ModelGeometry> parse_model_table(const std::string& yaml_text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(printable(file) + ": not valid YAML: " + printable(e.what()));
  }
  if (root.IsMap())
    if (const std::string twice = duplicate_key(root); !twice.empty())
      throw std::invalid_argument(printable(file) + ": " + twice);
  if (!root.IsMap() || !root["schema"] || root["schema"].Scalar() != "1")
    throw std::invalid_argument(file + ": 'schema: 1' is missing (the format of data/models/attention.yaml)");
  const YAML::Node models = root["models"];
  if (!models || !models.IsSequence() || models.size() == 0)
    throw std::invalid_argument(file + ": 'models' must be a non-empty list");
  std::vector<ModelGeometry> r;
  std::set<std::string> names;
  for (const auto& m : models) {
    r.push_back(parse_model(file, m));
    if (!names.insert(r.back().name).second) bad(file, r.back().name, "listed twice");
  }
  return r;
}

const std::string& builtin_model_table_text() {
  static const std::string t = kBuiltinModelTableText;
  return t;
}

const std::vector<ModelGeometry>& builtin_model_table() {
  static const std::vector<ModelGeometry> t =
      parse_model_table(builtin_model_table_text(), "data/models/attention.yaml (built in)");
  return t;
}

}  // namespace tqref::cases
