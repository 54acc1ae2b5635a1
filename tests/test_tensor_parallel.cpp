// Tensor-parallel sharding in the model layer (issue 16): local sizes and their errors, a rank's
// weights equal to the slices of the full model's (random builtin weights and sharded loading, which
// reads only the rank's bytes), the vocab-parallel embedding and logits ops, and the sharded forward
// of TP 2 and 4 against TP 1: ranks as real processes of the CPU communicator
// (tests/workers/tp_model_worker), and, for more configs cheaply, as threads of a test double.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "error_of.h"
#include "memory/tensor_alloc.h"
#include "model/make_model.h"
#include "model/model_loader.h"
#include "model/weight_spec.h"
#include "ops/copy.h"
#include "ops/embedding.h"
#include "thread_test_communicator.h"
#include "tp_test_util.h"

using namespace grt;
using namespace grt::testing;

namespace {

// Held-out-style configs beside the presets: GQA with KV heads fewer than some tp sizes (so they
// are replicated), tied embeddings with biases (Qwen2), a vocabulary no tp size divides.
ModelConfig gqa_tied_config() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.source = "test:gqa-tied";
  c.arch = Arch::Qwen2;
  c.attention_bias = true;
  c.qk_norm = false;
  c.tie_word_embeddings = true;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 96;
  c.vocab_size = 509;
  c.validate();
  return c;
}
ModelConfig mqa_config() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.source = "test:mqa";
  c.num_key_value_heads = 1;  // every rank of TP 2 or 4 holds the one KV head
  c.vocab_size = 300;
  c.validate();
  return c;
}

std::vector<float> host(const Tensor& t) { return to_host_floats(ops::contiguous(t)); }

// Rank `tp`'s shard must hold exactly the slices of the full (TP 1) weights.
void expect_shard_is_slices(const ModelConfig& c, const ModelWeights& full, const ModelWeights& shard,
                            const TensorParallel& tp) {
  const TpLocalSizes s = tp_local_sizes(c, tp);
  const std::string where = fmt::format("rank {} of {} ({})", tp.rank, tp.size, c.source);
  const int64_t hd = c.head_dim, q = c.q_size(), kv = c.kv_size(), ql = s.q_size(), kvl = s.kv_size();
  const int64_t q0 = s.q_head_start * hd, kv0 = s.kv_head_start * hd;
  auto same = [&](const Tensor& got, const Tensor& want, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what << " " << where;
    EXPECT_EQ(host(got), host(want)) << what << " " << where;
  };
  auto vocab = [&](const Tensor& got, const Tensor& want, const char* what) {
    ASSERT_EQ(got.size(0), s.vocab_rows) << what << " " << where;
    same(got.slice(0, 0, s.vocab_real), want.slice(0, s.vocab_start, s.vocab_start + s.vocab_real), what);
    std::vector<float> pad = host(got.slice(0, s.vocab_real, s.vocab_rows));
    EXPECT_TRUE(std::all_of(pad.begin(), pad.end(), [](float x) { return x == 0.0f; })) << what << " padding " << where;
  };
  vocab(shard.embed, full.embed, "embed");
  vocab(shard.lm_head, full.lm_head, "lm_head");
  if (c.tie_word_embeddings) EXPECT_EQ(shard.lm_head.data(), shard.embed.data()) << "tied lm_head is the embed shard";
  same(shard.final_norm, full.final_norm, "final_norm");
  ASSERT_EQ(shard.layers.size(), full.layers.size());
  for (size_t l = 0; l < full.layers.size(); ++l) {
    const LayerWeights &f = full.layers[l], &w = shard.layers[l];
    const std::string L = fmt::format("layer {} ", l);
    same(w.input_norm, f.input_norm, L + "input_norm");
    same(w.post_norm, f.post_norm, L + "post_norm");
    same(w.qkv.slice(0, 0, ql), f.qkv.slice(0, q0, q0 + ql), L + "q");
    same(w.qkv.slice(0, ql, ql + kvl), f.qkv.slice(0, q + kv0, q + kv0 + kvl), L + "k");
    same(w.qkv.slice(0, ql + kvl, ql + 2 * kvl), f.qkv.slice(0, q + kv + kv0, q + kv + kv0 + kvl), L + "v");
    if (c.attention_bias) {
      same(w.qkv_bias.slice(0, 0, ql), f.qkv_bias.slice(0, q0, q0 + ql), L + "q bias");
      same(w.qkv_bias.slice(0, ql, ql + kvl), f.qkv_bias.slice(0, q + kv0, q + kv0 + kvl), L + "k bias");
      same(w.qkv_bias.slice(0, ql + kvl, ql + 2 * kvl), f.qkv_bias.slice(0, q + kv + kv0, q + kv + kv0 + kvl),
           L + "v bias");
    }
    if (c.qk_norm) {
      same(w.q_norm, f.q_norm, L + "q_norm");
      same(w.k_norm, f.k_norm, L + "k_norm");
    }
    same(w.o_proj, f.o_proj.slice(1, q0, q0 + ql), L + "o_proj");
    if (c.is_moe_layer(static_cast<int>(l))) {
      const int64_t mi = c.moe_intermediate_size, ml = s.moe_intermediate, m0 = s.moe_intermediate_start;
      same(w.router, f.router, L + "router");
      same(w.expert_gate_up.slice(1, 0, ml), f.expert_gate_up.slice(1, m0, m0 + ml), L + "expert gate");
      same(w.expert_gate_up.slice(1, ml, 2 * ml), f.expert_gate_up.slice(1, mi + m0, mi + m0 + ml), L + "expert up");
      same(w.expert_down, f.expert_down.slice(2, m0, m0 + ml), L + "expert down");
    } else {
      const int64_t i = c.intermediate_size, il = s.intermediate, i0 = s.intermediate_start;
      same(w.gate_up.slice(0, 0, il), f.gate_up.slice(0, i0, i0 + il), L + "gate");
      same(w.gate_up.slice(0, il, 2 * il), f.gate_up.slice(0, i + i0, i + i0 + il), L + "up");
      same(w.down, f.down.slice(1, i0, i0 + il), L + "down");
    }
  }
}

