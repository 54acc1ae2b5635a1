// The runtime's tensor-parallel control path, in one process: the binary form of a ForwardBatch,
// the pool journal rank 0's followers replay, a leader and a follower in two threads (rank 0
// sends, the follower runs the same batches on the same slots, stops when told, fails when rank
// 0 fails), and capture agreement (a shape another rank lacks is dropped here too).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "device/stream.h"
#include "error_of.h"
#include "runtime/engine.h"
#include "runtime/forward_batch_wire.h"
#include "runtime/pool_journal.h"
#include "runtime_test_util.h"
#include "thread_group.h"

namespace grt {
namespace {

using testing::error_of;

ForwardBatch sample_batch() {
  ForwardBatch b;
  b.mode = ForwardMode::EXTEND;
  b.return_all_logits = true;
  b.input_ids = {5, 6, 7, 8, 9};
  b.positions = {0, 1, 2, 3, 0};
  b.out_cache_loc = {11, 12, 13, 14, 20};
  b.req_pool_indices = {3, 1};
  b.seq_lens = {4, 1};
  b.prefix_lens = {0, 0};
  b.extend_lens = {4, 1};
  b.extend_start_loc = {0, 4};
  b.sample_steps = {0, 2};
  b.logit_requests = {1};
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = -1;
  p.top_p = 0.9f;
  p.seed = SamplingParams::kMaxSeed;
  p.min_p = 0.05f;
  p.frequency_penalty = -1.5f;
  p.presence_penalty = 0.25f;
  p.repetition_penalty = 1.1f;
  b.sampling = {SamplingParams{}, p};
  return b;
}

void expect_same(const ForwardBatch& a, const ForwardBatch& b) {
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.return_all_logits, b.return_all_logits);
  EXPECT_EQ(a.input_ids, b.input_ids);
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_EQ(a.out_cache_loc, b.out_cache_loc);
  EXPECT_EQ(a.req_pool_indices, b.req_pool_indices);
  EXPECT_EQ(a.seq_lens, b.seq_lens);
  EXPECT_EQ(a.prefix_lens, b.prefix_lens);
  EXPECT_EQ(a.extend_lens, b.extend_lens);
  EXPECT_EQ(a.extend_start_loc, b.extend_start_loc);
  EXPECT_EQ(a.sample_steps, b.sample_steps);
  EXPECT_EQ(a.logit_requests, b.logit_requests);
  ASSERT_EQ(a.sampling.size(), b.sampling.size());
  for (size_t i = 0; i < a.sampling.size(); ++i) {
    const SamplingParams &x = a.sampling[i], &y = b.sampling[i];
    EXPECT_EQ(x.temperature, y.temperature);
    EXPECT_EQ(x.top_k, y.top_k);
    EXPECT_EQ(x.top_p, y.top_p);
    EXPECT_EQ(x.seed, y.seed);
    EXPECT_EQ(x.min_p, y.min_p);
    EXPECT_EQ(x.frequency_penalty, y.frequency_penalty);
    EXPECT_EQ(x.presence_penalty, y.presence_penalty);
    EXPECT_EQ(x.repetition_penalty, y.repetition_penalty);
  }
}

TEST(ForwardBatchWire, RoundTripsEveryField) {
  for (ForwardMode mode : {ForwardMode::EXTEND, ForwardMode::DECODE}) {
    ForwardBatch b = sample_batch();
    b.mode = mode;
    std::vector<uint8_t> bytes;
    ByteWriter w(bytes);
    encode_forward_batch(b, w);
    ByteReader r(bytes, "test message");
    const ForwardBatch back = decode_forward_batch(r);
    EXPECT_TRUE(r.at_end());
    expect_same(b, back);
  }
  // An empty batch too.
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  encode_forward_batch(ForwardBatch{}, w);
  ByteReader r(bytes, "test message");
  expect_same(ForwardBatch{}, decode_forward_batch(r));
}

TEST(ForwardBatchWire, TruncatedOrCorruptMessagesAreErrors) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  encode_forward_batch(sample_batch(), w);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{9}, bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> part(bytes.begin(), bytes.begin() + static_cast<int64_t>(cut));
    ByteReader r(part, "test message");
    EXPECT_NE(error_of([&] { decode_forward_batch(r); }).find("test message"), std::string::npos) << cut;
  }
  std::vector<uint8_t> bad = bytes;
  bad[0] = 9;  // not a forward mode
  ByteReader r(bad, "test message");
  EXPECT_NE(error_of([&] { decode_forward_batch(r); }).find("forward mode 9"), std::string::npos);
  // A length field claiming more elements than the message holds.
  std::vector<uint8_t> huge = bytes;
  const uint64_t n = uint64_t{1} << 60;
  std::memcpy(huge.data() + 2, &n, sizeof n);
  ByteReader h(huge, "test message");
  EXPECT_NE(error_of([&] { decode_forward_batch(h); }).find("input_ids"), std::string::npos);
}

