// VmmSpaces: graph memory of `--graph-memory vmm` (xLLM's multi-shape reuse, mapped lazily).
// Every capture gets a fresh virtual address space; all spaces show the same physical chunks,
// so graph memory is max(shape), not sum(shape), and addresses stay unique per capture (nothing
// that tracks blocks by address can mix up two captures). Graphs of different spaces share
// bytes: they must never run concurrently (one VmmSpaces per stream domain).
//
//   auto spaces = std::make_shared<VmmSpaces>(device, budget);
//   for each shape (descending):
//     spaces->switch_to_new_virtual_space();
//     ... capture, allocating through spaces->allocate() (routed by the caching allocator) ...
//
// Layout: physical chunks (multiples of vmm_granularity()) are shared by every space and tile
// offsets [0, physical) in creation order; a chunk backs the same offsets in every space. A
// space maps a prefix of the chunks, and only as far as its own allocations reach (lazy
// mapping): a new space maps nothing, a small capture maps only the chunks it touches. When an
// allocation of the current space reaches past the last chunk (the largest capture grows), ONE
// new chunk is created covering exactly the shortfall (rounded to the granularity), up to the
// physical budget. Chunks grow by need, not by granule, because the driver's cost of granting
// access and unmapping is per chunk, not per byte (H100, driver 580: ~28 us per chunk whether
// it holds 2 MiB or 256 MiB, bench/results/h100_2026-11-23/vmm_chunk_cost.txt), and every
// space maps the chunks again.
// Frees never give chunks back; destruction unmaps every mapping, then releases the ranges and
// the chunks.
//
// Consolidation: the first capture (the largest, in descending order) grows the memory in many
// small steps, leaving several chunks that every later space would map one by one. So when a
// new space is begun with several chunks, few mappings so far, and no live block (graph memory
// holds nothing between replays: every graph writes what it reads), the spaces are synchronised,
// their chunks replaced by ONE chunk of the same total size, and the mapped spaces remapped at
// the same addresses: captured graphs stay valid, later spaces map one chunk. A space whose
// remap fails is left unmapped and marked faulted (space_fault() says why; faults() counts):
// the runners of graphs captured in it must retire them, never replay them.
//
// Within a space, blocks are carved best-fit at 512-byte granularity from a bump frontier, with
// free-block reuse, splitting and neighbour merging, so a forward pass costs its peak live
// bytes, not the sum of its intermediates. Like a graph pool during its capture, a freed block
// is reused only by allocations on the stream that allocated it: work of another stream in the
// same graph may not be ordered after the last use. Allocation never synchronises and never
// calls device_malloc, so it is usable on a capturing stream; growth calls the device's
// virtual-memory primitives (create a chunk, map it, grant access).
//
// Thread-safe (one mutex).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/device_id.h"
#include "device/vmm.h"
#include "memory/capture_arena.h"

namespace grt {

class Stream;

struct VmmStats {
  size_t physical_bytes = 0;          // bytes of the chunks created, shared by all spaces
  size_t chunks = 0;                  // chunks held now
  size_t consolidations = 0;          // times the chunks were merged into one
  size_t mappings = 0;                // chunk mappings, summed over spaces
  size_t reserved_virtual_bytes = 0;  // address ranges reserved, over all spaces
  size_t spaces = 0;                  // spaces created
  size_t mapped_bytes = 0;            // bytes mapped, summed over spaces (lazy: <= spaces * physical)
  size_t largest_space_bytes = 0;     // high-water offset of the largest space ("largest_capture_bytes")
  size_t live_bytes = 0;              // bytes in live blocks (rounded sizes)
  uint64_t live_blocks = 0;
  size_t granularity = 0;             // chunk sizes are multiples of it
  size_t space_bytes = 0;             // virtual size of each space
  size_t budget_bytes = 0;            // physical budget, 0: unlimited
  bool operator==(const VmmStats&) const = default;
};

struct VmmSpaceStats {
  uint64_t id = 0;
  void* base = nullptr;         // first address of the space
  size_t reserved_bytes = 0;    // virtual size
  size_t mapped_bytes = 0;      // bytes of the chunks mapped into this space (a prefix)
  size_t mappings = 0;          // chunks mapped into this space
  size_t high_water_bytes = 0;  // the highest offset its blocks ever reached
  size_t live_bytes = 0;
  uint64_t live_blocks = 0;
  bool operator==(const VmmSpaceStats&) const = default;
};

class VmmSpaces : public CaptureArena {
 public:
  static constexpr size_t kAlignment = 512;  // every block offset and size is a multiple
  static constexpr size_t kSlackGranules = 4;
  static constexpr uint64_t kNoSpace = 0;
  static constexpr size_t kConsolidateMaxMappings = 64;

  // `physical_budget_bytes`: the most physical memory the chunks may take (0: unlimited),
  // rounded down to whole chunks. `space_bytes`: the virtual size of each space (0: the budget
  // rounded up to the granularity plus kSlackGranules granules; with no budget, the device's
  // total memory likewise). Reserves nothing until the first switch_to_new_virtual_space().
  VmmSpaces(Device device, size_t physical_budget_bytes = 0, size_t space_bytes = 0);
  // Synchronises the device when this thread does not capture (no queued work may still use
  // the memory), unmaps every mapping, releases the ranges, then the chunks. Never throws;
  // failures are logged. Blocks still live dangle (logged).
  ~VmmSpaces() override;
  VmmSpaces(const VmmSpaces&) = delete;
  VmmSpaces& operator=(const VmmSpaces&) = delete;

