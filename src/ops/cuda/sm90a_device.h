// Whether the current CUDA device can run this build's sm_90a kernels (wgmma: the extend attention
// kernels of attention_extend_wgmma.cu / attention_extend_ws.cu, the prefill gate_up + SwiGLU GEMM).
#pragma once

namespace grt::cuda {

// An sm_90 GPU, and sm_90a code built for it (CMAKE_CUDA_ARCHITECTURES with 90a; plain sm_90 code
// of those kernels would only trap). Read once per device.
bool sm90a_device();

}  // namespace grt::cuda
