// The guide's metal-cpp host code (seed 001, "Dispatching from C++"), run on
// Linux against Alloy: launch_vector_add below is the page's function as
// written, with its include line changed (the page's is cut off; metal-cpp's
// is <Metal/Metal.hpp>). It loads the app's default library, which here is
// default.metal beside the executable (CMake copies vector_add.metal there).
//
// As written, launch_vector_add never reads out_buf back: its result is
// discarded, and out_host is left as it was (newBuffer(ptr, ...) copies the
// host data in; nothing copies it out). It also dispatches whole
// threadgroups of 256, reading and writing past the buffers when n is not a
// multiple of 256. main() runs it as written (n a multiple of 256), then
// runs launch_vector_add_read, the same code with the smallest fix (one
// memcpy from out_buf->contents()), and checks that result against the host.
// Objective-C++ or C++ with Metal framework headers
#include <alloy/metal_cpp/Metal.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

void launch_vector_add(
    MTL::Device* device,
    float* a_host, float* b_host, float* out_host,
    size_t n
) {
    // 1. Create Metal buffers (zero-copy on Apple Silicon!)
    auto* a_buf   = device->newBuffer(a_host, n * sizeof(float),
                         MTL::ResourceStorageModeShared);
    auto* b_buf   = device->newBuffer(b_host, n * sizeof(float),
                         MTL::ResourceStorageModeShared);
    auto* out_buf = device->newBuffer(n * sizeof(float),
                         MTL::ResourceStorageModeShared);

    // 2. Load compiled .metallib and get the function
    auto* library = device->newDefaultLibrary();
    auto* fn      = library->newFunction(
                         NS::String::string("vector_add",
                         NS::UTF8StringEncoding));

    // 3. Build pipeline state (cached; do this once at startup)
    NS::Error* err = nullptr;
    auto* pso = device->newComputePipelineState(fn, &err);

    // 4. Create command buffer and encoder
    auto* queue   = device->newCommandQueue();
    auto* cmdbuf  = queue->commandBuffer();
    auto* encoder = cmdbuf->computeCommandEncoder();

    // 5. Bind resources and dispatch
    encoder->setComputePipelineState(pso);
    encoder->setBuffer(a_buf,   0, 0);
    encoder->setBuffer(b_buf,   0, 1);
    encoder->setBuffer(out_buf, 0, 2);

    MTL::Size threads_per_tg = MTL::Size(256, 1, 1);
    MTL::Size num_tgs = MTL::Size((n + 255) / 256, 1, 1);
    encoder->dispatchThreadgroups(num_tgs, threads_per_tg);

    encoder->endEncoding();
    cmdbuf->commit();
    cmdbuf->waitUntilCompleted();  // or use completion handlers
}


// The same, with the result read back (the smallest fix).
void launch_vector_add_read(MTL::Device* device, float* a_host, float* b_host, float* out_host, size_t n) {
    auto* a_buf   = device->newBuffer(a_host, n * sizeof(float), MTL::ResourceStorageModeShared);
    auto* b_buf   = device->newBuffer(b_host, n * sizeof(float), MTL::ResourceStorageModeShared);
    auto* out_buf = device->newBuffer(n * sizeof(float), MTL::ResourceStorageModeShared);
    auto* library = device->newDefaultLibrary();
    auto* fn      = library->newFunction(NS::String::string("vector_add", NS::UTF8StringEncoding));
    NS::Error* err = nullptr;
    auto* pso = device->newComputePipelineState(fn, &err);
    auto* queue   = device->newCommandQueue();
    auto* cmdbuf  = queue->commandBuffer();
    auto* encoder = cmdbuf->computeCommandEncoder();
    encoder->setComputePipelineState(pso);
    encoder->setBuffer(a_buf,   0, 0);
    encoder->setBuffer(b_buf,   0, 1);
    encoder->setBuffer(out_buf, 0, 2);
    encoder->dispatchThreadgroups(MTL::Size((n + 255) / 256, 1, 1), MTL::Size(256, 1, 1));
    encoder->endEncoding();
    cmdbuf->commit();
    cmdbuf->waitUntilCompleted();
    std::memcpy(out_host, out_buf->contents(), n * sizeof(float));  // the fix
    for (NS::Object* o : std::initializer_list<NS::Object*>{a_buf, b_buf, out_buf, library, fn, pso, queue}) o->release();
}

