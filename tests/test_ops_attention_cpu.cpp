// CPU references of store_kv, paged attention (extend, decode) and sampling, against naive
// double-precision references and the properties the sampler promises.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "attention_test_util.h"
#include "error_of.h"
#include "extend_fixed_launch_checks.h"
#include "extend_prepare_split_checks.h"
#include "qkv_test_util.h"
#include "core/error.h"
#include "memory/tensor_alloc.h"
#include "ops/attention.h"
#include "ops/prepare_qkv.h"
#include "ops/rope.h"
#include "ops/kv_store.h"
#include "ops/sampling.h"

namespace grt {
namespace {

using testing::make_case;
using testing::max_abs_diff;
using testing::PagedCase;
using testing::upload;

const Device kCpu = Device::cpu();

// ---- store_kv ---------------------------------------------------------------------------------

TEST(OpsAttentionCpu, StoreKvWritesRowsToTheirSlotsOnly) {
  const int64_t t = 5, width = 6, slots = 11;
  std::vector<float> fused(static_cast<size_t>(t * 3 * width));
  for (size_t i = 0; i < fused.size(); ++i) fused[i] = static_cast<float>(i) + 1.0f;
  Tensor qkv = from_floats(fused, Shape{t, 3 * width}, DType::F32, kCpu);
  Tensor k = qkv.slice(1, width, 2 * width), v = qkv.slice(1, 2 * width, 3 * width);  // row-strided
  std::vector<int32_t> loc = {7, 2, 10, 0, 4};
  Tensor kc = zeros(Shape{slots, width}, DType::F32, kCpu), vc = zeros(Shape{slots, width}, DType::F32, kCpu);
  ops::store_kv(k, v, from_vector(loc, Shape{t}, DType::I32, kCpu), kc, vc);
  std::vector<float> hk = to_host_floats(kc), hv = to_host_floats(vc);
  std::vector<bool> written(slots, false);
  for (int64_t r = 0; r < t; ++r) {
    written[static_cast<size_t>(loc[static_cast<size_t>(r)])] = true;
    for (int64_t c = 0; c < width; ++c) {
      EXPECT_EQ(hk[static_cast<size_t>(loc[static_cast<size_t>(r)] * width + c)],
                fused[static_cast<size_t>(r * 3 * width + width + c)]);
      EXPECT_EQ(hv[static_cast<size_t>(loc[static_cast<size_t>(r)] * width + c)],
                fused[static_cast<size_t>(r * 3 * width + 2 * width + c)]);
    }
  }
  for (int64_t s = 0; s < slots; ++s)
    if (!written[static_cast<size_t>(s)])
      for (int64_t c = 0; c < width; ++c) EXPECT_EQ(hk[static_cast<size_t>(s * width + c)], 0.0f) << "slot " << s;
}

TEST(OpsAttentionCpu, StoreKvRejectsWidthMismatch) {
  Tensor k = zeros(Shape{2, 8}, DType::F32, kCpu);
  Tensor cache = zeros(Shape{4, 6}, DType::F32, kCpu);
  Tensor loc = from_vector(std::vector<int32_t>{1, 2}, Shape{2}, DType::I32, kCpu);
  try {
    ops::store_kv(k, k, loc, cache, cache);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("store_kv"), std::string::npos) << e.what();
  }
}

// ---- extend -----------------------------------------------------------------------------------

TEST(OpsAttentionCpu, ExtendMatchesNaiveReferenceWithPrefixesGqaAndPadding) {
  // 3 requests: no prefix, a prefix, a long prefix with one new token; 3 padding rows; GQA 4/2.
  PagedCase c = make_case(4, 2, 16, {0, 5, 40}, {7, 3, 1}, 3, 11);
  auto t = upload(c, DType::F32, kCpu);
  const float scale = 0.25f;
  Tensor out = ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, c.nq, c.nkv, c.hd, scale);
  ASSERT_EQ(out.shape(), (Shape{c.rows, c.q_width()}));
  ASSERT_TRUE(out.is_contiguous());
  std::vector<float> got = to_host_floats(out);
  std::vector<double> want = testing::reference_extend(c, scale);
  EXPECT_LT(max_abs_diff(got, want), 1e-5);
  for (int64_t r = c.rows - 3; r < c.rows; ++r)
    for (int64_t i = 0; i < c.q_width(); ++i) EXPECT_EQ(got[static_cast<size_t>(r * c.q_width() + i)], 0.0f);
}

