#include "judge/backend.h"

#include <cstring>

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

LaunchTimes& LaunchTimes::operator+=(const LaunchTimes& o) {
  launches += o.launches;
  upload_s += o.upload_s;
  kernel_s += o.kernel_s;
  download_s += o.download_s;
  return *this;
}

GuardedBuffer GuardedBuffer::with_guards(std::span<const uint8_t> init) {
  GuardedBuffer g;
  g.bytes.resize(init.size() + 2 * kGuardBytes);
  for (uint64_t i = 0; i < kGuardBytes; ++i) {
    g.bytes[i] = guard_byte(i);
    g.bytes[kGuardBytes + init.size() + i] = guard_byte(i);
  }
  if (!init.empty()) std::memcpy(g.data(), init.data(), init.size());
  return g;
}

std::vector<std::string> output_buffers(CaseKind k) {
  if (k == CaseKind::writer) return {"k_cache", "v_cache"};
  return {"output"};
}

namespace {
std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r{
      {"model", [](const BackendOptions&, const Ex2Profile* ex2) { return make_model_backend(ex2); }}};
  return r;
}
}  // namespace

bool register_backend(const std::string& name, BackendFactory f) {
  registry()[name] = f;
  return true;
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& o,
                                      const Ex2Profile* ex2) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second(o, ex2);
}

std::vector<std::string> backend_names() {
  std::vector<std::string> r;
  for (const auto& [k, v] : registry()) r.push_back(k);
  return r;
}

}  // namespace tqref::judge
