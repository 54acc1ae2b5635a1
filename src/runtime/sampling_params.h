// A request's sampling parameters and the one place that decides which values are allowed.
// Conventions (README "Sampling parameters"):
//   temperature  finite, >= 0; 0 means greedy (argmax).
//   top_k        -1 or 0 mean no limit (-1 is SGLang's spelling); otherwise >= 1; < -1 is an error.
//   top_p        in (0, 1]; 1 means no limit; 0, negative, > 1 and NaN are errors.
//   seed         0 .. 2^63-1 (it travels to the device as int64).
//   min_p        in [0, 1]; 0 means off.
//   frequency_penalty, presence_penalty   finite, in [-2, 2] (OpenAI's range); 0 means off.
//   repetition_penalty                    finite, > 0 (HF's); 1 means off.
#pragma once
#include <cstdint>

namespace grt {

// Names under which the fields are reported: JSON field names by default (a server's request
// body); the CLI passes its flag names.
struct SamplingFieldNames {
  const char* temperature = "temperature";
  const char* top_k = "top_k";
  const char* top_p = "top_p";
  const char* seed = "seed";
  const char* min_p = "min_p";
  const char* frequency_penalty = "frequency_penalty";
  const char* presence_penalty = "presence_penalty";
  const char* repetition_penalty = "repetition_penalty";
};

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0 or -1: no limit
  float top_p = 1.0f;        // 1: no limit
  uint64_t seed = 0;
  float min_p = 0.0f;  // drop tokens with p < min_p * p_max (0: off)
  // OpenAI penalties on tokens already generated (0 / 0 / 1: off): logit -= frequency * count +
  // presence * (count > 0); repetition (HF): positive logits / r, negative * r.
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  bool has_penalties() const {
    return frequency_penalty != 0.0f || presence_penalty != 0.0f || repetition_penalty != 1.0f;
  }

  static constexpr uint64_t kMaxSeed = 9223372036854775807ull;  // INT64_MAX

  // Contract (for the CLI, the engine and an HTTP server alike): returns normally when every
  // field is within the conventions above; otherwise throws grt::Error whose message names the
  // first bad field (as `names` spells it), its value and the allowed range, e.g.
  // "top_p 1.5 is not allowed: must be in (0, 1] (1: no limit)". Pure: no side effects, no
  // device work, cheap enough to call per request.
  void validate(const SamplingFieldNames& names = {}) const;
  bool greedy() const { return temperature == 0.0f; }
};

}  // namespace grt
