// Commands the offline tools run through the shell (plot scripts, nccl-tests runs).
#include <cstdio>

#include "offline/files/files.h"

namespace dynamiccl::files {

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Expected<CommandOutput> runCommand(const std::string& commandLine) {
  FILE* pipe = ::popen(commandLine.c_str(), "r");
  if (!pipe) return makeError("cannot start " + commandLine);
  CommandOutput out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) out.text += buf;
  out.status = ::pclose(pipe);
  return out;
}

}  // namespace dynamiccl::files
