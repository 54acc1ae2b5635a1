// Model folders: config.json parsing, safetensors reading/writing (and every corrupt-file
// case), the expected-weights check, and the deterministic random-weight writer.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "golden_fixture.h"
#include "model/make_model.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "model/weight_spec.h"

namespace grt {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// A fresh folder per test.
std::string temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path p = fs::path(::testing::TempDir()) / (std::string("grt_model_") + info->test_suite_name() + "_" + info->name());
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs f, expects a grt::Error whose message contains every needle.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << needles.at(0);
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what() << "\n  lacks: " << n;
  }
}

// ---- ModelConfig -------------------------------------------------------------------------------

json llama_json() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
    "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
    "tie_word_embeddings": false, "torch_dtype": "float32", "attention_bias": false})");
}

ModelConfig parse_in_file(const json& j, const std::string& dir) {
  write_file(dir + "/config.json", j.dump());
  return ModelConfig::from_file(dir);
}

TEST(ModelConfig, ParsesLlamaWithLlama3Rope) {
  std::string dir = temp_dir();
  ModelConfig c = parse_in_file(llama_json(), dir);
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 16);  // hidden / heads
  EXPECT_EQ(c.vocab_size, 256);
  EXPECT_EQ(c.max_position_embeddings, 256);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.rope_llama3);
  EXPECT_DOUBLE_EQ(c.rope_factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope_high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_original_max_position, 64);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.torch_dtype, DType::F32);
  EXPECT_NE(c.source.find("config.json"), std::string::npos);
}

TEST(ModelConfig, ReadsTransformers5RopeParametersAndDtype) {
  // transformers 5 writes rope_theta inside rope_parameters and "dtype" for torch_dtype.
  json j = llama_json();
  j.erase("rope_scaling");
  j.erase("rope_theta");
  j.erase("torch_dtype");
  j["dtype"] = "bfloat16";
  j["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 250000.0}, {"factor", 4.0},
                          {"low_freq_factor", 2.0}, {"high_freq_factor", 8.0}, {"original_max_position_embeddings", 32}};
  ModelConfig c = ModelConfig::from_json(j, "cfg");
  EXPECT_DOUBLE_EQ(c.rope_theta, 250000.0);
  EXPECT_TRUE(c.rope_llama3);
  EXPECT_DOUBLE_EQ(c.rope_factor, 4.0);
  EXPECT_DOUBLE_EQ(c.rope_low_freq_factor, 2.0);
  EXPECT_DOUBLE_EQ(c.rope_high_freq_factor, 8.0);
  EXPECT_EQ(c.rope_original_max_position, 32);
  EXPECT_EQ(c.torch_dtype, DType::BF16);

  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  c = ModelConfig::from_json(j, "cfg");
  EXPECT_FALSE(c.rope_llama3);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);

  // Legacy "type" key, and the per-layer-type nesting.
  j.erase("rope_parameters");
  j["rope_scaling"] = {{"type", "llama3"}, {"factor", 2.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}};
  c = ModelConfig::from_json(j, "cfg");
  EXPECT_TRUE(c.rope_llama3);
  EXPECT_EQ(c.rope_original_max_position, 256);  // defaults to max_position_embeddings
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1234.0}}}};
  c = ModelConfig::from_json(j, "cfg");
  EXPECT_DOUBLE_EQ(c.rope_theta, 1234.0);
}

TEST(ModelConfig, ParsesMistralWithSlidingWindow) {
  json j = llama_json();
  j["architectures"] = {"MistralForCausalLM"};
  j["model_type"] = "mistral";
  j.erase("rope_scaling");
  j.erase("attention_bias");
  j["sliding_window"] = nullptr;
  ModelConfig c = ModelConfig::from_json(j, "cfg");
  EXPECT_EQ(c.arch, Arch::Mistral);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_FALSE(c.rope_llama3);
  j["sliding_window"] = 4096;
  EXPECT_EQ(ModelConfig::from_json(j, "cfg").sliding_window, 4096);
}

TEST(ModelConfig, ParsesQwen2WithBiasAndTiedEmbeddings) {
  json j = llama_json();
  j["architectures"] = {"Qwen2ForCausalLM"};
  j.erase("attention_bias");  // Qwen2 configs do not say: the biases are always there
  j.erase("rope_scaling");
  j["tie_word_embeddings"] = true;
  j["use_sliding_window"] = false;
  j["sliding_window"] = 32768;
  ModelConfig c = ModelConfig::from_json(j, "cfg");
  EXPECT_EQ(c.arch, Arch::Qwen2);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.sliding_window, 0);  // off unless use_sliding_window
}

TEST(ModelConfig, ParsesQwen3WithQkNormAndExplicitHeadDim) {
  json j = llama_json();
  j["architectures"] = {"Qwen3ForCausalLM"};
  j.erase("rope_scaling");
  j["head_dim"] = 32;  // not hidden / heads, as in real Qwen3 models
  ModelConfig c = ModelConfig::from_json(j, "cfg");
  EXPECT_EQ(c.arch, Arch::Qwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.q_size(), 128);
  EXPECT_EQ(c.kv_size(), 64);
}

