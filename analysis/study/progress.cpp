#include <cstdarg>
#include <cstdio>

#include "analysis/study/study.h"

namespace tqref::study {

void progress(const StudyOptions& o, const char* fmt, ...) {
  if (!o.progress) return;
  std::fprintf(stderr, "[study] ");
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
}

}  // namespace tqref::study
