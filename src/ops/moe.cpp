#include "ops/moe.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/env_switch.h"
#include "memory/tensor_alloc.h"
#include "ops/cpu/moe_cpu.h"
#include "ops/linear.h"
#include "ops/moe_args.h"
#include "ops/op_checks.h"
#include "ops/rms_norm.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/moe_cuda.h"
#include "ops/cuda/moe_one_token.h"
#endif

namespace grt::ops {
namespace {

// Runs the CPU or CUDA implementation of `op` on t's device.
template <class Args>
void dispatch(const char* op, const Tensor& t, const Args& args, void (*cpu_fn)(Device, const Args&),
              void (*cuda_fn)(Device, const Args&)) {
  if (t.device().is_cuda()) {
    if (!cuda_fn) fail_no_cuda(op, t);
    cuda_fn(t.device(), args);
  } else {
    cpu_fn(t.device(), args);
  }
}

#ifdef GRAPHRT_WITH_CUDA
#define GRT_MOE_CUDA(fn) &::grt::cuda::fn
#else
#define GRT_MOE_CUDA(fn) nullptr
#endif

void check_dtype_for_device(const char* op, const Tensor& t) {
  if (t.device().is_cpu()) check_cpu_f32(op, t);
  else GRT_CHECK(t.dtype() == DType::BF16, "{} on CUDA supports bf16 only, got {}", op, t.str());
}

// A non-negative count (slots or tokens) from environment variable `name`; nullopt when unset.
std::optional<int64_t> count_from_env(const char* name) {
  const char* s = std::getenv(name);
  if (!s || !*s) return std::nullopt;
  int64_t n = 0;
  const char* end = s + std::strlen(s);
  auto [p, ec] = std::from_chars(s, end, n);
  GRT_CHECK(ec == std::errc() && p == end && n >= 0,
            "{} must be a non-negative integer, got '{}'", name, s);
  return n;
}

// GRAPHRT_MOE_GEMV_MAX_SLOTS, read once; nullopt when unset.
std::optional<int64_t> gemv_max_slots_override() {
  static const std::optional<int64_t> v = count_from_env("GRAPHRT_MOE_GEMV_MAX_SLOTS");
  return v;
}

// Validates the arguments of moe_experts (and moe_experts_combine, under `op`).
void check_experts(const char* op, const Tensor& x, const MoeGroups& g, const Tensor& gate_up, const Tensor& down) {
  check_defined(op, x, "x");
  check_defined(op, gate_up, "gate_up");
  check_defined(op, down, "down");
  check_defined(op, g.sorted_slots, "groups");
  GRT_CHECK(x.rank() == 2 && x.is_contiguous(), "{}: x must be a contiguous [tokens, hidden], got {}", op, x.str());
  GRT_CHECK(gate_up.rank() == 3 && gate_up.is_contiguous() && gate_up.size(1) % 2 == 0,
            "{}: gate_up must be a contiguous [experts, 2 * inter, hidden], got {}", op, gate_up.str());
  const int64_t E = gate_up.size(0), I = gate_up.size(1) / 2, H = x.size(1);
  GRT_CHECK(gate_up.size(2) == H, "{}: gate_up {} does not match x {} (hidden {})", op, gate_up.str(), x.str(), H);
  GRT_CHECK(down.rank() == 3 && down.is_contiguous() && down.size(0) == E && down.size(1) == H && down.size(2) == I,
            "{}: down must be a contiguous [{}, {}, {}], got {}", op, E, H, I, down.str());
  GRT_CHECK(g.expert_counts.numel() == E, "{}: groups of {} experts for weights of {}", op, g.expert_counts.numel(),
            E);
  GRT_CHECK(g.slot_rows.numel() == x.size(0) * g.top_k, "{}: groups of {} slots for {} tokens x top-{}", op,
            g.slot_rows.numel(), x.size(0), g.top_k);
  GRT_CHECK(x.dtype() == gate_up.dtype() && x.dtype() == down.dtype(), "{}: x {}, gate_up {} and down {} differ in dtype",
            op, x.str(), gate_up.str(), down.str());
  check_same_device(op, x, gate_up);
  check_same_device(op, x, down);
  check_same_device(op, x, g.sorted_slots);
  check_dtype_for_device(op, x);
  if (x.device().is_cuda())
    GRT_CHECK(H % 8 == 0 && I % 8 == 0, "{} on CUDA needs hidden ({}) and expert intermediate ({}) sizes divisible by 8",
              op, H, I);
}

// The raw arguments of the expert MLPs over `g` (out: [max_rows, H] or null, act: scratch).
MoeExpertsArgs experts_args(const Tensor& x, const MoeGroups& g, const Tensor& gate_up, const Tensor& down,
                            const Tensor& act, void* out, MoeExpertsKernel kernel) {
  MoeExpertsArgs a{x.data(), g.sorted_slots.data_as<int32_t>(), g.block_expert.data_as<int32_t>(),
                   gate_up.data(), down.data(), act.data(), out, g.max_rows, kMoeBlockRows, g.top_k, x.size(1),
                   gate_up.size(1) / 2, x.dtype()};
  a.slots = g.slot_rows.numel();
  a.use_gemv = kernel == MoeExpertsKernel::kGemv ||
               (kernel == MoeExpertsKernel::kAuto && a.slots <= moe_gemv_max_slots(gate_up.size(0)));
  return a;
}

// The arguments of the fused experts + combine (out and residual unset).
MoeExpertsCombineArgs combine_args(const Tensor& x, const MoeGroups& g, const MoeRouting& routing,
                                   const Tensor& gate_up, const Tensor& down, const Tensor& act) {
  MoeExpertsCombineArgs a{experts_args(x, g, gate_up, down, act, nullptr, MoeExpertsKernel::kGemv),
                          routing.topk_ids.data_as<int32_t>(),
                          g.slot_rows.data_as<int32_t>(),
                          routing.topk_weights.data_as<float>(),
                          nullptr,
                          x.size(0)};
  a.num_experts = gate_up.size(0);
  a.one_token = moe_one_token_kernels_enabled();
  a.one_token_shared_carveout = moe_one_token_shared_carveout();
  return a;
}

}  // namespace

int64_t moe_gemv_max_slots(int64_t experts) {
  if (auto v = gemv_max_slots_override()) return *v;
  return 2 * experts;
}

MoeRouting moe_route(const Tensor& router_logits, int top_k, bool renormalize, const Tensor& num_real) {
  const char* op = "moe_route";
  check_defined(op, router_logits, "router_logits");
  GRT_CHECK(router_logits.rank() == 2 && router_logits.is_contiguous(),
            "{}: router_logits must be a contiguous [tokens, experts], got {}", op, router_logits.str());
  const int64_t T = router_logits.size(0), E = router_logits.size(1);
  GRT_CHECK(E >= 1 && E <= kMoeMaxExperts, "{}: {} experts, expected 1..{}", op, E, kMoeMaxExperts);
  GRT_CHECK(top_k >= 1 && top_k <= E, "{}: top_k {} must be in [1, {}] (the number of experts)", op, top_k, E);
  if (router_logits.device().is_cpu()) check_cpu_f32(op, router_logits);
  else
    GRT_CHECK(router_logits.dtype() == DType::BF16 || router_logits.dtype() == DType::F32,
              "{} on CUDA supports bf16 or f32 logits, got {}", op, router_logits.str());
  if (num_real.defined()) {
    check_vector(op, num_real, "num_real", DType::I32, 1);
    check_same_device(op, router_logits, num_real);
  }
  MoeRouting r;
  r.topk_ids = empty(Shape{T, top_k}, DType::I32, router_logits.device());
  r.topk_weights = empty(Shape{T, top_k}, DType::F32, router_logits.device());
  if (T == 0) return r;
  MoeRouteArgs a{router_logits.data(),
                 router_logits.dtype(),
                 num_real.defined() ? num_real.data_as<int32_t>() : nullptr,
                 r.topk_ids.data_as<int32_t>(),
                 r.topk_weights.data_as<float>(),
                 T,
                 E,
                 top_k,
                 renormalize};
  dispatch(op, router_logits, a, &::grt::cpu::moe_route, GRT_MOE_CUDA(moe_route));
  return r;
}

MoeGroups moe_group(const MoeRouting& routing, int num_experts) {
  const char* op = "moe_group";
  const Tensor& ids = routing.topk_ids;
  check_defined(op, ids, "topk_ids");
  GRT_CHECK(ids.rank() == 2 && ids.is_contiguous() && ids.dtype() == DType::I32,
            "{}: topk_ids must be a contiguous i32 [tokens, k], got {}", op, ids.str());
  GRT_CHECK(num_experts >= 1 && num_experts <= kMoeMaxExperts, "{}: {} experts, expected 1..{}", op, num_experts,
            kMoeMaxExperts);
  const int64_t slots = ids.numel(), E = num_experts, B = kMoeBlockRows;
  MoeGroups g;
  g.top_k = ids.size(1);
  g.max_rows = (slots + E * (B - 1) + B - 1) / B * B;
  const Device d = ids.device();
  g.expert_counts = empty(Shape{E}, DType::I32, d);
  g.sorted_slots = empty(Shape{g.max_rows}, DType::I32, d);
  g.block_expert = empty(Shape{g.max_rows / B}, DType::I32, d);
  g.slot_rows = empty(Shape{slots}, DType::I32, d);
  MoeGroupArgs a{ids.data_as<int32_t>(),          slots, E, g.max_rows, B, g.expert_counts.data_as<int32_t>(),
                 g.sorted_slots.data_as<int32_t>(), g.block_expert.data_as<int32_t>(), g.slot_rows.data_as<int32_t>()};
  dispatch(op, ids, a, &::grt::cpu::moe_group, GRT_MOE_CUDA(moe_group));
  return g;
}

Tensor moe_experts(const Tensor& x, const MoeGroups& g, const Tensor& gate_up, const Tensor& down,
                   MoeExpertsKernel kernel) {
  const char* op = "moe_experts";
  check_experts(op, x, g, gate_up, down);
  const int64_t I = gate_up.size(1) / 2, H = x.size(1);
  Tensor out = empty(Shape{g.max_rows, H}, x.dtype(), x.device());
  Tensor act = empty(Shape{g.max_rows, I}, x.dtype(), x.device());
  if (x.size(0) == 0) return out;
  MoeExpertsArgs a = experts_args(x, g, gate_up, down, act, out.data(), kernel);
  dispatch(op, x, a, &::grt::cpu::moe_experts, GRT_MOE_CUDA(moe_experts));
  return out;
}

Tensor moe_combine(const Tensor& expert_out, const MoeGroups& g, const MoeRouting& routing) {
  const char* op = "moe_combine";
  check_defined(op, expert_out, "expert_out");
  check_defined(op, routing.topk_weights, "topk_weights");
  GRT_CHECK(expert_out.rank() == 2 && expert_out.is_contiguous() && expert_out.size(0) == g.max_rows,
            "{}: expert_out must be a contiguous [{}, hidden], got {}", op, g.max_rows, expert_out.str());
  const Tensor& w = routing.topk_weights;
  GRT_CHECK(w.rank() == 2 && w.is_contiguous() && w.dtype() == DType::F32 && w.size(1) == g.top_k &&
                w.numel() == g.slot_rows.numel(),
            "{}: topk_weights must be a contiguous f32 [tokens, {}] matching the groups, got {}", op, g.top_k, w.str());
  check_same_device(op, expert_out, w);
  check_dtype_for_device(op, expert_out);
  const int64_t T = w.size(0), H = expert_out.size(1);
  Tensor out = empty(Shape{T, H}, expert_out.dtype(), expert_out.device());
  if (T == 0 || H == 0) return out;
  MoeCombineArgs a{expert_out.data(), g.slot_rows.data_as<int32_t>(), w.data_as<float>(), out.data(), T, g.top_k, H,
                   expert_out.dtype()};
  dispatch(op, expert_out, a, &::grt::cpu::moe_combine, GRT_MOE_CUDA(moe_combine));
  return out;
}

int64_t moe_fused_max_tokens() {
  static const std::optional<int64_t> v = count_from_env("GRAPHRT_MOE_FUSED_MAX_TOKENS");
  return v ? *v : 1;
}

namespace {

// GRAPHRT_MOE_FUSED as {router, experts}, read once.
std::pair<bool, bool> fused_from_env() {
  static const std::pair<bool, bool> v = [] {
    const int m = env_choice("GRAPHRT_MOE_FUSED", {"1", "0", "router", "experts"}, 0);
    return std::pair<bool, bool>{m == 0 || m == 2, m == 0 || m == 3};
  }();
  return v;
}

}  // namespace

bool moe_fused_router_enabled() { return fused_from_env().first; }
bool moe_fused_experts_enabled() { return fused_from_env().second; }

namespace {

// GRAPHRT_MOE_ONE_TOKEN as an index of {"1", "0", "shared-carveout"}, read once.
int one_token_from_env() {
  static const int v = env_choice("GRAPHRT_MOE_ONE_TOKEN", {"1", "0", "shared-carveout"}, 0);
  return v;
}

}  // namespace

bool moe_one_token_kernels_enabled() { return one_token_from_env() != 1; }
bool moe_one_token_shared_carveout() { return one_token_from_env() == 2; }

int moe_router_prefetch_mode() {
  static const int v = env_choice("GRAPHRT_MOE_ROUTER_PREFETCH", {"0", "1", "down-l2"}, 0);
  return v;
}

bool moe_router_norm_enabled() {
  static const int v = env_choice("GRAPHRT_MOE_ROUTER_NORM", {"1", "0"}, 0);
  return v == 0;
}

namespace {

// The RMSNorm of moe_norm_route_group, when the one-token router runs it.
struct RouterNorm {
  const Tensor* residual = nullptr;
  const Tensor* weight = nullptr;
  float eps = 0.0f;
};

// Whether `x` (fused router) and `n` describe a norm the router kernel takes (see ops/moe.h).
bool router_norm_fusable(const Tensor& residual, const Tensor& norm_weight, int top_k) {
  return moe_router_norm_enabled() && moe_one_token_kernels_enabled() && residual.device().is_cuda() &&
         residual.dtype() == DType::BF16 && residual.rank() == 2 && residual.is_contiguous() && residual.size(0) == 1 &&
         residual.size(1) % 8 == 0 && residual.size(1) / 8 <= kMoeRouterNormMaxChunks && top_k >= 1 && top_k <= 32 &&
         norm_weight.dtype() == DType::BF16 && norm_weight.rank() == 1 && norm_weight.is_contiguous() &&
         norm_weight.size(0) == residual.size(1) && reinterpret_cast<uintptr_t>(residual.data()) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(norm_weight.data()) % 16 == 0;
}

MoeRouted route_group(const Tensor& x, const Tensor& router_weight, int top_k, bool renormalize,
                      const Tensor& num_real, MoeFusedChoice choice, const RouterNorm* norm,
                      const MoeRouterPrefetch& prefetch);

}  // namespace

MoeRouted moe_route_group(const Tensor& x, const Tensor& router_weight, int top_k, bool renormalize,
                          const Tensor& num_real, MoeFusedChoice choice, const MoeRouterPrefetch& prefetch) {
  return route_group(x, router_weight, top_k, renormalize, num_real, choice, nullptr, prefetch);
}

MoeRouted moe_norm_route_group(const Tensor& residual, const Tensor& norm_weight, float eps,
                               const Tensor& router_weight, int top_k, bool renormalize, const Tensor& num_real,
                               MoeFusedChoice choice, const MoeRouterPrefetch& prefetch) {
  check_defined("moe_norm_route_group", residual, "residual");
  check_defined("moe_norm_route_group", norm_weight, "norm_weight");
  if (router_norm_fusable(residual, norm_weight, top_k) && choice != MoeFusedChoice::kSeparate) {
    check_same_device("moe_norm_route_group", residual, norm_weight);
    // x: the normalized row the kernel writes (route_group's checks and choice then apply to it).
    Tensor x = empty(residual.shape(), residual.dtype(), residual.device());
    RouterNorm n{&residual, &norm_weight, eps};
    MoeRouted r = route_group(x, router_weight, top_k, renormalize, num_real, choice, &n, prefetch);
    if (r.x.defined()) return r;  // the router normalized it
    // route_group took the separate ops (a shape its kernel does not take): x was never written.
  }
  Tensor x = rms_norm(residual, norm_weight, eps);
  MoeRouted r = route_group(x, router_weight, top_k, renormalize, num_real, choice, nullptr, prefetch);
  r.x = std::move(x);
  return r;
}

namespace {

MoeRouted route_group(const Tensor& x, const Tensor& router_weight, int top_k, bool renormalize,
                      const Tensor& num_real, MoeFusedChoice choice, const RouterNorm* norm,
                      const MoeRouterPrefetch& prefetch) {
  const char* op = "moe_route_group";
  check_defined(op, x, "x");
  check_defined(op, router_weight, "router_weight");
  GRT_CHECK(x.rank() == 2 && x.is_contiguous(), "{}: x must be a contiguous [tokens, hidden], got {}", op, x.str());
  GRT_CHECK(router_weight.rank() == 2 && router_weight.is_contiguous() && router_weight.size(1) == x.size(1) &&
                router_weight.dtype() == x.dtype(),
            "{}: router_weight must be a contiguous [experts, {}] of {}, got {}", op, x.size(1), dtype_name(x.dtype()),
            router_weight.str());
  check_same_device(op, x, router_weight);
  const int64_t T = x.size(0), E = router_weight.size(0), H = x.size(1);
  bool fused = choice != MoeFusedChoice::kSeparate &&
               (choice == MoeFusedChoice::kFused || T <= moe_fused_max_tokens()) && x.device().is_cuda() &&
               x.dtype() == DType::BF16 && T >= 1 && T <= kMoeFusedMaxTokens &&
               T * E <= kMoeFusedMaxLogits && H % 8 == 0 && E >= 1 && E <= kMoeMaxExperts &&
               reinterpret_cast<uintptr_t>(x.data()) % 16 == 0 && reinterpret_cast<uintptr_t>(router_weight.data()) % 16 == 0;
#ifdef GRAPHRT_WITH_CUDA
  fused = fused && ::grt::cuda::moe_route_group_supported(x.device());
#endif
  MoeRouted r;
  if (!fused || (norm && !moe_one_token_kernels_enabled())) {  // the separate ops (their checks apply)
    if (norm) return r;  // the caller normalizes first (r.x undefined: nothing was written)
    r.logits = linear(x, router_weight, Tensor(), x.dtype());
    r.routing = moe_route(r.logits, top_k, renormalize, num_real);
    r.groups = moe_group(r.routing, static_cast<int>(E));
    return r;
  }
#ifdef GRAPHRT_WITH_CUDA
  GRT_CHECK(top_k >= 1 && top_k <= E, "{}: top_k {} must be in [1, {}] (the number of experts)", op, top_k, E);
  if (num_real.defined()) {
    check_vector(op, num_real, "num_real", DType::I32, 1);
    check_same_device(op, x, num_real);
  }
  const Device d = x.device();
  r.logits = empty(Shape{T, E}, x.dtype(), d);
  r.routing.topk_ids = empty(Shape{T, top_k}, DType::I32, d);
  r.routing.topk_weights = empty(Shape{T, top_k}, DType::F32, d);
  MoeGroups& g = r.groups;
  const int64_t slots = T * top_k, B = kMoeBlockRows;
  g.top_k = top_k;
  g.max_rows = (slots + E * (B - 1) + B - 1) / B * B;
  g.expert_counts = empty(Shape{E}, DType::I32, d);
  g.sorted_slots = empty(Shape{g.max_rows}, DType::I32, d);
  g.block_expert = empty(Shape{g.max_rows / B}, DType::I32, d);
  g.slot_rows = empty(Shape{slots}, DType::I32, d);
  MoeRouterArgs a{};
  a.x = x.data();
  a.weight = router_weight.data();
  a.hidden = H;
  a.route = MoeRouteArgs{r.logits.data(),
                         x.dtype(),
                         num_real.defined() ? num_real.data_as<int32_t>() : nullptr,
                         r.routing.topk_ids.data_as<int32_t>(),
                         r.routing.topk_weights.data_as<float>(),
                         T,
                         E,
                         top_k,
                         renormalize};
  a.group = MoeGroupArgs{r.routing.topk_ids.data_as<int32_t>(), slots, E, g.max_rows, B,
                         g.expert_counts.data_as<int32_t>(), g.sorted_slots.data_as<int32_t>(),
                         g.block_expert.data_as<int32_t>(), g.slot_rows.data_as<int32_t>()};
  a.one_token = moe_one_token_kernels_enabled();
  if (prefetch.gate_up.defined() && prefetch.down.defined() && moe_router_prefetch_mode() != 0) {
    const Tensor& gu = prefetch.gate_up;
    const Tensor& dn = prefetch.down;
    GRT_CHECK(gu.rank() == 3 && dn.rank() == 3 && gu.size(0) == E && dn.size(0) == E && gu.is_contiguous() &&
                  dn.is_contiguous(),
              "{}: prefetch weights must be contiguous [{}, ...] expert tensors, got {} and {}", op, E, gu.str(),
              dn.str());
    check_same_device(op, x, gu);
    check_same_device(op, x, dn);
    a.prefetch_gate_up = gu.data();
    a.prefetch_down = dn.data();
    a.gate_up_expert_bytes = gu.numel() / E * static_cast<int64_t>(dtype_size(gu.dtype()));
    a.down_expert_bytes = dn.numel() / E * static_cast<int64_t>(dtype_size(dn.dtype()));
    a.prefetch_mode = moe_router_prefetch_mode();
    if (a.down_expert_bytes % 16 != 0 || reinterpret_cast<uintptr_t>(dn.data()) % 16 != 0) a.prefetch_mode = 0;
  }
  if (norm) {
    a.norm_x = norm->residual->data();
    a.norm_weight = norm->weight->data();
    a.eps = norm->eps;
    r.x = x;
  }
  ::grt::cuda::moe_route_group(d, a);
#endif
  return r;
}

}  // namespace

Tensor moe_experts_combine(const Tensor& x, const MoeGroups& g, const MoeRouting& routing, const Tensor& gate_up,
                           const Tensor& down, MoeFusedChoice choice) {
  const char* op = "moe_experts_combine";
  check_experts(op, x, g, gate_up, down);
  const Tensor& w = routing.topk_weights;
  check_defined(op, w, "topk_weights");
  GRT_CHECK(w.rank() == 2 && w.is_contiguous() && w.dtype() == DType::F32 && w.size(0) == x.size(0) &&
                w.size(1) == g.top_k && routing.topk_ids.defined() && routing.topk_ids.numel() == w.numel(),
            "{}: routing of {} tokens x top-{} expected, got weights {}", op, x.size(0), g.top_k, w.str());
  check_same_device(op, x, w);
  const int64_t T = x.size(0), E = gate_up.size(0), I = gate_up.size(1) / 2, H = x.size(1);
  const int64_t slots = g.slot_rows.numel();
  const bool fused = choice != MoeFusedChoice::kSeparate &&
                     (choice == MoeFusedChoice::kFused || T <= moe_fused_max_tokens()) && x.device().is_cuda() &&
                     T >= 1 && slots <= moe_gemv_max_slots(E) && T <= 65535;
  if (!fused) return moe_combine(moe_experts(x, g, gate_up, down), g, routing);
#ifdef GRAPHRT_WITH_CUDA
  Tensor act = empty(Shape{g.max_rows, I}, x.dtype(), x.device());
  Tensor out = empty(Shape{T, H}, x.dtype(), x.device());
  MoeExpertsCombineArgs a = combine_args(x, g, routing, gate_up, down, act);
  a.out = out.data();
  ::grt::cuda::moe_experts_combine(x.device(), a);
  return out;
#else
  (void)I;
  (void)H;
  return Tensor();
#endif
}

bool moe_residual_add_enabled() {
  static const int v = env_choice("GRAPHRT_MOE_RESIDUAL_ADD", {"0", "1"}, 0);
  return v == 1;
}

bool moe_experts_add_fusable(const Tensor& x, int64_t top_k, const Tensor& gate_up, const Tensor& down) {
  if (!moe_fused_experts_enabled() || !moe_one_token_kernels_enabled() || moe_fused_max_tokens() < 1) return false;
  if (!x.defined() || !gate_up.defined() || !down.defined() || !x.device().is_cuda() || x.dtype() != DType::BF16 ||
      x.rank() != 2 || x.size(0) != 1 || !x.is_contiguous() || gate_up.rank() != 3 || down.rank() != 3 ||
      gate_up.dtype() != x.dtype() || down.dtype() != x.dtype() || !gate_up.is_contiguous() || !down.is_contiguous() ||
      gate_up.size(1) % 2 != 0 || gate_up.size(2) != x.size(1) || down.size(1) != x.size(1) ||
      down.size(2) != gate_up.size(1) / 2 || down.size(0) != gate_up.size(0))
    return false;
  const auto aligned = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()) % 16 == 0; };
  if (!aligned(x) || !aligned(gate_up) || !aligned(down) || top_k > moe_gemv_max_slots(gate_up.size(0))) return false;
