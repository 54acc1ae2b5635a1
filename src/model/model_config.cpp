#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <climits>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace grt {

using json = nlohmann::json;

const char* arch_class_name(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "LlamaForCausalLM";
    case Arch::Mistral: return "MistralForCausalLM";
    case Arch::Qwen2: return "Qwen2ForCausalLM";
    case Arch::Qwen3: return "Qwen3ForCausalLM";
    case Arch::Qwen3Moe: return "Qwen3MoeForCausalLM";
    case Arch::Mixtral: return "MixtralForCausalLM";
  }
  return "?";
}

const char* arch_model_type(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "llama";
    case Arch::Mistral: return "mistral";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Qwen3Moe: return "qwen3_moe";
    case Arch::Mixtral: return "mixtral";
  }
  return "?";
}

namespace {

constexpr Arch kArchs[] = {Arch::Llama, Arch::Mistral, Arch::Qwen2, Arch::Qwen3, Arch::Qwen3Moe, Arch::Mixtral};

// Typed access to one JSON object of config.json; every error names the file and the field
// (with `prefix` for nested objects, e.g. "rope_scaling.factor").
class FieldReader {
 public:
  FieldReader(const json& obj, const std::string& source, std::string prefix = "")
      : obj_(obj), source_(source), prefix_(std::move(prefix)) {}

  // Null counts as absent (HF writes "head_dim": null).
  const json* find(const char* key) const {
    auto it = obj_.find(key);
    return (it == obj_.end() || it->is_null()) ? nullptr : &*it;
  }
  bool has(const char* key) const { return find(key) != nullptr; }
  std::string name(const char* key) const { return prefix_ + key; }

  [[noreturn]] void fail(const char* key, const std::string& why) const {
    GRT_FAIL("{}: field '{}' {}", source_, name(key), why);
  }
  const json& required(const char* key) const {
    const json* v = find(key);
    if (!v) fail(key, "is missing");
    return *v;
  }

  int64_t integer(const char* key, const json& v, int64_t lo, int64_t hi) const {
    int64_t x = 0;
    if (v.is_number_integer()) {
      x = v.get<int64_t>();
    } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
               std::fabs(v.get<double>()) < 9e15) {
      x = static_cast<int64_t>(v.get<double>());  // 8192.0 is written by some exporters
    } else {
      fail(key, "must be an integer, got " + v.dump());
    }
    if (x < lo || x > hi) fail(key, fmt::format("is {}, expected a value in [{}, {}]", x, lo, hi));
    return x;
  }
  int64_t int_req(const char* key, int64_t lo = 1, int64_t hi = INT_MAX) const {
    return integer(key, required(key), lo, hi);
  }
  int64_t int_opt(const char* key, int64_t def, int64_t lo = 1, int64_t hi = INT_MAX) const {
    const json* v = find(key);
    return v ? integer(key, *v, lo, hi) : def;
  }

  double number(const char* key, const json& v) const {
    if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
    double x = v.get<double>();
    if (!std::isfinite(x) || x <= 0) fail(key, fmt::format("must be positive, got {}", x));
    return x;
  }
  double num_req(const char* key) const { return number(key, required(key)); }
  double num_opt(const char* key, double def) const {
    const json* v = find(key);
    return v ? number(key, *v) : def;
  }

  bool boolean(const char* key, bool def) const {
    const json* v = find(key);
    if (!v) return def;
    if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
  }
  std::string string_opt(const char* key, const std::string& def) const {
    const json* v = find(key);
    if (!v) return def;
    if (!v->is_string()) fail(key, "must be a string, got " + v->dump());
    return v->get<std::string>();
  }

 private:
  const json& obj_;
  const std::string& source_;
  std::string prefix_;
};

std::string supported_archs() {
  std::string s;
  for (Arch a : kArchs) s += (s.empty() ? "" : ", ") + std::string(arch_class_name(a));
  return s;
}