// A fixed launch (a full extend graph's attention) captured at its bounds replays other lengths.
TEST(OpsAttentionCpu, ExtendFixedLaunchCapturedReplaysOtherLengths) {
  testing::check_extend_fixed_launch_replays(Device::cpu(), DType::F32, 4, 2, 16, 24, 1e-4);
  testing::check_extend_fixed_launch_replays(Device::cpu(), DType::F32, 8, 8, 32, 70, 1e-4);
}

TEST(OpsAttentionCpu, ExtendMatchesReferenceForMhaAndWideGroups) {
  for (auto [nq, nkv, hd] : std::vector<std::tuple<int, int, int>>{{2, 2, 8}, {8, 1, 32}, {6, 2, 64}}) {
    PagedCase c = make_case(nq, nkv, hd, {3, 0}, {4, 9}, 0, 5 + static_cast<uint32_t>(hd));
    auto t = upload(c, DType::F32, kCpu);
    Tensor out = ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, nq, nkv, hd, 0.125f);
    EXPECT_LT(max_abs_diff(to_host_floats(out), testing::reference_extend(c, 0.125)), 1e-5)
        << nq << "/" << nkv << " hd " << hd;
  }
}

TEST(OpsAttentionCpu, ExtendWithPrefixEqualsLongerExtend) {
  // One request of 12 tokens extended at once, and the same request with 8 cached + 4 new: the
  // last 4 output rows must agree (same cache contents, same queries).
  PagedCase full = make_case(4, 2, 16, {0}, {12}, 0, 21);
  PagedCase part = full;
  part.prefix = {8};
  part.ext = {4};
  part.rows = 4;
  const int64_t qw = full.q_width() + full.q_extra;
  part.q.assign(full.q.begin() + 8 * qw, full.q.end());
  auto tf = upload(full, DType::F32, kCpu);
  auto tp = upload(part, DType::F32, kCpu);
  std::vector<float> a = to_host_floats(ops::attention_extend(tf.q, tf.k_cache, tf.v_cache, tf.extend, 4, 2, 16, 0.3f));
  std::vector<float> b = to_host_floats(ops::attention_extend(tp.q, tp.k_cache, tp.v_cache, tp.extend, 4, 2, 16, 0.3f));
  std::vector<float> tail(a.begin() + 8 * full.q_width(), a.end());
  EXPECT_LT(max_abs_diff(tail, b), 1e-6);
}

TEST(OpsAttentionCpu, ExtendWithDecodeTailEqualsExtendKernelAndReference) {
  // Two prefill chunks, then three one-token requests with prefixes (a MIXED step's decodes) and
  // two padding rows; the tail as decodes must equal the tail as extends. Head dim 6 is not one
  // decode attention takes: the tail then stays in the extend kernel (same result).
  for (int hd : {32, 6}) {
    PagedCase c = make_case(8, 2, hd, {0, 5, 30, 17, 1}, {7, 3, 1, 1, 1}, 2, 41);
    auto t = upload(c, DType::F32, kCpu);
    std::vector<float> as_extend =
        to_host_floats(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 8, 2, hd, 0.2f));
    testing::set_decode_tail(t, c, 3, kCpu);
    std::vector<float> as_decode =
        to_host_floats(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 8, 2, hd, 0.2f));
    EXPECT_LT(max_abs_diff(as_decode, as_extend), 1e-6) << "hd " << hd;
    EXPECT_LT(max_abs_diff(as_decode, testing::reference_extend(c, 0.2)), 1e-5) << "hd " << hd;
    for (int64_t i = (c.rows - 2) * c.q_width(); i < c.rows * c.q_width(); ++i)
      ASSERT_EQ(as_decode[static_cast<size_t>(i)], 0.0f) << "padding row element " << i;
  }
}

