// NCCL's INFO(NCCL_TUNING) choice line and collective name spellings.
#include <cctype>
#include <charconv>

#include "offline/ingest/ingest.h"

namespace dynamiccl::ingest {
namespace {

std::string squashed(std::string_view s) {
  std::string out;
  for (char ch : s)
    if (std::isalnum(static_cast<unsigned char>(ch))) out.push_back(static_cast<char>(std::tolower(ch)));
  return out;
}

template <typename T>
bool parseWholeNumber(std::string_view s, T& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::optional<std::string> canonicalCollective(std::string_view name) {
  std::string key = squashed(name);
  if (key.size() > 4 && key.ends_with("perf")) key.resize(key.size() - 4);
  static constexpr std::string_view kKnown[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                                "alltoall",  "sendrecv",  "gather",        "scatter",   "hypercube"};
  for (std::string_view k : kKnown)
    if (key == k) return std::string(k);
  return std::nullopt;
}

std::optional<TuningChoice> parseTuningLine(std::string_view line) {
  // "...NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}"
  const size_t arrow = line.find(" Bytes -> Algo ");
  if (arrow == std::string_view::npos) return std::nullopt;
  const size_t colon = line.rfind(": ", arrow);
  if (colon == std::string_view::npos) return std::nullopt;
  const size_t nameStart = line.find_last_of(' ', colon == 0 ? 0 : colon - 1);
  const std::string_view name = line.substr(nameStart == std::string_view::npos ? 0 : nameStart + 1,
                                            colon - (nameStart == std::string_view::npos ? 0 : nameStart + 1));
  TuningChoice choice;
  auto coll = canonicalCollective(name);
  if (!coll || !parseWholeNumber(line.substr(colon + 2, arrow - colon - 2), choice.bytes)) return std::nullopt;
  choice.collective = *coll;

  std::string_view rest = line.substr(arrow + std::string_view(" Bytes -> Algo ").size());
  const size_t protoKw = rest.find(" proto ");
  if (protoKw == std::string_view::npos) return std::nullopt;
  auto algo = parseAlgo(rest.substr(0, protoKw));
  rest = rest.substr(protoKw + 7);
  const size_t protoEnd = rest.find(' ');
  auto proto = parseProto(rest.substr(0, protoEnd));
  if (!algo || !proto) return std::nullopt;
  choice.algo = *algo;
  choice.proto = *proto;

  // Channel range is optional in older releases.
  const size_t open = rest.find("={");
  const size_t dots = rest.find("..", open == std::string_view::npos ? 0 : open);
  const size_t close = rest.find('}', open == std::string_view::npos ? 0 : open + 2);
  if (open != std::string_view::npos && dots != std::string_view::npos && close != std::string_view::npos &&
      dots < close) {
    int lo = 0, hi = -1;
    if (parseWholeNumber(rest.substr(open + 2, dots - open - 2), lo) && parseWholeNumber(rest.substr(dots + 2, close - dots - 2), hi)) {
      choice.channel_lo = lo;
      choice.channel_hi = hi;
    }
  }
  return choice;
}

}  // namespace dynamiccl::ingest