#ifdef GRAPHRT_WITH_CUDA
  return ::grt::cuda::moe_one_token_shape_supported(x.device(), top_k, gate_up.size(1) / 2, x.size(1), gate_up.size(0),
                                                    moe_one_token_shared_carveout());
#else
  return false;
#endif
}

namespace {

// The routing and residual checks of moe_experts_combine_add_ (and _add_norm_, under `op`).
void check_combine_add(const char* op, const Tensor& x, const MoeGroups& g, const MoeRouting& routing,
                       const Tensor& residual) {
  const Tensor& w = routing.topk_weights;
  check_defined(op, w, "topk_weights");
  GRT_CHECK(w.rank() == 2 && w.is_contiguous() && w.dtype() == DType::F32 && w.size(0) == x.size(0) &&
                w.size(1) == g.top_k && routing.topk_ids.defined() && routing.topk_ids.numel() == w.numel(),
            "{}: routing of {} tokens x top-{} expected, got weights {}", op, x.size(0), g.top_k, w.str());
  GRT_CHECK(residual.shape() == x.shape() && residual.dtype() == x.dtype() && residual.is_contiguous(),
            "{}: residual must be a contiguous {} like x, got {}", op, x.str(), residual.str());
  check_same_device(op, x, residual);
  const auto* xb = static_cast<const char*>(x.data());
  const auto* rb = static_cast<const char*>(residual.data());
  const int64_t bytes = x.numel() * static_cast<int64_t>(dtype_size(x.dtype()));
  GRT_CHECK(rb + bytes <= xb || xb + bytes <= rb, "{}: residual {} overlaps x {}", op, residual.str(), x.str());
}

}  // namespace