// The model's split prepare (k and v by prepare_qkv_ with parts kKv, q by the attention) gives the
// whole prepare's output and caches bit for bit; on the CPU the attention prepares q in place
// first, so q comes out as the whole prepare leaves it. prepare_qkv_'s parts kQ then kKv equal
// the whole. With decodes riding in the batch as well, and without the q/k norms.
TEST(OpsAttentionCpu, ExtendPrepareQEqualsWholePrepareAndPartsCompose) {
  for (bool norm : {true, false})
    for (int tail : {0, 2}) {
      SCOPED_TRACE("norm " + std::to_string(norm) + " decode tail " + std::to_string(tail));
      const testing::ExtendPrepareCase x =
          testing::extend_prepare_case(8, 2, 32, {0, 5, 30, 9, 3}, {7, 3, 4, 1, 1}, 2, 51, norm);
      const auto whole = testing::run_extend_prepare(x, DType::F32, kCpu, false, false, tail);
      const auto split = testing::run_extend_prepare(x, DType::F32, kCpu, true, false, tail);
      const auto parts = testing::run_extend_prepare(x, DType::F32, kCpu, true, true, tail);
      for (const auto* r : {&split, &parts}) {
        EXPECT_TRUE(testing::same_bits(r->out, whole.out));
        EXPECT_TRUE(testing::same_bits(r->qkv, whole.qkv));
        EXPECT_TRUE(testing::same_bits(r->k_cache, whole.k_cache));
        EXPECT_TRUE(testing::same_bits(r->v_cache, whole.v_cache));
      }
      EXPECT_FALSE(testing::same_bits(testing::q_columns(x, whole.qkv), testing::q_columns(x, x.qkv)))
          << "the prepare changed no q: the case checks nothing";
    }
}

// Its checks name the op and what is wrong: the head count against q, and the positions' length.
TEST(OpsAttentionCpu, ExtendPrepareQRejectsMismatchedHeadsAndPositions) {
  const testing::ExtendPrepareCase x = testing::extend_prepare_case(8, 2, 32, {0, 5}, {7, 3}, 0, 52, true);
  auto t = upload(x.c, DType::F32, kCpu);
  Tensor qkv = from_floats(x.qkv, Shape{x.c.rows, x.width()}, DType::F32, kCpu);
  Tensor q = qkv.slice(1, 0, x.c.q_width());
  ops::RopeParams rp;
  rp.head_dim = 32;
  const Tensor cos_sin = ops::rope_cos_sin_cache(rp, 64, kCpu);
  const Tensor positions = from_vector(x.positions, Shape{x.c.rows}, DType::I32, kCpu);
  const Tensor q_norm = from_floats(x.q_norm_w, Shape{32}, DType::F32, kCpu);
  Tensor out = empty(Shape{x.c.rows, x.c.q_width()}, DType::F32, kCpu);
  std::string err = testing::error_of([&] {
    ops::attention_extend_prepare_q_out_(out, q, q_norm, 1e-6f, positions, cos_sin, t.k_cache, t.v_cache, t.extend, 4,
                                         2, 32, 0.2f);
  });
  EXPECT_NE(err.find("attention_extend_prepare_q"), std::string::npos) << err;
  const Tensor short_positions = positions.slice(0, 0, x.c.rows - 1);
  err = testing::error_of([&] {
    ops::attention_extend_prepare_q_out_(out, q, q_norm, 1e-6f, short_positions, cos_sin, t.k_cache, t.v_cache,
                                         t.extend, 8, 2, 32, 0.2f);
  });
  EXPECT_NE(err.find("prepare_qkv_"), std::string::npos) << err;
  EXPECT_NE(err.find("q must be [T=9"), std::string::npos) << err;
}

TEST(OpsAttentionCpu, ExtendAllDecodeTailRunsNoExtendKernel) {
  // Every request is a one-token extend: the whole batch runs as decode attention.
  PagedCase c = make_case(4, 2, 16, {4, 9, 0}, {1, 1, 1}, 1, 43);
  auto t = upload(c, DType::F32, kCpu);
  testing::set_decode_tail(t, c, 3, kCpu);
  std::vector<float> got = to_host_floats(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 4, 2, 16, 0.3f));
  EXPECT_LT(max_abs_diff(got, testing::reference_extend(c, 0.3)), 1e-5);
}