TEST(PoolJournal, ReplayMakesAnotherRanksPoolsIdentical) {
  const Device d = Device::cpu();
  ReqToTokenPool req_a(4, 16, d), req_b(4, 16, d);
  TokenToKVPool kv_a(1, 40, 4, DType::F32, d), kv_b(1, 40, 4, DType::F32, d);
  PoolJournal j;
  req_a.set_journal(&j);
  kv_a.set_journal(&j);
  {
    PoolJournal::Pause pause(&j);
    (void)kv_a.alloc(1);  // work each rank does by itself: not recorded
    kv_b.alloc(1);
  }
  const int s0 = req_a.alloc(), s1 = req_a.alloc();
  const auto k0 = kv_a.alloc(5), k1 = kv_a.alloc(3);
  req_a.write(s0, 0, k0);
  req_a.write(s1, 0, k1);
  kv_a.free({k0[1], k0[3]});
  req_a.free(s0);
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  j.take(w);
  ByteReader r(bytes, "journal");
  PoolJournal::apply(r, req_b, kv_b);
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(req_b.available(), req_a.available());
  EXPECT_EQ(kv_b.available(), kv_a.available());
  for (int s = 0; s < 4; ++s) EXPECT_EQ(req_b.in_use(s), req_a.in_use(s)) << s;
  for (int s = 0; s < 40; ++s) EXPECT_EQ(kv_b.in_use(s), kv_a.in_use(s)) << s;
  EXPECT_EQ(to_host_vector<int32_t>(req_b.table()), to_host_vector<int32_t>(req_a.table()));
  // take() forgot what it sent: a second one replays nothing.
  std::vector<uint8_t> again;
  ByteWriter w2(again);
  j.take(w2);
  ByteReader r2(again, "journal");
  const int64_t free_kv = kv_b.available();
  PoolJournal::apply(r2, req_b, kv_b);
  EXPECT_EQ(kv_b.available(), free_kv);
  req_a.set_journal(nullptr);
  kv_a.set_journal(nullptr);
  EXPECT_EQ(req_b.alloc(), req_a.alloc());  // the next allocations agree too
  EXPECT_EQ(kv_b.alloc(6), kv_a.alloc(6));
}

TEST(PoolJournal, DivergedPoolsAreAnError) {
  const Device d = Device::cpu();
  ReqToTokenPool req_a(4, 16, d), req_b(4, 16, d);
  TokenToKVPool kv_a(1, 40, 4, DType::F32, d), kv_b(1, 40, 4, DType::F32, d);
  PoolJournal j;
  kv_a.set_journal(&j);
  kv_a.alloc(3);
  kv_b.alloc(1);  // b is not where a was
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  j.take(w);
  ByteReader r(bytes, "journal");
  EXPECT_NE(error_of([&] { PoolJournal::apply(r, req_b, kv_b); }).find("diverged"), std::string::npos);
}

// Joins a rank thread on every exit path of the test (an exception in the leader's part too).
struct Joined {
  std::thread& t;
  ~Joined() {
    if (t.joinable()) t.join();
  }
};

std::vector<GenerateRequest> some_requests() {
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p;
    for (int t = 0; t < 5 + 3 * i; ++t) p.push_back((t * 7 + i * 13) % 200 + 1);
    reqs.push_back({p, 5, {}});
  }
  return reqs;
}

ModelRunnerOptions eager_options(std::shared_ptr<Communicator> comm) {
  ModelRunnerOptions o;
  o.max_running_requests = 4;
  o.max_context = 64;
  o.max_total_tokens = 256;
  o.disable_cuda_graph = true;
  o.disable_piecewise_cuda_graph = true;
  o.capture_progress = false;
  o.communicator = std::move(comm);
  return o;
}

// Leader and follower in two threads over the same (unsharded) model: the follower must run
// every batch the leader runs, on the same slots — its KV cache ends up bitwise the leader's.
TEST(TpRuntime, FollowerRunsTheLeadersBatchesOnTheSameSlotsAndStops) {
  testing::ThreadGroup group(2);
  auto model = load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 64);
  std::vector<float> follower_kv;
  std::string follower_error = "not run";
  std::thread follower([&] {
    follower_error = error_of([&] {
      auto stream = new_stream(Device::cpu());  // each rank thread on its own stream, as in its own process
      StreamGuard on(*stream);
      ModelRunner r(model, eager_options(group.rank(1)));
      EXPECT_FALSE(r.is_leader());
      EXPECT_NE(error_of([&] { r.forward(ForwardBatch{}); }).find("only follow"), std::string::npos);
      r.follow();
      follower_kv = to_host_floats(r.kv_pool().layers()[0].k);
    });
  });
  Joined joined{follower};
  std::vector<std::vector<int32_t>> got;
  std::vector<float> leader_kv;
  {
    auto stream = new_stream(Device::cpu());
    StreamGuard on(*stream);
    ModelRunner r(model, eager_options(group.rank(0)));
    EXPECT_TRUE(r.is_leader());
    EXPECT_NE(error_of([&] { r.follow(); }).find("ranks > 0"), std::string::npos);
    Engine e(r);
    got = e.generate(some_requests());
    (void)e.score({{1, 2, 3}});
    leader_kv = to_host_floats(r.kv_pool().layers()[0].k);
  }  // the destructor stops the follower
  follower.join();
  EXPECT_EQ(follower_error, "");
  EXPECT_EQ(follower_kv, leader_kv);
  auto alone = testing::tiny_runner(Device::cpu(), 4, 64, 256);
  EXPECT_EQ(Engine(*alone).generate(some_requests()), got);
}