Arch read_arch(const FieldReader& r, const std::string& source) {
  if (const json* a = r.find("architectures")) {
    if (!a->is_array() || a->empty()) r.fail("architectures", "must be a non-empty list of class names, got " + a->dump());
    std::string names;
    for (const json& e : *a) {
      if (!e.is_string()) r.fail("architectures", "must list strings, got " + a->dump());
      for (Arch arch : kArchs)
        if (e.get<std::string>() == arch_class_name(arch)) return arch;
      names += (names.empty() ? "" : ", ") + e.get<std::string>();
    }
    GRT_FAIL("{}: unsupported architecture '{}' (field 'architectures'); supported: {}", source, names,
             supported_archs());
  }
  // Some exported configs name only the model_type.
  if (r.has("model_type")) {
    std::string mt = r.string_opt("model_type", "");
    for (Arch arch : kArchs)
      if (mt == arch_model_type(arch)) return arch;
    GRT_FAIL("{}: unsupported model_type '{}' and no 'architectures' field; supported: {}", source, mt,
             supported_archs());
  }
  r.fail("architectures", "is missing");
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5, which also holds rope_theta;
// possibly nested per layer type).
void read_rope(ModelConfig& c, const FieldReader& r, const std::string& source) {
  c.rope_theta = r.num_opt("rope_theta", 10000.0);
  const char* field = "rope_scaling";
  const json* rp = r.find(field);
  if (!rp) {
    field = "rope_parameters";
    rp = r.find(field);
  }
  if (!rp) return;
  if (!rp->is_object()) r.fail(field, "must be an object, got " + rp->dump());
  std::string prefix = std::string(field) + ".";
  if (!rp->contains("rope_type") && !rp->contains("type") && !rp->contains("rope_theta") && rp->contains("full_attention")) {
    rp = &(*rp)["full_attention"];
    prefix += "full_attention.";
    if (!rp->is_object()) GRT_FAIL("{}: field '{}' must be an object", source, prefix);
  }
  FieldReader s(*rp, source, prefix);
  c.rope_theta = s.num_opt("rope_theta", c.rope_theta);
  const char* type_key = s.has("rope_type") ? "rope_type" : "type";
  std::string type = s.string_opt(type_key, "default");
  if (type == "default") return;
  if (type != "llama3")
    s.fail(type_key, "is '" + type + "': only rope scaling type 'llama3' (or 'default') is supported");
  c.rope_llama3 = true;
  c.rope_factor = s.num_req("factor");
  c.rope_low_freq_factor = s.num_opt("low_freq_factor", 1.0);
  c.rope_high_freq_factor = s.num_opt("high_freq_factor", 4.0);
  c.rope_original_max_position =
      s.int_opt("original_max_position_embeddings", c.max_position_embeddings, 1, INT64_MAX / 2);
  if (c.rope_high_freq_factor <= c.rope_low_freq_factor)
    s.fail("high_freq_factor", fmt::format("({}) must exceed low_freq_factor ({})", c.rope_high_freq_factor,
                                           c.rope_low_freq_factor));
}

void read_features(ModelConfig& c, const FieldReader& r, const std::string& source) {
  std::string act = r.string_opt("hidden_act", "silu");
  if (act != "silu") r.fail("hidden_act", "is '" + act + "': only 'silu' is supported");
  if (r.boolean("mlp_bias", false)) r.fail("mlp_bias", "is true: MLP biases are not supported");
  const bool bias = r.boolean("attention_bias", false);
  if (c.arch == Arch::Qwen2) {
    c.attention_bias = true;  // Qwen2 always has q/k/v biases (and no o_proj bias)
  } else if (bias) {
    // Llama/Mistral/Qwen3 put the bias on o_proj too, which graphrt does not implement.
    GRT_FAIL("{}: field 'attention_bias' is true: {} attention biases (including o_proj) are not supported", source,
             arch_class_name(c.arch));
  }
  c.qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe;
  if (c.arch == Arch::Mistral || c.arch == Arch::Mixtral) {
    c.sliding_window = r.int_opt("sliding_window", 0, 1, INT64_MAX / 2);
  } else if (c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe) {
    if (r.boolean("use_sliding_window", false)) c.sliding_window = r.int_opt("sliding_window", 0, 1, INT64_MAX / 2);
  }
  const char* dt_key = r.has("dtype") ? "dtype" : "torch_dtype";
  if (r.has(dt_key)) {
    std::string text = r.string_opt(dt_key, "");
    try {
      c.torch_dtype = parse_dtype(text);
    } catch (const Error&) {
      r.fail(dt_key, "is '" + text + "', not a dtype");
    }
    if (!is_floating(c.torch_dtype)) r.fail(dt_key, "is '" + text + "': weights must be float32, float16 or bfloat16");
  }
}

// The expert fields of Qwen3-MoE and Mixtral configs (model_config.h).
void read_moe(ModelConfig& c, const FieldReader& r) {
  if (c.arch == Arch::Qwen3Moe) {
    // Hub configs say num_experts; transformers 5 saves the same field as num_local_experts.
    c.num_experts = static_cast<int>(r.int_req(r.has("num_local_experts") && !r.has("num_experts") ? "num_local_experts" : "num_experts"));
    c.moe_intermediate_size = static_cast<int>(r.int_req("moe_intermediate_size"));
    c.norm_topk_prob = r.boolean("norm_topk_prob", false);
    c.decoder_sparse_step = static_cast<int>(r.int_opt("decoder_sparse_step", 1));
    if (const json* m = r.find("mlp_only_layers")) {
      if (!m->is_array()) r.fail("mlp_only_layers", "must be a list of layer indices, got " + m->dump());
      for (const json& v : *m) {
        if (!v.is_number_integer()) r.fail("mlp_only_layers", "must list integer layer indices, got " + m->dump());
        c.mlp_only_layers.push_back(v.get<int>());
      }
    }
  } else if (c.arch == Arch::Mixtral) {
    c.num_experts = static_cast<int>(r.int_req("num_local_experts"));
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;  // Mixtral's softmax over the top-k logits
  } else {
    return;
  }
  c.num_experts_per_tok = static_cast<int>(r.int_req("num_experts_per_tok"));
  if (r.has("shared_expert_intermediate_size") && r.int_opt("shared_expert_intermediate_size", 0, 0) > 0)
    r.fail("shared_expert_intermediate_size", "is set: shared experts are not supported");
}

const char* torch_dtype_name(DType dt) {
  switch (dt) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    default: return "bfloat16";
  }
}

}  // namespace