TEST(OpsAttentionCpu, ExtendRejectsBadDecodeTail) {
  PagedCase c = make_case(4, 2, 16, {0, 3}, {5, 1}, 0, 45);
  auto t = upload(c, DType::F32, kCpu);
  auto error_of = [&](const ops::ExtendAttentionMeta& m) {
    try {
      ops::attention_extend(t.q, t.k_cache, t.v_cache, m, 4, 2, 16, 1.0f);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  testing::set_decode_tail(t, c, 1, kCpu);
  ops::ExtendAttentionMeta m = t.extend;
  m.decode_tail = 3;
  EXPECT_NE(error_of(m).find("decode_tail 3 must lie in [0, num_reqs 2]"), std::string::npos) << error_of(m);
  m = t.extend;
  m.decode_first_row = 6;
  EXPECT_NE(error_of(m).find("decode rows 6..6 outside q's 6 rows"), std::string::npos) << error_of(m);
  m = t.extend;
  m.seq_lens = Tensor();
  EXPECT_NE(error_of(m).find("seq_lens is undefined"), std::string::npos) << error_of(m);
}

TEST(OpsAttentionCpu, ExtendRejectsBadHeadCounts) {
  PagedCase c = make_case(4, 2, 16, {0}, {3}, 0, 1);
  auto t = upload(c, DType::F32, kCpu);
  EXPECT_THROW(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 4, 3, 16, 1.0f), Error);
  EXPECT_THROW(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 4, 2, 8, 1.0f), Error);
  try {
    ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 2, 2, 16, 1.0f);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_extend"), std::string::npos) << e.what();
  }
}

// attention_extend_out_: the result lands in the caller's buffer; with covered_rows the kernel's
// rows are written and only the padding after them is zeroed (whatever the buffer held before).
TEST(OpsAttentionCpu, ExtendOutWritesCoveredRowsAndZeroesOnlyPadding) {
  PagedCase c = make_case(4, 2, 16, {0, 5, 40}, {7, 3, 1}, 3, 11);
  auto t = upload(c, DType::F32, kCpu);
  const std::vector<float> want = to_host_floats(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 4, 2, 16, 0.25f));
  const int covered = ops::packed_extend_rows(c.start, c.ext);
  ASSERT_EQ(covered, 11);
  for (int rows : {covered, -1}) {
    ops::ExtendAttentionMeta meta = t.extend;
    meta.covered_rows = rows;
    Tensor out = from_floats(std::vector<float>(static_cast<size_t>(c.rows * c.q_width()), 7.5f),
                             Shape{c.rows, c.q_width()}, DType::F32, kCpu);
    ops::attention_extend_out_(out, t.q, t.k_cache, t.v_cache, meta, 4, 2, 16, 0.25f);
    std::vector<float> got = to_host_floats(out);
    EXPECT_EQ(got, want) << "covered_rows " << rows;
    for (int64_t i = covered * c.q_width(); i < c.rows * c.q_width(); ++i)
      ASSERT_EQ(got[static_cast<size_t>(i)], 0.0f) << "padding element " << i << ", covered_rows " << rows;
  }
}

TEST(OpsAttentionCpu, PackedExtendRowsOnlyForRequestsPackedFromRowZero) {
  EXPECT_EQ(ops::packed_extend_rows({0, 7, 10}, {7, 3, 1}), 11);
  EXPECT_EQ(ops::packed_extend_rows({}, {}), 0);
  EXPECT_EQ(ops::packed_extend_rows({0, 7, 0}, {7, 0, 0}), -1);  // out of order
  EXPECT_EQ(ops::packed_extend_rows({1}, {3}), -1);               // a gap before the first
  EXPECT_EQ(ops::packed_extend_rows({0, 8}, {7, 3}), -1);         // a gap between
  EXPECT_EQ(ops::packed_extend_rows({0, 2}, {2, -1}), -1);        // a negative length
  EXPECT_EQ(ops::packed_extend_rows({0}, {3, 4}), -1);            // lengths differ
}

