#include "features/csv.h"

namespace dynamiccl {
namespace {

// Reads the record that starts at pos into fields; returns the position after its line break and
// adds the line breaks it consumed (quoted ones too) to lineBreaks.
size_t readRecord(std::string_view text, size_t pos, std::vector<std::string>& fields, int& lineBreaks) {
  fields.assign(1, std::string());
  bool quoted = false;
  for (; pos < text.size(); ++pos) {
    const char ch = text[pos];
    if (quoted) {
      if (ch == '"' && pos + 1 < text.size() && text[pos + 1] == '"') {
        fields.back().push_back('"');
        ++pos;
      } else if (ch == '"') {
        quoted = false;
      } else {
        lineBreaks += ch == '\n';
        fields.back().push_back(ch);
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.emplace_back();
    } else if (ch == '\n' || ch == '\r') {
      ++lineBreaks;
      if (ch == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ++pos;
      return pos + 1;
    } else {
      fields.back().push_back(ch);
    }
  }
  return pos;
}

}  // namespace

bool CsvReader::next(std::vector<std::string>& fields) {
  while (pos_ < text_.size()) {
    const bool blank = text_[pos_] == '\n' || text_[pos_] == '\r';
    const int line = nextLine_;
    pos_ = readRecord(text_, pos_, fields, nextLine_);
    if (!blank) {
      recordLine_ = line;
      return true;
    }
  }
  fields.clear();
  return false;
}

std::vector<std::string> splitCsvRecord(std::string_view line) {
  std::vector<std::string> fields;
  int lineBreaks = 0;
  readRecord(line, 0, fields, lineBreaks);
  return fields;
}

}  // namespace dynamiccl