ModelConfig ModelConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) GRT_FAIL("{}: config must be a JSON object, got {}", source, j.type_name());
  FieldReader r(j, source);
  ModelConfig c;
  c.source = source;
  c.arch = read_arch(r, source);
  c.hidden_size = static_cast<int>(r.int_req("hidden_size"));
  c.intermediate_size = static_cast<int>(r.int_req("intermediate_size"));
  c.num_hidden_layers = static_cast<int>(r.int_req("num_hidden_layers"));
  c.num_attention_heads = static_cast<int>(r.int_req("num_attention_heads"));
  c.num_key_value_heads = static_cast<int>(r.int_opt("num_key_value_heads", c.num_attention_heads));
  if (r.has("head_dim")) {
    c.head_dim = static_cast<int>(r.int_req("head_dim"));
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      GRT_FAIL("{}: field 'hidden_size' ({}) is not divisible by 'num_attention_heads' ({}) and 'head_dim' is not given",
               source, c.hidden_size, c.num_attention_heads);
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  c.vocab_size = static_cast<int>(r.int_req("vocab_size"));
  c.max_position_embeddings = r.int_req("max_position_embeddings", 1, INT64_MAX / 2);
  c.rms_norm_eps = r.num_req("rms_norm_eps");
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  read_rope(c, r, source);
  read_features(c, r, source);
  read_moe(c, r);
  c.validate();
  return c;
}