TEST(OpsAttentionCpu, ExtendOutRejectsBadBuffers) {
  PagedCase c = make_case(4, 2, 16, {0}, {3}, 1, 1);
  auto t = upload(c, DType::F32, kCpu);
  auto expect_error = [&](const Tensor& out, const ops::ExtendAttentionMeta& meta, const char* what) {
    try {
      ops::attention_extend_out_(out, t.q, t.k_cache, t.v_cache, meta, 4, 2, 16, 1.0f);
      ADD_FAILURE() << what << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("attention_extend"), std::string::npos) << what << ": " << e.what();
    }
  };
  const int64_t w = c.q_width();
  expect_error(zeros(Shape{c.rows + 1, w}, DType::F32, kCpu), t.extend, "one row too many");
  expect_error(zeros(Shape{c.rows, w}, DType::BF16, kCpu), t.extend, "another dtype");
  expect_error(zeros(Shape{c.rows, 2 * w}, DType::F32, kCpu).slice(1, 0, w), t.extend, "strided rows");
  expect_error(Tensor(t.q_fused.storage(), Shape{c.rows, w}, {w, 1}, DType::F32, 0), t.extend, "q's own buffer");
  ops::ExtendAttentionMeta meta = t.extend;
  meta.covered_rows = static_cast<int>(c.rows) + 1;
  expect_error(zeros(Shape{c.rows, w}, DType::F32, kCpu), meta, "covered_rows beyond the rows");
}

// ---- decode -----------------------------------------------------------------------------------

// Decode metadata for case `c` where request b's current token is its last (seq len = prefix+ext).
ops::DecodeAttentionMeta decode_meta(const PagedCase& c, const std::vector<int32_t>& seq_lens, Device d) {
  const int64_t n = static_cast<int64_t>(seq_lens.size());
  return {from_vector(c.table, Shape{c.max_reqs, c.max_context}, DType::I32, d),
          from_vector(std::vector<int32_t>(c.req_idx.begin(), c.req_idx.begin() + n), Shape{n}, DType::I32, d),
          from_vector(seq_lens, Shape{n}, DType::I32, d)};
}

TEST(OpsAttentionCpu, DecodeEqualsExtendLastRow) {
  PagedCase c = make_case(8, 2, 32, {0, 6, 30}, {5, 2, 9}, 0, 31);
  auto t = upload(c, DType::F32, kCpu);
  std::vector<float> ext = to_host_floats(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, 8, 2, 32, 0.2f));
  // Decode queries: the last new token of each request, gathered into a row-strided [3, ...] q.
  const int64_t qw = c.q_width() + c.q_extra;
  std::vector<float> dq;
  std::vector<int32_t> lens;
  for (int b = 0; b < 3; ++b) {
    const int64_t r = c.start[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)] - 1;
    dq.insert(dq.end(), c.q.begin() + r * qw, c.q.begin() + (r + 1) * qw);
    lens.push_back(c.prefix[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)]);
  }
  Tensor qf = from_floats(dq, Shape{3, qw}, DType::F32, kCpu);
  Tensor out = ops::attention_decode(qf.slice(1, 0, c.q_width()), t.k_cache, t.v_cache, decode_meta(c, lens, kCpu), 8,
                                     2, 32, 0.2f);
  ASSERT_EQ(out.shape(), (Shape{3, c.q_width()}));
  std::vector<float> got = to_host_floats(out);
  for (int b = 0; b < 3; ++b) {
    const int64_t r = c.start[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)] - 1;
    std::vector<float> want(ext.begin() + r * c.q_width(), ext.begin() + (r + 1) * c.q_width());
    std::vector<float> row(got.begin() + b * c.q_width(), got.begin() + (b + 1) * c.q_width());
    EXPECT_LT(max_abs_diff(row, want), 1e-6) << "request " << b;
  }
}

