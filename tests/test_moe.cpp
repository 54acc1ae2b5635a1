// Mixture-of-experts models (Qwen3-MoE, Mixtral) on the CPU: logits and greedy tokens against a
// float64 reference computed here (tests/moe_reference.h) in every graph mode, the MoE ops'
// routing and grouping (padding rows never route), and clear errors for bad configs and folders.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "error_of.h"
#include "graph/split_ops.h"
#include "memory/tensor_alloc.h"
#include "model/make_model.h"
#include "model/model_loader.h"
#include "moe_reference.h"
#include "ops/linear.h"
#include "ops/moe.h"
#include "runtime/engine.h"
#include "runtime_test_util.h"

using namespace grt;
using namespace grt::testing;

namespace {

enum class Mode { kEager, kGraphs, kVmm, kBreakable, kMoeSplit, kDebug };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kEager: return "eager";
    case Mode::kGraphs: return "graphs";
    case Mode::kVmm: return "vmm";
    case Mode::kBreakable: return "breakable";
    case Mode::kMoeSplit: return "moe_split";
    case Mode::kDebug: return "debug";
  }
  return "?";
}

std::unique_ptr<ModelRunner> moe_runner(const std::string& preset, Mode mode) {
  ModelRunnerOptions o;
  o.max_running_requests = 8;
  o.max_context = 64;
  o.max_total_tokens = 8 * 64;
  o.capture_progress = false;
  o.cuda_graph_bs = {1, 2, 4, 8};
  o.piecewise_cuda_graph_tokens = {4, 8, 16, 32, 64};
  o.disable_cuda_graph = o.disable_piecewise_cuda_graph = mode == Mode::kEager;
  o.graph_memory = mode == Mode::kVmm ? GraphMemoryMode::kVmm : GraphMemoryMode::kPool;
  // Breakable: MoE routing is a breakable mark inside every sparse layer, in decode graphs and
  // (with the composable policies) in piecewise graphs.
  o.breakable_cuda_graph = o.moe_eager_routing = mode == Mode::kBreakable;
  if (mode == Mode::kBreakable) o.graph_break_layers = {0};  // a break right after an MoE layer
  o.debug_cuda_graph = mode == Mode::kDebug;
  o.moe_dispatch_split_op = mode == Mode::kMoeSplit;
  return std::make_unique<ModelRunner>(load_model("builtin:" + preset, Device::cpu(), DType::F32, 0, 64), o);
}

float max_rel(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num = std::max(num, std::fabs(got[i] - want[i]));
    den = std::max(den, std::fabs(want[i]));
  }
  return static_cast<float>(num / den);
}

const std::vector<std::vector<int32_t>> kPrompts = {{3, 17, 200, 45, 9}, {100, 7, 7, 301, 12, 88, 5, 411, 2},
                                                    {1, 2, 3}};

}  // namespace

class MoeModel : public ::testing::TestWithParam<std::tuple<const char*, Mode>> {};

