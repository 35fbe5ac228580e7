#include "gpu/availability.h"

#include "gpu/driver.h"

namespace tqref::gpu {

std::string unavailable_reason() {
  std::string why;
  const Driver* d = Driver::get(&why);
  if (!d) return why + "; 0 devices";
  if (d->device_count() == 0)
    return "CUDA driver " + d->api_version_string() + " loaded, but it reports 0 devices";
  return "";
}

}  // namespace tqref::gpu