// attention_decode_prepare on the CPU is prepare_qkv_ then attention_decode (same bits, same
// caches, q prepared in place); head counts that do not match q and k are an error naming both.
TEST(OpsAttentionCpu, DecodePrepareEqualsPrepareThenDecodeAndChecksHeads) {
  PagedCase c = make_case(8, 2, 32, {0, 6, 30}, {1, 1, 1}, 0, 41, 0);
  const int B = 3, hd = 32;
  const int64_t qw = c.q_width(), kvw = c.kv_width(), W = qw + 2 * kvw;
  std::vector<float> rows(static_cast<size_t>(B * W)), wq(hd), wk(hd);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = std::sin(0.37f * static_cast<float>(i));
  for (int i = 0; i < hd; ++i) wq[static_cast<size_t>(i)] = 1.0f + 0.01f * static_cast<float>(i);
  for (int i = 0; i < hd; ++i) wk[static_cast<size_t>(i)] = 0.9f + 0.02f * static_cast<float>(i);
  const Tensor q_norm = from_floats(wq, Shape{hd}, DType::F32, kCpu), k_norm = from_floats(wk, Shape{hd}, DType::F32, kCpu);
  ops::RopeParams rp;
  rp.head_dim = hd;
  const Tensor cos_sin = ops::rope_cos_sin_cache(rp, 64, kCpu);
  std::vector<int32_t> pos, loc, lens;
  for (int b = 0; b < B; ++b) {
    const int32_t len = c.prefix[static_cast<size_t>(b)] + 1;
    lens.push_back(len);
    pos.push_back(len - 1);
    loc.push_back(c.table[static_cast<size_t>(c.req_idx[static_cast<size_t>(b)]) * c.max_context +
                          static_cast<size_t>(len - 1)]);
  }
  const Tensor positions = from_vector(pos, Shape{B}, DType::I32, kCpu), locs = from_vector(loc, Shape{B}, DType::I32, kCpu);
  const auto run = [&](bool one_op) {
    auto t = upload(c, DType::F32, kCpu);
    Tensor qkv = from_floats(rows, Shape{B, W}, DType::F32, kCpu);
    Tensor q = qkv.slice(1, 0, qw), k = qkv.slice(1, qw, qw + kvw), v = qkv.slice(1, qw + kvw, W);
    Tensor out;
    if (one_op) {
      out = ops::attention_decode_prepare(q, k, v, q_norm, k_norm, 1e-6f, positions, cos_sin, locs, t.k_cache,
                                          t.v_cache, decode_meta(c, lens, kCpu), 8, 2, hd, 0.2f);
    } else {
      ops::prepare_qkv_(q, k, v, q_norm, k_norm, 1e-6f, positions, cos_sin, hd, locs, t.k_cache, t.v_cache);
      out = ops::attention_decode(q, t.k_cache, t.v_cache, decode_meta(c, lens, kCpu), 8, 2, hd, 0.2f);
    }
    return std::vector<std::vector<float>>{to_host_floats(out), to_host_floats(qkv), to_host_floats(t.k_cache),
                                           to_host_floats(t.v_cache)};
  };
  const auto two = run(false), one = run(true);
  for (size_t i = 0; i < two.size(); ++i) EXPECT_TRUE(testing::same_bits(one[i], two[i])) << "result " << i;
  EXPECT_FALSE(testing::same_bits(two[1], rows)) << "prepare_qkv_ changed nothing: the case checks nothing";
  auto t = upload(c, DType::F32, kCpu);
  Tensor qkv = from_floats(rows, Shape{B, W}, DType::F32, kCpu);
  const std::string err = testing::error_of([&] {
    ops::attention_decode_prepare(qkv.slice(1, 0, qw), qkv.slice(1, qw, qw + kvw), qkv.slice(1, qw + kvw, W), q_norm,
                                  k_norm, 1e-6f, positions, cos_sin, locs, t.k_cache, t.v_cache,
                                  decode_meta(c, lens, kCpu), 4, 2, hd, 0.2f);
  });
  EXPECT_NE(err.find("attention_decode_prepare"), std::string::npos) << err;
  EXPECT_NE(err.find("the attention's are 4 and 2"), std::string::npos) << err;
}

TEST(OpsAttentionCpu, DecodeZeroSeqLenIsZeroAndSinkRowIsFinite) {
  PagedCase c = make_case(4, 2, 16, {3, 4}, {1, 1}, 0, 41);
  auto t = upload(c, DType::F32, kCpu);
  // Row 0: seq len 0. Row 1: a padding row (seq len 1, table row of zeros → slot 0).
  std::vector<int32_t> req = {c.req_idx[0], 0};  // table row 0 is all zeros (never a request)
  ops::DecodeAttentionMeta meta{from_vector(c.table, Shape{c.max_reqs, c.max_context}, DType::I32, kCpu),
                                from_vector(req, Shape{2}, DType::I32, kCpu),
                                from_vector(std::vector<int32_t>{0, 1}, Shape{2}, DType::I32, kCpu), Tensor()};
  std::vector<float> got =
      to_host_floats(ops::attention_decode(t.q.narrow(0, 0, 2), t.k_cache, t.v_cache, meta, 4, 2, 16, 0.5f));
  for (int64_t i = 0; i < c.q_width(); ++i) EXPECT_EQ(got[static_cast<size_t>(i)], 0.0f);
  // One visible token: softmax is 1 → the output is slot 0's V row for each head's kv head.
  for (int h = 0; h < 4; ++h)
    for (int d = 0; d < 16; ++d)
      EXPECT_FLOAT_EQ(got[static_cast<size_t>(c.q_width() + h * 16 + d)], c.v[static_cast<size_t>((h / 2) * 16 + d)]);
}

