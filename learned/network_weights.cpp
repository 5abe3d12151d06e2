// Reading, writing and validating the "policy" weights (nlohmann::json; no exception leaves here).
#include "learned/network_weights.h"
#include "learned/network_weights_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "features/features.h"
#include "policy/policy.h"

namespace dynamiccl::learned {
namespace {

using nlohmann::json;

// The tensor names and shapes a PolicyWeights of these dimensions must carry.
std::vector<std::pair<std::string, std::vector<int>>> expectedTensors(const PolicyWeights& w) {
  const int h = w.gruHidden;
  std::vector<std::pair<std::string, std::vector<int>>> out = {{"gru.weight_ih", {3 * h, 1}},
                                                               {"gru.weight_hh", {3 * h, h}},
                                                               {"gru.bias_ih", {3 * h}},
                                                               {"gru.bias_hh", {3 * h}}};
  int in = w.mlpInputs();
  for (size_t i = 0; i <= w.mlpHidden.size(); ++i) {
    const int o = i < w.mlpHidden.size() ? w.mlpHidden[i] : 1;
    out.push_back({"mlp." + std::to_string(i) + ".weight", {o, in}});
    out.push_back({"mlp." + std::to_string(i) + ".bias", {o}});
    in = o;
  }
  return out;
}

std::string shortNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

std::string shapeText(const std::vector<int>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

struct ParseError {
  std::string message;
};

int intField(const json& doc, const char* key, int lo, int hi) {
  if (!doc.contains(key) || !doc[key].is_number_integer()) throw ParseError{std::string(key) + " must be an integer"};
  const int64_t v = doc[key].get<int64_t>();
  if (v < lo || v > hi) throw ParseError{std::string(key) + " out of range"};
  return static_cast<int>(v);
}

// Float32 values as base64 (libcrypto's, features/crypto.h) of their little-endian bytes.
std::string base64OfFloats(const std::vector<float>& values) {
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<char>(bits >> (8 * b));
  }
  return base64(bytes);
}

// The inverse: false unless the text is padded base64 of a whole number of float32 values (and
// false where libcrypto is missing: the profile is then refused with its one line).
bool floatsFromBase64(std::string_view text, std::vector<float>& out) {
  const auto bytes = unbase64(text);
  if (!bytes || bytes->size() % 4 != 0) return false;
  out.reserve(bytes->size() / 4);
  adviseHugePages(out.data(), out.capacity() * sizeof(float));  // a 1024 x 1024 layer is 4 MB
  out.resize(bytes->size() / 4);
  if (!bytes->empty()) std::memcpy(out.data(), bytes->data(), bytes->size());  // an empty vector's data() may be null
  if constexpr (std::endian::native == std::endian::big)  // the bytes are little-endian
    for (float& f : out) f = std::bit_cast<float>(__builtin_bswap32(std::bit_cast<uint32_t>(f)));
  return true;
}

// A float array as either encoding (WeightEncoding); what names it in messages.
void readFloats(const json& v, std::vector<float>& out, const std::string& what, const std::string& nonNumber) {
  if (v.is_string()) {
    if (!floatsFromBase64(v.get_ref<const std::string&>(), out))
      throw ParseError{what + " is a string but not base64 of float32 values"};
    return;
  }
  out.reserve(v.size());
  for (const json& x : v) {
    if (!x.is_number()) throw ParseError{nonNumber};
    out.push_back(x.get<float>());
  }
}

json floatsJson(const std::vector<float>& values, WeightEncoding encoding) {
  return encoding == WeightEncoding::Base64 ? json(base64OfFloats(values)) : json(values);
}

float floatField(const json& doc, const char* key) {
  if (!doc.contains(key) || !doc[key].is_number()) throw ParseError{std::string(key) + " must be a number"};
  return doc[key].get<float>();
}

}  // namespace

Status validatePolicyWeights(const PolicyWeights& w) {
  if (w.version != kPolicyWeightsVersion) return makeError("unsupported policy weights version " + std::to_string(w.version));
  if (w.encodingVersion != kFeatureEncodingVersion || w.contextFeatures != kContextFeatures ||
      w.configFeatures != kConfigFeatures || w.windowLength != kTimingWindowLength)
    return makeError("weights were trained for another feature encoding than this plugin's");
  if (w.gruHidden < 1 || w.gruHidden > 256) return makeError("gru_hidden must be in [1, 256]");
  if (w.mlpHidden.empty() || w.mlpHidden.size() > 8) return makeError("mlp_hidden must list 1 to 8 layers");
  for (int n : w.mlpHidden)
    if (n < 1 || n > 1024) return makeError("mlp_hidden widths must be in [1, 1024]");
  if (!std::isfinite(w.targetMean) || !std::isfinite(w.targetStd) || w.targetStd <= 0)
    return makeError("target mean/std must be finite with std > 0");
  if (std::abs(w.targetMean) > kMaxTargetMagnitude || w.targetStd > kMaxTargetMagnitude)
    return makeError("values out of range: target mean/std beyond " + std::to_string(static_cast<int>(kMaxTargetMagnitude)) +
                     " (a log of microseconds)");
  if (w.guardMargin && !(*w.guardMargin >= 0.0f && *w.guardMargin < 1.0f))
    return makeError("guard_margin must be in [0, 1) (null: no guard)");
  if (!w.lastLayerCovariance.empty()) {
    const size_t n = static_cast<size_t>(w.embeddingSize()) + 1;
    if (w.lastLayerCovariance.size() != n * n)
      return makeError("last_layer_covariance must hold (last hidden width + 1)^2 = " + std::to_string(n * n) + " values");
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        const float v = w.lastLayerCovariance[i * n + j], t = w.lastLayerCovariance[j * n + i];
        if (!std::isfinite(v)) return makeError("last_layer_covariance holds a NaN or infinite value");
        if (i == j && v < 0) return makeError("last_layer_covariance has a negative variance");
        if (std::abs(v) > kMaxCovarianceValue)
          return makeError("covariance unusable: last_layer_covariance holds " + shortNumber(v) +
                           ", beyond 1e6 (no key could ever be confident)");
        if (std::abs(v - t) > 1e-4f * (std::abs(v) + std::abs(t)) + 1e-12f)
          return makeError("last_layer_covariance is not symmetric");
      }
  }
  if (!(w.keyErrorSigmas >= 0.0f && w.keyErrorSigmas <= 10.0f)) return makeError("key_error_sigmas must be in [0, 10]");
  const auto expected = expectedTensors(w);
  if (w.tensors.size() != expected.size()) return makeError("expected " + std::to_string(expected.size()) + " tensors");
  for (const auto& [name, shape] : expected) {
    auto it = w.tensors.find(name);
    if (it == w.tensors.end()) return makeError("missing tensor " + name);
    if (it->second.shape != shape)
      return makeError("tensor " + name + " has shape " + shapeText(it->second.shape) + ", expected " + shapeText(shape));
    size_t n = 1;
    for (int d : shape) n *= static_cast<size_t>(d);
    if (it->second.data.size() != n) return makeError("tensor " + name + " has the wrong number of values");
    for (float v : it->second.data)
      if (!std::isfinite(v)) return makeError("tensor " + name + " holds a NaN or infinite value");
      else if (std::abs(v) > kMaxPolicyWeight)
        return makeError("values out of range: tensor " + name + " holds " + shortNumber(v) + ", beyond 1e4");
  }
  return Ok{};
}

