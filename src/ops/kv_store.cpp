#include "ops/kv_store.h"

#include "device/stream.h"
#include "ops/attention_args.h"
#include "ops/cpu/attention_cpu.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/attention_cuda.h"
#endif

namespace grt::ops {

void store_kv(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc, const Tensor& k_cache,
              const Tensor& v_cache) {
  GRT_CHECK(k.defined() && v.defined() && out_cache_loc.defined() && k_cache.defined() && v_cache.defined(),
            "store_kv: undefined tensor argument");
  GRT_CHECK(k.rank() == 2 && v.rank() == 2 && k.shape() == v.shape(), "store_kv: k {} and v {} must be equal [T, width]",
            k.str(), v.str());
  GRT_CHECK(k.stride(1) == 1 && v.stride(1) == 1, "store_kv: k {} / v {} need a contiguous last dim", k.str(),
            v.str());
  GRT_CHECK(k_cache.rank() == 2 && k_cache.is_contiguous() && v_cache.is_contiguous() &&
                k_cache.shape() == v_cache.shape(),
            "store_kv: caches k {} and v {} must be equal contiguous [num_slots, width]", k_cache.str(), v_cache.str());
  GRT_CHECK(k_cache.size(1) == k.size(1), "store_kv: k {} width differs from cache {}", k.str(), k_cache.str());
  GRT_CHECK(k.dtype() == k_cache.dtype() && v.dtype() == k_cache.dtype() && v_cache.dtype() == k_cache.dtype(),
            "store_kv: dtypes differ: k {}, v {}, caches {} / {}", k.str(), v.str(), k_cache.str(), v_cache.str());
  GRT_CHECK(out_cache_loc.dtype() == DType::I32 && out_cache_loc.rank() == 1 && out_cache_loc.is_contiguous() &&
                out_cache_loc.size(0) == k.size(0),
            "store_kv: out_cache_loc {} must be contiguous i32 [{}]", out_cache_loc.str(), k.size(0));
  Device d = k.device();
  GRT_CHECK(v.device() == d && out_cache_loc.device() == d && k_cache.device() == d && v_cache.device() == d,
            "store_kv: tensors on different devices: k {}, v {}, loc {}, caches {} / {}", k.str(), v.str(),
            out_cache_loc.str(), k_cache.str(), v_cache.str());
  if (k.size(0) == 0) return;
  StoreKvArgs a{k.data(),       v.data(),       k.stride(0),     v.stride(0),      out_cache_loc.data_as<int32_t>(),
                k_cache.data(), v_cache.data(), k.size(0),       k.size(1),        k_cache.size(0),
                k.dtype()};
  Stream& s = current_stream(d);
  if (d.is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::store_kv(s, a);
    return;
#else
    GRT_FAIL("store_kv on {}: built without CUDA", k.str());
#endif
  }
  cpu::store_kv(s, a);
}

}  // namespace grt::ops