ModelConfig ModelConfig::parse(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    GRT_FAIL("{}: not valid JSON: {}", source, e.what());
  }
  return from_json(j, source);
}

ModelConfig ModelConfig::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  // error_code forms throughout: a symlink loop or an unreadable file is a named Error, never a
  // bare filesystem_error, and "unreadable" never reads as "missing".
  std::error_code ec;
  const fs::file_status path_st = fs::status(path, ec);
  if (ec && !fs::exists(path_st))
    GRT_CHECK(ec == std::errc::no_such_file_or_directory, "model path '{}': {}", path, ec.message());
  GRT_CHECK(fs::exists(path_st), "model path '{}' does not exist", path);
  std::string file = path;
  if (fs::is_directory(path_st)) file = (fs::path(path) / "config.json").string();
  const fs::file_status st = fs::status(file, ec);
  if (!fs::exists(st)) {
    GRT_CHECK(!ec || ec == std::errc::no_such_file_or_directory, "cannot read '{}': {}", file, ec.message());
    GRT_CHECK(!fs::is_symlink(fs::symlink_status(file, ec)), "'{}' is a symlink to a missing file", file);
    GRT_FAIL("'{}' is missing: a model folder needs a config.json", file);
  }
  GRT_CHECK(!fs::is_directory(st), "'{}' is a directory; it must be the model's JSON config file", file);
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  GRT_CHECK(in, "cannot read '{}': {}", file, errno ? std::strerror(errno) : "open failed");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), file);
}

