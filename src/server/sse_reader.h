// SseReader: splits a Server-Sent Events byte stream (what /v1/completions sends with
// "stream": true) into complete events, however the bytes arrive in chunks. Used by clients of
// graphrt serve: `graphrt bench serving` and the server tests.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grt {

class SseReader {
 public:
  // Appends `bytes`; returns the text of every event completed by them (events end with a blank
  // line), in order. An unfinished event stays buffered for the next call.
  std::vector<std::string> feed(std::string_view bytes) {
    buf_.append(bytes);
    std::vector<std::string> events;
    size_t pos;
    while ((pos = buf_.find("\n\n")) != std::string::npos) {
      events.push_back(buf_.substr(0, pos));
      buf_.erase(0, pos + 2);
    }
    return events;
  }
  // The payload of a "data: X" event (X, e.g. a JSON chunk or "[DONE]"); nullopt for any other.
  static std::optional<std::string> data_of(const std::string& event) {
    if (event.rfind("data: ", 0) != 0) return std::nullopt;
    return event.substr(6);
  }

 private:
  std::string buf_;
};

}  // namespace grt