// Every graph mode gives the reference's logits at every prompt position and its greedy tokens
// (the three prompts decode together: padded decode batches of 3 -> 4).
TEST_P(MoeModel, MatchesFloat64Reference) {
  const std::string preset = std::get<0>(GetParam());
  const Mode mode = std::get<1>(GetParam());
  ModelConfig c = ModelConfig::preset(preset);
  ReferenceModel ref(c);
  auto runner = moe_runner(preset, mode);
  if (mode != Mode::kEager) {
    ASSERT_NE(runner->decode_graphs(), nullptr);
    ASSERT_NE(runner->piecewise_graphs(), nullptr);
  }
  {
    // The serving path (last-token logits: piecewise graphs when on) for all prompts in one batch.
    std::vector<HeldRequest> held;
    for (const auto& p : kPrompts) held.push_back(hold(*runner, static_cast<int>(p.size())));
    std::vector<ExtendPart> parts;
    for (size_t s = 0; s < kPrompts.size(); ++s) parts.push_back({&held[s], kPrompts[s], 0});
    auto last = to_host_floats(runner->forward(extend_batch(parts, false)));
    for (size_t s = 0; s < kPrompts.size(); ++s) {
      std::vector<float> got(last.begin() + static_cast<int64_t>(s * c.vocab_size),
                             last.begin() + static_cast<int64_t>((s + 1) * c.vocab_size));
      EXPECT_LT(max_rel(got, ref.logits(kPrompts[s]).back()), 1e-4f) << preset << " " << mode_name(mode) << " " << s;
    }
    for (auto& h : held) {
      runner->kv_pool().free(h.kv);
      runner->req_pool().free(h.slot);
    }
  }
  Engine engine(*runner);
  auto logits = engine.score(kPrompts);
  for (size_t s = 0; s < kPrompts.size(); ++s) {
    auto want = ref.logits(kPrompts[s]);
    for (size_t p = 0; p < want.size(); ++p) {
      std::vector<float> got(logits[s].begin() + static_cast<int64_t>(p * c.vocab_size),
                             logits[s].begin() + static_cast<int64_t>((p + 1) * c.vocab_size));
      EXPECT_LT(max_rel(got, want[p]), 1e-4f) << preset << " " << mode_name(mode) << " seq " << s << " pos " << p;
    }
  }
  std::vector<GenerateRequest> reqs;
  for (const auto& p : kPrompts) reqs.push_back({p, 6, {}});
  auto out = engine.generate(reqs);
  for (size_t s = 0; s < kPrompts.size(); ++s) EXPECT_EQ(out[s], ref.greedy(kPrompts[s], 6)) << preset << " seq " << s;
  if (mode != Mode::kEager) {
    EXPECT_GT(runner->decode_graphs()->replay_count(), 0u);
    if (mode != Mode::kDebug) EXPECT_GT(runner->piecewise_graphs()->replay_count(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, MoeModel,
                         ::testing::Combine(::testing::Values("tiny-qwen3-moe", "tiny-mixtral"),
                                            ::testing::Values(Mode::kEager, Mode::kGraphs, Mode::kVmm,
                                                              Mode::kBreakable, Mode::kMoeSplit, Mode::kDebug)),
                         [](const auto& info) {
                           std::string n = std::string(std::get<0>(info.param)) + "_" + mode_name(std::get<1>(info.param));
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// Split at MoE dispatch: every sparse layer adds a piece; without it the MoE layers are captured
// inside the pieces. The registry is restored after capture.
TEST(MoeGraphs, DispatchSplitAddsOnePiecePerSparseLayer) {
  const ModelConfig c = ModelConfig::preset("tiny-qwen3-moe");
  int sparse = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l) sparse += c.is_moe_layer(l);
  ASSERT_EQ(sparse, 2);  // layer 1 is dense (mlp_only_layers)
  auto plain = moe_runner("tiny-qwen3-moe", Mode::kGraphs);
  auto split = moe_runner("tiny-qwen3-moe", Mode::kMoeSplit);
  EXPECT_EQ(plain->piecewise_graphs()->runner().stats().front().segments, static_cast<size_t>(c.num_hidden_layers + 1));
  EXPECT_EQ(split->piecewise_graphs()->runner().stats().front().segments,
            static_cast<size_t>(c.num_hidden_layers + sparse + 1));
  EXPECT_FALSE(is_split_op("moe_dispatch"));
  EXPECT_TRUE(is_split_op("attention"));
  // Routing as a breakable mark inside each sparse layer: one more piece per sparse layer in
  // piecewise graphs (split ops and breakable marks in one capture); in breakable decode graphs
  // one segment per mark plus the break after layer 0.
  auto marks = moe_runner("tiny-qwen3-moe", Mode::kBreakable);
  EXPECT_EQ(marks->piecewise_graphs()->runner().stats().front().segments,
            static_cast<size_t>(c.num_hidden_layers + sparse + 1));
  EXPECT_EQ(marks->decode_graphs()->runner().stats().front().segments, static_cast<size_t>(sparse + 1 + 1));
}

namespace {

// Router logits [T, E] whose row t prefers expert prefs[t] strongly, then the rest in order.
Tensor logits_for(const std::vector<int>& prefs, int experts) {
  std::vector<float> v;
  for (int p : prefs)
    for (int e = 0; e < experts; ++e) v.push_back(e == p ? 8.0f : 0.1f * static_cast<float>(e));
  return from_floats(v, Shape{static_cast<int64_t>(prefs.size()), experts}, DType::F32, Device::cpu());
}

Tensor count_of(int n) { return from_vector(std::vector<int32_t>{n}, Shape{1}, DType::I32, Device::cpu()); }

}  // namespace

// A padded batch (real rows then padding rows that would route elsewhere) groups exactly like
// the real batch alone: per-expert counts equal, padding rows unrouted and combined to zero.
TEST(MoeOps, PaddingRowsNeverRoute) {
  const int E = 8, k = 2;
  std::vector<int> real{1, 3, 3, 6, 0}, padded = real;
  for (int i = 0; i < 11; ++i) padded.push_back(5);
  auto r1 = ops::moe_route(logits_for(real, E), k, true, Tensor());
  auto g1 = ops::moe_group(r1, E);
  auto r2 = ops::moe_route(logits_for(padded, E), k, true, count_of(static_cast<int>(real.size())));
  auto g2 = ops::moe_group(r2, E);
  EXPECT_EQ(to_host_vector<int32_t>(g1.expert_counts), to_host_vector<int32_t>(g2.expert_counts));
  auto ids = to_host_vector<int32_t>(r2.topk_ids);
  auto rows = to_host_vector<int32_t>(g2.slot_rows);
  for (size_t s = real.size() * k; s < ids.size(); ++s) {
    EXPECT_EQ(ids[s], -1);
    EXPECT_EQ(rows[s], -1);
  }
  // Without the count the same padded batch does route its padding rows (the test can fail).
  auto g3 = ops::moe_group(ops::moe_route(logits_for(padded, E), k, true, Tensor()), E);
  EXPECT_NE(to_host_vector<int32_t>(g3.expert_counts), to_host_vector<int32_t>(g1.expert_counts));
}

// Every token to one expert, and tokens spread over all experts: counts, block table and the
// experts/combine output against a float64 evaluation of the block.
TEST(MoeOps, OneExpertAndSpreadBatchesMatchReference) {
  const int E = 4, k = 2, H = 16, I = 8;
  std::vector<float> gu(static_cast<size_t>(E * 2 * I * H)), dn(static_cast<size_t>(E * H * I));
  random_weight_fill("gu", 1, 0, static_cast<int64_t>(gu.size()), gu.data());
  random_weight_fill("dn", 1, 0, static_cast<int64_t>(dn.size()), dn.data());
  for (float& v : gu) v *= 30;
  for (float& v : dn) v *= 30;
  Tensor gate_up = from_floats(gu, Shape{E, 2 * I, H}, DType::F32, Device::cpu());
  Tensor down = from_floats(dn, Shape{E, H, I}, DType::F32, Device::cpu());
  for (const std::vector<int>& prefs : {std::vector<int>(20, 2), std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0, 1}}) {
    const int T = static_cast<int>(prefs.size());
    std::vector<float> xv(static_cast<size_t>(T * H));
    random_weight_fill("x", static_cast<uint64_t>(T), 0, T * H, xv.data());
    Tensor x = from_floats(xv, Shape{T, H}, DType::F32, Device::cpu());
    auto r = ops::moe_route(logits_for(prefs, E), k, true, Tensor());
    auto g = ops::moe_group(r, E);
    Tensor y = ops::moe_combine(ops::moe_experts(x, g, gate_up, down), g, r);
    auto counts = to_host_vector<int32_t>(g.expert_counts);
    auto ids = to_host_vector<int32_t>(r.topk_ids);
    auto w = to_host_vector<float>(r.topk_weights);
    std::vector<int32_t> want_counts(E, 0);
    for (int32_t id : ids) ++want_counts[static_cast<size_t>(id)];
    EXPECT_EQ(counts, want_counts);
    if (T == 20) EXPECT_EQ(counts[2], 20);  // every token's first choice
    auto blocks = to_host_vector<int32_t>(g.block_expert);
    int used = 0;
    for (int32_t b : blocks) used += b >= 0;
    int want_blocks = 0;
    for (int32_t n : want_counts) want_blocks += (n + 15) / 16;
    EXPECT_EQ(used, want_blocks);
    // The GEMV kernels launch min(blocks, slots) blocks: used blocks must come first.
    for (int b = 0; b < static_cast<int>(blocks.size()); ++b) EXPECT_EQ(blocks[static_cast<size_t>(b)] >= 0, b < used);
    auto got = to_host_floats(y);
    for (int t = 0; t < T; ++t) {
      EXPECT_EQ(ids[static_cast<size_t>(t * k)], prefs[static_cast<size_t>(t)]);
      EXPECT_NEAR(w[static_cast<size_t>(t * k)] + w[static_cast<size_t>(t * k + 1)], 1.0f, 1e-6);
      for (int h = 0; h < H; ++h) {
        double want = 0;
        for (int j = 0; j < k; ++j) {
          const int e = ids[static_cast<size_t>(t * k + j)];
          double acc = 0;
          for (int i = 0; i < I; ++i) {
            double gg = 0, uu = 0;
            for (int q = 0; q < H; ++q) {
              gg += static_cast<double>(gu[static_cast<size_t>((e * 2 * I + i) * H + q)]) * xv[static_cast<size_t>(t * H + q)];
              uu += static_cast<double>(gu[static_cast<size_t>((e * 2 * I + I + i) * H + q)]) * xv[static_cast<size_t>(t * H + q)];
            }
            acc += gg / (1 + std::exp(-gg)) * uu * dn[static_cast<size_t>((e * H + h) * I + i)];
          }
          want += w[static_cast<size_t>(t * k + j)] * acc;
        }
        EXPECT_NEAR(got[static_cast<size_t>(t * H + h)], want, 1e-5 + 1e-4 * std::fabs(want)) << "token " << t;
      }
    }
  }
}

// Decode batches take the GEMV kernels, prefill-sized ones the tiled GEMMs; on the CPU either
// choice runs the one reference.
TEST(MoeOps, GemvRuleAndKernelChoiceOnCpu) {
  if (std::getenv("GRAPHRT_MOE_GEMV_MAX_SLOTS")) GTEST_SKIP() << "GRAPHRT_MOE_GEMV_MAX_SLOTS overrides the rule";
  EXPECT_EQ(ops::moe_gemv_max_slots(128), 256);  // qwen3-30b-a3b (top-8): up to 32 tokens
  EXPECT_EQ(ops::moe_gemv_max_slots(8), 16);      // Mixtral (top-2): up to 8 tokens
  const int E = 4, k = 2, H = 16, I = 8, T = 5;
  std::vector<float> gu(static_cast<size_t>(E * 2 * I * H)), dn(static_cast<size_t>(E * H * I)),
      xv(static_cast<size_t>(T * H));
  random_weight_fill("gu", 1, 0, static_cast<int64_t>(gu.size()), gu.data());
  random_weight_fill("dn", 1, 0, static_cast<int64_t>(dn.size()), dn.data());
  random_weight_fill("x", 1, 0, static_cast<int64_t>(xv.size()), xv.data());
  Tensor x = from_floats(xv, Shape{T, H}, DType::F32, Device::cpu());
  Tensor gate_up = from_floats(gu, Shape{E, 2 * I, H}, DType::F32, Device::cpu());
  Tensor down = from_floats(dn, Shape{E, H, I}, DType::F32, Device::cpu());
  auto r = ops::moe_route(logits_for({0, 1, 2, 3, 1}, E), k, true, Tensor());
  auto g = ops::moe_group(r, E);
  std::vector<std::vector<float>> outs;
  for (auto kernel : {ops::MoeExpertsKernel::kAuto, ops::MoeExpertsKernel::kGemv, ops::MoeExpertsKernel::kTiled})
    outs.push_back(to_host_floats(ops::moe_combine(ops::moe_experts(x, g, gate_up, down, kernel), g, r)));
  EXPECT_EQ(outs[1], outs[0]);
  EXPECT_EQ(outs[2], outs[0]);
}

// The fused ops (moe_route_group, moe_experts_combine) give what the separate ops give, bit for
// bit on the CPU (one reference), with padding rows, and reject mismatched router weights.
TEST(MoeOps, FusedOpsEqualSeparateOps) {
  const int E = 6, k = 2, H = 16, I = 8, T = 7;
  std::vector<float> gu(static_cast<size_t>(E * 2 * I * H)), dn(static_cast<size_t>(E * H * I)),
      rw(static_cast<size_t>(E * H)), xv(static_cast<size_t>(T * H));
  random_weight_fill("gu", 2, 0, static_cast<int64_t>(gu.size()), gu.data());
  random_weight_fill("dn", 2, 0, static_cast<int64_t>(dn.size()), dn.data());
  random_weight_fill("router", 2, 0, static_cast<int64_t>(rw.size()), rw.data());
  random_weight_fill("x", 2, 0, static_cast<int64_t>(xv.size()), xv.data());
  for (float& v : rw) v *= 50;
  const Device cpu = Device::cpu();
  Tensor x = from_floats(xv, Shape{T, H}, DType::F32, cpu);
  Tensor router = from_floats(rw, Shape{E, H}, DType::F32, cpu);
  Tensor gate_up = from_floats(gu, Shape{E, 2 * I, H}, DType::F32, cpu);
  Tensor down = from_floats(dn, Shape{E, H, I}, DType::F32, cpu);
  for (int real : {T, 3}) {
    ops::MoeRouted f = ops::moe_route_group(x, router, k, true, count_of(real), ops::MoeFusedChoice::kFused);
    Tensor logits = ops::linear(x, router, Tensor(), DType::F32);
    auto r = ops::moe_route(logits, k, true, count_of(real));
    auto g = ops::moe_group(r, E);
    EXPECT_EQ(to_host_floats(f.logits), to_host_floats(logits));
    EXPECT_EQ(to_host_vector<int32_t>(f.routing.topk_ids), to_host_vector<int32_t>(r.topk_ids));
    EXPECT_EQ(to_host_vector<float>(f.routing.topk_weights), to_host_vector<float>(r.topk_weights));
    EXPECT_EQ(to_host_vector<int32_t>(f.groups.expert_counts), to_host_vector<int32_t>(g.expert_counts));
    EXPECT_EQ(to_host_vector<int32_t>(f.groups.slot_rows), to_host_vector<int32_t>(g.slot_rows));
    const auto ids = to_host_vector<int32_t>(r.topk_ids);
    const std::set<int32_t> experts(ids.begin(), ids.end());
    EXPECT_GT(experts.size(), 2u) << "the routing should spread over several experts";
    auto got =
        to_host_floats(ops::moe_experts_combine(x, f.groups, f.routing, gate_up, down, ops::MoeFusedChoice::kFused));
    auto want = to_host_floats(ops::moe_combine(ops::moe_experts(x, g, gate_up, down), g, r));
    EXPECT_EQ(got, want) << "real " << real;
    for (size_t i = static_cast<size_t>(real) * H; i < got.size(); ++i) ASSERT_EQ(got[i], 0.0f) << "padding row";
  }
  Tensor bad = from_floats(std::vector<float>(static_cast<size_t>(E * (H + 1))), Shape{E, H + 1}, DType::F32, cpu);
  EXPECT_NE(error_of([&] { ops::moe_route_group(x, bad, k, true, Tensor()); }).find("router_weight must be"),
            std::string::npos);
  if (!std::getenv("GRAPHRT_MOE_FUSED_MAX_TOKENS")) EXPECT_EQ(ops::moe_fused_max_tokens(), 1);  // measured rule
}

// The one-token add + norm of the MoE block's down kernel (moe_experts_combine_add_norm_) is a
// CUDA path: on the CPU the rule says no, the model keeps the block's output and the fused
// add+norm, and calling the op anyway is an error that names the rule.
TEST(MoeOps, AddNormIsCudaOnlyOnCpu) {
  const int E = 4, k = 2, H = 16, I = 8;
  const Device cpu = Device::cpu();
  Tensor x = from_floats(std::vector<float>(H, 0.5f), Shape{1, H}, DType::F32, cpu);
  Tensor gate_up = from_floats(std::vector<float>(static_cast<size_t>(E * 2 * I * H), 0.1f), Shape{E, 2 * I, H},
                               DType::F32, cpu);
  Tensor down = from_floats(std::vector<float>(static_cast<size_t>(E * H * I), 0.1f), Shape{E, H, I}, DType::F32, cpu);
  Tensor nw = from_floats(std::vector<float>(H, 1.0f), Shape{H}, DType::F32, cpu);
  EXPECT_FALSE(ops::moe_experts_add_norm_fusable(x, k, gate_up, down, nw));
  EXPECT_FALSE(ops::moe_experts_add_norm_fusable(x, k, gate_up, down, Tensor()));
  auto r = ops::moe_route(logits_for({1}, E), k, true, Tensor());
  auto g = ops::moe_group(r, E);
  Tensor residual = from_floats(std::vector<float>(H, 1.0f), Shape{1, H}, DType::F32, cpu);
  EXPECT_NE(error_of([&] { ops::moe_experts_combine_add_norm_(x, g, r, gate_up, down, residual, nw, 1e-6f); })
                .find("moe_experts_add_norm_fusable"),
            std::string::npos);
}

TEST(MoeOps, BadArgumentsAreClearErrors) {
  Tensor l = logits_for({0, 1}, 4);
  EXPECT_NE(error_of([&] { ops::moe_route(l, 5, true, Tensor()); }).find("top_k 5 must be in [1, 4]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::moe_route(l, 0, true, Tensor()); }).find("top_k 0"), std::string::npos);
}

namespace {
nlohmann::json qwen3_moe_json() {
  nlohmann::json j = ModelConfig::preset("tiny-qwen3-moe").to_json();
  EXPECT_EQ(j["architectures"][0], "Qwen3MoeForCausalLM");
  return j;
}
}  // namespace

TEST(MoeConfig, ParsesQwen3MoeAndMixtral) {
  for (const char* p : {"tiny-qwen3-moe", "tiny-mixtral", "qwen3-30b-a3b"}) {
    ModelConfig c = ModelConfig::preset(p);
    ModelConfig r = ModelConfig::from_json(c.to_json(), "cfg.json");
    EXPECT_EQ(r.arch, c.arch) << p;
    EXPECT_EQ(r.num_experts, c.num_experts) << p;
    EXPECT_EQ(r.num_experts_per_tok, c.num_experts_per_tok) << p;
    EXPECT_EQ(r.moe_intermediate_size, c.moe_intermediate_size) << p;
    EXPECT_EQ(r.norm_topk_prob, c.norm_topk_prob) << p;
    EXPECT_EQ(r.mlp_only_layers, c.mlp_only_layers) << p;
    EXPECT_EQ(r.num_parameters(), c.num_parameters()) << p;
  }
  ModelConfig big = ModelConfig::preset("qwen3-30b-a3b");
  EXPECT_NEAR(static_cast<double>(big.num_parameters()), 30.5e9, 0.3e9);
  nlohmann::json j = qwen3_moe_json();
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = nlohmann::json::array();
  ModelConfig s = ModelConfig::from_json(j, "cfg.json");
  EXPECT_FALSE(s.is_moe_layer(0));
  EXPECT_TRUE(s.is_moe_layer(1));
  EXPECT_FALSE(s.is_moe_layer(2));
}

TEST(MoeConfig, BadConfigsAreClearErrors) {
  nlohmann::json j = qwen3_moe_json();
  j["num_experts_per_tok"] = 9;
  EXPECT_NE(error_of([&] { ModelConfig::from_json(j, "cfg.json"); })
                .find("'num_experts_per_tok' (9) exceeds the number of experts ('num_experts' = 8)"),
            std::string::npos);
  nlohmann::json m = ModelConfig::preset("tiny-mixtral").to_json();
  m["num_experts_per_tok"] = 5;
  EXPECT_NE(error_of([&] { ModelConfig::from_json(m, "cfg.json"); }).find("'num_local_experts' = 4"),
            std::string::npos);
  m = ModelConfig::preset("tiny-mixtral").to_json();
  m.erase("num_local_experts");
  EXPECT_NE(error_of([&] { ModelConfig::from_json(m, "cfg.json"); }).find("'num_local_experts' is missing"),
            std::string::npos);
  j = qwen3_moe_json();
  j["mlp_only_layers"] = {7};
  EXPECT_NE(error_of([&] { ModelConfig::from_json(j, "cfg.json"); }).find("'mlp_only_layers' lists layer 7"),
            std::string::npos);
}

// A folder written by make-model loads and matches builtin:; a folder missing one expert's
// tensor is an error naming it.
TEST(MoeWeights, FolderLoadsAndMissingExpertIsNamed) {
  namespace fs = std::filesystem;
  const std::string dir = (fs::temp_directory_path() / ("grt_moe_" + std::to_string(::getpid()))).string();
  ModelConfig c = ModelConfig::preset("tiny-mixtral");
  write_random_model(c, dir, 0, DType::BF16);
  auto a = load_model(dir, Device::cpu(), DType::F32, 0, 64);
  auto b = load_model("builtin:tiny-mixtral", Device::cpu(), DType::F32, 0, 64);
  EXPECT_EQ(to_host_floats(a->weights().layers[1].expert_gate_up), to_host_floats(b->weights().layers[1].expert_gate_up));
  EXPECT_EQ(to_host_floats(a->weights().layers[0].expert_down), to_host_floats(b->weights().layers[0].expert_down));
  // One more expert in config.json than the folder holds.
  c.num_experts = 5;
  c.save(dir);
  const std::string err = error_of([&] { load_model(dir, Device::cpu(), DType::F32, 0, 64); });
  EXPECT_NE(err.find("model.layers.0.block_sparse_moe.experts.4.w1.weight"), std::string::npos) << err;
  fs::remove_all(dir);
}

// End to end: the CLI generates the reference's greedy tokens for an MoE preset with and without
// --moe-dispatch-split-op.
TEST(MoeCli, GenerateWithAndWithoutDispatchSplit) {
  ReferenceModel ref(ModelConfig::preset("tiny-mixtral"));
  const std::vector<int32_t> want = ref.greedy({1, 2, 3, 4, 5}, 4);
  for (const std::string flag : {"", " --moe-dispatch-split-op"}) {
    auto r = run_graphrt("generate --model builtin:tiny-mixtral --device cpu --token-ids 1,2,3,4,5 --max-new-tokens 4 "
                         "--json" + flag);
    ASSERT_EQ(r.exit_code, 0) << r.all;
    EXPECT_EQ(nlohmann::json::parse(r.out)["output_ids"].get<std::vector<int32_t>>(), want) << r.out;
  }
}
