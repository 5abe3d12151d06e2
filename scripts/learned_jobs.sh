#!/usr/bin/env bash
# The learned policy running in the job, on every replayed real job of a data dir (measured):
# per dataset `dynamiccl demo --learned` trains the network once with that dataset's machine held
# out (simulator rollouts + the other datasets' measurements), replays the job through the real
# plugin with in-job verification on (every rank a process), and this prints one table.
# Usage: scripts/learned_jobs.sh [DATA_DIR (default ../shared/data)] [extra demo flags, e.g. --iterations 2000]
#   BUILD_DIR (default build), OUT (default learned-jobs-out), QUICK=0 for the full training budget (default: the
#   quick one, --quick: it moves no figure below), ITERATIONS: passes of each job over its keys (default 4000),
#   RANKS: replay the dataset's shape of that many ranks (default: the one with most measured configurations,
#   8 ranks where that one has over 512).
# Without the data dir it runs the embedded L40S dataset only.
set -uo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=${1:-../shared/data}
shift || true
BIN=${BUILD_DIR:-build}/offline/dynamiccl
OUT=${OUT:-learned-jobs-out}
QUICK_FLAG=--quick
[ "${QUICK:-1}" = 0 ] && QUICK_FLAG=
[ -x "$BIN" ] || { echo "learned_jobs: $BIN not built (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$OUT"

datasets=()
if [ -d "$DATA_DIR" ]; then
  for csv in "$DATA_DIR"/*/normalized.csv; do [ -f "$csv" ] && datasets+=("$csv"); done
fi
if [ ${#datasets[@]} -eq 0 ]; then
  echo "learned_jobs: no datasets under $DATA_DIR; the embedded L40S dataset only"
  datasets=("offline/demo/data/l40s-pcie-cs244c/normalized.csv")
fi

for csv in "${datasets[@]}"; do
  name=$(basename "$(dirname "$csv")")
  others=()
  for o in "${datasets[@]}"; do [ "$o" != "$csv" ] && others+=(--train-data "$o"); done
  echo "== $name: dynamiccl demo --learned $QUICK_FLAG --iterations ${ITERATIONS:-4000} --data $csv ${others[*]} $*"
  start=$(date +%s)
  # The dataset's shape with most measured configurations (every rank a process); where that one cannot be
  # replayed (over 512 ranks), its RANKS-rank shape (default 8). RANKS set: that shape always.
  run() { "$BIN" demo --learned $QUICK_FLAG --iterations "${ITERATIONS:-4000}" --no-plots --data "$csv" "${others[@]}" --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1; }
  if { [ -n "${RANKS:-}" ] && run --ranks "$RANKS" "$@"; } || { [ -z "${RANKS:-}" ] && { run "$@" || run --ranks 8 "$@"; }; }; then
    echo "   done in $(( $(date +%s) - start )) s ($OUT/$name.log)"
  else
    echo "   FAILED in $(( $(date +%s) - start )) s: $(tail -1 "$OUT/$name.log")"
    rm -f "$OUT/$name/summary.json"
  fi
done

python3 - "$OUT" "${datasets[@]}" <<'PY'
import json, math, os, sys
out, csvs = sys.argv[1], sys.argv[2:]
print("\nThe learned policy in the job, replayed real jobs (measured; each dataset's machine held out of training)")
hdr = ("dataset", "ranks", "keys (with alternatives)", "<=1.01x best", "worst vs best", "geomean vs NCCL", "exploration", "ranks agree", "promoted/dropped")
fmt = "| {:<30} | {:>5} | {:>24} | {:>12} | {:>13} | {:>15} | {:>11} | {:>11} | {:>16} |"
print(fmt.format(*hdr))
print("|" + "|".join("-" * (len(fmt.format(*hdr).split("|")[i + 1])) for i in range(len(hdr))) + "|")
for csv in csvs:
    name = os.path.basename(os.path.dirname(csv))
    p = os.path.join(out, name, "summary.json")
    if not os.path.exists(p):
        print(fmt.format(name, "-", "-", "failed", "-", "-", "-", "-", "-"))
        continue
    s = json.load(open(p))
    t, j, v = s["totals"], s["job"], s["verified"]
    alt = sum(1 for k in s["keys"] if k.get("measured_configs", 0) > 1)
    print(fmt.format(name, s["shape"]["nRanks"], "%d (%d)" % (t["keys"], alt), "%d/%d" % (t["within_1pct_of_best"], t["keys"]),
                     "%.3fx" % t["worst_vs_best"], "%.3fx" % t["geomean_vs_default"], "%.2f%%" % (100 * j["explore_share"]),
                     "yes" if j["ranks_agree"] else "NO", "%d/%d" % (v.get("promoted", 0), v.get("dropped", 0))))
print("keys (with alternatives): the replayed shape's keys (those where more than NCCL's default was measured: only there\n"
      "is there a choice to judge). Exploration: share of collective time (rank 0). promoted/dropped: in-job verdicts.")
PY
