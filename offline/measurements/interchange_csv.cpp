// The interchange CSV of shared/data/README.md: RFC 4180 quoting, empty cells for unknown values.
#include <charconv>
#include <cmath>

#include "features/features.h"
#include "offline/measurements/measurements.h"

namespace dynamiccl::measurements {
namespace {

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
  CsvReader reader(text);
  std::vector<std::string> f;
  reader.next(f);  // the header
  std::vector<InterchangeRow> rows;
  while (reader.next(f)) {
    const std::string where = "line " + std::to_string(reader.line());
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

}  // namespace dynamiccl::measurements
