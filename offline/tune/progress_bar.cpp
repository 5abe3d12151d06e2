#include "offline/tune/progress_bar.h"

#include <algorithm>
#include <cstdio>

namespace dynamiccl::tune {

void ProgressBar::update(int64_t done, int64_t total, const std::string& label) {
  if (!enabled_) return;
  const double f = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(f * width_);
  std::string bar(filled, '#');
  bar.resize(width_, '.');
  std::fprintf(stderr, "\r[%s] %3d%% %-48.48s", bar.c_str(), static_cast<int>(f * 100), label.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace dynamiccl::tune