void ModelConfig::validate() const {
  const std::string& s = source;
  auto positive = [&](const char* field, int64_t v) { GRT_CHECK(v > 0, "{}: field '{}' must be positive, got {}", s, field, v); };
  positive("hidden_size", hidden_size);
  positive("intermediate_size", intermediate_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("num_key_value_heads", num_key_value_heads);
  positive("head_dim", head_dim);
  positive("vocab_size", vocab_size);
  positive("max_position_embeddings", max_position_embeddings);
  GRT_CHECK(num_attention_heads % num_key_value_heads == 0,
            "{}: field 'num_key_value_heads' ({}) does not divide 'num_attention_heads' ({})", s, num_key_value_heads,
            num_attention_heads);
  GRT_CHECK(head_dim % 2 == 0, "{}: field 'head_dim' ({}) must be even for rotary embeddings", s, head_dim);
  GRT_CHECK(rms_norm_eps > 0, "{}: field 'rms_norm_eps' must be positive, got {}", s, rms_norm_eps);
  GRT_CHECK(rope_theta > 0, "{}: field 'rope_theta' must be positive, got {}", s, rope_theta);
  if (rope_llama3) {
    GRT_CHECK(rope_factor > 0 && rope_original_max_position > 0 && rope_high_freq_factor > rope_low_freq_factor,
              "{}: field 'rope_scaling' has inconsistent llama3 values (factor {}, low {}, high {}, original max {})",
              s, rope_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_max_position);
  }
  GRT_CHECK(arch != Arch::Qwen2 || attention_bias, "{}: Qwen2 models have q/k/v biases", s);
  const bool moe_arch = arch == Arch::Qwen3Moe || arch == Arch::Mixtral;
  GRT_CHECK(moe_arch || num_experts == 0, "{}: {} is not a mixture-of-experts architecture but has {} experts", s,
            arch_class_name(arch), num_experts);
  if (moe_arch) {
    const char* experts_field = arch == Arch::Mixtral ? "num_local_experts" : "num_experts";
    positive(experts_field, num_experts);
    positive("num_experts_per_tok", num_experts_per_tok);
    positive(arch == Arch::Mixtral ? "intermediate_size" : "moe_intermediate_size", moe_intermediate_size);
    positive("decoder_sparse_step", decoder_sparse_step);
    GRT_CHECK(num_experts_per_tok <= num_experts,
              "{}: field 'num_experts_per_tok' ({}) exceeds the number of experts ('{}' = {}): top-k must be at most "
              "the expert count",
              s, num_experts_per_tok, experts_field, num_experts);
    for (int l : mlp_only_layers)
      GRT_CHECK(l >= 0 && l < num_hidden_layers, "{}: field 'mlp_only_layers' lists layer {}, expected [0, {})", s, l,
                num_hidden_layers);
  }
}

bool ModelConfig::is_moe_layer(int layer) const {
  if (num_experts == 0) return false;
  for (int l : mlp_only_layers)
    if (l == layer) return false;
  return (layer + 1) % decoder_sparse_step == 0;
}

int64_t ModelConfig::num_parameters() const {
  const int64_t H = hidden_size, I = intermediate_size, V = vocab_size;
  int64_t layer = 2 * H + H * q_size() + 2 * H * kv_size() + q_size() * H;
  if (attention_bias) layer += q_size() + 2 * kv_size();
  if (qk_norm) layer += 2 * head_dim;
  int64_t mlps = 0;
  for (int l = 0; l < num_hidden_layers; ++l)
    mlps += is_moe_layer(l) ? num_experts * (H + 3 * H * static_cast<int64_t>(moe_intermediate_size)) : 3 * H * I;
  return V * H + num_hidden_layers * layer + mlps + H + (tie_word_embeddings ? 0 : V * H);
}

json ModelConfig::to_json() const {
  json j;
  j["architectures"] = json::array({arch_class_name(arch)});
  j["model_type"] = arch_model_type(arch);
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["hidden_act"] = "silu";
  j["vocab_size"] = vocab_size;
  j["max_position_embeddings"] = max_position_embeddings;
  j["rms_norm_eps"] = rms_norm_eps;
  j["rope_theta"] = rope_theta;
  if (rope_llama3) {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", rope_factor},
                         {"low_freq_factor", rope_low_freq_factor},
                         {"high_freq_factor", rope_high_freq_factor},
                         {"original_max_position_embeddings", rope_original_max_position}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (arch == Arch::Llama || arch == Arch::Qwen3 || arch == Arch::Qwen3Moe) {
    j["attention_bias"] = false;
    j["mlp_bias"] = false;
  }
  if (arch == Arch::Mistral || arch == Arch::Mixtral)
    j["sliding_window"] = sliding_window > 0 ? json(sliding_window) : json(nullptr);
  if (arch == Arch::Qwen2 || arch == Arch::Qwen3 || arch == Arch::Qwen3Moe) {
    j["use_sliding_window"] = sliding_window > 0;
    j["sliding_window"] = sliding_window > 0 ? json(sliding_window) : json(nullptr);
  }
  if (arch == Arch::Qwen3Moe) {
    j["num_experts"] = num_experts;
    j["num_experts_per_tok"] = num_experts_per_tok;
    j["moe_intermediate_size"] = moe_intermediate_size;
    j["norm_topk_prob"] = norm_topk_prob;
    j["decoder_sparse_step"] = decoder_sparse_step;
    j["mlp_only_layers"] = mlp_only_layers;
    j["output_router_logits"] = false;
  }
  if (arch == Arch::Mixtral) {
    j["num_local_experts"] = num_experts;
    j["num_experts_per_tok"] = num_experts_per_tok;
    j["output_router_logits"] = false;
  }
  j["initializer_range"] = 0.02;
  j["use_cache"] = true;
  j["torch_dtype"] = torch_dtype_name(torch_dtype);
  return j;
}

void ModelConfig::save(const std::string& dir) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  GRT_CHECK(!ec, "cannot create folder '{}': {}", dir, ec.message());
  std::string file = (fs::path(dir) / "config.json").string();
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  GRT_CHECK(out, "cannot write '{}'", file);
  out << to_json().dump(2) << "\n";
  out.close();
  GRT_CHECK(out, "failed writing '{}'", file);
}

std::vector<std::string> ModelConfig::preset_names() {
  return {"tiny", "qwen3-0.6b", "llama-3.1-8b", "tiny-qwen3-moe", "tiny-mixtral", "qwen3-30b-a3b"};
}

ModelConfig ModelConfig::preset(const std::string& name) {
  ModelConfig c;
  c.source = "builtin:" + name;
  if (name == "tiny") {
    // Qwen3-like so the default model exercises q/k norm; small enough for CPU tests.
    c.arch = Arch::Qwen3;
    c.hidden_size = 64;
    c.intermediate_size = 128;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 16;
    c.vocab_size = 512;
    c.max_position_embeddings = 2048;
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 10000.0;
    c.tie_word_embeddings = false;
    c.qk_norm = true;
  } else if (name == "qwen3-0.6b") {
    c.arch = Arch::Qwen3;
    c.hidden_size = 1024;
    c.intermediate_size = 3072;
    c.num_hidden_layers = 28;
    c.num_attention_heads = 16;
    c.num_key_value_heads = 8;
    c.head_dim = 128;
    c.vocab_size = 151936;
    c.max_position_embeddings = 40960;
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 1000000.0;
    c.tie_word_embeddings = true;
    c.qk_norm = true;
  } else if (name == "llama-3.1-8b") {
    c.arch = Arch::Llama;
    c.hidden_size = 4096;
    c.intermediate_size = 14336;
    c.num_hidden_layers = 32;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 8;
    c.head_dim = 128;
    c.vocab_size = 128256;
    c.max_position_embeddings = 131072;
    c.rms_norm_eps = 1e-5;
    c.rope_theta = 500000.0;
    c.rope_llama3 = true;
    c.rope_factor = 8.0;
    c.rope_low_freq_factor = 1.0;
    c.rope_high_freq_factor = 4.0;
    c.rope_original_max_position = 8192;
    c.tie_word_embeddings = false;
  } else if (name == "tiny-qwen3-moe") {
    // Three layers, the middle one dense (mlp_only_layers), so both kinds of block run.
    c.arch = Arch::Qwen3Moe;
    c.hidden_size = 64;
    c.intermediate_size = 128;
    c.moe_intermediate_size = 32;
    c.num_experts = 8;
    c.num_experts_per_tok = 2;
    c.norm_topk_prob = true;
    c.mlp_only_layers = {1};
    c.num_hidden_layers = 3;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 16;
    c.vocab_size = 512;
    c.max_position_embeddings = 2048;
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 10000.0;
    c.qk_norm = true;
  } else if (name == "tiny-mixtral") {
    c.arch = Arch::Mixtral;
    c.hidden_size = 64;
    c.intermediate_size = 48;
    c.moe_intermediate_size = 48;
    c.num_experts = 4;
    c.num_experts_per_tok = 2;
    c.norm_topk_prob = true;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 16;
    c.vocab_size = 512;
    c.max_position_embeddings = 2048;
    c.rms_norm_eps = 1e-5;
    c.rope_theta = 1000000.0;
  } else if (name == "qwen3-30b-a3b") {
    // Qwen/Qwen3-30B-A3B's config.json (random weights: for benchmarks).
    c.arch = Arch::Qwen3Moe;
    c.hidden_size = 2048;
    c.intermediate_size = 6144;
    c.moe_intermediate_size = 768;
    c.num_experts = 128;
    c.num_experts_per_tok = 8;
    c.norm_topk_prob = true;
    c.num_hidden_layers = 48;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 4;
    c.head_dim = 128;
    c.vocab_size = 151936;
    c.max_position_embeddings = 40960;
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 1000000.0;
    c.tie_word_embeddings = false;
    c.qk_norm = true;
  } else {
    std::string names;
    for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
    GRT_FAIL("unknown model preset '{}'; presets: {}", name, names);
  }
  c.torch_dtype = DType::BF16;
  c.validate();
  return c;
}

}  // namespace grt
