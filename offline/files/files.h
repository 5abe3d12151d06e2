// files: every file the offline tools write goes through here, so that a failed write (no such
// directory, disk full, /dev/full, a closed pipe) is an error value, never a "wrote N rows".
// Public header of dynamiccl_files.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "features/features.h"

namespace dynamiccl::files {

// A file written as a stream. Nothing counts as written until close() returns Ok: it flushes,
// closes and reports the first failure (open, write, flush or close) with the path and the system's reason.
class OutputFile {
 public:
  enum class Mode { Truncate, Append };
  static Expected<std::unique_ptr<OutputFile>> open(const std::string& path, Mode mode = Mode::Truncate);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  std::ostream& stream();
  const std::string& path() const { return path_; }
  Status close();

  class Buffer;

 private:
  OutputFile(std::string path, int fd);
  std::string path_;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// The whole of text into path (created or truncated).
Status writeFile(const std::string& path, std::string_view text);

// Standard output as a written file: flushed and checked (`> /dev/full`, a closed pipe).
Status flushStdout();

}  // namespace dynamiccl::files
