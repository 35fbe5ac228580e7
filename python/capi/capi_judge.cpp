// The judge behind the C ABI: a launch's buffers, as a Python kernel left them, go through the
// same run_and_judge as `tqref check` (golden/judge_case.h), so the categories, decoded mismatch
// lines and level T distributions are the CLI's, from the same code.
#include <cstring>

#include "capi_call.h"
#include "judge/judge_case.h"
#include "judge/level_i.h"
#include "judge/report.h"

using namespace tqref;
using tqref::capi::c_call;
using tqref::capi::require;

// What a level I launch returned for one variant (tqref_result_put/fail fill it).
struct tqref_result {
  const tqref_case* h;
  judge::CaseResult r;
};

namespace {

// A backend whose "launch" returns buffers that ran elsewhere (a Python callable).
class ResultBackend : public judge::Backend {
 public:
  explicit ResultBackend(judge::CaseResult r) : r_(std::move(r)) {}
  std::string name() const override { return "python"; }
  judge::CaseResult run(const golden::GoldenCase&) override { return r_; }

 private:
  judge::CaseResult r_;
};

// The named guarded buffers as a CaseResult; `all_outputs`: every output buffer must be there.
judge::CaseResult result_of(const tqref_case& h, int n, const char* const* names,
                            const uint8_t* const* guarded, const uint64_t* sizes,
                            bool all_outputs = true) {
  if (n < 1) throw capi::BadArgument("n = " + std::to_string(n) + "; allowed: >= 1 buffer");
  require(names, "names");
  require(guarded, "guarded");
  require(sizes, "guarded_bytes");
  judge::CaseResult r;
  for (int i = 0; i < n; ++i) {
    require(names[i], "names[i]");
    const std::string name = names[i];
    const judge::LaunchBuffer* b = nullptr;
    for (const auto& lb : h.launch)
      if (lb.name == name) b = &lb;
    if (!b) throw capi::BadArgument("names[" + std::to_string(i) + "] = '" + name + "'; allowed: a launch buffer of " + h.c.name);
    const uint64_t want = b->bytes.size() + 2 * judge::kGuardBytes;
    if (sizes[i] != want)
      throw capi::BadArgument(name + " holds " + std::to_string(sizes[i]) + " bytes with its guards; allowed: " +
                              std::to_string(want) + " (" + std::to_string(b->bytes.size()) + " + 2 guard bands of " +
                              std::to_string(judge::kGuardBytes) + ")");
    require(guarded[i], "guarded[i]");
    judge::GuardedBuffer g;
    g.bytes.assign(guarded[i], guarded[i] + sizes[i]);
    (b->output ? r.buffers : r.inputs)[name] = std::move(g);
  }
  for (const std::string& out : judge::output_buffers(h.c.kind))
    if (all_outputs && !r.buffers.count(out)) throw capi::BadArgument("buffer '" + out + "' missing; allowed: every output buffer of the case");
  return r;
}

// The verdict's entry of report_json (one case), without the run header.
report::Json verdict_json(const judge::CaseVerdict& v) { return judge::report_json({}, {v})["results"][0]; }

// A backend whose launches are made by the caller's callback (a Python kernel): each variant of
// level I is handed over as a case and comes back as the buffers the kernel left.
class CallbackBackend : public judge::Backend {
 public:
  CallbackBackend(tqref_launch_fn fn, void* user) : fn_(fn), user_(user) {}
  std::string name() const override { return "python"; }
  judge::CaseResult run(const golden::GoldenCase& v) override {
    tqref_case h;
    h.c = v;
    capi::index_case(h);
    tqref_result res{&h, {}};
    if (fn_(user_, &h, &res) != 0) {
      res.r.buffers.clear();
      if (res.r.error.empty()) res.r.error = "launch failed";
    }
    return res.r;
  }

 private:
  tqref_launch_fn fn_;
  void* user_;
};

}  // namespace

extern "C" {

int tqref_result_put(tqref_result* r, const char* name, const uint8_t* guarded,
                     uint64_t guarded_bytes) {
  return c_call([&] {
    require(r, "result");
    judge::CaseResult one = result_of(*r->h, 1, &name, &guarded, &guarded_bytes, false);
    for (auto& [n, b] : one.buffers) r->r.buffers[n] = std::move(b);
    for (auto& [n, b] : one.inputs) r->r.inputs[n] = std::move(b);
  });
}

int tqref_result_fail(tqref_result* r, const char* message) {
  return c_call([&] {
    require(r, "result");
    r->r.error = message ? message : "launch failed";
  });
}

int tqref_judge_level_i(const tqref_case* c, tqref_launch_fn launch, void* user, char** json) {
  return c_call([&] {
    require(c, "case");
    require(reinterpret_cast<const void*>(launch), "launch");
    require(json, "json");
    CallbackBackend backend(launch, user);
    const judge::LevelIVerdict v = judge::judge_level_i(c->c, backend, judge::LevelIOptions{});
    *json = capi::c_string(report::json_line({{"verdict", verdict_json(judge::level_i_case_verdict(v))},
                                              {"text", judge::level_i_text(v)},
                                              {"level_i", judge::level_i_json({v})["cases"][0]}}));
  });
}

int tqref_judge(tqref_case* c, int level_t, int n, const char* const* names,
                const uint8_t* const* guarded, const uint64_t* guarded_bytes,
                const tqref_ex2* file_ex2, const tqref_ex2* kernel_ex2, double margin,
                double tol_ulps, double tol_row, char** json) {
  return c_call([&] {
    require(c, "case");
    require(json, "json");
    ResultBackend backend(result_of(*c, n, names, guarded, guarded_bytes));
    judge::Ex2Source src;
    if (kernel_ex2 && (!file_ex2 || kernel_ex2->profile.id() != file_ex2->profile.id())) {
      src.same_as_file = false;
      src.profile = &kernel_ex2->profile;
      src.why = "the kernel's EX2 unit has profile " + kernel_ex2->profile.id();
    }
    judge::LevelTOptions o;
    if (margin > 0) o.margin = margin;
    if (tol_ulps > 0) o.tol_ulps = tol_ulps;
    if (tol_row > 0) o.tol_row = tol_row;
    if (level_t && c->c.kind == golden::CaseKind::decode && c->c.d.diag.ref_dequantised.empty())
      throw capi::BadArgument("case " + c->c.name + " was read without diagnostics; level T needs them");
    // run_and_judge may realign the expectation in place: judge a copy, keep the case as read.
    golden::GoldenCase copy = c->c;
    const judge::JudgedCase j = judge::run_and_judge(copy, backend, src, file_ex2 ? &file_ex2->profile : nullptr,
                                                     level_t != 0, o);
    const report::Json r =
        j.tolerance ? report::Json{{"verdict", verdict_json(j.verdict)},
                                   {"text", judge::level_t_text(*j.tolerance)},
                                   {"level_t", judge::level_t_json({*j.tolerance}, o)}}
                    : report::Json{{"verdict", verdict_json(j.verdict)},
                                   {"text", judge::report_text(j.verdict, judge::kMaxListed)},
                                   {"level_t", nullptr}};
    *json = capi::c_string(report::json_line(r));
  });
}

}  // extern "C"
