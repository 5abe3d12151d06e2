// One check per kind of value the subcommands take, so that every command refuses the same bad
// value the same way (non-zero exit, one line naming the value) instead of running on it.
#pragma once

#include <CLI/CLI.hpp>

namespace dynamiccl::cli {

const CLI::Validator& collectiveCheck();    // a collective NCCL lets a tuner decide (allreduce, ...)
const CLI::Validator& byteCountCheck();     // a size in bytes, 1 .. 2^62: 4096, 64K, 1M, 2G (binary; KiB/MB/... too)
const CLI::Validator& byteCountOrZeroCheck();  // the same, where 0 means "NCCL's own" (a chunk size)
const CLI::Validator& channelCountCheck();  // 0 (NCCL's count) .. NCCL's MAXCHANNELS
const CLI::Validator& countCheck();         // a count that may be zero: a whole number, 0 .. 2^31-1
const CLI::Validator& ncclVersionCheck();   // an NCCL release: 2.31, 2.32.6 or a code such as 23206

// The conventions every subcommand follows: defaults shown in --help, and sizes written with their
// suffix (1M) converted to bytes by their check. Called once on the whole command tree.
void applyConventions(CLI::App& app);

}  // namespace dynamiccl::cli
