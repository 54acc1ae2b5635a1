#include "model/model_loader.h"

#include <algorithm>
#include <filesystem>

namespace grt {
namespace {
const std::string kBuiltin = "builtin:";
bool is_builtin(const std::string& spec) { return spec.rfind(kBuiltin, 0) == 0; }
}  // namespace

ModelConfig load_model_config(const std::string& spec) {
  if (is_builtin(spec)) return ModelConfig::preset(spec.substr(kBuiltin.size()));
  GRT_CHECK(std::filesystem::is_directory(spec), "model folder '{}' does not exist (or use builtin:<preset>)", spec);
  return ModelConfig::from_file(spec);
}

std::shared_ptr<DecoderModel> load_model(const std::string& spec, Device device, DType dtype, uint64_t seed,
                                         int64_t max_context) {
  ModelConfig config = load_model_config(spec);
  int64_t positions = max_context > 0 ? max_context : std::min<int64_t>(config.max_position_embeddings, 8192);
  ModelWeights w;
  try {
    w = is_builtin(spec) ? random_weights(config, device, dtype, seed) : load_weights(config, spec, device, dtype);
  } catch (const Error& e) {
    throw e.with_context("loading model " + spec);
  }
  return std::make_shared<DecoderModel>(std::move(config), std::move(w), device, dtype, positions);
}

}  // namespace grt