Expected<PolicyWeights> parsePolicyWeights(std::string_view text) {
  if (auto s = policy::checkJsonLimits(text, policy::kMaxProfileBytes); !s) return makeError("policy: " + s.error());
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return makeError("policy must be a JSON object");
  return parsePolicyWeights(doc);
}

Expected<PolicyWeights> parsePolicyWeights(const json& doc) {
  if (!doc.is_object()) return makeError("policy must be a JSON object");
  try {
    if (!doc.contains("format") || doc["format"] != std::string(kPolicyFormat))
      throw ParseError{"policy.format must be \"" + std::string(kPolicyFormat) + "\""};
    PolicyWeights w;
    w.version = intField(doc, "version", 0, 1 << 20);
    w.encodingVersion = intField(doc, "feature_encoding", 0, 1 << 20);
    w.contextFeatures = intField(doc, "context_features", 0, 4096);
    w.configFeatures = intField(doc, "config_features", 0, 4096);
    w.windowLength = intField(doc, "window", 0, 4096);
    w.gruHidden = intField(doc, "gru_hidden", 0, 4096);
    if (!doc.contains("mlp_hidden") || !doc["mlp_hidden"].is_array()) throw ParseError{"mlp_hidden must be an array"};
    w.mlpHidden.clear();
    for (const json& n : doc["mlp_hidden"]) {
      if (!n.is_number_integer()) throw ParseError{"mlp_hidden must hold integers"};
      w.mlpHidden.push_back(n.get<int>());
    }
    w.targetMean = floatField(doc, "target_mean");
    w.targetStd = floatField(doc, "target_std");
    if (doc.contains("guard_margin"))
      w.guardMargin = doc["guard_margin"].is_null() ? std::nullopt : std::optional<float>(floatField(doc, "guard_margin"));
    if (doc.contains("description") && doc["description"].is_string()) w.description = doc["description"];
    if (doc.contains("last_layer_covariance") && !doc["last_layer_covariance"].is_null()) {
      const json& c = doc["last_layer_covariance"];
      if (!c.is_array() && !c.is_string()) throw ParseError{"last_layer_covariance must be an array of numbers"};
      readFloats(c, w.lastLayerCovariance, "last_layer_covariance", "last_layer_covariance holds a non-number");
    }
    if (doc.contains("key_error_sigmas")) w.keyErrorSigmas = floatField(doc, "key_error_sigmas");
    if (!doc.contains("tensors") || !doc["tensors"].is_object()) throw ParseError{"tensors must be an object"};
    for (auto it = doc["tensors"].begin(); it != doc["tensors"].end(); ++it) {
      const json& t = it.value();
      if (!t.is_object() || !t.contains("shape") || !t.contains("data") || !t["shape"].is_array() ||
          !(t["data"].is_array() || t["data"].is_string()))
        throw ParseError{"tensor " + it.key() + " must be {shape, data}"};
      Tensor tensor;
      for (const json& d : t["shape"]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (1 << 20))
          throw ParseError{"tensor " + it.key() + " has a bad shape"};
        tensor.shape.push_back(d.get<int>());
      }
      readFloats(t["data"], tensor.data, "tensor " + it.key() + " data",
                 "tensor " + it.key() + " holds a non-number (NaN is not JSON)");
      w.tensors[it.key()] = std::move(tensor);
    }
    if (auto s = validatePolicyWeights(w); !s) return makeError(s.error());
    return w;
  } catch (const ParseError& e) {
    return makeError(e.message);
  } catch (const std::exception& e) {
    return makeError(std::string("policy: ") + e.what());
  }
}