// Each rank a thread with its own CPU stream and a test-double communicator; returns every
// rank's scenario logits.
template <class MakeModel>
std::vector<std::vector<float>> run_group(int size, MakeModel make) {
  auto group = std::make_shared<ThreadTestGroup>(size);
  std::vector<std::vector<float>> out(static_cast<size_t>(size));
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> ranks;
  for (int r = 0; r < size; ++r)
    ranks.emplace_back([&, r] {
      std::shared_ptr<Stream> stream = new_stream(Device::cpu());
      StreamGuard guard(*stream);
      try {
        std::shared_ptr<DecoderModel> m = make(TensorParallel{r, size}, std::make_shared<ThreadTestCommunicator>(group, r));
        out[static_cast<size_t>(r)] = tp_scenario_logits(*m);
        stream->synchronize();
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();  // a failing rank leaves the others waiting: the test times out
      }
    });
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < size; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  return out;
}

std::shared_ptr<DecoderModel> model_of(const ModelConfig& c, const TensorParallel& tp,
                                       std::shared_ptr<Communicator> comm) {
  return std::make_shared<DecoderModel>(c, random_weights(c, Device::cpu(), DType::F32, 0, tp), Device::cpu(),
                                        DType::F32, 64, tp, std::move(comm));
}

void expect_group_matches_tp1(const ModelConfig& c, int size) {
  const std::vector<float> want = tp_scenario_logits(*model_of(c, {}, nullptr));
  const std::vector<std::vector<float>> got =
      run_group(size, [&](TensorParallel tp, std::shared_ptr<Communicator> comm) { return model_of(c, tp, comm); });
  for (int r = 0; r < size; ++r) {
    const std::vector<float>& g = got[static_cast<size_t>(r)];
    EXPECT_LE(tp_max_rel(g, want), 1e-5) << c.source << " TP " << size << " rank " << r;
    EXPECT_EQ(g, got[0]) << "every rank gets the same logits, rank " << r;
  }
}

}  // namespace

