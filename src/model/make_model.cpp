#include "model/make_model.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/logging.h"
#include "core/progress.h"
#include "model/safetensors_writer.h"
#include "model/weight_spec.h"

namespace grt {

namespace fs = std::filesystem;

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
// Uniform on [-a, a) has standard deviation a / sqrt(3).
constexpr float kMatrixHalfWidth = 0.02f * 1.7320508f;
}  // namespace

WeightInit weight_init(const std::string& name) {
  if (ends_with(name, "norm.weight")) return {1.0f, 0.1f};
  if (ends_with(name, ".bias")) return {0.0f, 0.05f};
  return {0.0f, kMatrixHalfWidth};
}

uint64_t weight_seed(const std::string& name, uint64_t seed) { return splitmix64(seed ^ fnv1a64(name.c_str())); }

void random_weight_fill(const std::string& name, uint64_t seed, int64_t first, int64_t count, float* dst) {
  const uint64_t s = weight_seed(name, seed);
  const WeightInit init = weight_init(name);
  for (int64_t i = 0; i < count; ++i) dst[i] = random_weight_value(s, init, static_cast<uint64_t>(first + i));
}

std::vector<float> random_weight_values(const std::string& name, int64_t numel, uint64_t seed) {
  GRT_CHECK(numel >= 0, "random_weight_values: negative size {} for '{}'", numel, name);
  std::vector<float> out(static_cast<size_t>(numel));
  random_weight_fill(name, seed, 0, numel, out.data());
  return out;
}

void write_random_model(const ModelConfig& config, const std::string& dir, uint64_t seed, DType dtype,
                        size_t max_shard_bytes) {
  GRT_CHECK(is_floating(dtype), "random weights must be float32, float16 or bfloat16, not {}", dtype_name(dtype));
  config.validate();
  ModelConfig c = config;
  c.torch_dtype = dtype;
  std::error_code ec;
  fs::create_directories(dir, ec);
  GRT_CHECK(!ec, "cannot create folder '{}': {}", dir, ec.message());
  // Stale weights of an earlier run (single file vs shards) would confuse the loader.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string f = entry.path().filename().string();
    if (f == "model.safetensors" || f == "model.safetensors.index.json" ||
        (f.rfind("model-", 0) == 0 && ends_with(f, ".safetensors")))
      fs::remove(entry.path());
  }
  c.save(dir);

  const WeightSpec spec = weight_spec(c);
  std::vector<SafetensorsEntry> entries;
  size_t total = 0;
  for (const ExpectedWeight& w : spec.tensors) {
    entries.push_back({w.name, dtype, w.shape});
    total += static_cast<size_t>(w.shape.numel()) * dtype_size(dtype);
  }
  GRT_DEBUG("writing {} random weights ({:.2f} GiB, {}, seed {}) to {}", arch_class_name(c.arch),
           static_cast<double>(total) / (1 << 30), dtype_name(dtype), seed, dir);
  ProgressBar bar("make-model", entries.size());
  std::vector<float> tmp;
  size_t last_index = SIZE_MAX;
  auto fill = [&](size_t i, int64_t first, int64_t count, void* dst) {
    tmp.resize(static_cast<size_t>(count));
    random_weight_fill(entries[i].name, seed, first, count, tmp.data());
    convert_elements(tmp.data(), DType::F32, dst, dtype, static_cast<size_t>(count));
    if (i != last_index) {
      bar.step(entries[i].name);
      last_index = i;
    }
  };
  if (max_shard_bytes > 0 && total > max_shard_bytes) {
    write_safetensors_sharded(dir, entries, fill, max_shard_bytes);
  } else {
    write_safetensors((fs::path(dir) / "model.safetensors").string(), entries, fill,
                      {{"format", "pt"}, {"graphrt_seed", std::to_string(seed)}});
  }
  bar.finish();
}

}  // namespace grt
