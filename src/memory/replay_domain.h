// ReplayDomain: the one stream that may replay the graphs of one graph memory. Graphs that
// share memory (a pool, VMM spaces) overwrite each other's intermediates, so they must never
// run at once: the first replay claims the domain for its stream, and from then on a replay on
// another stream, or a second replay while one is being issued (another thread), is an Error
// naming both streams instead of silent corruption.
//
//   ReplayDomain domain("decode and piecewise graphs");
//   { auto turn = domain.enter(stream); ... upload inputs, replay, read outputs ... }
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

namespace grt {

class Stream;

class ReplayDomain {
 public:
  explicit ReplayDomain(std::string label) : label_(std::move(label)) {}
  ReplayDomain(const ReplayDomain&) = delete;
  ReplayDomain& operator=(const ReplayDomain&) = delete;

  // Held while one replay is issued; leaving it lets the next replay in.
  class Turn {
   public:
    Turn(Turn&& o) noexcept : domain_(o.domain_) { o.domain_ = nullptr; }
    Turn& operator=(Turn&&) = delete;
    ~Turn();

   private:
    friend class ReplayDomain;
    explicit Turn(ReplayDomain* d) : domain_(d) {}
    ReplayDomain* domain_;
  };

  // Claims the domain for `stream` if it has no owner yet. Error when it belongs to another
  // stream, or when a turn is held now (by this or another thread): both name the streams.
  Turn enter(Stream& stream);
  // The owning stream's id, 0 before the first replay.
  uint64_t owner() const;
  const std::string& label() const { return label_; }

 private:
  std::string label_;
  mutable std::mutex mu_;
  uint64_t owner_ = 0;
  uint64_t busy_ = 0;  // stream id of the turn held now, 0 when none
};

}  // namespace grt
