// Shared machinery of the C interface: every extern "C" function body runs inside c_call(),
// which turns C++ exceptions into a status code and a message for tqref_last_error(), so no
// exception crosses the C ABI. The handle structs live here so each file can see them.
#pragma once
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/case_io.h"
#include "judge/launch_buffers.h"
#include "io/hdf5_util.h"
#include "tqref/decode.h"
#include "tqref/ex2.h"
#include "tqref/writer.h"
#include "tqref_c.h"

struct tqref_ex2 {
  tqref::Ex2Profile profile;
};

struct tqref_file {
  std::string path;
  tqref::h5::Node root;
  tqref::golden::Provenance prov;
  std::vector<std::string> case_names;
};

// A dataset of a case as the Python layer sees it: name in the file, element type, shape and
// the bytes (owned by the case).
struct CaseArray {
  std::string name;
  int dtype = 0;
  std::vector<uint64_t> shape;
  const void* data = nullptr;
  std::string encoding;
};

struct tqref_case {
  tqref::golden::GoldenCase c;
  std::vector<CaseArray> arrays;                       // views into c
  std::vector<tqref::judge::LaunchBuffer> launch;      // the launch's buffers, initial bytes
  std::string attrs_json;
};

struct tqref_decode_diag {
  tqref::DecodeDiagnostics d;
  uint32_t head_dim = 0;
};

namespace tqref::capi {

// Thrown for a bad argument detected in this layer (maps to TQREF_BAD_ARGUMENT).
struct BadArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

void set_error(const std::string& msg);
const std::string& last_error();  // this thread's
int status_of_current_exception();

// libhdf5 is not thread-safe: every call that reads or writes a file holds this lock.
std::mutex& hdf5_lock();

// Runs f, returning TQREF_OK, or the status of the exception it threw (message stored).
template <class F>
int c_call(F&& f) noexcept {
  try {
    f();
    return TQREF_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

// A malloc'ed copy of s for a char** result (released by tqref_string_free).
char* c_string(const std::string& s);
// Checks that a pointer argument is present.
void require(const void* p, const char* name);
// The format for an int code; throws BadArgument naming `format` and the allowed values.
Format format_of(int code);
// A span over a caller's buffer of n elements; NULL is allowed for an empty one only.
template <class T>
std::span<T> span_of(T* p, uint64_t n, const char* name) {
  if (n > 0) require(p, name);
  return {p, static_cast<size_t>(n)};
}
// The model's parameter structs from the C ones (a NULL pointer is a BadArgument).
WriterParams writer_params(const tqref_writer_params* c);
DecodeParams decode_params(const tqref_decode_params* c);
// "%.9g": every binary32 distinct.
std::string float_str(float v);
// Builds the array views, launch buffers and attribute JSON of a case: `attrs` as read from its
// file (every attribute there, also those a trace case adds), or, when absent, the case's own.
void index_case(tqref_case& h, const std::vector<golden::CaseAttr>* attrs = nullptr);

}  // namespace tqref::capi
