// One launch buffer of a golden case on the device, and what the launch left in it. Every buffer
// is [kGuardBytes guard][data][kGuardBytes guard]. For a case with a pool of production size
// (io/sparse_pool.h) the K and V pools are allocated whole (gigabytes): every byte set to the
// background, the stored blocks uploaded at their physical offsets; slot_mapping and
// block_tables are uploaded in physical ids. Reading back gives the compact buffers the judge
// compares (the stored blocks, between the whole pool's own guard bands) plus the sampled
// unstored blocks as "<pool>_samples".
#pragma once
#include <cstdint>
#include <string>

#include "gpu/driver.h"
#include "judge/backend.h"
#include "judge/launch_buffers.h"

namespace tqref::gpu {

// Device bytes the case's buffers take (whole pools for a sparse case, guards included).
uint64_t device_bytes(const golden::GoldenCase& c);

// Allocates and fills the device buffer of `b` (one of judge::launch_buffers(c)).
DeviceBuffer upload_buffer(const golden::GoldenCase& c, const judge::LaunchBuffer& b);

// Reads back buffer `b` after the launch into r.buffers (outputs) or r.inputs, as the judge
// expects them (compare.h), with the samples of a sparse pool next to it.
void download_buffer(const golden::GoldenCase& c, const judge::LaunchBuffer& b, const DeviceBuffer& dev,
                     judge::CaseResult& r);

}  // namespace tqref::gpu
