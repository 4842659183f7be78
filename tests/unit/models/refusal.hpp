#pragma once
// What a refused report section says: the message of the std::invalid_argument `read`
// throws, "" (and a test failure) when it accepts.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace twinsim::test {

template <class Read>
std::string refusal(Read read) {
  try {
    read();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

}  // namespace twinsim::test
