// The store back to the interchange CSV of shared/data/README.md, through its one writer.
#include "offline/ingest/ingest.h"
#include "offline/measurements/measurements.h"

namespace dynamiccl::ingest {

Expected<int64_t> exportInterchangeCsv(store::Store& store, std::ostream& out, bool include_in_place) {
  out << measurements::kInterchangeHeader << '\n';
  int64_t n = 0;
  auto s = store.forEachMeasurement(include_in_place, [&](const store::MeasurementRow& m) {
    // Symmetric kernels and tagged calls say so in the note: never read as an ordinary algo/proto row.
    std::string note = m.note;
    if (m.is_sym_coll) note += std::string(note.empty() ? "" : "; ") + "symmetric kernel " + m.kernel_variant;
    if (m.user_tag) note += std::string(note.empty() ? "" : "; ") + "user tag " + std::to_string(m.user_tag);
    measurements::InterchangeRow r{m.system, m.collective, m.n_ranks, m.n_nodes, m.bytes, m.algo, m.proto,
                          m.n_channels, m.chunk, m.time_us, m.busbw_gbps, note};
    out << measurements::formatInterchangeRow(r) << '\n';
    ++n;
  });
  if (!s) return makeError(s.error());
  if (!out) return makeError("write failed");
  return n;
}

}  // namespace dynamiccl::ingest
