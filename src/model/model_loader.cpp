#include "model/model_loader.h"

#include <algorithm>
#include <filesystem>

namespace grt {
namespace {
const std::string kBuiltin = "builtin:";
bool is_builtin(const std::string& spec) { return spec.rfind(kBuiltin, 0) == 0; }
}  // namespace

namespace {
// Every failure while loading gets the "loading model <spec>" context, filesystem and standard
// exceptions included (a symlink loop used to surface as a bare filesystem error).
template <typename F>
auto with_loading_context(const std::string& spec, F&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw e.with_context("loading model " + spec);
  } catch (const std::exception& e) {
    throw Error(std::string("loading model ") + spec + ": " + e.what());
  }
}

void check_model_folder(const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(spec, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) GRT_FAIL("--model '{}': {}", spec, ec.message());
  GRT_CHECK(fs::exists(st), "model folder '{}' does not exist (or use builtin:<preset>)", spec);
  GRT_CHECK(!fs::is_regular_file(st),
            "--model '{}' is a file; it must be a model folder holding config.json and *.safetensors (or "
            "builtin:<preset>)",
            spec);
  GRT_CHECK(fs::is_directory(st), "--model '{}' is not a folder; it must be a model folder or builtin:<preset>", spec);
}
}  // namespace

ModelConfig load_model_config(const std::string& spec) {
  return with_loading_context(spec, [&] {
    if (is_builtin(spec)) return ModelConfig::preset(spec.substr(kBuiltin.size()));
    check_model_folder(spec);
    return ModelConfig::from_file(spec);
  });
}

std::shared_ptr<DecoderModel> load_model(const std::string& spec, Device device, DType dtype, uint64_t seed,
                                         int64_t max_context, TensorParallel tp, std::shared_ptr<Communicator> comm) {
  ModelConfig config = load_model_config(spec);
  int64_t positions = max_context > 0 ? max_context : std::min<int64_t>(config.max_position_embeddings, 8192);
  ModelWeights w = with_loading_context(spec, [&] {
    tp_local_sizes(config, tp);  // a tp size the model does not split over fails before any reading
    ModelWeights loaded = is_builtin(spec) ? random_weights(config, device, dtype, seed, tp)
                                           : load_weights(config, spec, device, dtype, tp);
    check_weights_finite(config, loaded, tp);
    return loaded;
  });
  return with_loading_context(spec, [&] {
    return std::make_shared<DecoderModel>(std::move(config), std::move(w), device, dtype, positions, tp,
                                          std::move(comm));
  });
}

}  // namespace grt