TEST(ModelConfig, DefaultsForOptionalFields) {
  json j = llama_json();
  for (const char* k : {"num_key_value_heads", "rope_theta", "rope_scaling", "tie_word_embeddings", "torch_dtype"}) j.erase(k);
  j["head_dim"] = nullptr;
  ModelConfig c = ModelConfig::from_json(j, "cfg");
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.rope_llama3);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(ModelConfig, MissingFieldNamesFileAndField) {
  std::string dir = temp_dir();
  for (const char* field : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                            "rms_norm_eps", "max_position_embeddings", "architectures"}) {
    json j = llama_json();
    j.erase(field);
    if (std::string(field) == "architectures") j.erase("model_type");
    expect_error([&] { parse_in_file(j, dir); }, {dir + "/config.json", field, "missing"});
  }
}

TEST(ModelConfig, WrongTypesNameTheField) {
  json j = llama_json();
  j["hidden_size"] = "64";
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"cfg.json", "hidden_size", "integer"});
  j = llama_json();
  j["num_hidden_layers"] = 2.5;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"num_hidden_layers", "integer"});
  j = llama_json();
  j["rms_norm_eps"] = "small";
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"rms_norm_eps", "number"});
  j = llama_json();
  j["tie_word_embeddings"] = 1;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"tie_word_embeddings"});
  j = llama_json();
  j["vocab_size"] = -5;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"vocab_size", "-5"});
  j = llama_json();
  j["torch_dtype"] = "int8";
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"torch_dtype", "int8"});
  j = llama_json();
  j["rope_scaling"]["factor"] = "eight";
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"rope_scaling.factor"});
}

TEST(ModelConfig, UnknownArchitectureListsSupported) {
  json j = llama_json();
  j["architectures"] = {"GPT2LMHeadModel"};
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); },
               {"cfg.json", "GPT2LMHeadModel", "LlamaForCausalLM", "Qwen3ForCausalLM"});
  j.erase("architectures");
  j["model_type"] = "gpt2";
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"gpt2"});
  // model_type alone is enough when it is known.
  j["model_type"] = "qwen3";
  EXPECT_EQ(ModelConfig::from_json(j, "cfg.json").arch, Arch::Qwen3);
}

TEST(ModelConfig, UnsupportedRopeTypeIsAnError) {
  for (const char* type : {"yarn", "linear", "dynamic", "longrope"}) {
    json j = llama_json();
    j["rope_scaling"] = {{"rope_type", type}, {"factor", 2.0}};
    expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"cfg.json", "rope_scaling.rope_type", type});
  }
  json j = llama_json();
  j["rope_scaling"] = "llama3";
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"rope_scaling", "object"});
  j = llama_json();
  j["rope_scaling"].erase("factor");
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"rope_scaling.factor", "missing"});
}

TEST(ModelConfig, InconsistentShapesAreErrors) {
  json j = llama_json();
  j["num_key_value_heads"] = 3;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"cfg.json", "num_key_value_heads", "num_attention_heads"});
  j = llama_json();
  j["hidden_size"] = 66;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"hidden_size", "divisible"});
  j["head_dim"] = 16;  // explicit head_dim needs no divisibility
  EXPECT_EQ(ModelConfig::from_json(j, "cfg.json").head_dim, 16);
  j = llama_json();
  j["head_dim"] = 15;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"head_dim", "even"});
}

TEST(ModelConfig, UnsupportedFeaturesAreErrors) {
  json j = llama_json();
  j["attention_bias"] = true;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"attention_bias"});
  j = llama_json();
  j["mlp_bias"] = true;
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"mlp_bias"});
  j = llama_json();
  j["hidden_act"] = "gelu";
  expect_error([&] { ModelConfig::from_json(j, "cfg.json"); }, {"hidden_act", "gelu"});
}

TEST(ModelConfig, BadFilesAreErrors) {
  std::string dir = temp_dir();
  expect_error([&] { ModelConfig::from_file(dir + "/nope"); }, {dir + "/nope"});
  expect_error([&] { ModelConfig::from_file(dir); }, {dir + "/config.json"});
  write_file(dir + "/config.json", "{\"hidden_size\": 64,");
  expect_error([&] { ModelConfig::from_file(dir); }, {dir + "/config.json", "JSON"});
  write_file(dir + "/config.json", "[1, 2]");
  expect_error([&] { ModelConfig::from_file(dir); }, {"object"});
}

