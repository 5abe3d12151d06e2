// Opening files the plugin is told about (profile, observation log, store, token, records) without
// ever blocking: a FIFO or device named by mistake or malice is refused instead of hanging open().
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "features/expected.h"

namespace dynamiccl {

enum class FollowLinks { Yes, No };

// open(path, flags | O_NONBLOCK | O_CLOEXEC), then fstat: anything but a regular file is closed and
// refused. The descriptor returned is back in blocking mode (regular files never block on open/read).
Expected<int> openRegularFile(const std::string& path, int flags, FollowLinks follow = FollowLinks::Yes,
                              mode_t createMode = 0600);

// What the offline tools read whole (tune reports, measurement CSVs, calibrations): 1 GiB at most.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t{1} << 30;

// Asks for 2 MB pages over the whole 2 MB pages inside [p, p + bytes) of fresh anonymous memory about
// to be written: a 20 MB buffer then takes 10 page faults, not 5000 (each ~15 us in a VM). Advice only.
void adviseHugePages(void* p, size_t bytes);

// The whole content of a regular file of at most maxBytes (a bigger one is refused unread).
Expected<std::string> readRegularFile(const std::string& path, uint64_t maxBytes,
                                      FollowLinks follow = FollowLinks::Yes);

}  // namespace dynamiccl