std::string policyWeightsToJson(const PolicyWeights& w, WeightEncoding encoding) {
  json doc;
  doc["format"] = std::string(kPolicyFormat);
  doc["version"] = w.version;
  doc["feature_encoding"] = w.encodingVersion;
  doc["context_features"] = w.contextFeatures;
  doc["config_features"] = w.configFeatures;
  doc["window"] = w.windowLength;
  doc["gru_hidden"] = w.gruHidden;
  doc["mlp_hidden"] = w.mlpHidden;
  doc["target_mean"] = w.targetMean;
  doc["target_std"] = w.targetStd;
  doc["guard_margin"] = w.guardMargin ? json(*w.guardMargin) : json(nullptr);
  if (!w.description.empty()) doc["description"] = w.description;
  if (!w.lastLayerCovariance.empty()) {
    doc["last_layer_covariance"] = floatsJson(w.lastLayerCovariance, encoding);
    doc["key_error_sigmas"] = w.keyErrorSigmas;
  }
  json tensors = json::object();
  for (const auto& [name, t] : w.tensors) tensors[name] = json{{"shape", t.shape}, {"data", floatsJson(t.data, encoding)}};
  doc["tensors"] = std::move(tensors);
  return doc.dump();
}

}  // namespace dynamiccl::learned