  Device device() const override { return device_; }
  size_t granularity() const { return granularity_; }
  size_t space_bytes() const { return space_bytes_; }
  size_t budget() const { return budget_; }

  // Reserves a fresh address range of space_bytes() with nothing mapped; it becomes the
  // current space. Returns its id (1, 2, ...). Earlier spaces and their blocks stay valid.
  // May first consolidate the chunks (see above; only while this thread does not capture, with
  // at most kConsolidateMaxMappings mappings, no live block, and room in the budget for the old
  // and the new chunk at once); that synchronises the device.
  uint64_t switch_to_new_virtual_space();
  // Whether switch_to_new_virtual_space() may consolidate (it synchronises the whole device:
  // lazy capture while other streams run turns it off).
  void set_consolidation(bool allowed);
  // Why space `id` lost its mapping ("" when intact); Error for an unknown id.
  std::string space_fault(uint64_t id) const;
  // Spaces faulted so far (grows only): callers rescan their spaces when it changed.
  uint64_t faults() const;
  // Test hook: writes `byte` into every byte of every physical chunk (through a temporary
  // mapping, synchronously): graph memory must hold nothing a later replay reads.
  void fill_physical_for_testing(int byte);
  // The current space's id, kNoSpace before the first switch.
  uint64_t current_space() const;

  // At least `bytes` (0 allowed) from the current space, kAlignment-aligned. `stream` tags the
  // block for reuse after free (same stream only). Maps, and creates, chunks as the block
  // reaches them. Throws Error, changing nothing, when there is no current space, the space's
  // virtual range is full, or the physical budget would be passed (saying what was asked,
  // held and allowed); earlier blocks and spaces stay valid.
  void* allocate(size_t bytes, Stream& stream) override;
  // Same, for work on the device's current stream.
  void* allocate(size_t bytes);
  // Returns a block of any space (the space keeps its mappings). Throws Error for a pointer
  // that is not a live block of this object.
  void free(void* ptr) override;
  // Whether `ptr` is a live block of this object, and its (rounded) size, or throws.
  bool owns(const void* ptr) const;
  // Whether `ptr` lies in any space's reserved range (CaptureArena).
  bool contains(const void* ptr) const override;
  size_t block_size(const void* ptr) const;

  // Makes sure the current space maps offsets [0, bytes), creating chunks as needed (same
  // errors as allocate). Allocation does this by itself; calling it before a capture moves the
  // driver calls out of the capture, e.g. extend_mapping(stats().physical_bytes) maps every
  // existing chunk (the seed's eager mapping).
  void extend_mapping(size_t bytes);

  VmmStats stats() const;
  // Sizes of the chunks in offset order (they sum to stats().physical_bytes).
  std::vector<size_t> chunk_bytes() const;
  // Throws Error for an unknown id.
  VmmSpaceStats space_stats(uint64_t id) const;

 private:
  struct Block {
    size_t offset = 0;
    size_t size = 0;
    bool allocated = false;
    uint64_t stream = 0;  // stream of the last allocation; free blocks are reused by it only
  };
  struct Space;

  Space& current_locked(const char* what, size_t bytes);
  // Maps the chunks of `space` covering offsets [0, end), creating one chunk for what lies past
  // the last one.
  // Checks the budget first; on a driver failure, what was created and mapped stays (and is
  // accounted). `request` is the byte count asked, for errors.
  void map_prefix_locked(Space& space, size_t end, size_t request);
  const Block* find_live_locked(const void* ptr, const Space** space) const;
  // Replaces every chunk by one of the same total size and remaps the spaces (see above).
  void consolidate_locked();
  void release_all() noexcept;

  Device device_;
  size_t granularity_ = 0;
  size_t budget_ = 0;       // bytes, a multiple of granularity_; 0: unlimited
  size_t space_bytes_ = 0;  // a multiple of granularity_

  mutable std::mutex mu_;
  // Destroyed in release_all(): every space's mappings, then the ranges, then the chunks.
  std::vector<PhysicalChunk> chunks_;   // in offset order
  std::vector<size_t> chunk_offsets_;  // chunk i backs offsets [chunk_offsets_[i], + its size)
  size_t physical_bytes_ = 0;          // the end of the last chunk
  size_t mappings_ = 0;
  size_t consolidations_ = 0;
  uint64_t faults_ = 0;
  bool consolidation_ = true;
  std::vector<std::unique_ptr<Space>> spaces_;  // spaces_[id - 1]
  // Live blocks of every space by address: (space index, offset).
  std::unordered_map<const void*, std::pair<size_t, size_t>> live_;
  size_t mapped_bytes_ = 0;
  size_t largest_space_bytes_ = 0;
  size_t live_bytes_ = 0;
};

}  // namespace grt
