// A minimal expected-style result (C++20 has no std::expected): a value or an error message.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace dynamiccl {

struct Error {
  std::string message;
};

template <typename T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Error error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const std::string& error() const { return std::get<1>(v_).message; }

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing but may fail.
struct Ok {};
using Status = Expected<Ok>;

inline Error makeError(std::string message) { return Error{std::move(message)}; }

}  // namespace dynamiccl