TEST(TensorParallelSizes, LocalExtents) {
  const ModelConfig tiny = ModelConfig::preset("tiny");  // 4 q heads, 2 KV heads, I 128, V 512
  TpLocalSizes one = tp_local_sizes(tiny, {});
  EXPECT_EQ(one.q_heads, 4);
  EXPECT_EQ(one.kv_heads, 2);
  EXPECT_EQ(one.intermediate, 128);
  EXPECT_EQ(one.vocab_rows, 512);
  EXPECT_EQ(one.vocab_real, 512);
  TpLocalSizes r1 = tp_local_sizes(tiny, {1, 2});
  EXPECT_EQ(r1.q_heads, 2);
  EXPECT_EQ(r1.q_head_start, 2);
  EXPECT_EQ(r1.kv_heads, 1);
  EXPECT_EQ(r1.kv_head_start, 1);
  EXPECT_EQ(r1.intermediate, 64);
  EXPECT_EQ(r1.intermediate_start, 64);
  EXPECT_EQ(r1.vocab_start, 256);
  // TP 4 over 2 KV heads: one each, ranks 0-1 share head 0 and ranks 2-3 head 1.
  for (int r = 0; r < 4; ++r) {
    TpLocalSizes s = tp_local_sizes(tiny, {r, 4});
    EXPECT_EQ(s.q_heads, 1);
    EXPECT_EQ(s.kv_heads, 1);
    EXPECT_EQ(s.kv_head_start, r / 2);
    EXPECT_EQ(tp_local_kv_heads(tiny, {r, 4}), 1);
  }
  // A vocabulary of 509 over 4 ranks: 128 rows each, the last holds 125 real ones.
  const ModelConfig g = gqa_tied_config();
  TpLocalSizes last = tp_local_sizes(g, {3, 4});
  EXPECT_EQ(last.vocab_rows, 128);
  EXPECT_EQ(last.vocab_start, 384);
  EXPECT_EQ(last.vocab_real, 125);
  const ModelConfig moe = ModelConfig::preset("tiny-qwen3-moe");
  EXPECT_EQ(tp_local_sizes(moe, {1, 4}).moe_intermediate, 8);
  EXPECT_EQ(tp_local_sizes(moe, {1, 4}).moe_intermediate_start, 8);
  EXPECT_EQ(allowed_tp_sizes(tiny), (std::vector<int>{1, 2, 4}));
}

TEST(TensorParallelSizes, ErrorsNameTheFieldAndTheAllowedSizes) {
  const ModelConfig tiny = ModelConfig::preset("tiny");
  std::string e = error_of([&] { tp_local_sizes(tiny, {0, 3}); });
  EXPECT_NE(e.find("--tp-size 3"), std::string::npos) << e;
  EXPECT_NE(e.find("num_attention_heads 4 does not divide by 3"), std::string::npos) << e;
  EXPECT_NE(e.find("allows: 1, 2, 4"), std::string::npos) << e;
  ModelConfig c = gqa_tied_config();  // 8 q heads, 2 KV heads
  c.intermediate_size = 100;
  e = error_of([&] { tp_local_sizes(c, {0, 8}); });
  EXPECT_NE(e.find("intermediate_size 100 does not divide by 8"), std::string::npos) << e;
  c = ModelConfig::preset("tiny-qwen3-moe");
  c.moe_intermediate_size = 18;
  e = error_of([&] { tp_local_sizes(c, {0, 4}); });
  EXPECT_NE(e.find("moe_intermediate_size 18 does not divide by 4"), std::string::npos) << e;
  c = ModelConfig::preset("tiny");
  c.num_attention_heads = 12;
  c.num_key_value_heads = 3;
  e = error_of([&] { tp_local_sizes(c, {0, 4}); });  // KV heads 3 < 4, and 4 is not a multiple of 3
  EXPECT_NE(e.find("num_key_value_heads 3"), std::string::npos) << e;
  e = error_of([&] { tp_local_sizes(tiny, {2, 2}); });
  EXPECT_NE(e.find("rank 2 of tp size 2"), std::string::npos) << e;
  e = error_of([&] { load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 64, {0, 3}); });
  EXPECT_NE(e.find("loading model builtin:tiny"), std::string::npos) << e;
  EXPECT_NE(e.find("num_attention_heads"), std::string::npos) << e;
  // TP 2 without a communicator is refused, naming the rank.
  e = error_of([&] { load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 64, {1, 2}); });
  EXPECT_NE(e.find("needs a communicator"), std::string::npos) << e;
}