TEST(OpsAttentionCpu, DecodeMatchesReferenceAtLongContext) {
  PagedCase c = make_case(4, 1, 64, {300, 17}, {1, 1}, 0, 51);
  auto t = upload(c, DType::F32, kCpu);
  std::vector<int32_t> lens = {301, 18};
  Tensor out = ops::attention_decode(t.q, t.k_cache, t.v_cache, decode_meta(c, lens, kCpu), 4, 1, 64, 0.125f);
  std::vector<double> want;
  const int64_t qw = c.q_width() + c.q_extra;
  for (int b = 0; b < 2; ++b)
    testing::reference_row(c, c.q.data() + b * qw, c.req_idx[static_cast<size_t>(b)], lens[static_cast<size_t>(b)],
                           0.125, want);
  EXPECT_LT(max_abs_diff(to_host_floats(out), want), 1e-5);
}

// ---- argmax and sampling ----------------------------------------------------------------------

struct SampleRows {
  std::vector<float> temperature, top_p;
  std::vector<int32_t> top_k, step;
  std::vector<int64_t> seed;
  void add(float t, int32_t k, float p, int64_t s, int32_t st) {
    temperature.push_back(t), top_k.push_back(k), top_p.push_back(p), seed.push_back(s), step.push_back(st);
  }
  ops::SamplingTensors tensors(Device d) const {
    Shape s{static_cast<int64_t>(temperature.size())};
    return {from_vector(temperature, s, DType::F32, d), from_vector(top_k, s, DType::I32, d),
            from_vector(top_p, s, DType::F32, d), from_vector(seed, s, DType::I64, d),
            from_vector(step, s, DType::I32, d)};
  }
};

std::vector<int32_t> run_sample(const std::vector<float>& logits, int64_t vocab, const SampleRows& rows,
                                Device d = kCpu) {
  const int64_t b = static_cast<int64_t>(rows.temperature.size());
  Tensor l = from_floats(logits, Shape{b, vocab}, DType::F32, d);
  return to_host_vector<int32_t>(ops::sample(l, rows.tensors(d)));
}

TEST(OpsSamplingCpu, ArgmaxPicksLowestIndexOnTies) {
  std::vector<float> logits = {1, 3, 3, 2,  //
                               -5, -5, -5, -5,  //
                               0, 1, 7, 7};
  Tensor l = from_floats(logits, Shape{3, 4}, DType::F32, kCpu);
  EXPECT_EQ(to_host_vector<int32_t>(ops::argmax(l)), (std::vector<int32_t>{1, 0, 2}));
}

TEST(OpsSamplingCpu, ArgmaxRejectsNonF32) {
  Tensor l = zeros(Shape{2, 4}, DType::BF16, kCpu);
  EXPECT_THROW(ops::argmax(l), Error);
}

TEST(OpsSamplingCpu, NonPositiveTemperatureIsGreedy) {
  std::vector<float> logits = {0.1f, 0.5f, 0.4f, 0.45f, 2.0f, 1.9f, 0.0f, -1.0f};
  SampleRows r;
  r.add(0.0f, 0, 1.0f, 1, 0);
  r.add(-1.0f, 3, 0.5f, 2, 7);
  EXPECT_EQ(run_sample(logits, 4, r), (std::vector<int32_t>{1, 0}));
}

TEST(OpsSamplingCpu, TopKOneEqualsArgmax) {
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 3.0f);
  const int64_t vocab = 97, rows = 16;
  std::vector<float> logits(static_cast<size_t>(vocab * rows));
  for (auto& x : logits) x = n(rng);
  SampleRows r;
  for (int i = 0; i < rows; ++i) r.add(1.5f, 1, 1.0f, 100 + i, i);
  Tensor l = from_floats(logits, Shape{rows, vocab}, DType::F32, kCpu);
  EXPECT_EQ(run_sample(logits, vocab, r), to_host_vector<int32_t>(ops::argmax(l)));
}

