// A float64 host reference of the decoder models graphrt runs, written independently of the
// runtime for the MoE tests: the weights of builtin:<preset> (make_model.h's deterministic values,
// rounded to bf16 as the device generators do) and the transformers math of Qwen3-MoE / Mixtral
// (softmax over all experts in float, top-k, renormalised when norm_topk_prob).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/make_model.h"
#include "model/model_config.h"
#include "model/weight_spec.h"

namespace grt::testing {

class ReferenceModel {
 public:
  using Vec = std::vector<double>;

  explicit ReferenceModel(const ModelConfig& c, uint64_t seed = 0) : c_(c) {
    for (const ExpectedWeight& e : weight_spec(c).tensors) {
      std::vector<float> v = random_weight_values(e.name, e.shape.numel(), seed);
      std::vector<uint16_t> b(v.size());
      convert_elements(v.data(), DType::F32, b.data(), DType::BF16, v.size());
      convert_elements(b.data(), DType::BF16, v.data(), DType::F32, v.size());
      w_[e.name] = Vec(v.begin(), v.end());
    }
  }

  // Logits [tokens][vocab] of every position of `ids` (one sequence from position 0).
  std::vector<Vec> logits(const std::vector<int32_t>& ids) const {
    const int64_t T = static_cast<int64_t>(ids.size()), H = c_.hidden_size;
    std::vector<Vec> x(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) x[t] = row(W("model.embed_tokens.weight"), ids[t], H);
    for (int l = 0; l < c_.num_hidden_layers; ++l) {
      auto L = [l](const std::string& s) { return layer_weight_name(l, s.c_str()); };
      std::vector<Vec> h(x.size());
      for (int64_t t = 0; t < T; ++t) h[t] = norm(x[t], W(L("input_layernorm.weight")));
      std::vector<Vec> a = attention(l, h);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < H; ++i) x[t][i] += a[t][i];
      for (int64_t t = 0; t < T; ++t) {
        Vec n = norm(x[t], W(L("post_attention_layernorm.weight")));
        Vec m = c_.is_moe_layer(l) ? moe(l, n) : mlp(W(L("mlp.gate_proj.weight")), W(L("mlp.up_proj.weight")),
                                                    W(L("mlp.down_proj.weight")), 0, c_.intermediate_size, n);
        for (int64_t i = 0; i < H; ++i) x[t][i] += m[i];
      }
    }
    std::vector<Vec> out;
    const Vec& head = W(c_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
    for (int64_t t = 0; t < T; ++t) out.push_back(matvec(head, 0, c_.vocab_size, norm(x[t], W("model.norm.weight"))));
    return out;
  }

  // Greedy continuation of `prompt` by `n` tokens.
  std::vector<int32_t> greedy(std::vector<int32_t> seq, int n) const {
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) {
      Vec l = logits(seq).back();
      int32_t best = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      out.push_back(best);
      seq.push_back(best);
    }
    return out;
  }

  // The MoE routing of one normed row of layer `l`: (expert, weight) pairs in top-k order.
  std::vector<std::pair<int, double>> route(int l, const Vec& x) const {
    const std::string p = layer_weight_name(l, moe_weight_names(c_.arch).router);
    Vec logits = matvec(W(p), 0, c_.num_experts, x);
    double m = *std::max_element(logits.begin(), logits.end()), s = 0;
    for (double& v : logits) s += (v = std::exp(v - m));
    for (double& v : logits) v /= s;
    std::vector<std::pair<int, double>> picked;
    double sum = 0;
    for (int j = 0; j < c_.num_experts_per_tok; ++j) {
      int best = -1;
      for (int e = 0; e < c_.num_experts; ++e)
        if (logits[e] >= 0 && (best < 0 || logits[e] > logits[best])) best = e;
      picked.push_back({best, logits[best]});
      sum += logits[best];
      logits[best] = -1;
    }
    if (c_.norm_topk_prob)
      for (auto& pw : picked) pw.second /= sum;
    return picked;
  }