TEST(TensorParallelOps, MaskedEmbeddingAndUnshardedColumns) {
  // The shard of ids [4, 7) of a 3 x 2 table: ids outside give zero rows.
  Tensor table = from_floats({1, 2, 3, 4, 5, 6}, Shape{3, 2}, DType::F32, Device::cpu());
  Tensor ids = from_vector<int32_t>({4, 0, 6, 7, 5, -1}, Shape{6}, DType::I32, Device::cpu());
  EXPECT_EQ(to_host_floats(ops::embedding(ids, table, 4)), (std::vector<float>{1, 2, 0, 0, 5, 6, 0, 0, 3, 4, 0, 0}));
  EXPECT_EQ(to_host_floats(ops::embedding(ids, table, 0)), (std::vector<float>{0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0}));
  // Three parts of [2, 3] gathered along rows; 8 columns keep two whole parts and 2 of the third.
  std::vector<float> g(18);
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i);
  Tensor gathered = from_floats(g, Shape{6, 3}, DType::F32, Device::cpu());
  EXPECT_EQ(to_host_floats(ops::unshard_columns(gathered, 3, 8)),
            (std::vector<float>{0, 1, 2, 6, 7, 8, 12, 13, 3, 4, 5, 9, 10, 11, 15, 16}));
  EXPECT_EQ(to_host_floats(ops::unshard_columns(gathered, 3, 9)),
            (std::vector<float>{0, 1, 2, 6, 7, 8, 12, 13, 14, 3, 4, 5, 9, 10, 11, 15, 16, 17}));
  EXPECT_NE(error_of([&] { ops::unshard_columns(gathered, 4, 8); }).find("unshard_columns"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::unshard_columns(gathered, 3, 10); }).find("do not fit"), std::string::npos);
}

TEST(TensorParallelWeights, RandomShardsAreSlicesOfTheFullModel) {
  for (const ModelConfig& c : {ModelConfig::preset("tiny"), gqa_tied_config(), mqa_config(),
                               ModelConfig::preset("tiny-qwen3-moe"), ModelConfig::preset("tiny-mixtral")}) {
    const ModelWeights full = random_weights(c, Device::cpu(), DType::F32, 7);
    for (int size : {2, 4})
      for (int r = 0; r < size; ++r) {
        const TensorParallel tp{r, size};
        expect_shard_is_slices(c, full, random_weights(c, Device::cpu(), DType::F32, 7, tp), tp);
      }
  }
}

TEST(TensorParallelWeights, ShardedLoadingReadsOnlyTheRanksSlices) {
  const std::string dir = ::testing::TempDir() + "/tp_sharded_load";
  for (const ModelConfig& c : {ModelConfig::preset("tiny"), gqa_tied_config(), ModelConfig::preset("tiny-qwen3-moe")}) {
    std::filesystem::remove_all(dir);
    // Several safetensors shards, so slices are read across files.
    write_random_model(c, dir, 3, DType::BF16, 64 << 10);
    uint64_t all_bytes = 0;
    const ModelWeights full = load_weights(c, dir, Device::cpu(), DType::F32, {}, &all_bytes);
    // What every rank reads whole: the norms and routers (and here no replicated KV heads).
    uint64_t replicated = 0;
    for (const ExpectedWeight& e : weight_spec(c).tensors)
      if (e.shape.rank() == 1 && e.name.find("bias") == std::string::npos) replicated += 2 * e.shape.numel();
      else if (e.name.find("gate.weight") != std::string::npos && e.name.find("experts") == std::string::npos)
        replicated += 2 * e.shape.numel();  // the MoE router
    uint64_t sum = 0;
    for (int r = 0; r < 2; ++r) {
      uint64_t bytes = 0;
      const ModelWeights shard = load_weights(c, dir, Device::cpu(), DType::F32, {r, 2}, &bytes);
      expect_shard_is_slices(c, full, shard, {r, 2});
      EXPECT_LT(bytes, all_bytes * 55 / 100) << c.source << " rank " << r;
      sum += bytes;
    }
    // Together the ranks read every sharded byte once and the replicated ones twice.
    EXPECT_EQ(sum, all_bytes + replicated) << c.source;
  }
  std::filesystem::remove_all(dir);
}