TEST(ModelConfig, Presets) {
  ModelConfig t = ModelConfig::preset("tiny");
  EXPECT_EQ(t.arch, Arch::Qwen3);
  EXPECT_TRUE(t.qk_norm);
  EXPECT_EQ(t.hidden_size, 64);
  EXPECT_EQ(t.num_hidden_layers, 2);
  EXPECT_EQ(t.num_attention_heads, 4);
  EXPECT_EQ(t.num_key_value_heads, 2);
  EXPECT_EQ(t.head_dim, 16);
  EXPECT_EQ(t.intermediate_size, 128);
  EXPECT_EQ(t.vocab_size, 512);
  EXPECT_EQ(t.max_position_embeddings, 2048);
  EXPECT_EQ(t.source, "builtin:tiny");

  ModelConfig q = ModelConfig::preset("qwen3-0.6b");
  EXPECT_EQ(q.hidden_size, 1024);
  EXPECT_EQ(q.num_hidden_layers, 28);
  EXPECT_EQ(q.num_attention_heads, 16);
  EXPECT_EQ(q.num_key_value_heads, 8);
  EXPECT_EQ(q.head_dim, 128);
  EXPECT_EQ(q.intermediate_size, 3072);
  EXPECT_EQ(q.vocab_size, 151936);
  EXPECT_DOUBLE_EQ(q.rope_theta, 1e6);
  EXPECT_TRUE(q.tie_word_embeddings);
  // Qwen3-0.6B: 0.6B parameters, 0.44B without the embedding.
  EXPECT_NEAR(static_cast<double>(q.num_parameters() - int64_t{151936} * 1024), 0.44e9, 0.01e9);

  ModelConfig l = ModelConfig::preset("llama-3.1-8b");
  EXPECT_EQ(l.arch, Arch::Llama);
  EXPECT_EQ(l.hidden_size, 4096);
  EXPECT_EQ(l.num_hidden_layers, 32);
  EXPECT_EQ(l.num_key_value_heads, 8);
  EXPECT_EQ(l.intermediate_size, 14336);
  EXPECT_EQ(l.vocab_size, 128256);
  EXPECT_TRUE(l.rope_llama3);
  EXPECT_DOUBLE_EQ(l.rope_factor, 8.0);
  EXPECT_EQ(l.rope_original_max_position, 8192);
  EXPECT_DOUBLE_EQ(l.rms_norm_eps, 1e-5);
  EXPECT_FALSE(l.tie_word_embeddings);
  EXPECT_NEAR(static_cast<double>(l.num_parameters()), 8.03e9, 0.01e9);
}

TEST(ModelConfig, UnknownPresetListsPresets) {
  expect_error([] { ModelConfig::preset("gpt-5"); }, {"gpt-5", "tiny", "qwen3-0.6b", "llama-3.1-8b"});
}

TEST(ModelConfig, ToJsonRoundTripsEveryPresetAndArch) {
  std::vector<ModelConfig> configs;
  for (const auto& n : ModelConfig::preset_names()) configs.push_back(ModelConfig::preset(n));
  for (const char* arch : {"MistralForCausalLM", "Qwen2ForCausalLM"}) {
    json j = llama_json();
    j["architectures"] = {arch};
    j.erase("rope_scaling");
    j.erase("attention_bias");
    configs.push_back(ModelConfig::from_json(j, "cfg"));
  }
  for (const ModelConfig& c : configs) {
    json j = c.to_json();
    EXPECT_EQ(j["architectures"][0], arch_class_name(c.arch));
    ModelConfig r = ModelConfig::from_json(j, "again");
    EXPECT_EQ(r.arch, c.arch);
    EXPECT_EQ(r.hidden_size, c.hidden_size);
    EXPECT_EQ(r.intermediate_size, c.intermediate_size);
    EXPECT_EQ(r.num_hidden_layers, c.num_hidden_layers);
    EXPECT_EQ(r.num_attention_heads, c.num_attention_heads);
    EXPECT_EQ(r.num_key_value_heads, c.num_key_value_heads);
    EXPECT_EQ(r.head_dim, c.head_dim);
    EXPECT_EQ(r.vocab_size, c.vocab_size);
    EXPECT_EQ(r.max_position_embeddings, c.max_position_embeddings);
    EXPECT_DOUBLE_EQ(r.rms_norm_eps, c.rms_norm_eps);
    EXPECT_DOUBLE_EQ(r.rope_theta, c.rope_theta);
    EXPECT_EQ(r.rope_llama3, c.rope_llama3);
    EXPECT_DOUBLE_EQ(r.rope_factor, c.rope_factor);
    EXPECT_EQ(r.rope_original_max_position, c.rope_original_max_position);
    EXPECT_EQ(r.tie_word_embeddings, c.tie_word_embeddings);
    EXPECT_EQ(r.attention_bias, c.attention_bias);
    EXPECT_EQ(r.qk_norm, c.qk_norm);
    EXPECT_EQ(r.torch_dtype, c.torch_dtype);
  }
}

// ---- Safetensors -------------------------------------------------------------------------------

// A raw safetensors file: 8-byte length, header text, data bytes (for the corrupt cases).
std::string raw_safetensors(const std::string& header, const std::string& data, int64_t claimed_len = -1) {
  uint64_t n = claimed_len >= 0 ? static_cast<uint64_t>(claimed_len) : header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string two_tensor_file() {
  // a: F32 [2] at [0, 8); b: BF16 [2, 2] at [8, 16)
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"BF16","shape":[2,2],"data_offsets":[8,16]}})";
  return raw_safetensors(header, std::string(16, '\x01'));
}

