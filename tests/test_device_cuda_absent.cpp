// On a machine without a GPU (CI), CUDA devices are absent cleanly: zero devices, the CPU as
// default, and clear errors when a CUDA device is requested anyway. Skipped where a GPU is usable.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "device/device.h"
#include "device/event.h"
#include "device/stream.h"
#include "device/vmm.h"
#ifdef GRAPHRT_WITH_CUDA
#include <dlfcn.h>

#include "device/cuda/driver_api.h"
#endif

namespace grt {
namespace {

std::string error_of(void (*f)()) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class CudaAbsent : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_available()) GTEST_SKIP() << "a CUDA device is usable here";
  }
};

TEST_F(CudaAbsent, NoDevicesAndTheCpuIsTheDefault) {
  EXPECT_EQ(device_count(DeviceType::CUDA), 0);
  EXPECT_EQ(device_count(DeviceType::CUDA), 0);  // asked twice: still no error, still 0
  EXPECT_FALSE(cuda_available());
  EXPECT_EQ(default_device(), Device::cpu());
  EXPECT_NO_THROW(check_device(Device::cpu()));
}

TEST_F(CudaAbsent, RequestingCuda0IsAClearError) {
  std::string msg = error_of([] { check_device(Device::cuda(0)); });
  ASSERT_FALSE(msg.empty()) << "check_device(cuda:0) did not throw";
#ifdef GRAPHRT_WITH_CUDA
  EXPECT_NE(msg.find("no usable CUDA device"), std::string::npos) << msg;
#else
  EXPECT_NE(msg.find("built without CUDA"), std::string::npos) << msg;
#endif
  EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
}

TEST_F(CudaAbsent, RequestingCuda7IsAClearError) {
  std::string msg = error_of([] { check_device(Device::cuda(7)); });
  ASSERT_FALSE(msg.empty()) << "check_device(cuda:7) did not throw";
  EXPECT_NE(msg.find("cuda:7"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("no usable CUDA device") != std::string::npos ||
              msg.find("built without CUDA") != std::string::npos)
      << msg;
}

TEST_F(CudaAbsent, DeviceOperationsOnCudaFailCleanly) {
  for (auto f : {+[] { new_stream(Device::cuda(0)); }, +[] { new_event(Device::cuda(0)); },
                 +[] { (void)device_name(Device::cuda(0)); }, +[] { (void)vmm_granularity(Device::cuda(0)); },
                 +[] { (void)default_stream(Device::cuda(0)); }}) {
    std::string msg = error_of(f);
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << "no error naming cuda:0: \"" << msg << "\"";
  }
}

#ifdef GRAPHRT_WITH_CUDA
TEST_F(CudaAbsent, DriverApiIsUnavailableWithAClearError) {
  // A driver without a GPU would resolve fine; this checks the machine with no driver at all.
  if (void* lib = dlopen("libcuda.so.1", RTLD_LAZY)) {
    dlclose(lib);
    GTEST_SKIP() << "a CUDA driver library is installed here";
  }
  std::string msg = error_of([] { (void)cuda::driver_api(); });
  ASSERT_FALSE(msg.empty()) << "the driver API resolved on a machine without a usable GPU";
  EXPECT_NE(msg.find("CUDA driver API is unavailable"), std::string::npos) << msg;
  // Resolution is attempted once; asking again gives the same answer.
  EXPECT_EQ(error_of([] { (void)cuda::driver_api(); }), msg);
}
#endif

}  // namespace
}  // namespace grt
