// The LibTorch side: the GRU + MLP module, its training loop and weight export. The only Torch
// translation unit, to keep builds short; built into libdynamiccl-train.so (torch_module_entry.cpp).
#include <torch/torch.h>

#include <chrono>
#include <cmath>

#include "offline/train/torch_module.h"
#include "learned/learned.h"

namespace dynamiccl::train {
namespace {

constexpr int kInputs = kContextFeatures + kConfigFeatures;

struct PolicyNetImpl : torch::nn::Module {
  torch::nn::GRU gru{nullptr};
  std::vector<torch::nn::Linear> layers;

  PolicyNetImpl(int gruHidden, const std::vector<int>& hidden) {
    gru = register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(1, gruHidden).batch_first(true)));
    int in = kInputs + gruHidden;
    for (size_t i = 0; i <= hidden.size(); ++i) {
      const int out = i < hidden.size() ? hidden[i] : 1;
      layers.push_back(register_module("mlp" + std::to_string(i), torch::nn::Linear(in, out)));
      in = out;
    }
  }

  // rows [B, kInputs], window [B, T] -> standardized log latency [B]
  torch::Tensor forward(const torch::Tensor& rows, const torch::Tensor& window) {
    auto state = std::get<1>(gru->forward(window.unsqueeze(2))).squeeze(0);
    auto x = torch::cat({rows, state}, 1);
    for (size_t i = 0; i < layers.size(); ++i) {
      x = layers[i]->forward(x);
      if (i + 1 < layers.size()) x = torch::relu(x);
    }
    return x.squeeze(1);
  }
};
TORCH_MODULE(PolicyNet);

learned::Tensor toTensor(const torch::Tensor& t) {
  auto c = t.detach().contiguous().to(torch::kFloat32);
  learned::Tensor out;
  for (int64_t d : c.sizes()) out.shape.push_back(static_cast<int>(d));
  out.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  return out;
}

learned::PolicyWeights exportWeights(PolicyNet& net, const TrainOptions& o, float mean, float stdev) {
  learned::PolicyWeights w;
  w.gruHidden = o.gruHidden;
  w.mlpHidden = o.mlpHidden;
  w.targetMean = mean;
  w.targetStd = stdev;
  w.tensors["gru.weight_ih"] = toTensor(net->gru->named_parameters()["weight_ih_l0"]);
  w.tensors["gru.weight_hh"] = toTensor(net->gru->named_parameters()["weight_hh_l0"]);
  w.tensors["gru.bias_ih"] = toTensor(net->gru->named_parameters()["bias_ih_l0"]);
  w.tensors["gru.bias_hh"] = toTensor(net->gru->named_parameters()["bias_hh_l0"]);
  for (size_t i = 0; i < net->layers.size(); ++i) {
    w.tensors["mlp." + std::to_string(i) + ".weight"] = toTensor(net->layers[i]->weight);
    w.tensors["mlp." + std::to_string(i) + ".bias"] = toTensor(net->layers[i]->bias);
  }
  return w;
}

void importWeights(PolicyNet& net, const learned::PolicyWeights& w) {
  torch::NoGradGuard guard;
  auto set = [](torch::Tensor param, const learned::Tensor& t) {
    std::vector<int64_t> shape(t.shape.begin(), t.shape.end());
    param.copy_(torch::from_blob(const_cast<float*>(t.data.data()), shape, torch::kFloat32));
  };
  auto g = net->gru->named_parameters();
  set(g["weight_ih_l0"], w.tensors.at("gru.weight_ih"));
  set(g["weight_hh_l0"], w.tensors.at("gru.weight_hh"));
  set(g["bias_ih_l0"], w.tensors.at("gru.bias_ih"));
  set(g["bias_hh_l0"], w.tensors.at("gru.bias_hh"));
  for (size_t i = 0; i < net->layers.size(); ++i) {
    set(net->layers[i]->weight, w.tensors.at("mlp." + std::to_string(i) + ".weight"));
    set(net->layers[i]->bias, w.tensors.at("mlp." + std::to_string(i) + ".bias"));
  }
}

struct Tensors {
  torch::Tensor rows, window, target, weight;
};

Tensors tensorsOf(const std::vector<Sample>& s, float mean, float stdev) {
  const int64_t n = static_cast<int64_t>(s.size());
  Tensors t{torch::empty({n, kInputs}), torch::empty({n, kTimingWindowLength}), torch::empty({n}), torch::empty({n})};
  auto rows = t.rows.accessor<float, 2>();
  auto win = t.window.accessor<float, 2>();
  auto tgt = t.target.accessor<float, 1>();
  auto wt = t.weight.accessor<float, 1>();
  for (int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < kInputs; ++j) rows[i][j] = s[i].inputs[j];
    for (int j = 0; j < kTimingWindowLength; ++j) win[i][j] = s[i].window[j];
    tgt[i] = (s[i].logLatency_us - mean) / stdev;
    wt[i] = s[i].weight;
  }
  return t;
}