TEST(Safetensors, RoundTripEveryDtype) {
  std::string dir = temp_dir();
  std::vector<float> f32 = {1.5f, -2.25f, 3.0f, 0.0f, 7.0f, -1.0f};
  std::vector<uint16_t> bf16 = {float_to_bf16(1.0f), float_to_bf16(-0.5f), float_to_bf16(3.25f)};
  std::vector<uint16_t> f16 = {float_to_f16(2.0f), float_to_f16(-0.125f)};
  std::vector<int32_t> i32 = {1, -2, 3, 2147483647};
  std::vector<int64_t> i64 = {int64_t{1} << 40, -7};
  std::vector<uint8_t> u8 = {0, 255, 7};  // odd size: the next tensor is unaligned unless padded
  std::vector<uint8_t> b = {1, 0, 1, 1};
  std::vector<HostTensorRef> ts = {
      {"w.f32", DType::F32, {2, 3}, f32.data()},   {"w.bf16", DType::BF16, {3}, bf16.data()},
      {"w.f16", DType::F16, {1, 2}, f16.data()},   {"u8", DType::U8, {3}, u8.data()},
      {"i32", DType::I32, {4}, i32.data()},        {"i64", DType::I64, {2}, i64.data()},
      {"bools", DType::Bool, {2, 2}, b.data()},    {"scalar", DType::F32, {}, f32.data()},
      {"empty", DType::F32, {0, 4}, f32.data()},
  };
  write_safetensors(dir + "/model.safetensors", ts);
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors.tmp"));

  SafetensorsFile file(dir + "/model.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  ASSERT_EQ(file.tensors().size(), ts.size());
  for (const HostTensorRef& t : ts) {
    const SafetensorsTensor* r = file.find(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(r->dtype, t.dtype) << t.name;
    EXPECT_EQ(r->shape, t.shape) << t.name;
    ASSERT_EQ(r->nbytes, static_cast<size_t>(t.shape.numel()) * dtype_size(t.dtype));
    EXPECT_EQ(std::memcmp(r->data, t.data, r->nbytes), 0) << t.name;
  }
  EXPECT_EQ(file.find("nope"), nullptr);
  // The header is padded so data starts 8-byte aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(file.tensors().front().data) % 8, 0u);

  SafetensorsFolder folder(dir);
  EXPECT_EQ(folder.size(), ts.size());
  EXPECT_EQ(folder.files(), std::vector<std::string>{dir + "/model.safetensors"});
  EXPECT_EQ(folder.read_floats("w.bf16"), (std::vector<float>{1.0f, -0.5f, 3.25f}));
  EXPECT_EQ(folder.read_floats("w.f16"), (std::vector<float>{2.0f, -0.125f}));
  EXPECT_EQ(folder.read_floats("w.f32"), f32);
  expect_error([&] { folder.at("absent.weight"); }, {"absent.weight", dir});
  // A single file can be opened directly too.
  EXPECT_EQ(SafetensorsFolder(dir + "/model.safetensors").size(), ts.size());
}

TEST(Safetensors, HostTensorKeepsTheFileMapped) {
  std::string dir = temp_dir();
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  write_safetensors(dir + "/model.safetensors", {{"x", DType::F32, {2, 3}, v.data()}});
  Tensor t;
  {
    SafetensorsFolder folder(dir);
    t = folder.host_tensor("x");
  }
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_TRUE(t.device().is_cpu());
  EXPECT_EQ(t.data_as<float>()[5], 6.0f);
}

TEST(Safetensors, ReadsUnalignedForeignFiles) {
  // Another writer may not pad the header: an F32 tensor then sits at an odd address.
  std::string dir = temp_dir();
  float vals[2] = {0.25f, -8.0f};
  std::string data(reinterpret_cast<const char*>(vals), 8);
  std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";  // 52 bytes: unaligned
  write_file(dir + "/model.safetensors", raw_safetensors(header, data));
  SafetensorsFolder folder(dir);
  EXPECT_EQ(folder.read_floats("x"), (std::vector<float>{0.25f, -8.0f}));
  std::vector<uint16_t> bf(2);
  folder.read_into("x", bf.data(), DType::BF16);
  EXPECT_EQ(bf16_to_float(bf[1]), -8.0f);
}

std::vector<SafetensorsEntry> some_entries() {
  return {{"t0", DType::F32, {16}}, {"t1", DType::F32, {8, 4}}, {"t2", DType::BF16, {64}}, {"t3", DType::F32, {3}}};
}
// Element e of entry i is i * 64 + e (exact in bf16 for these sizes).
void fill_pattern(const std::vector<SafetensorsEntry>& es, size_t i, int64_t first, int64_t count, void* dst) {
  std::vector<float> f(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) f[static_cast<size_t>(k)] = static_cast<float>(i * 64 + static_cast<size_t>(first + k));
  convert_elements(f.data(), DType::F32, dst, es[i].dtype, static_cast<size_t>(count));
}

TEST(Safetensors, ShardedFolderWithIndex) {
  std::string dir = temp_dir();
  auto es = some_entries();
  auto names = write_safetensors_sharded(dir, es, [&](size_t i, int64_t a, int64_t n, void* d) { fill_pattern(es, i, a, n, d); },
                                         /*max_shard_bytes=*/130);
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names.front(), fmt::format("model-00001-of-{:05d}.safetensors", names.size()));
  json index = json::parse(read_file(dir + "/model.safetensors.index.json"));
  EXPECT_EQ(index["weight_map"].size(), es.size());
  SafetensorsFolder folder(dir);
  EXPECT_EQ(folder.files().size(), names.size());
  EXPECT_EQ(folder.names(), (std::vector<std::string>{"t0", "t1", "t2", "t3"}));
  for (size_t i = 0; i < es.size(); ++i) {
    std::vector<float> v = folder.read_floats(es[i].name);
    ASSERT_EQ(v.size(), static_cast<size_t>(es[i].shape.numel()));
    for (size_t e = 0; e < v.size(); ++e) ASSERT_EQ(v[e], static_cast<float>(i * 64 + e)) << es[i].name;
    EXPECT_EQ(folder.at(es[i].name).file, dir + "/" + index["weight_map"][es[i].name].get<std::string>());
  }
}

TEST(Safetensors, ShardedIndexErrors) {
  std::string dir = temp_dir();
  auto es = some_entries();
  auto names = write_safetensors_sharded(dir, es, [&](size_t i, int64_t a, int64_t n, void* d) { fill_pattern(es, i, a, n, d); }, 130);
  const std::string index_path = dir + "/model.safetensors.index.json";
  const json good = json::parse(read_file(index_path));

  json j = good;
  j["weight_map"]["t9"] = names[0];  // listed but absent
  write_file(index_path, j.dump());
  expect_error([&] { SafetensorsFolder f(dir); }, {"t9", index_path, names[0]});

  j = good;
  j["weight_map"]["t0"] = names[1];  // listed in the wrong shard
  write_file(index_path, j.dump());
  expect_error([&] { SafetensorsFolder f(dir); }, {"t0", names[1]});

  j = good;
  j["weight_map"]["t0"] = "model-00009-of-00009.safetensors";
  write_file(index_path, j.dump());
  expect_error([&] { SafetensorsFolder f(dir); }, {"model-00009-of-00009.safetensors", "missing"});

  j = good;
  j["weight_map"]["t0"] = "../elsewhere.safetensors";
  write_file(index_path, j.dump());
  expect_error([&] { SafetensorsFolder f(dir); }, {"../elsewhere.safetensors"});

  write_file(index_path, "{\"weight_map\": ");
  expect_error([&] { SafetensorsFolder f(dir); }, {index_path, "JSON"});
  write_file(index_path, "{\"metadata\": {}}");
  expect_error([&] { SafetensorsFolder f(dir); }, {index_path, "weight_map"});

  // The same tensor in two shards.
  write_file(index_path, good.dump());
  std::vector<float> v(16);
  write_safetensors(dir + "/" + names[1], std::vector<HostTensorRef>{{"t0", DType::F32, {16}, v.data()}});
  expect_error([&] { SafetensorsFolder f(dir); }, {"t0", "both"});
}

TEST(Safetensors, FolderWithoutWeightsIsAnError) {
  std::string dir = temp_dir();
  expect_error([&] { SafetensorsFolder f(dir); }, {dir, "model.safetensors", "model.safetensors.index.json"});
  expect_error([&] { SafetensorsFolder f(dir + "/missing"); }, {dir + "/missing"});
}

TEST(Safetensors, TruncatedFileNamesTheTensor) {
  std::string dir = temp_dir();
  const std::string path = dir + "/model.safetensors";
  std::string bytes = two_tensor_file();
  write_file(path, bytes);
  EXPECT_NO_THROW(SafetensorsFile f(path));
  write_file(path, bytes.substr(0, bytes.size() - 3));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'b'", "truncated"});
  write_file(path, bytes.substr(0, 5));
  expect_error([&] { SafetensorsFile f(path); }, {path, "too short"});
  write_file(path, "");
  expect_error([&] { SafetensorsFile f(path); }, {path});
}

TEST(Safetensors, GarbledHeaderIsAnError) {
  std::string dir = temp_dir();
  const std::string path = dir + "/model.safetensors";
  write_file(path, raw_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_o)", std::string(64, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, {path, "garbled"});
  write_file(path, raw_safetensors("[1,2,3]", std::string(8, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, {path, "object"});
  write_file(path, raw_safetensors(R"({"a": 5})", ""));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'a'"});
  write_file(path, raw_safetensors(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, {"'a'", "dtype"});
  write_file(path, raw_safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, {"'a'", "shape"});
  write_file(path, raw_safetensors(R"({"__metadata__":{"format":5}})", ""));
  expect_error([&] { SafetensorsFile f(path); }, {"__metadata__"});
}

TEST(Safetensors, HeaderLengthBeyondTheFile) {
  std::string dir = temp_dir();
  const std::string path = dir + "/model.safetensors";
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  write_file(path, raw_safetensors(header, std::string(8, '\0'), /*claimed_len=*/1000));
  expect_error([&] { SafetensorsFile f(path); }, {path, "header length 1000", "beyond"});
  write_file(path, raw_safetensors(header, std::string(8, '\0'), int64_t{1} << 62));
  expect_error([&] { SafetensorsFile f(path); }, {path, "header length"});
}

TEST(Safetensors, BadOffsetsAreErrors) {
  std::string dir = temp_dir();
  const std::string path = dir + "/model.safetensors";
  struct Case {
    std::string header, needle;
  } cases[] = {
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "backwards"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", "needs 8"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "needs 12"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,40]}})", "beyond"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", "data_offsets"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-1,7]}})", "data_offsets"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       "overlap"},
  };
  for (const Case& c : cases) {
    write_file(path, raw_safetensors(c.header, std::string(16, '\0')));
    expect_error([&] { SafetensorsFile f(path); }, {path, "'a'", c.needle});
  }
}

TEST(Safetensors, WrongDtypeStringsAreErrors) {
  std::string dir = temp_dir();
  const std::string path = dir + "/model.safetensors";
  write_file(path, raw_safetensors(R"({"w":{"dtype":"XYZ","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "unknown dtype 'XYZ'"});
  write_file(path, raw_safetensors(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, {path, "'w'", "F64", "not supported"});
  write_file(path, raw_safetensors(R"({"w":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, {"'w'", "f32"});
}

// ---- Weights -----------------------------------------------------------------------------------

ModelConfig tiny_config(Arch arch, bool tied) {
  json j = llama_json();
  j["architectures"] = {arch_class_name(arch)};
  j.erase("rope_scaling");
  j.erase("attention_bias");
  j["vocab_size"] = 32;
  j["hidden_size"] = 16;
  j["intermediate_size"] = 24;
  j["num_attention_heads"] = 4;
  j["num_key_value_heads"] = 2;
  j["tie_word_embeddings"] = tied;
  return ModelConfig::from_json(j, "cfg");
}

// Writes every tensor of `spec` as zeros, after `edit` may change the list.
void write_spec(const std::string& dir, const WeightSpec& spec,
                const std::function<void(std::vector<SafetensorsEntry>&)>& edit = nullptr) {
  std::vector<SafetensorsEntry> es;
  for (const auto& w : spec.tensors) es.push_back({w.name, DType::BF16, w.shape});
  if (edit) edit(es);
  write_safetensors(dir + "/model.safetensors", es,
                    [&](size_t i, int64_t, int64_t n, void* d) { std::memset(d, 0, static_cast<size_t>(n) * dtype_size(es[i].dtype)); });
}

TEST(Weights, SpecNamesAndShapesPerArchitecture) {
  WeightSpec llama = weight_spec(tiny_config(Arch::Llama, false));
  ASSERT_EQ(llama.tensors.size(), 1u + 2 * 9 + 1 + 1);
  EXPECT_EQ(llama.tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(llama.tensors.front().shape, (Shape{32, 16}));
  EXPECT_EQ(llama.tensors.back().name, "lm_head.weight");
  EXPECT_EQ(llama.find("model.layers.1.self_attn.k_proj.weight")->shape, (Shape{8, 16}));
  EXPECT_EQ(llama.find("model.layers.0.self_attn.o_proj.weight")->shape, (Shape{16, 16}));
  EXPECT_EQ(llama.find("model.layers.0.mlp.down_proj.weight")->shape, (Shape{16, 24}));
  EXPECT_EQ(llama.find("model.layers.0.mlp.gate_proj.weight")->shape, (Shape{24, 16}));
  EXPECT_EQ(llama.find("model.norm.weight")->shape, (Shape{16}));
  EXPECT_EQ(llama.find("model.layers.0.self_attn.q_proj.bias"), nullptr);
  EXPECT_EQ(llama.find("model.layers.0.self_attn.q_norm.weight"), nullptr);

  WeightSpec qwen2 = weight_spec(tiny_config(Arch::Qwen2, true));
  ASSERT_NE(qwen2.find("model.layers.1.self_attn.v_proj.bias"), nullptr);
  EXPECT_EQ(qwen2.find("model.layers.1.self_attn.v_proj.bias")->shape, (Shape{8}));
  EXPECT_EQ(qwen2.find("model.layers.1.self_attn.o_proj.bias"), nullptr);
  EXPECT_EQ(qwen2.find("lm_head.weight"), nullptr);  // tied
  EXPECT_TRUE(qwen2.is_ignorable("lm_head.weight"));

  WeightSpec qwen3 = weight_spec(tiny_config(Arch::Qwen3, false));
  ASSERT_NE(qwen3.find("model.layers.0.self_attn.k_norm.weight"), nullptr);
  EXPECT_EQ(qwen3.find("model.layers.0.self_attn.k_norm.weight")->shape, (Shape{4}));
  EXPECT_EQ(qwen3.find("model.layers.0.self_attn.q_proj.bias"), nullptr);
  EXPECT_FALSE(qwen3.is_ignorable("lm_head.weight"));
  EXPECT_TRUE(qwen3.is_ignorable("model.layers.0.self_attn.rotary_emb.inv_freq"));
}

TEST(Weights, CompleteFolderPassesAndHarmlessExtrasAreIgnored) {
  std::string dir = temp_dir();
  WeightSpec spec = weight_spec(tiny_config(Arch::Qwen2, /*tied=*/true));
  write_spec(dir, spec, [](std::vector<SafetensorsEntry>& es) {
    es.push_back({"lm_head.weight", DType::BF16, {32, 16}});  // some exports save the tied copy
    es.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::F32, {2}});
  });
  EXPECT_NO_THROW(check_weights(spec, SafetensorsFolder(dir)));
}

TEST(Weights, MissingTensorNamesTensorAndFile) {
  std::string dir = temp_dir();
  WeightSpec spec = weight_spec(tiny_config(Arch::Llama, false));
  write_spec(dir, spec, [](std::vector<SafetensorsEntry>& es) {
    std::erase_if(es, [](const SafetensorsEntry& e) {
      return e.name == "model.layers.1.mlp.up_proj.weight" || e.name == "lm_head.weight";
    });
  });
  expect_error([&] { check_weights(spec, SafetensorsFolder(dir)); },
               {"model.layers.1.mlp.up_proj.weight", "lm_head.weight", dir + "/model.safetensors", "missing"});
}

TEST(Weights, MisshapenAndNonFloatTensorsAreNamed) {
  std::string dir = temp_dir();
  WeightSpec spec = weight_spec(tiny_config(Arch::Qwen3, false));
  write_spec(dir, spec, [](std::vector<SafetensorsEntry>& es) {
    for (auto& e : es) {
      if (e.name == "model.layers.0.self_attn.q_norm.weight") e.shape = Shape{5};
      if (e.name == "model.norm.weight") e.dtype = DType::I32;
    }
  });
  expect_error([&] { check_weights(spec, SafetensorsFolder(dir)); },
               {"model.layers.0.self_attn.q_norm.weight", "[5]", "expected [4]", "model.norm.weight", "I32"});
}

TEST(Weights, UnknownExtraTensorsAreNamed) {
  std::string dir = temp_dir();
  WeightSpec spec = weight_spec(tiny_config(Arch::Llama, false));
  write_spec(dir, spec, [](std::vector<SafetensorsEntry>& es) {
    es.push_back({"model.layers.0.self_attn.q_proj.bias", DType::BF16, {16}});  // a Qwen2 checkpoint?
    es.push_back({"model.layers.2.input_layernorm.weight", DType::BF16, {16}});  // one layer too many
  });
  expect_error([&] { check_weights(spec, SafetensorsFolder(dir)); },
               {"unknown", "model.layers.0.self_attn.q_proj.bias", "model.layers.2.input_layernorm.weight"});
}

// ---- MakeModel ---------------------------------------------------------------------------------

TEST(MakeModel, WritesAFolderThatLoadsAndChecks) {
  for (DType dt : {DType::F32, DType::BF16}) {
    std::string dir = temp_dir() + "/" + dtype_name(dt);
    ModelConfig c = ModelConfig::preset("tiny");
    write_random_model(c, dir, /*seed=*/7, dt);
    ModelConfig r = ModelConfig::from_file(dir);
    EXPECT_EQ(r.arch, c.arch);
    EXPECT_EQ(r.hidden_size, c.hidden_size);
    EXPECT_EQ(r.vocab_size, c.vocab_size);
    EXPECT_EQ(r.qk_norm, c.qk_norm);
    EXPECT_EQ(r.torch_dtype, dt);
    SafetensorsFolder folder(dir);
    WeightSpec spec = weight_spec(r);
    EXPECT_NO_THROW(check_weights(spec, folder));
    EXPECT_EQ(folder.size(), spec.tensors.size());
    // The stored values are the generator's, rounded to the dtype.
    for (const char* name : {"model.embed_tokens.weight", "model.layers.1.self_attn.k_norm.weight", "lm_head.weight"}) {
      const SafetensorsTensor& t = folder.at(name);
      EXPECT_EQ(t.dtype, dt);
      std::vector<float> expect = random_weight_values(name, t.shape.numel(), 7);
      std::vector<float> got = folder.read_floats(name);
      ASSERT_EQ(got.size(), expect.size());
      for (size_t i = 0; i < got.size(); ++i) {
        float e = dt == DType::BF16 ? bf16_to_float(float_to_bf16(expect[i])) : expect[i];
        ASSERT_EQ(got[i], e) << name << "[" << i << "]";
      }
    }
  }
}

TEST(MakeModel, RandomWeightsAreDeterministicAndIndependent) {
  auto a = random_weight_values("model.layers.0.mlp.up_proj.weight", 1000, 1);
  EXPECT_EQ(a, random_weight_values("model.layers.0.mlp.up_proj.weight", 1000, 1));
  EXPECT_NE(a, random_weight_values("model.layers.0.mlp.up_proj.weight", 1000, 2));
  EXPECT_NE(a, random_weight_values("model.layers.1.mlp.up_proj.weight", 1000, 1));
  // Any range can be generated on its own (chunked writers, device kernels).
  std::vector<float> part(300);
  random_weight_fill("model.layers.0.mlp.up_proj.weight", 1, 500, 300, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), a.begin() + 500));
  const uint64_t s = weight_seed("model.layers.0.mlp.up_proj.weight", 1);
  EXPECT_EQ(random_weight_value(s, weight_init("model.layers.0.mlp.up_proj.weight"), 999), a[999]);
}

TEST(MakeModel, WeightDistributions) {
  auto stats = [](const std::vector<float>& v) {
    double sum = 0, sq = 0;
    for (float x : v) sum += x;
    double mean = sum / static_cast<double>(v.size());
    for (float x : v) sq += (x - mean) * (x - mean);
    return std::pair{mean, std::sqrt(sq / static_cast<double>(v.size()))};
  };
  auto [m, sd] = stats(random_weight_values("model.layers.3.self_attn.q_proj.weight", 100000, 0));
  EXPECT_NEAR(m, 0.0, 0.001);
  EXPECT_NEAR(sd, 0.02, 0.001);
  auto norm = random_weight_values("model.layers.3.input_layernorm.weight", 10000, 0);
  auto [nm, nsd] = stats(norm);
  EXPECT_NEAR(nm, 1.0, 0.01);
  EXPECT_GT(nsd, 0.03);  // not trivially one
  for (float x : norm) ASSERT_TRUE(x >= 0.9f && x <= 1.1f) << x;
  EXPECT_EQ(weight_init("model.layers.0.self_attn.q_norm.weight").center, 1.0f);
  EXPECT_EQ(weight_init("model.norm.weight").center, 1.0f);
  EXPECT_EQ(weight_init("model.layers.0.self_attn.q_proj.bias").center, 0.0f);
}

TEST(MakeModel, ShardedWriteMatchesSingleFileAndReplacesStaleWeights) {
  std::string dir = temp_dir();
  ModelConfig c = ModelConfig::preset("tiny");
  write_random_model(c, dir + "/single", 3, DType::BF16);
  write_random_model(c, dir + "/sharded", 3, DType::BF16, /*max_shard_bytes=*/64 << 10);
  EXPECT_TRUE(fs::exists(dir + "/sharded/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir + "/sharded/model.safetensors"));
  SafetensorsFolder single(dir + "/single"), sharded(dir + "/sharded");
  EXPECT_GT(sharded.files().size(), 1u);
  EXPECT_NO_THROW(check_weights(weight_spec(c), sharded));
  ASSERT_EQ(single.names(), sharded.names());
  for (const std::string& n : single.names()) {
    const SafetensorsTensor &a = single.at(n), &b = sharded.at(n);
    ASSERT_EQ(a.nbytes, b.nbytes);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << n;
  }
  // Writing a single file over the sharded folder leaves no stale index behind.
  write_random_model(c, dir + "/sharded", 3, DType::BF16);
  EXPECT_FALSE(fs::exists(dir + "/sharded/model.safetensors.index.json"));
  EXPECT_EQ(SafetensorsFolder(dir + "/sharded").files().size(), 1u);
}

TEST(MakeModel, EveryArchitectureRoundTrips) {
  std::string dir = temp_dir();
  for (Arch arch : {Arch::Llama, Arch::Mistral, Arch::Qwen2, Arch::Qwen3}) {
    ModelConfig c = tiny_config(arch, arch == Arch::Qwen2);
    std::string d = dir + "/" + arch_model_type(arch);
    write_random_model(c, d, 11, DType::F32);
    ModelConfig r = ModelConfig::from_file(d);
    EXPECT_EQ(r.arch, arch);
    EXPECT_EQ(r.attention_bias, c.attention_bias);
    EXPECT_NO_THROW(check_weights(weight_spec(r), SafetensorsFolder(d))) << arch_class_name(arch);
  }
}

// The committed transformers fixtures (tests/data/<case>) are folders graphrt accepts.
TEST(Weights, GoldenFixtureFoldersPassTheCheck) {
  auto cases = testing::golden_case_dirs(GRAPHRT_TEST_DATA);
  ASSERT_EQ(cases.size(), 6u) << "run scripts/make_golden.py --out tests/data";
  struct Want {
    const char* name;
    Arch arch;
    bool tied, bias, qk_norm, llama3;
    int head_dim;
    int experts;
  } wants[] = {{"llama", Arch::Llama, false, false, false, true, 16, 0},
               {"mistral", Arch::Mistral, false, false, false, false, 16, 0},
               {"mixtral", Arch::Mixtral, false, false, false, false, 16, 4},
               {"qwen2", Arch::Qwen2, true, true, false, false, 16, 0},
               {"qwen3", Arch::Qwen3, false, false, true, false, 32, 0},
               // transformers 5 writes Qwen3-MoE's expert count as num_local_experts
               {"qwen3_moe", Arch::Qwen3Moe, false, false, true, false, 16, 8}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Want& w = wants[i];
    ModelConfig c = ModelConfig::from_file(cases[i]);
    EXPECT_EQ(fs::path(cases[i]).filename().string(), w.name);
    EXPECT_EQ(c.arch, w.arch) << w.name;
    EXPECT_EQ(c.tie_word_embeddings, w.tied) << w.name;
    EXPECT_EQ(c.attention_bias, w.bias) << w.name;
    EXPECT_EQ(c.qk_norm, w.qk_norm) << w.name;
    EXPECT_EQ(c.rope_llama3, w.llama3) << w.name;
    EXPECT_EQ(c.head_dim, w.head_dim) << w.name;
    EXPECT_EQ(c.num_experts, w.experts) << w.name;
    EXPECT_EQ(c.num_key_value_heads, 2) << w.name;
    EXPECT_EQ(c.torch_dtype, DType::F32) << w.name;
    EXPECT_EQ(c.sliding_window, 0) << w.name;
    EXPECT_NO_THROW(check_weights(weight_spec(c), SafetensorsFolder(cases[i]))) << w.name;
    testing::GoldenFixture g = testing::GoldenFixture::load(cases[i]);
    EXPECT_EQ(g.vocab, c.vocab_size);
    EXPECT_EQ(g.sequences.size(), 3u);
    for (const auto& seq : g.sequences)
      for (int32_t t : seq) EXPECT_TRUE(t >= 0 && t < c.vocab_size);
  }
}

TEST(MakeModelGolden, LoaderReadsTheScriptFormat) {
  std::string dir = temp_dir() + "/qwen3";
  fs::create_directories(dir);
  json g = {{"vocab", 3},
            {"sequences", {{1, 2}, {0}}},
            {"logits", {{{0.5, -1.0, 2.0}, {1.0, 1.0, 1.0}}, {{0.0, 0.25, -0.25}}}},
            {"greedy", {{2, 2, 1}, {1, 0, 0}}}};
  write_file(dir + "/golden.json", g.dump());
  auto cases = testing::golden_case_dirs(fs::path(dir).parent_path().string());
  ASSERT_EQ(cases.size(), 1u);
  testing::GoldenFixture f = testing::GoldenFixture::load(cases[0]);
  EXPECT_EQ(f.name, "qwen3");
  EXPECT_EQ(f.vocab, 3);
  EXPECT_EQ(f.sequences[0], (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(f.logits[0][0][2], 2.0f);
  EXPECT_EQ(f.greedy[1], (std::vector<int32_t>{1, 0, 0}));
  g["logits"][1] = json::array();  // a sequence without logits
  write_file(dir + "/golden.json", g.dump());
  expect_error([&] { testing::GoldenFixture::load(dir); }, {"golden.json", "sequence 1"});
}

}  // namespace
}  // namespace grt
