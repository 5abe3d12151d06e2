// ingest: reads measurements others produced (nccl-tests logs, NCCL TUNING log lines, the interchange
// CSV of shared/data/README.md) into the store's schema, and exports the store back to that CSV.
// Public header of dynamiccl_ingest.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "store/store.h"

namespace dynamiccl::ingest {

// "allreduce", "allgather", ... from NCCL's or nccl-tests' spelling ("AllReduce", "all_reduce_perf").
std::optional<std::string> canonicalCollective(std::string_view name);

// One NCCL_DEBUG_SUBSYS=TUNING line: "<Coll>: <n> Bytes -> Algo <A> proto <P> channel{Lo..Hi}={lo..hi}".
struct TuningChoice {
  std::string collective;
  uint64_t bytes = 0;  // as NCCL prints it: count x typesize (per-rank share for AllGather/ReduceScatter)
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  int channel_lo = 0;
  int channel_hi = -1;
  int nChannels() const { return channel_hi >= channel_lo ? channel_hi - channel_lo + 1 : -1; }
};
std::optional<TuningChoice> parseTuningLine(std::string_view line);

// One row of an nccl-tests table; NaN / -1 where the log printed N/A.
struct NcclTestsRow {
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::string type, redop;
  int root = -1;
  double oop_time_us = NAN, oop_busbw_gbps = NAN;
  int64_t oop_wrong = -1;
  double ip_time_us = NAN, ip_busbw_gbps = NAN;
  int64_t ip_wrong = -1;
  // rccl-tests' own report of the row (its algo/proto/nchannels columns); the channel count is RCCL's
  // planned ceiling, not what ran (mi355x-rccl-1node's PROVENANCE: the authors' logs differ).
  std::optional<Algo> reported_algo;
  std::optional<Proto> reported_proto;
  int reported_channels = -1;
};

// One "# Collective test starting" block (a log may hold several) with what the log says about it.
struct NcclTestsSection {
  std::string collective;  // canonical, empty if unknown
  int n_ranks = 0;
  int n_nodes = 0;         // 0: unknown
  std::string nccl_version, gpu_name, host;
  std::string library;  // "NCCL" or "RCCL" where the log says (a version line, rccl-tests' own); "" unknown
  std::map<std::string, std::string> env;  // NCCL_* knobs from env lines (or path hints, marked)
  std::map<std::string, std::string> env_from;  // NCCL_* knob -> the line kind that set it ("env line", ...)
  Algo forced_algo = Algo::Default;
  Proto forced_proto = Proto::Default;
  int forced_channels = -1;   // NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS, or NCCL_NCHANNELS; -1: not forced
  std::string channels_from;  // the setting that forced it, as the interchange note states it ("NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8")
  // Where forced_algo/forced_proto came from, e.g. "env line NCCL_ALGO=Ring; directory ring_ll128";
  // empty when nothing forced them.
  std::string forced_from;
  // Non-empty when two sources name different algorithms or protocols (the file name says tree, an
  // env line ring): which, and the file is refused rather than guessed.
  std::string ambiguous;
  std::vector<NcclTestsRow> rows;
};

struct ParsedLog {
  std::vector<NcclTestsSection> sections;  // only those with table rows
  std::vector<TuningChoice> tuning;        // every TUNING line of the file
};

// path_hint: the file's path; fills what the text lacks (collective, job-n-<ranks>-N-<nodes>, auto_ll/, ring/).
ParsedLog parseNcclTestsLog(std::string_view text, std::string_view path_hint);

// The interchange CSV (shared/data/README.md; its reader and writer are measurements::parseInterchangeCsv and
// measurements::formatInterchangeRow in offline/measurements): writes the header and every out-of-place
// observation (in-place too when asked; notes say which).
Expected<int64_t> exportInterchangeCsv(store::Store& store, std::ostream& out, bool include_in_place = false);

// What ingest detected in one section of a log, as the command prints it: the collective, the
// communicator shape, the configuration it ran and where that came from ("env line NCCL_ALGO=Ring",
// "NCCL INFO set by environment", "directory ring", "file name allreduce_tree.txt", "TUNING lines"),
// or why the sources disagree.
struct Detection {
  std::string collective;  // empty: unknown
  int n_ranks = 0, n_nodes = 0;
  std::string config;     // "forced RING/LL128", "NCCL's choice per size", "NCCL's default (nothing forced)"
  std::string from;       // the sources of `config`; empty when nothing forced it
  std::string ambiguous;  // non-empty: the sources disagree and the file is refused
};
// A section with its file's TUNING lines (what NCCL says it ran per size; they win where they name
// another configuration than was forced, and the detection says at how many sizes).
Detection detect(const NcclTestsSection& section, const std::vector<TuningChoice>& tuning);
std::string describe(const Detection& d);  // "allreduce, 8 ranks x 1 node, forced RING/LL128 (env line ...)"

// What ingesting one file did.
struct FileReport {
  std::string path;
  std::string kind;  // "nccl-tests", "interchange-csv", "tuning-log", "skipped", "ambiguous" (refused)
  int64_t observations = 0, decisions = 0;
  std::map<std::string, int64_t> skipped;  // reason -> rows (or 1 for a whole file)
  std::vector<Detection> detected;         // one per section of an nccl-tests log
};

// Files under the given files/directories (recursive, sorted), and every directory that could not
// be listed, as "<dir>: <reason>" (a directory left out is never silent).
struct InputFiles {
  std::vector<std::string> files;
  std::vector<std::string> unreadable;
};
InputFiles expandPaths(const std::vector<std::string>& paths);
// Parses one file and writes its rows in one batch; skips content already in the store.
Expected<FileReport> ingestFile(store::Store& store, store::Writer& writer, const std::string& path);
// What ingesting one file did, as `ingest` and `profile` print it: "<path>: <kind>, N observations,
// M decisions; skipped: <reason> xN" (refused: "<path>: refused, <why>"), then one indented line
// per detected section.
std::vector<std::string> describe(const FileReport& r);

}  // namespace dynamiccl::ingest
