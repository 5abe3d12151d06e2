// files: every file the offline tools write goes through here, so that a failed write (no such
// directory, disk full, /dev/full, a closed pipe) is an error value, never a "wrote N rows"; and
// the shell commands they run (plot scripts, nccl-tests runs), with what those print.
// Public header of dynamiccl_files.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "features/features.h"

namespace dynamiccl::files {

// A file written as a stream, into a new temporary file beside the target that is renamed over it
// only by a close() that succeeded: a failed or abandoned write leaves no partial file, and an earlier
// file at that path as it was. The target must be a regular file or not exist: a FIFO, device or
// directory is refused at open(), never waited on. Nothing counts as written until close() returns
// Ok: it flushes, syncs, closes and renames, reporting the first failure with the path and the reason.
class OutputFile {
 public:
  enum class Mode { Truncate, Append };  // Append: the new file starts as a copy of the old one
  static Expected<std::unique_ptr<OutputFile>> open(const std::string& path, Mode mode = Mode::Truncate);
  ~OutputFile();  // removes the temporary file unless close() renamed it
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  std::ostream& stream();
  const std::string& path() const { return path_; }
  Status close();

  class Buffer;

 private:
  OutputFile(std::string path, std::string target, std::string temp, int fd);
  std::string path_;    // as given, for messages
  std::string target_;  // what is replaced: path with its symbolic links resolved
  std::string temp_;    // the new file until close() renames it; empty after
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// The whole of text into path, replacing it only once all of it is written.
Status writeFile(const std::string& path, std::string_view text);

// Standard output as a written file: flushed and checked (`> /dev/full`, a closed pipe).
Status flushStdout();

// s as one word of a POSIX shell command line, whatever it holds.
std::string shellQuote(const std::string& s);
struct CommandOutput {
  std::string text;  // its standard output
  int status = 0;    // pclose's wait status: 0 when it exited with 0
};
// Runs commandLine through /bin/sh; an error only when it cannot be started.
Expected<CommandOutput> runCommand(const std::string& commandLine);

}  // namespace dynamiccl::files
