// `dynamiccl db stats|export-csv|applied [--db F]`: what the store holds, the interchange CSV of it, and
// whether NCCL ran what the plugin chose; `dynamiccl db merge OUT IN...`: node stores gathered into one.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "offline/applied/applied.h"
#include "offline/cli/store_location.h"
#include "offline/cli/commands.h"
#include "offline/files/files.h"
#include "offline/ingest/ingest.h"

namespace dynamiccl::cli {
namespace {

struct DbOptions {
  std::string db;
  std::string output;  // export-csv: file, or stdout when empty
  bool in_place = false;
};

// Reading never creates or migrates: a mistyped --db is an error, not a new empty store.
Expected<std::unique_ptr<store::Store>> openStore(const DbOptions& o) {
  store::StoreOptions options = storeOptions(o.db);
  options.read_only = true;
  return store::Store::open(options);
}

int runStats(const DbOptions& o) {
  auto store = openStore(o);
  if (!store) return std::cerr << "dynamiccl db stats: " << store.error() << "\n", 1;
  auto stats = (*store)->stats();
  if (!stats) return std::cerr << "dynamiccl db stats: " << stats.error() << "\n", 1;
  std::cout << (*store)->path() << " (schema " << stats->schema_version << ", " << stats->file_bytes << " bytes)\n";
  std::cout << "rows per table:\n";
  for (auto& [table, n] : stats->rows_per_table) std::cout << "  " << table << ": " << n << "\n";
  std::cout << "observations per collective:\n";
  for (auto& [coll, n] : stats->observations_per_collective) std::cout << "  " << coll << ": " << n << "\n";
  std::cout << "observations per system:\n";
  for (auto& [system, n] : stats->observations_per_system)
    std::cout << "  " << (system.empty() ? "(unknown)" : system) << ": " << n << "\n";
  return 0;
}

int runExport(const DbOptions& o) {
  auto store = openStore(o);
  if (!store) return std::cerr << "dynamiccl db export-csv: " << store.error() << "\n", 1;
  if (o.output.empty()) {
    auto n = ingest::exportInterchangeCsv(**store, std::cout, o.in_place);
    if (!n) return std::cerr << "dynamiccl db export-csv: " << n.error() << "\n", 1;
    return 0;  // main() checks that standard output was written
  }
  auto file = files::OutputFile::open(o.output);
  if (!file) return std::cerr << "dynamiccl db export-csv: " << file.error() << "\n", 1;
  auto n = ingest::exportInterchangeCsv(**store, (*file)->stream(), o.in_place);
  if (!n) return std::cerr << "dynamiccl db export-csv: " << n.error() << "\n", 1;
  if (auto s = (*file)->close(); !s) return std::cerr << "dynamiccl db export-csv: " << s.error() << "\n", 1;
  std::cerr << "wrote " << *n << " rows to " << o.output << "\n";
  return 0;
}

int runApplied(const DbOptions& o) {
  auto store = openStore(o);
  if (!store) return std::cerr << "dynamiccl db applied: " << store.error() << "\n", 1;
  auto report = applied::appliedReport(**store);
  if (!report) return std::cerr << "dynamiccl db applied: " << report.error() << "\n", 1;
  std::cout << (*store)->path() << ": per communicator shape (ranks r / nodes n) and key, the share of calls where "
            << "NCCL ran what the plugin chose (measured, plugin runs only)\n";
  if (report->total.calls == 0) {
    std::cout << "no observations from plugin runs (NCCL_PROFILER_PLUGIN must name this plugin)\n";
    return 0;
  }
  std::cout << applied::formatReport(*report);
  return 0;
}

struct DbMergeOptions {
  std::string out;
  std::vector<std::string> inputs;
};

int runMerge(const DbMergeOptions& o) {
  store::StoreOptions options = storeOptions(o.out);
  auto out = store::Store::open(options);
  if (!out) return std::cerr << "dynamiccl db merge: " << out.error() << "\n", 1;
  if (!(*out)->notice().empty()) std::cerr << "dynamiccl db merge: " << (*out)->notice() << "\n";
  for (const std::string& in : o.inputs) {
    auto n = (*out)->mergeFrom(in);
    if (!n) return std::cerr << "dynamiccl db merge: " << n.error() << "\n", 1;
    std::cout << in << ": " << n->runs << " runs (" << n->runs_present << " already there), " << n->observations
              << " observations, " << n->decisions << " decisions, " << n->verdicts << " verdicts ("
              << n->verdicts_present << " already there)\n";
  }
  std::cout << "merged into " << (*out)->path() << "\n";
  return 0;
}

void addDbOption(CLI::App* sub, DbOptions& o) {
  sub->add_option("--db", o.db, "database file (default: DYNAMICCL_DB or ~/.local/share/dynamiccl/<host>.db)");
}

}  // namespace

void addDbCommand(CLI::App& app) {
  auto o = std::make_shared<DbOptions>();
  CLI::App* db = app.add_subcommand("db", "Inspect and export the observation store");
  db->require_subcommand(1);
  CLI::App* stats = db->add_subcommand("stats", "Rows per table, per collective, per system");
  addDbOption(stats, *o);
  stats->callback([o] {
    if (int rc = runStats(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
  CLI::App* exportCsv = db->add_subcommand("export-csv", "Observations as the interchange CSV (shared/data/README.md)");
  addDbOption(exportCsv, *o);
  exportCsv->add_option("-o,--out", o->output, "output file (default: stdout)");
  exportCsv->add_option("--output", o->output)->group("");  // the former name, hidden (every command says --out)
  exportCsv->add_flag("--in-place", o->in_place, "include nccl-tests in-place rows");
  exportCsv->callback([o] {
    if (int rc = runExport(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
  CLI::App* appliedCmd = db->add_subcommand(
      "applied", "Per communicator shape and key: share of calls where NCCL ran the plugin's choice, and why not");
  addDbOption(appliedCmd, *o);
  appliedCmd->callback([o] {
    if (int rc = runApplied(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
  auto m = std::make_shared<DbMergeOptions>();
  CLI::App* merge = db->add_subcommand(
      "merge", "Gather node stores into one for offline work (runs with their rows, verdicts); a run or verdict "
               "already there is skipped, so merging again adds nothing");
  merge->add_option("out", m->out, "the store gathered into (created if missing)")->required();
  merge->add_option("inputs", m->inputs, "node stores, read as they are")->required()->expected(1, -1);
  merge->callback([m] {
    if (int rc = runMerge(*m); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
