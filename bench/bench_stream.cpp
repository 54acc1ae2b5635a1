// graphrt bench stream: how fast one kernel can stream a weight buffer that it reads once (the
// decode kernels' situation), by 16-byte loads with k in flight per lane, cp.async into shared
// stages, and TMA bulk copies into a shared ring (ops/cuda/stream_probe.h), with one or two
// blocks an SM, for several sizes, against the device's copy bandwidth.
//
// Each size reads a different slice of a pool of >= 192 MB on every launch, so L2 (50 MB on an
// H100) holds none of it. A CUDA graph of `--launches` back-to-back probes is replayed `--reps`
// times; us per launch is the median replay over the launches (the gap between kernels
// included, as in a graph without PDL). Every method's XOR of the words must equal the first's.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "core/error.h"
#include "device/device.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/random_fill.h"
#if defined(GRAPHRT_WITH_CUDA)
#include "ops/cuda/stream_probe.h"
#endif

namespace grt {
namespace {

struct StreamOpts {
  std::string device = "cuda:0";
  std::string bytes = "4M,16M,64M,256M";
  int launches = 20;
  int reps = 7;
  bool json = false;
  // The pieces mode (--pieces): launches read `count` pieces of `size` at random piece-aligned
  // places of a pool, the MoE experts' pattern; --pools lists the pool sizes compared.
  std::string pieces;
  std::string pools = "256M,40G";
};

int64_t parse_size(const std::string& t, int64_t limit = int64_t{4} << 30) {
  GRT_CHECK(!t.empty(), "bench stream: an empty size in --bytes, --pieces or --pools");
  int64_t mul = 1;
  std::string num = t;
  const char u = t.back();
  if (u == 'K' || u == 'k') mul = int64_t{1} << 10;
  if (u == 'M' || u == 'm') mul = int64_t{1} << 20;
  if (u == 'G' || u == 'g') mul = int64_t{1} << 30;
  if (mul != 1) num = t.substr(0, t.size() - 1);
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(num, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  GRT_CHECK(used == num.size() && v > 0, "bench stream: size '{}' is not a positive number (K/M/G allowed)",
            t);
  const int64_t b = v * mul;
  GRT_CHECK(b % 16 == 0 && b <= limit, "bench stream: size '{}' must be a multiple of 16 bytes, <= {}G", t,
            limit >> 30);
  return b;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

// "8x6M" -> {8, 6 MiB}: a count of pieces (1..64) and each piece's size (a multiple of 16 KB).
std::pair<int, int64_t> parse_pieces(const std::string& t) {
  const size_t x = t.find('x');
  GRT_CHECK(x != std::string::npos && x > 0, "bench stream: --pieces entry '{}' must read COUNTxSIZE, e.g. 8x6M", t);
  int count = 0;
  try {
    size_t used = 0;
    count = std::stoi(t.substr(0, x), &used);
    if (used != x) count = 0;
  } catch (const std::exception&) {
    count = 0;
  }
  GRT_CHECK(count >= 1 && count <= 64, "bench stream: --pieces entry '{}': the count must be 1..64", t);
  const int64_t size = parse_size(t.substr(x + 1));
  GRT_CHECK(size % (16 << 10) == 0, "bench stream: --pieces entry '{}': a piece must be a multiple of 16K", t);
  return {count, size};
}

// The pieces mode's flags, checked before any device is touched: pool sizes (<= 72G) and
// COUNTxSIZE entries, every pool at least twice the bytes of every entry.
struct PiecesPlan {
  std::vector<int64_t> pools;
  std::vector<std::pair<int, int64_t>> specs;
  int64_t max_pool = 0;
};

PiecesPlan parse_pieces_plan(const StreamOpts& o) {
  PiecesPlan p;
  for (const std::string& t : split_commas(o.pools)) p.pools.push_back(parse_size(t, int64_t{72} << 30));
  for (const std::string& t : split_commas(o.pieces)) p.specs.push_back(parse_pieces(t));
  p.max_pool = *std::max_element(p.pools.begin(), p.pools.end());
  for (const auto& [count, size] : p.specs)
    for (int64_t pb : p.pools)
      GRT_CHECK(pb >= 2 * count * size,
                "bench stream: pool {} bytes (--pools) is smaller than twice {} pieces of {} bytes (--pieces)", pb, count,
                size);
  return p;
}

#if defined(GRAPHRT_WITH_CUDA)
struct Config {
  cuda::StreamMethod method;
  const char* name;
  int depth, bps;
  bool max_shared;
  cuda::StreamPattern pattern = cuda::StreamPattern::kContiguous;
};

const char* pattern_name(cuda::StreamPattern p) {
  switch (p) {
    case cuda::StreamPattern::kKvNear: return "kv-near";
    case cuda::StreamPattern::kKvFar: return "kv-far";
    case cuda::StreamPattern::kPiecesSeq: return "pieces-seq";
    case cuda::StreamPattern::kPiecesMix: return "pieces-mix";
    default: return "contig";
  }
}

std::vector<Config> configs() {
  std::vector<Config> c;
  for (bool ms : {false, true})
    for (int bps : {1, 2})
      for (int k : {1, 2, 4, 8}) c.push_back({cuda::StreamMethod::kLdg, "ldg", k, bps, ms});
  for (int bps : {1, 2})
    for (int k : {2, 4, 8})
      if (k * 16 * bps <= 220) c.push_back({cuda::StreamMethod::kCpAsync, "cp.async", k, bps, false});
  for (int bps : {1, 2})
    for (int k : {2, 4, 8, 12})
      if (k * 16 * bps <= 220) c.push_back({cuda::StreamMethod::kBulk, "bulk", k, bps, false});
  // The paged KV cache's pattern (256-byte pieces of 8 heads' rows), against cp.async contiguous.
  for (auto pat : {cuda::StreamPattern::kKvNear, cuda::StreamPattern::kKvFar})
    for (int bps : {1, 2})
      for (int k : {2, 4})
        c.push_back({cuda::StreamMethod::kCpAsync, "cp.async", k, bps, false, pat});
  return c;
}

uint32_t host_xor(const Tensor& partials) {
  uint32_t x = 0;
  for (int32_t v : to_host_vector<int32_t>(partials)) x ^= static_cast<uint32_t>(v);
  return x;
}

// The pieces mode: for each --pieces entry and pool size, every launch of the timed graph reads
// `count` distinct pieces at random piece-aligned places of the pool (a new draw each launch:
// as the 48 layers of a one-token MoE step each read 8 other experts), against the same bytes
// read as one contiguous run at a random place of the same pool. A pool far larger than the L2
// and the TLBs' reach (40 GB ~ the 58 GB of qwen3-30b-a3b's experts) against a small one (256 MB)
// tells whether scattered pieces themselves cost streaming rate.
void run_pieces(const StreamOpts& o, const Device& d) {
  const PiecesPlan plan = parse_pieces_plan(o);
  const std::vector<int64_t>& pools = plan.pools;
  const int64_t pool_bytes = plan.max_pool;
  const auto total = static_cast<int64_t>(device_total_memory(d));
  GRT_CHECK(pool_bytes + (int64_t{1} << 30) <= total,
            "bench stream: a pool of {:.1f} GB (--pools) does not fit {} with {:.1f} GB of memory and 1 GB to spare; "
            "give smaller pools",
            pool_bytes / 1e9, o.device, total / 1e9);
  Tensor pool = empty(Shape{pool_bytes / 2}, DType::BF16, d);
  ops::fill_hash_uniform_(pool, 7, 0.0f, 1.0f);
  const int max_blocks = cuda::stream_probe_blocks(d.index, 2);
  Tensor partials = zeros(Shape{max_blocks}, DType::I32, d);
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  const auto* base = static_cast<const unsigned char*>(pool.data());
  struct PieceConfig {
    cuda::StreamMethod method;
    const char* name;
    int depth, bps;
  };
  const std::vector<PieceConfig> configs = {{cuda::StreamMethod::kCpAsync, "cp.async", 4, 1},
                                            {cuda::StreamMethod::kCpAsync, "cp.async", 8, 1},
                                            {cuda::StreamMethod::kCpAsync, "cp.async", 4, 2},
                                            {cuda::StreamMethod::kBulk, "bulk", 8, 1},
                                            {cuda::StreamMethod::kBulk, "bulk", 12, 1}};
  nlohmann::json j;
  j["device"] = device_name(d);
  j["launches"] = o.launches;
  j["reps"] = o.reps;
  j["results"] = nlohmann::json::array();
  std::mt19937_64 rng(12345);
  for (const auto& [count, size] : plan.specs) {
    const int64_t bytes = count * size;
    for (int64_t pb : pools) {
      // Per launch: `count` distinct piece slots of the pool (pieces), and one slot of `bytes` (contig).
      const int64_t slots = pb / size, runs = pb / bytes;
      std::vector<int64_t> offs(static_cast<size_t>(o.launches) * count), run_offs(o.launches);
      for (int l = 0; l < o.launches; ++l) {
        std::vector<int64_t> pick;
        while (static_cast<int>(pick.size()) < count) {
          const int64_t k = static_cast<int64_t>(rng() % static_cast<uint64_t>(slots));
          if (std::find(pick.begin(), pick.end(), k) == pick.end()) pick.push_back(k);
        }
        for (int i = 0; i < count; ++i) offs[static_cast<size_t>(l) * count + i] = pick[i] * size;
        run_offs[l] = static_cast<int64_t>(rng() % static_cast<uint64_t>(runs)) * bytes;
      }
      Tensor offs_dev = from_vector(offs, Shape{static_cast<int64_t>(offs.size())}, DType::I64, d);
      const auto* offs_ptr = static_cast<const int64_t*>(offs_dev.data());
      if (!o.json)
        std::printf("\n%d pieces x %lld bytes (%.1f MB a launch), pool %.1f GB\n%-9s %5s %3s %-10s %9s %9s %s\n", count,
                    static_cast<long long>(size), bytes / 1e6, pb / 1e9, "method", "depth", "bps", "pattern", "us",
                    "GB/s", "xor");
      for (const PieceConfig& c : configs) {
        uint32_t want = 0;
        for (auto pat : {cuda::StreamPattern::kContiguous, cuda::StreamPattern::kPiecesSeq,
                         cuda::StreamPattern::kPiecesMix}) {
          auto args = [&](int l) {
            cuda::StreamProbeArgs a;
            a.bytes = bytes;
            a.method = c.method;
            a.depth = c.depth;
            a.blocks_per_sm = c.bps;
            a.pattern = pat;
            a.partials = static_cast<uint32_t*>(partials.data());
            if (pat == cuda::StreamPattern::kContiguous) {
              a.src = base + run_offs[l];
            } else {
              a.src = base;
              a.piece_offsets = offs_ptr + static_cast<int64_t>(l) * count;
              a.pieces = count;
            }
            return a;
          };
          // Seq and mix read the same bytes of launch 0 in another order: the same XOR.
          stream->memset_async(partials.data(), 0, partials.nbytes());
          cuda::stream_probe(d, args(0));
          const uint32_t got = host_xor(partials);
          if (pat == cuda::StreamPattern::kPiecesSeq) want = got;
          const bool ok = pat != cuda::StreamPattern::kPiecesMix || got == want;
          const std::vector<double> us =
              bench::graph_replay_us_per_call(d, o.launches, o.reps, [&](int i) { cuda::stream_probe(d, args(i)); });
          const double med = us[us.size() / 2];
          const double gbps = static_cast<double>(bytes) / (med * 1e3);
          j["results"].push_back({{"pieces", count}, {"piece_bytes", size}, {"pool_bytes", pb}, {"method", c.name},
                                  {"depth", c.depth}, {"blocks_per_sm", c.bps}, {"pattern", pattern_name(pat)},
                                  {"us", med}, {"gbps", gbps}, {"xor_ok", ok}, {"us_all", us}});
          if (!o.json)
            std::printf("%-9s %5d %3d %-10s %9.2f %9.0f %s\n", c.name, c.depth, c.bps, pattern_name(pat), med, gbps,
                        ok ? "ok" : "MISMATCH");
        }
      }
    }
  }
  if (o.json) std::printf("%s\n", j.dump(1).c_str());
}

void run_stream(const StreamOpts& o) {
  const Device d = Device::parse(o.device);
  GRT_CHECK(d.is_cuda(), "bench stream needs a CUDA device, got {}", o.device);
  GRT_CHECK(o.launches >= 1 && o.reps >= 1, "bench stream: --launches and --reps must be >= 1");
  if (!o.pieces.empty()) return run_pieces(o, d);
  std::vector<int64_t> sizes;
  for (const std::string& t : split_commas(o.bytes)) sizes.push_back(parse_size(t));
  const int64_t floor_bytes = int64_t{192} << 20;
  auto slices_of = [&](int64_t b) { return std::max<int64_t>(2, (floor_bytes + b - 1) / b); };
  int64_t pool_bytes = 0;
  for (int64_t b : sizes) pool_bytes = std::max(pool_bytes, slices_of(b) * b);
  Tensor pool = empty(Shape{pool_bytes / 2}, DType::BF16, d);
  ops::fill_hash_uniform_(pool, 7, 0.0f, 1.0f);
  const double copy_gbps = bench::copy_bandwidth_gbps(d);
  const int max_blocks = cuda::stream_probe_blocks(d.index, 2);
  Tensor partials = zeros(Shape{max_blocks}, DType::I32, d);
  auto stream = new_stream(d);
  StreamGuard guard(*stream);

  nlohmann::json j;
  j["device"] = device_name(d);
  j["copy_gbps"] = copy_gbps;
  j["launches"] = o.launches;
  j["reps"] = o.reps;
  j["results"] = nlohmann::json::array();
  if (!o.json) std::printf("copy bandwidth (read + write) %.0f GB/s\n", copy_gbps);
  for (int64_t b : sizes) {
    const int64_t slices = slices_of(b);
    const auto* base = static_cast<const unsigned char*>(pool.data());
    if (!o.json) std::printf("\n%lld bytes (%.1f MB), %lld slices\n%-9s %5s %3s %-8s %9s %9s %7s %s\n",
                             static_cast<long long>(b), b / 1e6, static_cast<long long>(slices), "method", "depth",
                             "bps", "carveout", "pattern", "us", "GB/s", "x copy", "xor");
    uint32_t want = 0;
    bool first = true;
    for (const Config& c : configs()) {
      // The KV patterns read whole row blocks: other sizes list the contiguous rows only.
      if (c.pattern != cuda::StreamPattern::kContiguous && b % cuda::kStreamKvPatternBytes != 0) continue;
      auto args = [&](int64_t slice) {
        cuda::StreamProbeArgs a;
        a.src = base + slice * b;
        a.bytes = b;
        a.method = c.method;
        a.depth = c.depth;
        a.blocks_per_sm = c.bps;
        a.max_shared_carveout = c.max_shared;
        a.pattern = c.pattern;
        a.partials = static_cast<uint32_t*>(partials.data());
        return a;
      };
      // Correctness: slice 0's XOR (the partials of unused blocks stay 0 after a zero fill).
      stream->memset_async(partials.data(), 0, partials.nbytes());
      cuda::stream_probe(d, args(0));
      const uint32_t got = host_xor(partials);
      if (first) want = got, first = false;
      const std::vector<double> us =
          bench::graph_replay_us_per_call(d, o.launches, o.reps, [&](int i) { cuda::stream_probe(d, args(i % slices)); });
      const double med = us[us.size() / 2];
      const double gbps = static_cast<double>(b) / (med * 1e3);
      const char* carve = c.method == cuda::StreamMethod::kLdg ? (c.max_shared ? "max-shm" : "default") : "-";
      j["results"].push_back({{"bytes", b}, {"method", c.name}, {"depth", c.depth}, {"blocks_per_sm", c.bps},
                              {"carveout", carve}, {"pattern", pattern_name(c.pattern)}, {"us", med}, {"gbps", gbps},
                              {"vs_copy", gbps / copy_gbps}, {"xor_ok", got == want}, {"us_all", us}});
      if (!o.json)
        std::printf("%-9s %5d %3d %-8s %-8s %9.2f %9.0f %7.2f %s\n", c.name, c.depth, c.bps, carve,
                    pattern_name(c.pattern), med, gbps, gbps / copy_gbps, got == want ? "ok" : "MISMATCH");
    }
  }
  if (o.json) std::printf("%s\n", j.dump(1).c_str());
}
#else
void run_stream(const StreamOpts&) { throw Error("bench stream needs a build with CUDA (GRAPHRT_WITH_CUDA)"); }
#endif

}  // namespace

void register_bench_stream(CLI::App& bench) {
  auto o = std::make_shared<StreamOpts>();
  CLI::App* c = bench.add_subcommand("stream", "one kernel streaming a buffer once: loads vs cp.async vs TMA bulk");
  c->add_option("--device", o->device, "CUDA device")->capture_default_str();
  c->add_option("--bytes", o->bytes, "buffer sizes read by one launch (K/M/G suffixes)")->capture_default_str();
  c->add_option("--launches", o->launches, "probe launches in the timed graph")->capture_default_str();
  c->add_option("--reps", o->reps, "graph replays timed (median)")->capture_default_str();
  c->add_option("--pieces", o->pieces,
                 "pieces mode: COUNTxSIZE entries (e.g. 8x6M,8x3M); each launch reads COUNT random piece-aligned "
                 "pieces of SIZE from a pool, against one contiguous run of the same bytes");
  c->add_option("--pools", o->pools, "pieces mode: pool sizes compared (K/M/G, <= 72G)")->capture_default_str();
  c->add_flag("--json", o->json, "print JSON");
  c->callback([o] {
    if (!o->pieces.empty()) (void)parse_pieces_plan(*o);  // bad flags named before any device is asked for
    run_stream(*o);
  });
}

}  // namespace grt