double weightedLoss(PolicyNet& net, const Tensors& t) {
  if (t.rows.size(0) == 0) return NAN;
  torch::NoGradGuard guard;
  auto err = net->forward(t.rows, t.window) - t.target;
  return ((err * err * t.weight).sum() / t.weight.sum()).item<double>();
}

}  // namespace

Expected<learned::PolicyWeights> torchInitial(const TrainOptions& o) {
  try {
    torch::manual_seed(o.seed);
    PolicyNet net(o.gruHidden, o.mlpHidden);
    return exportWeights(net, o, 0.0f, 1.0f);
  } catch (const std::exception& e) {
    return makeError(std::string("libtorch: ") + e.what());
  }
}

Expected<std::vector<float>> torchPredict(const learned::PolicyWeights& w, const float* rows, int n, const float* window) {
  try {
    TrainOptions o;
    o.gruHidden = w.gruHidden;
    o.mlpHidden = w.mlpHidden;
    PolicyNet net(o.gruHidden, o.mlpHidden);
    importWeights(net, w);
    torch::NoGradGuard guard;
    auto r = torch::from_blob(const_cast<float*>(rows), {n, kInputs}, torch::kFloat32);
    auto win = torch::from_blob(const_cast<float*>(window), {1, kTimingWindowLength}, torch::kFloat32).expand({n, kTimingWindowLength});
    auto y = net->forward(r, win.contiguous()) * w.targetStd + w.targetMean;
    return std::vector<float>(y.data_ptr<float>(), y.data_ptr<float>() + n);
  } catch (const std::exception& e) {
    return makeError(std::string("libtorch: ") + e.what());
  }
}

Expected<learned::PolicyWeights> torchTrain(const std::vector<Sample>& trainRows, const std::vector<Sample>& validationRows,
                                           const std::vector<Sample>& heldOutRows, const TrainOptions& o,
                                           const std::function<void(const EpochStats&)>& onEpoch) {
  if (trainRows.empty()) return makeError("no training rows");
  try {
    torch::set_num_threads(o.threads);
    torch::manual_seed(o.seed);
    // Standardize the target so the output layer starts in range.
    double sum = 0, sq = 0;
    for (const Sample& s : trainRows) {
      sum += s.logLatency_us;
      sq += s.logLatency_us * s.logLatency_us;
    }
    const float mean = static_cast<float>(sum / trainRows.size());
    const float stdev = static_cast<float>(std::sqrt(std::max(1e-6, sq / trainRows.size() - mean * mean)));
    const Tensors train = tensorsOf(trainRows, mean, stdev), val = tensorsOf(validationRows, mean, stdev),
                  held = tensorsOf(heldOutRows, mean, stdev);
    PolicyNet net(o.gruHidden, o.mlpHidden);
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(o.learningRate));
    const int64_t n = train.rows.size(0);
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
      const auto start = std::chrono::steady_clock::now();
      // Step the learning rate down over the last third for a stable end point.
      if (epoch == 2 * o.epochs / 3 + 1)
        for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(o.learningRate / 5);
      auto perm = torch::randperm(n, torch::kLong);
      double total = 0, weights = 0;
      for (int64_t i = 0; i < n; i += o.batchSize) {
        auto idx = perm.slice(0, i, std::min(n, i + o.batchSize));
        auto err = net->forward(train.rows.index_select(0, idx), train.window.index_select(0, idx)) -
                   train.target.index_select(0, idx);
        auto w = train.weight.index_select(0, idx);
        auto loss = (err * err * w).sum() / w.sum();
        opt.zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(net->parameters(), 5.0);
        opt.step();
        total += loss.item<double>() * w.sum().item<double>();
        weights += w.sum().item<double>();
      }
      EpochStats st;
      st.epoch = epoch;
      st.trainLoss = total / weights;
      st.validationLoss = weightedLoss(net, val);
      st.heldOutLoss = weightedLoss(net, held);
      st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (onEpoch) onEpoch(st);
    }
    learned::PolicyWeights w = exportWeights(net, o, mean, stdev);
    if (auto s = learned::validatePolicyWeights(w); !s) return makeError("trained weights invalid: " + s.error());
    return w;
  } catch (const std::exception& e) {
    return makeError(std::string("libtorch: ") + e.what());
  }
}

}  // namespace dynamiccl::train