// setBytes and threadgroup memory too: a block sum with a launch-sized scratch.
static const char* kBlockSum = R"(
#include <metal_stdlib>
using namespace metal;
kernel void block_sum(device const float* x [[buffer(0)]], device float* sums [[buffer(1)]],
                      constant uint& n [[buffer(2)]], threadgroup float* scratch [[threadgroup(0)]],
                      uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                      uint tg [[threadgroup_position_in_grid]], uint size [[threads_per_threadgroup]]) {
  scratch[lid] = gid < n ? x[gid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) {
    float s = 0.0f;
    for (uint k = 0; k < size; ++k) s += scratch[k];
    sums[tg] = s;
  }
}
)";

int main() {
    MTL::Device* device = MTL::CreateSystemDefaultDevice();
    std::printf("device: %s\n", device->name()->utf8String());
    const size_t n = 1 << 20;
    std::random_device rd;
    const unsigned seed = rd();
    std::printf("seed: %u\n", seed);
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal;
    std::vector<float> a(n), b(n), out(n, NAN), poison(n, NAN);
    for (size_t i = 0; i < n; ++i) a[i] = normal(gen), b[i] = normal(gen);

    launch_vector_add(device, a.data(), b.data(), out.data(), n);
    // As written, nothing comes back: out keeps its poison.
    if (std::memcmp(out.data(), poison.data(), n * sizeof(float)) != 0) {
        std::printf("launch_vector_add (as written) changed out_host\n");
        return 1;
    }
    launch_vector_add_read(device, a.data(), b.data(), out.data(), n);
    double worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::fmax(worst, std::fabs(double(out[i]) - (double(a[i]) + double(b[i]))));
    std::printf("vector_add (read back): max |error| %.3g\n", worst);
    if (!(worst <= 1e-6)) return 1;

    NS::Error* err = nullptr;
    MTL::Library* lib = device->newLibrary(NS::String::string(kBlockSum, NS::UTF8StringEncoding), nullptr, &err);
    if (!lib) {
        std::printf("newLibrary failed: %s\n", err->localizedDescription()->utf8String());
        return 1;
    }
    MTL::Function* fn = lib->newFunction(NS::String::string("block_sum", NS::UTF8StringEncoding));
    MTL::ComputePipelineState* pso = device->newComputePipelineState(fn, &err);
    const unsigned m = 100003, tg = 256, groups = (m + tg - 1) / tg;
    MTL::Buffer* x = device->newBuffer(a.data(), m * sizeof(float), MTL::ResourceStorageModeShared);
    MTL::Buffer* sums = device->newBuffer(groups * sizeof(float), MTL::ResourceStorageModeShared);
    MTL::CommandQueue* queue = device->newCommandQueue();
    MTL::CommandBuffer* cb = queue->commandBuffer();
    MTL::ComputeCommandEncoder* enc = cb->computeCommandEncoder();
    enc->setComputePipelineState(pso);
    enc->setBuffer(x, 0, 0);
    enc->setBuffer(sums, 0, 1);
    enc->setBytes(&m, sizeof(m), 2);
    enc->setThreadgroupMemoryLength(tg * sizeof(float), 0);
    enc->dispatchThreads(MTL::Size(m, 1, 1), MTL::Size(tg, 1, 1));
    enc->endEncoding();
    cb->commit();
    cb->waitUntilCompleted();
    const float* got = static_cast<const float*>(sums->contents());
    double worst_sum = 0;
    for (unsigned g = 0; g < groups; ++g) {
        double ref = 0;
        for (unsigned i = g * tg; i < std::min<unsigned>(m, (g + 1) * tg); ++i) ref += a[i];
        worst_sum = std::fmax(worst_sum, std::fabs(got[g] - ref));
    }
    std::printf("block_sum (setBytes, threadgroup memory): max |error| %.3g\n", worst_sum);
    MTL::Library* bad = device->newLibrary(NS::String::string("kernel void f(device half8* o [[buffer(0)]]) {}",
                                                              NS::UTF8StringEncoding), nullptr, &err);
    if (bad || !err || !std::strstr(err->localizedDescription()->utf8String(), "half8")) {
        std::printf("a library Metal refuses was not reported through NS::Error\n");
        return 1;
    }
    std::printf("refused library: reported through NS::Error\n");
    for (NS::Object* o : std::initializer_list<NS::Object*>{x, sums, queue, pso, fn, lib, device}) o->release();
    return worst_sum <= 1e-3 ? 0 : 1;
}
