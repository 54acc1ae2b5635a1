// The CUDA side of a Stream, for op implementations that launch kernels.
#pragma once
#include <cuda_runtime_api.h>

namespace grt {
class Stream;
namespace cuda {

// The cudaStream_t behind `stream`; Error when it is not a CUDA stream.
cudaStream_t native_stream(Stream& stream);

}  // namespace cuda
}  // namespace grt
