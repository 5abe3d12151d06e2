// One rank of a replayed job, in its own forked process; and the parent's reading of its result.
#pragma once

#include <string>

#include "offline/jobreplay/jobreplay.h"

namespace dynamiccl::jobreplay {

struct RankPlan {
  const MeasuredJob* job = nullptr;
  const JobOptions* options = nullptr;
  int rank = 0;
  uint64_t calls = 0;
  uint64_t commId = 0;
  std::vector<std::pair<std::string, std::string>> env;  // jobreplay's defaults, then the caller's
  std::string resultPath, logPath;
};

// Runs in the child: sets env, loads both roles, runs every call, writes the result; never returns.
[[noreturn]] void runRank(const RankPlan& plan);

// Why a rank that exited with `code` wrote no result.
std::string rankExitReason(int code);

// The result file a finished rank wrote; an error when missing or unreadable.
Expected<RankOutcome> readRankResult(const std::string& path, int rank, size_t nKeys);

}  // namespace dynamiccl::jobreplay
