// Extend attention with a fixed launch (ops::ExtendAttentionMeta::fixed_launch: a full extend
// graph's attention), written once for any device: captured once at its bounds (one request of
// `bound` tokens), replayed with other prefix and extend lengths written into the same device
// tensors. Each replay's covered rows equal a double-precision reference; the rows past the
// request keep what they held (a fixed launch leaves them alone). tests/test_ops_attention_cpu.cpp
// runs it on the CPU, tests/cuda/ on a GPU (every extend kernel the choice reaches there).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "attention_test_util.h"
#include "capture_in_pool.h"
#include "device/device.h"
#include "device/stream.h"
#include "ops/copy.h"

namespace grt::testing {

inline void check_extend_fixed_launch_replays(Device d, DType dtype, int nq, int nkv, int hd, int bound, double tol,
                                              uint32_t seed = 7) {
  SCOPED_TRACE(fmt::format("{} heads {}/{} hd {} bound {}", d.str(), nq, nkv, hd, bound));
  const int max_prefix = 40;
  // One request slot whose table covers max_prefix + bound positions; q has `bound` rows.
  PagedCase c = make_case(nq, nkv, hd, {max_prefix}, {bound}, 0, seed);
  if (dtype == DType::BF16)
    for (auto* v : {&c.q, &c.k, &c.v})
      for (float& x : *v) x = bf16_to_float(float_to_bf16(x));
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  PagedTensors t = upload(c, dtype, d);
  ops::ExtendAttentionMeta meta = t.extend;
  meta.fixed_launch = true;
  meta.num_reqs = 1;
  meta.max_extend_len = bound;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const Tensor out = zeros(Shape{bound, int64_t{nq} * hd}, dtype, d);
  const auto set_lengths = [&](int prefix, int len) {
    const std::vector<int32_t> p{prefix}, l{len};
    stream->copy_async(meta.prefix_lens.data(), p.data(), sizeof(int32_t));
    stream->copy_async(meta.extend_lens.data(), l.data(), sizeof(int32_t));
    stream->synchronize();
  };
  set_lengths(0, bound);
  ops::attention_extend_out_(out, t.q, t.k_cache, t.v_cache, meta, nq, nkv, hd, scale);  // warm-up
  stream->synchronize();
  CapturedInPool g = capture_in_pool(*stream, [&] {
    ops::attention_extend_out_(out, t.q, t.k_cache, t.v_cache, meta, nq, nkv, hd, scale);
  });
  const std::vector<std::pair<int, int>> lengths{
      {0, bound}, {0, bound - 7}, {13, 1}, {max_prefix, bound / 2 + 1}, {3, 0}, {max_prefix, bound}, {1, 65}};
  const int64_t width = int64_t{nq} * hd, qw = c.q_width() + c.q_extra;
  for (const auto& [prefix, len] : lengths) {
    if (len > bound) continue;
    SCOPED_TRACE(fmt::format("prefix {} extend {}", prefix, len));
    // A marker in every row first: the rows past the request must still hold it after the replay.
    const std::vector<float> marker(static_cast<size_t>(bound * width), 0.75f);
    ops::copy_(out, from_floats(marker, out.shape(), dtype, d));
    set_lengths(prefix, len);
    g.exec->launch(*stream);
    stream->synchronize();
    const std::vector<float> got = to_host_floats(out);
    double worst = 0;
    for (int j = 0; j < len; ++j) {
      std::vector<double> want;
      reference_row(c, c.q.data() + j * qw, c.req_idx[0], prefix + j + 1, scale, want);
      for (int64_t i = 0; i < width; ++i)
        worst = std::max(worst, std::abs(want[static_cast<size_t>(i)] - got[static_cast<size_t>(j * width + i)]));
    }
    EXPECT_LE(worst, tol);
    size_t touched = 0;
    for (int64_t i = int64_t{len} * width; i < bound * width; ++i) touched += got[static_cast<size_t>(i)] != 0.75f;
    EXPECT_EQ(touched, 0u) << "values past the request's " << len << " rows were written";
  }
}

}  // namespace grt::testing
