#!/usr/bin/env bash
# Builds with sanitizers and runs the tests under them.
#   scripts/sanitize.sh address   -> build-asan, ASan+UBSan, the tests of what runs inside a job (ASAN_TARGETS)
#   scripts/sanitize.sh address-all -> build-asan, ASan+UBSan, every test (the offline tool too; over an hour on 2 cores)
#   scripts/sanitize.sh thread    -> build-tsan, TSan, the tests that run threads (TSAN_TESTS regex)
# Env: JOBS (build parallelism, default nproc), ASAN_TESTS / TSAN_TESTS (ctest -R regex) to narrow.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-address}
# TSan subset: ctest names are <Suite>.<Test>; these suites start threads (or drive the plugin's
# worker/profiler/epoch-agent threads; Store forks processes instead, and under TSan its bounded
# busy waits expire). Extend the regex when a new threaded suite appears.
TSAN_DEFAULT='^(BackgroundProfile|Concurrency|Profiler|EveryVersion|EtcdStore|InputAgreement|OnlineConsistency|Verification|LearnedJob|PluginAbi|EveryAbiVersion|Metrics|Node)[A-Za-z/]*\.'
# Only the programs holding those suites are built under TSan (the whole tree takes ~20 min on 2 cores).
TSAN_TARGETS="dynamiccl_plugin bad_input_test background_profile_test profiler_test etcd_store_test input_agreement_test online_consistency_test verification_test learned_job_test plugin_abi_test metrics_test node_shared_store_test"
# ASan subset: the plugin and the programs testing it and the libraries it links (features, policy,
# store, coord), through the real .so. Every test (address-all) no longer fits CI's 90 minutes on 2
# cores beside the first stage (its build alone passed 40 minutes); the offline tool's tests run there.
ASAN_TARGETS="dynamiccl_plugin features_test features_fingerprint_test features_window_test profile_test profile_merge_test
  decision_table_test plugin_abi_test bad_input_test background_profile_test settings_test pick_rule_test nccl_version_test store_test csv_test
  profiler_test network_weights_test network_eval_test policy_guard_test trust_test online_consistency_test
  input_agreement_test etcd_store_test record_seal_test no_libcurl_test verification_test verdict_travel_test
  finalize_bound_test online_learner_test measurement_test learned_arm_model_test channel_search_test fuzz_regression_test rccl_conformance_test metrics_test"
# Programs not built are reported by ctest as <program>_NOT_BUILT; the scripted tests need the tool.
# Under ASan, resident memory holds its quarantine (ProfilerBounds) and a finalize slowed several-fold
# meets its 1 s bound before the verdicts are written (Verification, VerdictTravel): TSan and the first
# stage run those.
ASAN_EXCLUDE='_NOT_BUILT|^(install_test|package_test|check_judge|gpu_script_test)$|^ProfilerBounds\.MemoryStays|^Verification\.|^VerdictTravel\.|EtcdFaultMatrix'
EXCLUDE='^$'
case "$MODE" in
  address) BUILD_DIR=${BUILD_DIR:-build-asan}; SAN=address,undefined; REGEX=${ASAN_TESTS:-.}; TARGETS=$ASAN_TARGETS; EXCLUDE=$ASAN_EXCLUDE ;;
  address-all) BUILD_DIR=${BUILD_DIR:-build-asan}; SAN=address,undefined; REGEX=${ASAN_TESTS:-.}; TARGETS=all ;;
  thread)  BUILD_DIR=${BUILD_DIR:-build-tsan}; SAN=thread; REGEX=${TSAN_TESTS:-$TSAN_DEFAULT}; TARGETS=$TSAN_TARGETS ;;
  *) echo "usage: $0 [address|address-all|thread]" >&2; exit 2 ;;
esac
JOBS=${JOBS:-$(nproc)}

GENERATOR=()  # Ninja for a new folder where installed (a folder keeps the generator it was made with)
if command -v ninja >/dev/null && [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then GENERATOR=(-G Ninja); fi
cmake -S . -B "$BUILD_DIR" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDYNAMICCL_SANITIZE="$SAN" \
  -DDYNAMICCL_WITH_TORCH=OFF -DDYNAMICCL_BENCH=OFF -DDYNAMICCL_TESTS=ON >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j"$JOBS" --target $TARGETS
cd "$BUILD_DIR"

# Tests dlopen the plugin and dlclose it at the end. The plugin keeps a few process-wide singletons
# on purpose (never destroyed); once unmapped, LSan sees them as leaks and cannot symbolize any
# frame inside the .so. A preloaded no-op dlclose keeps it mapped, so reports stay meaningful.
cat >keep_loaded.c <<'SHIM'
int dlclose(void* handle) { (void)handle; return 0; }
SHIM
cc -shared -fPIC -o keep_loaded.so keep_loaded.c
export LD_PRELOAD="$PWD/keep_loaded.so${LD_PRELOAD:+:$LD_PRELOAD}"
# Stop at the first report; leaks count (LSan) under ASan; stacks for UBSan. verify_asan_link_order=0:
# the shim precedes libasan in the preload list, which is harmless (it neither allocates nor frees).
export ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
ctest --output-on-failure -j"$JOBS" --timeout 900 -R "$REGEX" -E "$EXCLUDE"
