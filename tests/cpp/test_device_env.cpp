// Runs the core tests on the device ALLOY_TEST_DEVICE names (cpu by default,
// as the Python suite does): scripts/gpu_check.sh sets gpu. Tests read
// results through alloy::to_host, which works for either device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "alloy/alloy.h"

namespace {

class TestDevice : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* d = std::getenv("ALLOY_TEST_DEVICE");
    bool gpu = d && std::string(d) == "gpu";
    alloy::set_default_device(alloy::Device(gpu ? alloy::Device::gpu : alloy::Device::cpu));
  }
};

const auto* const registered = ::testing::AddGlobalTestEnvironment(new TestDevice);

}  // namespace
