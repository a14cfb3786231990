// The seed's exp kernel from C++: the same MSL body, run on the default device.
#include <alloy/alloy.h>

#include <cmath>
#include <cstdio>

int main() {
  using namespace alloy;
  const char* source = R"(
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
  )";
  auto kernel = fast::metal_kernel("myexp", {"inp"}, {"out"}, source);
  std::vector<float> values(64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = -2.0f + 4.0f * i / values.size();
  array a(values, {4, 16});

  fast::KernelCall call;
  call.inputs = {a};
  call.output_shapes = {a.shape()};
  call.output_dtypes = {a.dtype()};
  call.grid = {static_cast<int>(a.size()), 1, 1};
  call.threadgroup = {256, 1, 1};
  call.template_args = {{"T", a.dtype()}};
  array b = kernel(call)[0];
  eval(b);

  double worst = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    worst = std::fmax(worst, std::fabs(to_host(b).data<float>()[i] - std::exp(double(values[i]))) / std::exp(double(values[i])));
  }
  std::printf("metal_kernel exp on %s: max relative error %.2e\n", to_string(default_device()).c_str(), worst);
  return worst < 1e-5 ? 0 : 1;
}
