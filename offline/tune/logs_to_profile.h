// One recipe from nccl-tests logs (or interchange CSVs) to a profile: ingest each file into a
// scratch store (saying what it detected), export the measurements, tune every communicator shape
// on them with the decision rule, and merge the shapes' rules into one profile.
#pragma once

#include <string>
#include <vector>

#include "offline/tune/evidence.h"
#include "offline/tune/smoothing.h"
#include "policy/policy.h"

namespace dynamiccl::tune {

struct LogsProfilePlan {
  std::vector<std::string> paths;  // files or directories (recursive)
  std::string workDir;             // the scratch store and the exported normalized.csv go here
  std::string system;              // only systems containing this
  std::optional<ClusterHardware> declared;  // the measured machine's fingerprint, when declared
  SmoothingOptions rule;
  std::string name = "dynamiccl profile";
  bool skipUnread = false;  // tune on the rest where an input could not be read (each still named)
};

// One size of one shape, as an nccl-tests table row: NCCL's default, what the profile runs, the evidence.
struct ProfileRow {
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  double default_us = 0, default_busbw = 0;
  std::string runs = "default";   // what the profile runs here ("default": NCCL's own choice)
  double runs_us = 0, runs_busbw = 0;
  PointEvidence evidence;         // the best candidate's evidence at this size
};
struct ShapeTable {
  std::string shape;              // "replay L40S ... 2r/1n"
  int nRanks = 0, nNodes = 0;
  std::vector<ProfileRow> rows;
  std::vector<std::string> notes; // undecidable sizes, data notes
};
struct LogsProfileReport {
  std::vector<std::string> files;  // one line per file: what ingest detected, or why it was refused
  int refused = 0;
  std::vector<std::string> unread;  // "<path>: <why>" per directory or file that could not be read
  std::string csvPath;
  std::vector<ShapeTable> shapes;
  policy::Profile profile;
};
Expected<LogsProfileReport> profileFromLogs(const LogsProfilePlan& plan);

}  // namespace dynamiccl::tune