TEST(OpsSamplingCpu, SameSeedAndStepGiveSameTokenDifferentStepsDiffer) {
  const int64_t vocab = 1000;
  std::vector<float> row(static_cast<size_t>(vocab), 0.0f);  // uniform: every draw is informative
  std::vector<float> logits;
  SampleRows r;
  for (int s = 0; s < 32; ++s) {
    logits.insert(logits.end(), row.begin(), row.end());
    r.add(1.0f, 0, 1.0f, 1234, s);
  }
  std::vector<int32_t> a = run_sample(logits, vocab, r), b = run_sample(logits, vocab, r);
  EXPECT_EQ(a, b);
  std::set<int32_t> distinct(a.begin(), a.end());
  EXPECT_GT(distinct.size(), 20u) << "steps must draw anew";
  SampleRows r2 = r;
  for (auto& s : r2.seed) s = 99;
  EXPECT_NE(run_sample(logits, vocab, r2), a);
}

TEST(OpsSamplingCpu, EmpiricalDistributionMatchesSoftmax) {
  const std::vector<float> row = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f};
  const float temperature = 0.8f;
  std::vector<double> p;
  double z = 0;
  for (float x : row) z += std::exp(x / temperature);
  for (float x : row) p.push_back(std::exp(x / temperature) / z);
  const int n = 4000;
  std::vector<float> logits;
  SampleRows r;
  for (int i = 0; i < n; ++i) {
    logits.insert(logits.end(), row.begin(), row.end());
    r.add(temperature, 0, 1.0f, i, 0);
  }
  std::vector<int32_t> got = run_sample(logits, 5, r);
  std::vector<int> count(5, 0);
  for (int32_t t : got) ++count[static_cast<size_t>(t)];
  for (size_t i = 0; i < 5; ++i) {
    const double sd = std::sqrt(p[i] * (1 - p[i]) / n);
    EXPECT_NEAR(count[i] / static_cast<double>(n), p[i], 5 * sd + 1e-3) << "token " << i;
  }
}

TEST(OpsSamplingCpu, TopKAndTopPNeverPickExcludedTokens) {
  // Probabilities ∝ exp(logit): 0.5, 0.25, 0.125, ... (halving). top_p 0.7 keeps {0, 1}
  // (0.5 < 0.7 <= 0.75); top_k 3 keeps {0, 1, 2}; both → {0, 1}.
  const int64_t vocab = 12;
  std::vector<float> row;
  for (int i = 0; i < vocab; ++i) row.push_back(-static_cast<float>(i) * std::log(2.0f));
  std::vector<float> logits;
  SampleRows r;
  const int n = 600;
  for (int i = 0; i < n; ++i) {
    logits.insert(logits.end(), row.begin(), row.end());
    if (i % 3 == 0) r.add(1.0f, 0, 0.7f, i, i);
    else if (i % 3 == 1) r.add(1.0f, 3, 1.0f, i, i);
    else r.add(1.0f, 3, 0.7f, i, i);
  }
  std::vector<int32_t> got = run_sample(logits, vocab, r);
  std::map<int, std::set<int32_t>> seen;
  for (int i = 0; i < n; ++i) seen[i % 3].insert(got[static_cast<size_t>(i)]);
  EXPECT_EQ(seen[0], (std::set<int32_t>{0, 1}));
  EXPECT_EQ(seen[1], (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(seen[2], (std::set<int32_t>{0, 1}));
}

TEST(OpsSamplingCpu, TiedProbabilitiesKeepLowestIndicesUnderTopK) {
  // Ten equal logits and top_k 4: only tokens 0..3 may appear.
  std::vector<float> logits;
  SampleRows r;
  for (int i = 0; i < 300; ++i) {
    for (int j = 0; j < 10; ++j) logits.push_back(1.0f);
    r.add(1.0f, 4, 1.0f, i, 0);
  }
  std::set<int32_t> seen;
  for (int32_t t : run_sample(logits, 10, r)) seen.insert(t);
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(OpsSamplingCpu, RejectsMismatchedParameterShapes) {
  Tensor l = zeros(Shape{2, 5}, DType::F32, kCpu);
  SampleRows r;
  r.add(1.0f, 0, 1.0f, 1, 0);  // one row of params for two rows of logits
  EXPECT_THROW(ops::sample(l, r.tensors(kCpu)), Error);
}

}  // namespace
}  // namespace grt