 private:
  const Vec& W(const std::string& name) const { return w_.at(name); }
  static Vec row(const Vec& m, int64_t r, int64_t n) { return Vec(m.begin() + r * n, m.begin() + (r + 1) * n); }
  // rows [r0, r0 + n) of matrix m (row length x.size()) times x
  static Vec matvec(const Vec& m, int64_t r0, int64_t n, const Vec& x) {
    Vec out(static_cast<size_t>(n));
    const int64_t k = static_cast<int64_t>(x.size());
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j) s += m[(r0 + i) * k + j] * x[j];
      out[i] = s;
    }
    return out;
  }
  Vec norm(const Vec& x, const Vec& w, size_t off = 0, size_t n = 0) const {
    if (n == 0) n = x.size();
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + c_.rms_norm_eps);
    Vec out(n);
    for (size_t i = 0; i < n; ++i) out[i] = w[i] * x[off + i] * inv;
    return out;
  }
  static double silu(double g) { return g / (1.0 + std::exp(-g)); }
  // SwiGLU with gate/up rows [r0, r0 + inter) of `gate`/`up` and down [H, inter].
  static Vec mlp(const Vec& gate, const Vec& up, const Vec& down, int64_t r0, int64_t inter, const Vec& x) {
    Vec g = matvec(gate, r0, inter, x), u = matvec(up, r0, inter, x);
    for (int64_t i = 0; i < inter; ++i) g[i] = silu(g[i]) * u[i];
    return matvec(down, 0, static_cast<int64_t>(x.size()), g);
  }
  Vec moe(int l, const Vec& x) const {
    const MoeWeightNames n = moe_weight_names(c_.arch);
    Vec out(x.size(), 0.0);
    for (auto [e, w] : route(l, x)) {
      auto E = [&](const char* proj) {
        return layer_weight_name(l, fmt::format("{}.{}.{}.weight", n.experts, e, proj).c_str());
      };
      Vec y = mlp(W(E(n.gate)), W(E(n.up)), W(E(n.down)), 0, c_.moe_intermediate_size, x);
      for (size_t i = 0; i < x.size(); ++i) out[i] += w * y[i];
    }
    return out;
  }
  std::vector<Vec> attention(int l, const std::vector<Vec>& h) const {
    auto L = [l](const char* s) { return layer_weight_name(l, s); };
    const int64_t T = static_cast<int64_t>(h.size()), nq = c_.num_attention_heads, nkv = c_.num_key_value_heads,
                  hd = c_.head_dim;
    std::vector<Vec> q(T), k(T), v(T), out(T);
    for (int64_t t = 0; t < T; ++t) {
      q[t] = matvec(W(L("self_attn.q_proj.weight")), 0, nq * hd, h[t]);
      k[t] = matvec(W(L("self_attn.k_proj.weight")), 0, nkv * hd, h[t]);
      v[t] = matvec(W(L("self_attn.v_proj.weight")), 0, nkv * hd, h[t]);
      prep(q[t], nq, c_.qk_norm ? &W(L("self_attn.q_norm.weight")) : nullptr, t);
      prep(k[t], nkv, c_.qk_norm ? &W(L("self_attn.k_norm.weight")) : nullptr, t);
    }
    for (int64_t t = 0; t < T; ++t) {
      Vec o(static_cast<size_t>(nq * hd), 0.0);
      for (int64_t hq = 0; hq < nq; ++hq) {
        const int64_t hk = hq / (nq / nkv);
        Vec s(static_cast<size_t>(t + 1));
        double m = -1e300, sum = 0;
        for (int64_t u = 0; u <= t; ++u) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += q[t][hq * hd + i] * k[u][hk * hd + i];
          s[u] = d / std::sqrt(static_cast<double>(hd));
          m = std::max(m, s[u]);
        }
        for (double& x : s) sum += (x = std::exp(x - m));
        for (int64_t u = 0; u <= t; ++u)
          for (int64_t i = 0; i < hd; ++i) o[hq * hd + i] += s[u] / sum * v[u][hk * hd + i];
      }
      out[t] = matvec(W(L("self_attn.o_proj.weight")), 0, c_.hidden_size, o);
    }
    return out;
  }
  // Per-head q/k norm (when given) then neox rope at position `pos`.
  void prep(Vec& x, int64_t heads, const Vec* nw, int64_t pos) const {
    const int64_t hd = c_.head_dim, half = hd / 2;
    for (int64_t h = 0; h < heads; ++h) {
      if (nw) {
        Vec n = norm(x, *nw, static_cast<size_t>(h * hd), static_cast<size_t>(hd));
        std::copy(n.begin(), n.end(), x.begin() + h * hd);
      }
      for (int64_t i = 0; i < half; ++i) {
        const double f = static_cast<double>(pos) * std::pow(c_.rope_theta, -2.0 * static_cast<double>(i) / hd);
        const double a = x[h * hd + i], b = x[h * hd + half + i];
        x[h * hd + i] = a * std::cos(f) - b * std::sin(f);
        x[h * hd + half + i] = b * std::cos(f) + a * std::sin(f);
      }
    }
  }

  ModelConfig c_;
  std::map<std::string, Vec> w_;
};

}  // namespace grt::testing
