// A one-line stderr progress bar; silent when disabled (tests, pipes).
#pragma once

#include <cstdint>
#include <string>

namespace dynamiccl::tune {

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled, int width = 30) : enabled_(enabled), width_(width) {}
  ~ProgressBar() { finish(); }
  void update(int64_t done, int64_t total, const std::string& label);
  void finish();

 private:
  bool enabled_;
  int width_;
  bool drawn_ = false;
};

}  // namespace dynamiccl::tune
