// One check per kind of value the subcommands take, so that every command refuses the same bad
// value the same way (non-zero exit, one line naming the value) instead of running on it.
#pragma once

#include <CLI/CLI.hpp>

namespace dynamiccl::cli {

const CLI::Validator& collectiveCheck();    // a collective NCCL lets a tuner decide (allreduce, ...)
const CLI::Validator& byteCountCheck();     // a size in bytes: a whole number, 1 .. 2^62
const CLI::Validator& channelCountCheck();  // 0 (NCCL's count) .. NCCL's MAXCHANNELS
const CLI::Validator& countCheck();         // a count that may be zero: a whole number, 0 .. 2^31-1
const CLI::Validator& ncclVersionCheck();   // an NCCL release: 2.31, 2.32.6 or a code such as 23206

}  // namespace dynamiccl::cli
