// The interchange CSV of shared/data/README.md: RFC 4180 quoting, empty cells for unknown values.
#include <charconv>
#include <cstdio>

#include "offline/ingest/ingest.h"

namespace dynamiccl::ingest {
namespace {

// Splits CSV text into records of fields; quotes may hold commas, quotes ("") and newlines.
std::vector<std::vector<std::string>> splitCsv(std::string_view text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') field.push_back('"'), ++i;
      else if (ch == '"') quoted = false;
      else field.push_back(ch);
    } else if (ch == '"') {
      quoted = any = true;
    } else if (ch == ',') {
      fields.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) fields.push_back(std::move(field)), records.push_back(std::move(fields));
      fields.clear();
      field.clear();
      any = false;
    } else {
      field.push_back(ch);
      any = true;
    }
  }
  if (any || !field.empty()) fields.push_back(std::move(field)), records.push_back(std::move(fields));
  return records;
}

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out.push_back('"');
    out.push_back(ch);
  }
  return out + "\"";
}

// Shortest text that reads back to the same double; empty for unknown.
std::string real(double v) {
  if (std::isnan(v)) return {};
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}

template <typename T>
bool number(const std::string& s, T& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

bool looksLikeInterchangeCsv(std::string_view text) {
  const size_t eol = text.find_first_of("\r\n");
  return text.substr(0, eol) == kInterchangeHeader;
}

Expected<std::vector<InterchangeRow>> parseInterchangeCsv(std::string_view text) {
  if (!looksLikeInterchangeCsv(text)) return makeError("not an interchange CSV (header differs)");
  auto records = splitCsv(text);
  std::vector<InterchangeRow> rows;
  rows.reserve(records.size());
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& f = records[i];
    const std::string where = "line record " + std::to_string(i + 1);
    if (f.size() != 12) return makeError(where + ": expected 12 fields, got " + std::to_string(f.size()));
    InterchangeRow r;
    r.system = f[0];
    r.collective = f[1];
    r.algo = f[5].empty() ? "default" : f[5];
    r.proto = f[6].empty() ? "default" : f[6];
    r.source_note = f[11];
    if (!number(f[2], r.n_ranks) || !number(f[3], r.n_nodes) || !number(f[4], r.bytes))
      return makeError(where + ": nranks, nnodes and bytes must be integers");
    if (!f[7].empty() && !number(f[7], r.n_channels)) return makeError(where + ": bad nchannels");
    if (!f[8].empty() && !number(f[8], r.chunk)) return makeError(where + ": bad chunk");
    if (!f[9].empty() && !number(f[9], r.time_us)) return makeError(where + ": bad time_us");
    if (!f[10].empty() && !number(f[10], r.busbw_gbps)) return makeError(where + ": bad busbw_gbps");
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string formatInterchangeRow(const InterchangeRow& r) {
  return quoted(r.system) + "," + quoted(r.collective) + "," + std::to_string(r.n_ranks) + "," +
         std::to_string(r.n_nodes) + "," + std::to_string(r.bytes) + "," + quoted(r.algo) + "," + quoted(r.proto) +
         "," + (r.n_channels >= 0 ? std::to_string(r.n_channels) : "") + "," +
         (r.chunk >= 0 ? std::to_string(r.chunk) : "") + "," + real(r.time_us) + "," + real(r.busbw_gbps) + "," +
         quoted(r.source_note);
}

Expected<int64_t> exportInterchangeCsv(store::Store& store, std::ostream& out, bool include_in_place) {
  out << kInterchangeHeader << '\n';
  int64_t n = 0;
  auto s = store.forEachMeasurement(include_in_place, [&](const store::MeasurementRow& m) {
    InterchangeRow r{m.system, m.collective, m.n_ranks, m.n_nodes, m.bytes, m.algo, m.proto,
                     m.n_channels, m.chunk, m.time_us, m.busbw_gbps, m.note};
    out << formatInterchangeRow(r) << '\n';
    ++n;
  });
  if (!s) return makeError(s.error());
  if (!out) return makeError("write failed");
  return n;
}

}  // namespace dynamiccl::ingest
