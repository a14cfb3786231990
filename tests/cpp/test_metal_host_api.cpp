// The host API for C++ extensions (alloy/metal.h) on the CPU: an encoder
// binding by index runs a .metal kernel; what a dispatch lacks is a clear
// error naming the kernel and the parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "alloy/alloy.h"

using namespace alloy;

namespace {

std::string write_library() {
  auto path = std::filesystem::temp_directory_path() / ("alloy_host_api_" + std::to_string(::getpid()) + ".metal");
  std::ofstream(path) << R"(
#include <metal_stdlib>
using namespace metal;
kernel void axpy(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  y[i] = a * x[i] + 1.0f;
}
)";
  return path.string();
}

TEST(MetalHostApi, EncoderRunsAKernelOnTheCpuAndNamesWhatIsMissing) {
  const std::string lib = write_library();
  auto& d = metal::device(Device(Device::cpu));
  metal::Kernel* k = d.get_kernel("axpy", lib);
  std::mt19937 gen(std::random_device{}());
  std::normal_distribution<float> normal;
  std::vector<float> x(1000), y(1000, NAN);
  for (float& v : x) v = normal(gen);
  const float a = normal(gen);
  Buffer bx{x.data(), x.size() * 4, Device(Device::cpu)}, by{y.data(), y.size() * 4, Device(Device::cpu)};

  auto& enc = d.get_command_encoder(0);
  EXPECT_THROW(
      {
        try {
          enc.set_compute_pipeline_state(k);
          enc.set_buffer(bx, 0, 0);
          enc.set_bytes(a, 2);
          enc.dispatch_threads(MTL::Size(1000, 1, 1), MTL::Size(256, 1, 1));  // y not bound yet
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("kernel 'axpy': nothing is bound at [[buffer(1)]] for parameter 'y'"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      std::invalid_argument);
  enc.set_buffer(by, 0, 1);
  enc.dispatch_threads(MTL::Size(1000, 1, 1), MTL::Size(256, 1, 1));
  // Against float64 (the kernel may fuse the multiply-add).
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], double(a) * x[i] + 1.0, 1e-6 * (1 + std::abs(a * x[i]))) << i;

  // An offset off the element type's boundary is Metal's error too.
  EXPECT_THROW(
      {
        try {
          enc.set_buffer(bx, 2, 0);
          enc.dispatch_threads(MTL::Size(999, 1, 1), MTL::Size(256, 1, 1));
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("kernel 'axpy': the buffer bound for parameter 'x' (float) starts 2 "
                                               "bytes past a 4-byte boundary"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      std::invalid_argument);
  enc.set_buffer(bx, 4, 0);  // one element in: aligned
  enc.dispatch_threads(MTL::Size(999, 1, 1), MTL::Size(256, 1, 1));
  for (size_t i = 0; i + 1 < x.size(); ++i)
    EXPECT_NEAR(y[i], double(a) * x[i + 1] + 1.0, 1e-6 * (1 + std::abs(a * x[i + 1]))) << i;

  EXPECT_THROW(d.get_kernel("nope", lib), std::invalid_argument);
  EXPECT_THROW(d.get_kernel("axpy", std::string("/nonexistent/x.metal")), std::invalid_argument);
  EXPECT_THROW(enc.set_bytes(std::vector<char>(5000).data(), 5000, 3), std::invalid_argument);
  std::remove(lib.c_str());
}

TEST(MetalHostApi, AllocatorWithoutADeviceAnswersForTheDefaultOutsideEval) {
  EXPECT_EQ(&allocator(), &allocator(default_device()));
}

}  // namespace
