// graphrt make-model: writes a real Hugging Face folder (config.json + safetensors) with the
// deterministic random weights of a preset — the same values builtin:<preset> makes on a device —
// and the builtin tokenizer files (tokenizer.json, tokenizer_config.json, generation_config.json).
#include <cstdio>

#include "cli/commands.h"
#include "core/error.h"
#include "model/make_model.h"
#include "text/builtin_tokenizer.h"

namespace grt {

void register_make_model(CLI::App& app) {
  struct Opts {
    std::string preset, out, dtype = "bf16";
    uint64_t seed = kDefaultWeightSeed;
    size_t max_shard_bytes = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("make-model", "write a random-weight Hugging Face model folder");
  cmd->add_option("--preset", o->preset, "tiny, qwen3-0.6b, llama-3.1-8b, tiny-qwen3-moe, tiny-mixtral or qwen3-30b-a3b")->required();
  cmd->add_option("--out", o->out, "folder to write")->required();
  cmd->add_option("--dtype", o->dtype, "checkpoint dtype: bf16, f16, f32")->capture_default_str();
  cmd->add_option("--seed", o->seed, "weight seed")->capture_default_str();
  cmd->add_option("--max-shard-bytes", o->max_shard_bytes, "split into HF shards above this size (0: one file)");
  cmd->callback([o] {
    ModelConfig config = ModelConfig::preset(o->preset);
    DType dt = parse_dtype(o->dtype);
    GRT_CHECK(is_floating(dt), "--dtype {} is not a floating type", o->dtype);
    write_random_model(config, o->out, o->seed, dt, o->max_shard_bytes);
    // A tokenizer that fits the vocabulary, so text works on the folder too.
    write_builtin_tokenizer_files(o->out, config.vocab_size);
    std::printf("wrote %s (%s, %.1fM parameters, %s) to %s\n", o->preset.c_str(), arch_class_name(config.arch),
                static_cast<double>(config.num_parameters()) / 1e6, dtype_name(dt), o->out.c_str());
  });
}

}  // namespace grt