TEST(TensorParallelWeights, ReadBlockReadsRowsAndColumns) {
  const std::string dir = ::testing::TempDir() + "/tp_read_block";
  std::filesystem::remove_all(dir);
  const ModelConfig c = ModelConfig::preset("tiny");
  write_random_model(c, dir, 0, DType::F32);
  SafetensorsFolder folder(dir);
  const std::string name = "model.layers.0.self_attn.o_proj.weight";  // [64, 64]
  const std::vector<float> all = folder.read_floats(name);
  EXPECT_EQ(folder.bytes_read(), 64u * 64 * 4);
  std::vector<float> block(3 * 5);
  folder.read_block_into(name, 10, 3, 20, 5, block.data(), DType::F32);
  EXPECT_EQ(folder.bytes_read(), 64u * 64 * 4 + 3 * 5 * 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(block[static_cast<size_t>(i * 5 + j)], all[static_cast<size_t>((10 + i) * 64 + 20 + j)]);
  std::string e = error_of([&] { folder.read_block_into(name, 62, 3, 0, 64, block.data(), DType::F32); });
  EXPECT_NE(e.find(name), std::string::npos) << e;
  EXPECT_NE(e.find("leaves"), std::string::npos) << e;
  std::filesystem::remove_all(dir);
}

TEST(TensorParallelForward, ShardedLogitsMatchTp1) {
  for (const ModelConfig& c : {ModelConfig::preset("tiny"), gqa_tied_config(), mqa_config()})
    for (int size : {2, 4}) expect_group_matches_tp1(c, size);
}

TEST(TensorParallelForward, MoeShardedLogitsMatchTp1) {
  expect_group_matches_tp1(ModelConfig::preset("tiny-qwen3-moe"), 2);
  expect_group_matches_tp1(ModelConfig::preset("tiny-mixtral"), 4);
}

TEST(TensorParallelForward, BuiltinThroughLoadModel) {
  const std::vector<float> want = tp_scenario_logits(*load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 64));
  const auto got = run_group(2, [](TensorParallel tp, std::shared_ptr<Communicator> comm) {
    return load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 64, tp, std::move(comm));
  });
  for (const std::vector<float>& g : got) EXPECT_LE(tp_max_rel(g, want), 1e-5);
}

// ---- real processes ------------------------------------------------------------------------------

namespace {

// Runs tp_model_worker as rank 0 of a group of `size` (it spawns the others) under `timeout 60`;
// returns every rank's logits (empty on failure, with the group's output in the test log).
std::vector<std::vector<float>> run_worker_group(const std::string& model, int size) {
  static int counter = 0;
  const std::string prefix =
      ::testing::TempDir() + "tp_model_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  const std::string cmd = "timeout 60 " + std::string(GRAPHRT_TP_MODEL_WORKER) + " '" + model + "' " + prefix +
                          " --tp " + std::to_string(size) + " >" + prefix + ".log 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream log(prefix + ".log");
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << text;
  std::vector<std::vector<float>> out;
  for (int r = 0; r < size; ++r) {
    const std::string file = prefix + ".rank" + std::to_string(r);
    std::ifstream f(file, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    out.push_back(std::move(v));
    std::filesystem::remove(file);
  }
  std::filesystem::remove(prefix + ".log");
  return out;
}

void expect_processes_match_tp1(const std::string& model, int size) {
  const std::vector<float> want = tp_scenario_logits(*load_model(model, Device::cpu(), DType::F32, 0, 64));
  const std::vector<std::vector<float>> got = run_worker_group(model, size);
  ASSERT_EQ(got.size(), static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const std::vector<float>& g = got[static_cast<size_t>(r)];
    ASSERT_EQ(g.size(), want.size()) << model << " TP " << size << " rank " << r;
    EXPECT_LE(tp_max_rel(g, want), 1e-5) << model << " TP " << size << " rank " << r;
    EXPECT_EQ(g, got[0]) << "every rank gets the same logits, rank " << r;
  }
}

}  // namespace

// Ranks as processes of the real CPU communicator, loading their shards themselves: a builtin
// preset (random weights) and a make-model folder of a held-out-style config (GQA with KV heads
// replicated at TP 4, tied embeddings, biases, a vocabulary no tp size divides), and a tiny MoE.
TEST(TensorParallelProcesses, ShardedLogitsMatchTp1) {
  expect_processes_match_tp1("builtin:tiny", 2);
  expect_processes_match_tp1("builtin:tiny", 4);
  const std::string dir = ::testing::TempDir() + "/tp_processes_gqa_tied";
  std::filesystem::remove_all(dir);
  write_random_model(gqa_tied_config(), dir, 5, DType::BF16);
  expect_processes_match_tp1(dir, 2);
  expect_processes_match_tp1(dir, 4);
  std::filesystem::remove_all(dir);
  expect_processes_match_tp1("builtin:tiny-qwen3-moe", 2);
}
