// Training data: importance weights, simulator rollouts with congestion, store rows, evaluation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "store/store.h"
#include "offline/train/dataset.h"
#include "offline/train/policy_eval.h"

namespace dynamiccl {
namespace {

TEST(ImportanceWeights, RareLoggedConfigsWeighMore) {
  // Key k: the logging policy ran A 9 times and B once; uniform target -> A 5/9, B 5.
  std::vector<std::string> keys(10, "k"), configs(9, "A");
  configs.push_back("B");
  keys.push_back("j");
  configs.push_back("A");
  const auto w = train::importanceWeights(keys, configs, 10.0f);
  EXPECT_NEAR(w[0], 5.0 / 9, 1e-6);
  EXPECT_NEAR(w[9], 5.0, 1e-6);
  EXPECT_NEAR(w[10], 1.0, 1e-6);
  EXPECT_NEAR(train::importanceWeights({"k", "k", "k", "k"}, {"A", "A", "A", "B"}, 2.0f)[3], 2.0, 1e-6);  // clipped
}

TEST(Rollouts, CongestionShowsInTheWindowAndTheLatency) {
  auto sys = train::SimSystem::make(*train::findPreset("dgx-h100x4"));
  ASSERT_TRUE(sys.ok()) << sys.error();
  const policy::Decision ring{Algo::Ring, Proto::Simple, 0, 0};
  const auto calm = sys->trueLatency_us(Collective::AllReduce, 1 << 26, ring, 0.0);
  const auto busy = sys->trueLatency_us(Collective::AllReduce, 1 << 26, ring, 1.0);
  ASSERT_TRUE(calm && busy);
  EXPECT_GT(*busy, 1.5 * *calm);
  train::RolloutOptions ro;
  ro.keysPerSystem = 50;
  ro.congestedFraction = 1.0;
  const auto rows = train::simulatorRollouts({*sys}, ro);
  ASSERT_FALSE(rows.empty());
  EXPECT_GT(rows[0].window[kTimingWindowLength - 1], 0.05f);  // the newest ratio is elevated
  for (const auto& r : rows) ASSERT_TRUE(std::isfinite(r.logLatency_us));
}

TEST(Rollouts, HoldingOutAPrefixRemovesThoseMachines) {
  for (const auto& t : train::presetsMatching({"h800"}, false)) EXPECT_NE(t.name.rfind("h800", 0), 0u);
  EXPECT_FALSE(train::presetsMatching({"h800"}, true).empty());
  for (const auto& t : train::presetTopologies()) EXPECT_TRUE(train::SimSystem::make(t).ok()) << t.name;
}

TEST(Rollouts, TheTrainingMachinesAreThePlatformFilesMarkedForTraining) {
  // Their order is the rollouts' order, so it shapes the learned weights: the files keep it.
  std::vector<std::string> names;
  for (const auto& t : train::presetTopologies()) names.push_back(t.name);
  const std::vector<std::string> expected = {
      "dgx-a100x1",  "dgx-a100x2",  "dgx-a100x4",  "dgx-h100x1",       "dgx-h100x2",       "dgx-h100x4",
      "dgx-h100x8",  "h800x2",      "h800x4",      "h800x8",           "l40s-pcie-4x1",    "l40s-pcie-4x2",
      "gh200-slingshotx2", "gh200-slingshotx8", "gb200-nvl72x3", "gb200-nvl72x18", "dgx-b200x2", "gcp-a3megax2"};
  EXPECT_EQ(names, expected);
  auto gb200 = train::findPreset("gb200-nvl72x18");
  ASSERT_TRUE(gb200.has_value());
  EXPECT_EQ(gb200->nNodes, 18);
  EXPECT_EQ(train::simPresetOf(*gb200), "gb200-nvl72");
  EXPECT_FALSE(train::findPreset("dgx-h200x2").has_value());  // a platform without "train" is not trained on
}

TEST(StoreSamples, ReadsObservationsWithImportanceWeights) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("dynamiccl-train-" + std::to_string(::getpid()) + ".db")).string();
  {
    auto db = store::Store::open(store::StoreOptions{.path = path});
    ASSERT_TRUE(db.ok()) << db.error();
    store::RunInfo info;
    info.system = "dgx-h100x2";
    info.source = "test";
    auto run = (*db)->addRun(info);
    ASSERT_TRUE(run.ok()) << run.error();
    auto comm = (*db)->addCommunicator(store::CommInfo{.run_id = *run, .n_ranks = 16, .n_nodes = 2});
    ASSERT_TRUE(comm.ok()) << comm.error();
    auto writer = store::Writer::create(**db);
    ASSERT_TRUE(writer.ok()) << writer.error();
    store::Batch batch;
    for (int i = 0; i < 4; ++i) {
      store::ObservationRow r;
      r.comm_row = *comm;
      r.seq = i;
      r.collective = "allreduce";
      r.bytes = 1 << 20;
      r.algo = i < 3 ? Algo::Ring : Algo::Tree;
      r.proto = Proto::Simple;
      r.gpu_us = 100.0 + i;
      batch.observations.push_back(r);
    }
    store::ObservationRow unknown = batch.observations[0];
    unknown.algo = Algo::Default;  // which config ran is unknown: not usable
    unknown.proto = Proto::Default;
    batch.observations.push_back(unknown);
    ASSERT_TRUE((*writer)->write(batch).committed);
  }
  auto rows = train::storeSamples(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(rows->read, 5u);
  EXPECT_EQ(rows->skipped, 1u);
  ASSERT_EQ(rows->samples.size(), 4u);
  EXPECT_NEAR(rows->samples[0].weight, 2.0 / 3, 1e-6);
  EXPECT_NEAR(rows->samples[3].weight, 2.0, 1e-6);
  EXPECT_NEAR(rows->samples[3].logLatency_us, std::log(103.0), 1e-5);
}

// Symmetric-memory kernels never become algorithm/protocol samples, and tagged calls are weighted
// as keys of their own (not mixed with the untagged calls of the same size).
TEST(StoreSamples, SymmetricKernelsAreSkippedAndUserTagsKeptApart) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("dynamiccl-train-sym-" + std::to_string(::getpid()) + ".db")).string();
  {
    auto db = store::Store::open(store::StoreOptions{.path = path});
    ASSERT_TRUE(db.ok()) << db.error();
    store::RunInfo info;
    info.system = "dgx-h100x2";
    info.source = "plugin";
    auto run = (*db)->addRun(info);
    ASSERT_TRUE(run.ok()) << run.error();
    auto comm = (*db)->addCommunicator(store::CommInfo{.run_id = *run, .n_ranks = 16, .n_nodes = 2});
    ASSERT_TRUE(comm.ok()) << comm.error();
    auto writer = store::Writer::create(**db);
    ASSERT_TRUE(writer.ok()) << writer.error();
    store::Batch batch;
    for (int i = 0; i < 5; ++i) {
      store::ObservationRow r;
      r.comm_row = *comm;
      r.seq = i;
      r.collective = "allreduce";
      r.bytes = 1 << 20;
      r.algo = i < 3 ? Algo::Ring : Algo::Tree;
      r.proto = Proto::Simple;
      r.gpu_us = 100.0 + i;
      r.profiler_version = 7;
      r.is_sym_coll = i == 4 ? 1 : 0;  // even with a readable algo: a symmetric kernel is no such choice
      r.user_tag = i == 3 ? 7 : 0;
      batch.observations.push_back(r);
    }
    ASSERT_TRUE((*writer)->write(batch).committed);
  }
  auto rows = train::storeSamples(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(rows->read, 5u);
  EXPECT_EQ(rows->skipped, 1u);
  EXPECT_EQ(rows->symmetric, 1u);
  ASSERT_EQ(rows->samples.size(), 4u);
  // Untagged: RING only (weight 1 each); tagged: TREE only (weight 1). Mixed, TREE would weigh 2.
  for (const auto& s : rows->samples) EXPECT_NEAR(s.weight, 1.0, 1e-6);
}

TEST(StoreSamples, MissingDirectoryIsAnError) {
  EXPECT_FALSE(train::storeSamples("/proc/nonexistent/x.db").ok());
}

}  // namespace
}  // namespace dynamiccl