TEST(TpRuntime, AFailingLeaderFailsItsFollowersWithItsMessage) {
  testing::ThreadGroup group(2);
  auto model = load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 64);
  std::string follower_error;
  std::thread follower([&] {
    follower_error = error_of([&] {
      auto stream = new_stream(Device::cpu());  // each rank thread on its own stream, as in its own process
      StreamGuard on(*stream);
      ModelRunner r(model, eager_options(group.rank(1)));
      r.follow();
    });
  });
  Joined joined{follower};
  {
    auto stream = new_stream(Device::cpu());
    StreamGuard on(*stream);
    ModelRunner r(model, eager_options(group.rank(0)));
    Engine(r).generate({some_requests()[0]});
    r.stop_followers("the scheduler hit a wall");
    r.stop_followers();  // once only
  }
  follower.join();
  EXPECT_NE(follower_error.find("rank 0 stopped the tensor-parallel group with an error: the scheduler hit a wall"),
            std::string::npos)
      << follower_error;
}

// Capture in lockstep: the other rank lacks decode batch size 4, piecewise 16 tokens and the full
// extend graph of 32, so this rank drops them too and their batches run eagerly (or on the
// piecewise graph); the rest stay on graphs.
TEST(TpRuntime, ShapesAnotherRankLacksAreDroppedOnEveryRank) {
  auto comm = std::make_shared<testing::RiggedPeer>([](int, const std::vector<int64_t>& mine) {
    std::vector<int64_t> peer = mine;
    if (mine.size() == 4) peer[2] = 0;  // decode {1, 2, 4, 8}: 4 missing there
    if (mine.size() == 3) peer[1] = 0;  // piecewise {8, 16, 32}: 16 missing there
    if (mine.size() == 2) peer[1] = 0;  // full extend {16, 32} (above the rows' 8): 32 missing there
    return peer;
  });
  ModelRunnerOptions o = testing::small_graph_options();
  o.communicator = comm;
  ModelRunner r(load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 64), o);
  EXPECT_EQ(comm->barriers, 3);  // before each capture: decode, piecewise, full extend
  ASSERT_TRUE(r.decode_graphs() && r.piecewise_graphs() && r.full_extend_graphs());
  const ShapeGraphRunner& fg = r.full_extend_graphs()->runner();
  EXPECT_EQ(fg.shapes(), (std::vector<int>{16, 32}));
  EXPECT_EQ(fg.retired(16), "");
  EXPECT_NE(fg.retired(32).find("another rank"), std::string::npos);
  const ShapeGraphRunner& dg = r.decode_graphs()->runner();
  EXPECT_NE(dg.retired(4).find("another rank"), std::string::npos);
  EXPECT_EQ(dg.retired(2), "");
  EXPECT_EQ(dg.retired(8), "");
  EXPECT_NE(r.piecewise_graphs()->runner().retired(16).find("another rank"), std::string::npos);
  EXPECT_EQ(r.piecewise_graphs()->runner().retired(32), "");
  // A decode batch of 3 pads to 4: eager, and sent to the (imagined) follower first.
  std::vector<testing::HeldRequest> held;
  ForwardBatch b;
  b.mode = ForwardMode::DECODE;
  for (int i = 0; i < 3; ++i) {
    held.push_back(testing::hold(r, 2));
    b.input_ids.push_back(3 + i);
    b.positions.push_back(1);
    b.out_cache_loc.push_back(held.back().kv[1]);
    b.req_pool_indices.push_back(held.back().slot);
    b.seq_lens.push_back(2);
    b.sampling.emplace_back();
    b.sample_steps.push_back(0);
    b.logit_requests.push_back(i);
  }
  EXPECT_NE(r.decode_graphs()->refusal(b).find("retired"), std::string::npos);
  const uint64_t replays = r.decode_graphs()->replay_count();
  const int sent = comm->broadcasts;
  const Tensor logits = r.forward(b);
  EXPECT_EQ(r.decode_graphs()->replay_count(), replays);
  EXPECT_EQ(comm->broadcasts, sent + 1);
  EXPECT_EQ(to_host_floats(logits), to_host_floats(r.forward_eager_local(b)));
  // Verification (each rank by itself) sends nothing.
  const int before = comm->broadcasts;
  r.verify_cuda_graphs();
  EXPECT_EQ(comm->broadcasts, before);
}

}  // namespace
}  // namespace grt
