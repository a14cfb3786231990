// CPU evaluation of FFT with FFTW3 (single precision, guru64 interface): one
// plan covers every transformed axis and every batch index, and reads the
// input through its own strides (no copy for transposed or sliced inputs).
// Plans are made with FFTW_ESTIMATE, which neither measures nor touches the
// arrays, so planning on the real buffers is cheap and safe.
#include <fftw3.h>

#include <complex>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/elementwise_loops.h"
#include "primitives/fft.h"

namespace alloy {

namespace {

// FFTW's planner is not thread-safe (its execute functions are).
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

struct Dims {
  std::vector<fftwf_iodim64> transform;  // in the primitive's axis order
  std::vector<fftwf_iodim64> batch;      // every other axis
};

// `n` gives the logical (real-domain) length along each axis.
Dims dims_of(const Shape& n, const std::vector<int>& axes, const Strides& in_strides, const Strides& out_strides) {
  Dims d;
  std::vector<bool> is_axis(n.size(), false);
  for (int ax : axes) {
    is_axis[ax] = true;
    d.transform.push_back({static_cast<ptrdiff_t>(n[ax]), static_cast<ptrdiff_t>(in_strides[ax]),
                           static_cast<ptrdiff_t>(out_strides[ax])});
  }
  for (size_t i = 0; i < n.size(); ++i) {
    if (!is_axis[i]) {
      d.batch.push_back({static_cast<ptrdiff_t>(n[i]), static_cast<ptrdiff_t>(in_strides[i]),
                         static_cast<ptrdiff_t>(out_strides[i])});
    }
  }
  return d;
}

bool positive_strides(const array& a) {
  for (auto s : a.strides()) {
    if (s <= 0) return false;
  }
  return true;
}

void run(fftwf_plan plan) {
  if (!plan) throw std::runtime_error("[fft] FFTW could not plan this transform.");
  fftwf_execute(plan);
  std::lock_guard<std::mutex> lock(planner_mutex());
  fftwf_destroy_plan(plan);
}

}  // namespace

void FFT::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  // Strides FFTW walks must be positive and distinct for distinct elements;
  // broadcast (0) or reversed views are copied first.
  array in = positive_strides(inputs[0]) ? inputs[0] : cpu::row_contiguous_copy(inputs[0]);
  const int rank = static_cast<int>(axes_.size());
  fftwf_plan plan = nullptr;
  if (!real_) {
    Dims d = dims_of(out.shape(), axes_, in.strides(), out.strides());
    auto* src = reinterpret_cast<fftwf_complex*>(in.data<std::complex<float>>());
    auto* dst = reinterpret_cast<fftwf_complex*>(out.data<std::complex<float>>());
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan = fftwf_plan_guru64_dft(rank, d.transform.data(), static_cast<int>(d.batch.size()), d.batch.data(), src,
                                 dst, inverse_ ? FFTW_BACKWARD : FFTW_FORWARD, FFTW_ESTIMATE);
  } else if (!inverse_) {
    Dims d = dims_of(in.shape(), axes_, in.strides(), out.strides());
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan = fftwf_plan_guru64_dft_r2c(rank, d.transform.data(), static_cast<int>(d.batch.size()), d.batch.data(),
                                     in.data<float>(), reinterpret_cast<fftwf_complex*>(out.data<std::complex<float>>()),
                                     FFTW_ESTIMATE);
  } else {
    // A multi-dimensional c2r overwrites its input: it gets a private copy.
    const size_t count = in.size();
    std::vector<std::complex<float>> scratch(count);
    array dense = cpu::row_contiguous_copy(in);
    std::memcpy(scratch.data(), dense.data<std::complex<float>>(), count * sizeof(std::complex<float>));
    Dims d = dims_of(out.shape(), axes_, row_major_strides(in.shape()), out.strides());
    {
      std::lock_guard<std::mutex> lock(planner_mutex());
      plan = fftwf_plan_guru64_dft_c2r(rank, d.transform.data(), static_cast<int>(d.batch.size()), d.batch.data(),
                                       reinterpret_cast<fftwf_complex*>(scratch.data()), out.data<float>(),
                                       FFTW_ESTIMATE);
    }
    run(plan);
    return;
  }
  run(plan);
}

}  // namespace alloy
