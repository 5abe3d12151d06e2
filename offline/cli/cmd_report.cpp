// `dynamiccl report [--db F]... [--profile P]... [--json] [--out DIR] [--no-plots]`: did it help my job?
// Per communicator and key, from one store or several nodes' stores (offline/report does the work).
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "offline/cli/commands.h"
#include "offline/cli/plot_runner.h"
#include "offline/cli/store_location.h"
#include "offline/report/report.h"

namespace dynamiccl::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> dbs;
  std::vector<std::string> profiles;
  std::string measurementCost;
  std::string out = "report-out";
  bool json = false;
  bool noPlots = false;
};

int run(const ReportOptions& o) {
  report::ReportPlan plan;
  plan.stores = o.dbs;
  if (plan.stores.empty()) plan.stores.push_back(storeOptions("").path);
  plan.profiles = o.profiles;
  plan.measurementCost = o.measurementCost;
  auto r = report::buildReport(plan);
  if (!r) return std::cerr << "dynamiccl report: " << r.error() << "\n", 1;
  if (o.json) std::cout << report::reportJson(*r);
  else std::cout << report::formatReport(*r);
  // Plots go beside the CSVs they are drawn from; their status on stderr keeps --json's output JSON alone.
  if (o.noPlots) return 0;
  if (auto s = report::writePlotData(*r, o.out); !s) return std::cerr << "dynamiccl report: " << s.error() << "\n", 1;
  if (auto s = runPlotScript("plot_report.py", {o.out}); !s) std::cerr << "dynamiccl report: could not plot: " << s.error() << "\n";
  else std::cerr << "plots in " << o.out << "/: " << report::kReportPlots << "\n";
  return 0;
}

}  // namespace

void addReportCommand(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Did it help my job? Per communicator and key: what NCCL runs alone and what ran, the measured gain, "
                "the time it saved, what exploring and measuring cost, the net, the calls that reached the tuner");
  cmd->add_option("--db", o->dbs,
                  "a store (repeat for several nodes' stores; default: DYNAMICCL_DB or ~/.local/share/dynamiccl/<host>.db)");
  cmd->add_option("--profile", o->profiles, "a profile the job loaded (repeatable): its rules that applied to no call");
  cmd->add_option("--measurement-cost", o->measurementCost,
                  "the calibration the job priced measuring by (DYNAMICCL_MEASUREMENT_COST; default: published figures)");
  cmd->add_flag("--json", o->json, "the report as JSON on stdout");
  cmd->add_option("--out", o->out, "folder of the plots and the CSVs behind them");
  cmd->add_flag("--no-plots", o->noPlots, "write no plots nor their CSVs");
  cmd->callback([o] {
    if (const int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