void moe_experts_combine_add_(const Tensor& x, const MoeGroups& g, const MoeRouting& routing, const Tensor& gate_up,
                              const Tensor& down, const Tensor& residual) {
  const char* op = "moe_experts_combine_add_";
  check_experts(op, x, g, gate_up, down);
  check_defined(op, residual, "residual");
  check_combine_add(op, x, g, routing, residual);
  GRT_CHECK(moe_experts_add_fusable(x, g.top_k, gate_up, down),
            "{}: x {} with top-{} of gate_up {} is not a token the one-token kernels add in place (see "
            "moe_experts_add_fusable)",
            op, x.str(), g.top_k, gate_up.str());
#ifdef GRAPHRT_WITH_CUDA
  Tensor act = empty(Shape{g.max_rows, gate_up.size(1) / 2}, x.dtype(), x.device());
  MoeExpertsCombineArgs a = combine_args(x, g, routing, gate_up, down, act);
  a.residual = residual.data();
  ::grt::cuda::moe_experts_combine(x.device(), a);
#endif
}

MoeDown1Norm moe_down1_norm_mode() {
  static const int v = env_choice("GRAPHRT_MOE_DOWN1_NORM", {"0", "1", "late"}, 0);
  return v == 0 ? MoeDown1Norm::kOff : v == 1 ? MoeDown1Norm::kEarlyTrigger : MoeDown1Norm::kLateTrigger;
}

