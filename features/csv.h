// The one CSV splitter (RFC 4180: quotes may hold commas, doubled quotes and line breaks). It lives
// in features/ because both the plugin (NVIDIA's CSV profiles) and the offline readers need it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dynamiccl {

// Reads CSV text record by record. A record ends at an unquoted \n, \r\n or \r; blank lines are
// skipped; an unterminated quote runs to the end of the text.
class CsvReader {
 public:
  explicit CsvReader(std::string_view text) : text_(text) {}
  // The next non-blank record's fields; false (fields cleared) at the end of the text.
  bool next(std::vector<std::string>& fields);
  // 1-based line on which the record last returned by next() began.
  int line() const { return recordLine_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int nextLine_ = 1, recordLine_ = 0;
};

// The fields of one line (anything after an unquoted line break is ignored); "" gives one empty field.
std::vector<std::string> splitCsvRecord(std::string_view line);

}  // namespace dynamiccl
