// harness/gpu/driver.h on whatever machine runs it: without a driver or device it checks the clear
// "no CUDA driver / 0 devices" report and skips the rest with a line saying so; with a device it
// exercises memory, module loading, kernel lookup, launch and timing, and runs the EX2 probe
// against the committed profile of the device's architecture.
#define BOOST_TEST_MODULE test_gpu_driver
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "gpu/driver.h"
#include "io/ex2_profile_io.h"
#include "tqref/builtin_kernels.h"
#include "tqref/numeric.h"

namespace utf = boost::unit_test;
using namespace tqref;

namespace {

struct HasDevice {
  boost::test_tools::assertion_result operator()(utf::test_unit_id) {
    std::string why;
    const gpu::Driver* d = gpu::Driver::get(&why);
    const bool ok = d && d->device_count() > 0;
    boost::test_tools::assertion_result r(ok);
    r.message() << (d ? "CUDA driver loaded, 0 devices" : why) << ": skipping device tests";
    return r;
  }
};

}  // namespace

// The driver version for every report's device line, from both formats of
// /proc/driver/nvidia/version. Catches the open kernel module's line being read as "for" (seen on
// the H200, driver 580.159.04) and a date or build tag taken for the version. Needs no device.
BOOST_AUTO_TEST_CASE(kernel_module_version_parsed_from_both_formats) {
  using gpu::Driver;
  BOOST_TEST(Driver::parse_kernel_module_version(
                 "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC "
                 "2024") == "550.54.15");
  BOOST_TEST(Driver::parse_kernel_module_version(
                 "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release "
                 "Build  (dvs-builder@U22-I3-AF03-09-1)  Thu Dec  4 01:30:27 UTC 2025") ==
             "580.159.04");
  BOOST_TEST(Driver::parse_kernel_module_version(
                 "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release "
                 "Build") == "580.95.05");
  BOOST_TEST(Driver::parse_kernel_module_version("no version here") == "");
  BOOST_TEST(Driver::parse_kernel_module_version("NVIDIA UNIX Kernel Module for x86_64") == "");
}

// Without a device, require() must fail with a message that says why (not crash, not hang);
// with one, the properties must be plausible. Catches a wrong dlsym name or an unchecked cuInit.
BOOST_AUTO_TEST_CASE(driver_reports_clearly) {
  std::string why;
  const gpu::Driver* d = gpu::Driver::get(&why);
  if (!d) {
    BOOST_TEST_MESSAGE("no driver: " << why);
    BOOST_CHECK(why.rfind("no CUDA driver", 0) == 0 || why.rfind("CUDA driver", 0) == 0);
    BOOST_CHECK_THROW(gpu::Driver::require(), gpu::Error);
    return;
  }
  BOOST_TEST_MESSAGE("CUDA " << d->api_version_string() << ", " << d->device_count() << " devices");
  for (int i = 0; i < d->device_count(); ++i) {
    const gpu::DeviceInfo info = d->device(i);
    BOOST_TEST_MESSAGE("device " << i << ": " << info.name << " " << info.arch() << " " << info.sm_count << " SMs");
    BOOST_CHECK(!info.name.empty());
    BOOST_CHECK_GE(info.cc_major, 7);
    BOOST_CHECK_GT(info.sm_count, 0);
  }
  BOOST_CHECK_THROW(d->device(d->device_count()), gpu::Error);
}

// Fill, upload at an offset, download; out-of-range transfers refused before reaching the driver.
BOOST_AUTO_TEST_CASE(buffers_round_trip, *utf::precondition(HasDevice())) {
  gpu::Context ctx(0);
  gpu::DeviceBuffer b(4096);
  b.fill(0xA5, 4096);
  std::vector<uint8_t> src(100), back(4096);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7 + 1);
  b.upload(src.data(), src.size(), 1000);
  b.download(back.data(), back.size());
  for (size_t i = 0; i < back.size(); ++i) {
    const uint8_t want = (i >= 1000 && i < 1100) ? src[i - 1000] : 0xA5;
    if (back[i] != want) BOOST_FAIL("byte " << i << " is " << int(back[i]) << ", expected " << int(want));
  }
  BOOST_CHECK_THROW(b.download(back.data(), 16, 4090), gpu::Error);
}

// Lookup of a kernel the module lacks names the module and the kernel; bad PTX fails in
// cuModuleLoadDataEx with the call named.
BOOST_AUTO_TEST_CASE(module_errors_name_things, *utf::precondition(HasDevice())) {
  gpu::Context ctx(0);
  gpu::Module m = gpu::Module::from_image(kernels::builtin_fatbin("ex2_probe"), "builtin ex2_probe");
  try {
    m.function("no_such_kernel");
    BOOST_FAIL("lookup of a missing kernel succeeded");
  } catch (const gpu::Error& e) {
    const std::string s = e.what();
    BOOST_CHECK(s.find("no_such_kernel") != std::string::npos);
    BOOST_CHECK(s.find("builtin ex2_probe") != std::string::npos);
  }
  const std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\nthis is not ptx\n";
  std::vector<unsigned char> img(ptx.begin(), ptx.end());
  img.push_back(0);
  try {
    gpu::Module::from_image(img, "broken.ptx");
    BOOST_FAIL("broken PTX loaded");
  } catch (const gpu::Error& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_CHECK(std::string(e.what()).find("cuModuleLoadDataEx(broken.ptx") != std::string::npos);
  }
}

// The probe over 2^22 inputs around -1 .. -2 and near -126, timed with events, equals the model of
// this architecture's committed profile (skipped with a line when none exists for it).
BOOST_AUTO_TEST_CASE(probe_matches_profile, *utf::precondition(HasDevice())) {
  gpu::Context ctx(0);
  const std::string arch = ctx.device().arch();
  Ex2Profile p;
  try {
    p = load_ex2_profile_for_arch(arch);
  } catch (const Ex2ProfileError& e) {
    BOOST_TEST_MESSAGE("no EX2 profile for " << arch << ": " << e.what());
    return;
  }
  gpu::Module m = gpu::Module::from_image(kernels::builtin_fatbin("ex2_probe"), "builtin ex2_probe");
  gpu::Function f = m.function("tqref_ex2_probe");
  const uint32_t n = 1u << 22;
  gpu::DeviceBuffer out(size_t(n) * 4);
  std::vector<uint32_t> h(n);
  gpu::Event start, stop;
  for (uint32_t first : {0xBF600000u, 0xC2F80000u, 0x80000000u}) {
    out.fill(0xFF, size_t(n) * 4);
    uint32_t count = n;
    uint64_t ptr = out.ptr();
    void* params[] = {&first, &count, &ptr};
    start.record();
    f.launch({n / 256, 1, 1}, {256, 1, 1}, params);
    stop.record();
    stop.synchronize();
    BOOST_CHECK_GE(stop.elapsed_ms_since(start), 0.0f);
    ctx.synchronize();
    out.download(h.data(), size_t(n) * 4);
    uint64_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t want = f32_bits(p.ex2(f32_from_bits(first + i)));
      if (h[i] != want && ++bad <= 4)
        BOOST_ERROR("EX2(0x" << std::hex << first + i << ") hardware 0x" << h[i] << " model 0x" << want);
    }
    BOOST_CHECK_EQUAL(bad, 0u);
  }
}