bool moe_down1_norm_enabled() { return moe_down1_norm_mode() != MoeDown1Norm::kOff; }

bool moe_experts_add_norm_fusable(const Tensor& x, int64_t top_k, const Tensor& gate_up, const Tensor& down,
                                  const Tensor& norm_weight) {
  if (!moe_experts_add_fusable(x, top_k, gate_up, down) || !norm_weight.defined()) return false;
  return norm_weight.device() == x.device() && norm_weight.dtype() == x.dtype() && norm_weight.rank() == 1 &&
         norm_weight.is_contiguous() && norm_weight.size(0) == x.size(1) &&
         x.size(1) <= 8 * kMoeDown1NormMaxChunks && reinterpret_cast<uintptr_t>(norm_weight.data()) % 16 == 0;
}

Tensor moe_experts_combine_add_norm_(const Tensor& x, const MoeGroups& g, const MoeRouting& routing,
                                     const Tensor& gate_up, const Tensor& down, const Tensor& residual,
                                     const Tensor& norm_weight, float eps, bool late_trigger) {
  const char* op = "moe_experts_combine_add_norm_";
  check_experts(op, x, g, gate_up, down);
  check_defined(op, residual, "residual");
  check_defined(op, norm_weight, "norm_weight");
  check_combine_add(op, x, g, routing, residual);
  GRT_CHECK(moe_experts_add_norm_fusable(x, g.top_k, gate_up, down, norm_weight),
            "{}: x {} with top-{} of gate_up {} and norm weight {} is not a token the one-token kernels add and "
            "normalize (see moe_experts_add_norm_fusable)",
            op, x.str(), g.top_k, gate_up.str(), norm_weight.str());
#ifdef GRAPHRT_WITH_CUDA
  Tensor act = empty(Shape{g.max_rows, gate_up.size(1) / 2}, x.dtype(), x.device());
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  Tensor done = empty(Shape{1}, DType::I32, x.device());  // zeroed by gate_up after its PDL wait
  MoeExpertsCombineArgs a = combine_args(x, g, routing, gate_up, down, act);
  a.residual = residual.data();
  a.norm_out = out.data();
  a.norm_weight = norm_weight.data();
  a.norm_eps = eps;
  a.done_blocks = done.data_as<int32_t>();
  a.norm_trigger_late = late_trigger;
  ::grt::cuda::moe_experts_combine(x.device(), a);
  return out;
#else
  (void)eps;
  (void)late_trigger;
  return Tensor();
#endif
}

}  // namespace grt::ops
