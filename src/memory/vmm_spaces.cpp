#include "memory/vmm_spaces.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <optional>

#include "core/error.h"
#include "core/logging.h"
#include "device/capture_state.h"
#include "device/device.h"
#include "device/stream.h"

namespace grt {

// One virtual address space: its range, the chunk mappings it has so far (mappings[i] shows
// chunk i at its offset: always a prefix of the chunks, ending at mapped_end), and its blocks.
// Blocks tile [0, frontier) in address order; the frontier only grows (it is the space's
// high-water mark). Free neighbours with the same stream tag are always merged.
struct VmmSpaces::Space {
  Space(uint64_t id_, Device device, size_t bytes) : id(id_), range(device, bytes) {}
  uint64_t id;
  VirtualRange range;
  std::vector<ChunkMapping> mappings;
  size_t mapped_end = 0;
  std::map<size_t, Block> blocks;                   // by offset
  std::set<std::pair<size_t, size_t>> free_blocks;  // (size, offset) of free blocks
  size_t frontier = 0;
  size_t live_bytes = 0;
  uint64_t live_blocks = 0;
  std::string fault;  // why its mapping was lost (remap failure), "" when intact

  char* at(size_t offset) const { return range.base() + offset; }
};

namespace {
size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
}  // namespace

VmmSpaces::VmmSpaces(Device device, size_t physical_budget_bytes, size_t space_bytes)
    : device_(device), granularity_(vmm_granularity(device)) {
  const size_t g = granularity_;
  GRT_CHECK(physical_budget_bytes == 0 || physical_budget_bytes >= g,
            "VMM spaces on {}: a physical budget of {} bytes is less than one chunk ({} bytes)", device.str(),
            physical_budget_bytes, g);
  budget_ = physical_budget_bytes / g * g;
  if (space_bytes == 0) {
    const size_t basis = budget_ ? budget_ : device_total_memory(device);
    space_bytes = round_up(basis, g) + kSlackGranules * g;
  }
  GRT_CHECK(space_bytes <= std::numeric_limits<size_t>::max() - g, "VMM spaces on {}: a space of {} bytes is too large",
            device.str(), space_bytes);
  space_bytes_ = round_up(space_bytes, g);
}

VmmSpaces::~VmmSpaces() {
  if (!live_.empty())
    GRT_WARN("VMM spaces of {} destroyed with {} live blocks ({} bytes): their pointers now dangle", device_.str(),
             live_.size(), live_bytes_);
  if (mapped_bytes_ > 0) {
    // Unmapping memory that queued work still uses would fault (CUDA) or pull it away (CPU).
    if (this_thread_capture_stream()) {
      GRT_WARN("VMM spaces of {} destroyed while this thread captures: unmapping without synchronising",
               device_.str());
    } else {
      try {
        device_synchronize(device_);
      } catch (const std::exception& e) {
        GRT_ERROR("synchronising {} before releasing its VMM spaces failed: {}", device_.str(), e.what());
      }
    }
  }
  release_all();
}

void VmmSpaces::release_all() noexcept {
  // Mappings first (a range may only be released with nothing mapped in it, a chunk only
  // unmapped everywhere), then the ranges, then the chunks. The primitives log their failures.
  for (auto& space : spaces_) space->mappings.clear();
  spaces_.clear();
  chunks_.clear();
  chunk_offsets_.clear();
  live_.clear();
  mapped_bytes_ = 0;
  mappings_ = 0;
  physical_bytes_ = 0;
  live_bytes_ = 0;
}

void VmmSpaces::consolidate_locked() {
  device_synchronize(device_);  // no queued work may use the chunks while they are swapped
  std::optional<PhysicalChunk> merged;
  try {
    merged.emplace(device_, physical_bytes_);
  } catch (const Error& e) {
    GRT_DEBUG("VMM spaces of {}: not consolidating {} chunks: {}", device_.str(), chunks_.size(), e.what());
    return;
  }
  std::vector<size_t> mapped_ends;
  for (auto& sp : spaces_) {
    mapped_ends.push_back(sp->mapped_end);
    sp->mappings.clear();  // unmapped before the old chunks are released
    sp->mapped_end = 0;
  }
  chunks_.clear();
  chunk_offsets_.clear();
  chunks_.push_back(std::move(*merged));
  chunk_offsets_.push_back(0);
  mapped_bytes_ = 0;
  mappings_ = 0;
  ++consolidations_;
  for (size_t i = 0; i < spaces_.size(); ++i) {
    if (mapped_ends[i] == 0) continue;
    try {
      map_prefix_locked(*spaces_[i], mapped_ends[i], 0);
    } catch (const Error& e) {
      // Left unmapped: its graphs are retired by their runners (faults()), the other spaces
      // and the capture that asked for the new space go on.
      Space& sp = *spaces_[i];
      sp.mappings.clear();
      mapped_bytes_ -= std::min(mapped_bytes_, sp.mapped_end);
      sp.mapped_end = 0;
      sp.fault = fmt::format("remapping VMM space {} of {} onto the consolidated chunk failed: {}", sp.id,
                             device_.str(), e.what());
      ++faults_;
      GRT_WARN("{} (graphs captured in it are unusable now)", sp.fault);
    }
  }
}

uint64_t VmmSpaces::switch_to_new_virtual_space() {
  std::lock_guard<std::mutex> lock(mu_);
  if (consolidation_ && chunks_.size() > 1 && mappings_ <= kConsolidateMaxMappings && live_.empty() && !this_thread_capture_stream() &&
      (budget_ == 0 || 2 * physical_bytes_ <= budget_))
    consolidate_locked();
  const uint64_t id = spaces_.size() + 1;
  try {
    spaces_.push_back(std::make_unique<Space>(id, device_, space_bytes_));
  } catch (const Error& e) {
    throw e.with_context(fmt::format("reserving VMM space {} of {} bytes on {} ({} spaces, {} bytes reserved so far)",
                                     id, space_bytes_, device_.str(), spaces_.size(), spaces_.size() * space_bytes_));
  }
  GRT_DEBUG("VMM space {} on {}: {} bytes at {}", id, device_.str(), space_bytes_,
            static_cast<void*>(spaces_.back()->range.base()));
  return id;
}

void VmmSpaces::set_consolidation(bool allowed) {
  std::lock_guard<std::mutex> lock(mu_);
  consolidation_ = allowed;
}

std::string VmmSpaces::space_fault(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  GRT_CHECK(id >= 1 && id <= spaces_.size(), "VMM space {} of {} does not exist ({} spaces)", id, device_.str(),
            spaces_.size());
  return spaces_[id - 1]->fault;
}

uint64_t VmmSpaces::faults() const {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_;
}

void VmmSpaces::fill_physical_for_testing(int byte) {
  std::lock_guard<std::mutex> lock(mu_);
  if (physical_bytes_ == 0) return;
  device_synchronize(device_);
  VirtualRange range(device_, physical_bytes_);
  std::vector<ChunkMapping> maps;
  for (size_t i = 0; i < chunks_.size(); ++i) maps.emplace_back(range, chunk_offsets_[i], chunks_[i]);
  Stream& s = current_stream(device_);
  s.memset_async(range.base(), byte, physical_bytes_);
  s.synchronize();
}

uint64_t VmmSpaces::current_space() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spaces_.empty() ? kNoSpace : spaces_.back()->id;
}

VmmSpaces::Space& VmmSpaces::current_locked(const char* what, size_t bytes) {
  GRT_CHECK(!spaces_.empty(),
            "{} {} bytes from the VMM spaces of {}: there is no current space (call "
            "switch_to_new_virtual_space() first)",
            what, bytes, device_.str());
  return *spaces_.back();
}

void VmmSpaces::map_prefix_locked(Space& space, size_t end, size_t request) {
  if (end <= space.mapped_end) return;
  if (end > physical_bytes_) {
    const size_t need = round_up(end, granularity_);
    GRT_CHECK(budget_ == 0 || need <= budget_,
              "out of graph memory on {}: space {} asked {} bytes, which reach offset {} and need {} bytes of "
              "physical chunks; holding {} bytes physical ({} bytes live in {} blocks), budget {} bytes",
              device_.str(), space.id, request, end, need, physical_bytes_, live_bytes_, live_.size(), budget_);
    try {
      chunks_.emplace_back(device_, need - physical_bytes_);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("growing the graph memory of {} from {} to {} bytes for {} bytes asked in space {}",
                                       device_.str(), physical_bytes_, need, request, space.id));
    }
    chunk_offsets_.push_back(physical_bytes_);
    physical_bytes_ = need;
  }
  while (space.mapped_end < end) {
    const size_t i = space.mappings.size();
    try {
      space.mappings.emplace_back(space.range, chunk_offsets_[i], chunks_[i]);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("mapping chunk {} ({} bytes at offset {}) into VMM space {} of {} for {} bytes "
                                       "asked",
                                       i, chunks_[i].size(), chunk_offsets_[i], space.id, device_.str(), request));
    }
    space.mapped_end += chunks_[i].size();
    mapped_bytes_ += chunks_[i].size();
    ++mappings_;
  }
}

void* VmmSpaces::allocate(size_t bytes) { return allocate(bytes, current_stream(device_)); }

void* VmmSpaces::allocate(size_t bytes, Stream& stream) {
  GRT_CHECK(stream.device() == device_, "allocating from the VMM spaces of {} for a stream of {}", device_.str(),
            stream.device().str());
  const uint64_t tag = stream.id();
  std::lock_guard<std::mutex> lock(mu_);
  Space& sp = current_locked("allocating", bytes);
  const auto space_full = [&](size_t end) {
    GRT_FAIL(
        "allocating {} bytes in VMM space {} of {}: its {}-byte virtual range is full (high-water mark {} bytes, {} "
        "bytes live; the block would end at offset {}); create the VMM spaces with a larger space size",
        bytes, sp.id, device_.str(), space_bytes_, sp.frontier, sp.live_bytes, end);
  };
  if (bytes > space_bytes_) space_full(bytes);
  const size_t size = round_up(bytes == 0 ? 1 : bytes, kAlignment);

  // Best fit among the free blocks this stream may reuse.
  auto fit = sp.free_blocks.lower_bound({size, 0});
  while (fit != sp.free_blocks.end() && sp.blocks.at(fit->second).stream != tag) ++fit;

  size_t offset = 0;
  if (fit != sp.free_blocks.end()) {
    offset = fit->second;
    sp.free_blocks.erase(fit);
    Block& b = sp.blocks.at(offset);
    if (b.size > size) {  // the rest stays free, with the same tag (its neighbours cannot merge)
      Block rest{offset + size, b.size - size, false, b.stream};
      b.size = size;
      sp.free_blocks.insert({rest.size, rest.offset});
      sp.blocks.emplace(rest.offset, rest);
    }
  } else {
    // Grow at the frontier; a free top block of this stream grows into the block.
    offset = sp.frontier;
    const bool extend_top = !sp.blocks.empty() && !sp.blocks.rbegin()->second.allocated &&
                            sp.blocks.rbegin()->second.stream == tag;
    if (extend_top) offset = sp.blocks.rbegin()->first;
    if (size > space_bytes_ - offset) space_full(offset + size);
    const size_t end = offset + size;
    map_prefix_locked(sp, end, bytes);  // may throw: no block changed yet
    if (extend_top) {
      sp.free_blocks.erase({sp.blocks.rbegin()->second.size, offset});
      sp.blocks.erase(offset);
    }
    sp.blocks.emplace(offset, Block{offset, size, false, tag});
    sp.frontier = end;
    largest_space_bytes_ = std::max(largest_space_bytes_, end);
  }

  Block& b = sp.blocks.at(offset);
  b.allocated = true;
  b.stream = tag;
  void* p = sp.at(offset);
  live_.emplace(p, std::make_pair(static_cast<size_t>(sp.id - 1), offset));
  live_bytes_ += size;
  sp.live_bytes += size;
  sp.live_blocks++;
  return p;
}

void VmmSpaces::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  GRT_CHECK(it != live_.end(), "freeing {} to the VMM spaces of {}: not a live block of them ({} spaces, {} live blocks)",
            ptr, device_.str(), spaces_.size(), live_.size());
  Space& sp = *spaces_[it->second.first];
  auto bi = sp.blocks.find(it->second.second);
  live_.erase(it);
  Block& b = bi->second;
  live_bytes_ -= b.size;
  sp.live_bytes -= b.size;
  sp.live_blocks--;
  b.allocated = false;  // keeps its stream tag
  if (auto next = std::next(bi); next != sp.blocks.end() && !next->second.allocated && next->second.stream == b.stream) {
    sp.free_blocks.erase({next->second.size, next->first});
    b.size += next->second.size;
    sp.blocks.erase(next);
  }
  if (bi != sp.blocks.begin()) {
    auto prev = std::prev(bi);
    if (!prev->second.allocated && prev->second.stream == b.stream) {
      sp.free_blocks.erase({prev->second.size, prev->first});
      prev->second.size += b.size;
      sp.blocks.erase(bi);
      bi = prev;
    }
  }
  sp.free_blocks.insert({bi->second.size, bi->first});
}

const VmmSpaces::Block* VmmSpaces::find_live_locked(const void* ptr, const Space** space) const {
  auto it = live_.find(ptr);
  if (it == live_.end()) return nullptr;
  const Space& sp = *spaces_[it->second.first];
  if (space) *space = &sp;
  return &sp.blocks.at(it->second.second);
}

bool VmmSpaces::owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find_live_locked(ptr, nullptr) != nullptr;
}

bool VmmSpaces::contains(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  const char* p = static_cast<const char*>(ptr);
  for (const auto& s : spaces_) {
    if (s && p >= s->range.base() && p < s->range.base() + s->range.size()) return true;
  }
  return false;
}

size_t VmmSpaces::block_size(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Block* b = find_live_locked(ptr, nullptr);
  GRT_CHECK(b, "block_size of {} in the VMM spaces of {}: not a live block", ptr, device_.str());
  return b->size;
}

void VmmSpaces::extend_mapping(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Space& sp = current_locked("mapping", bytes);
  GRT_CHECK(bytes <= space_bytes_, "mapping {} bytes into VMM space {} of {}: the space has only {} bytes", bytes,
            sp.id, device_.str(), space_bytes_);
  map_prefix_locked(sp, bytes, bytes);
}

VmmStats VmmSpaces::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  VmmStats s;
  s.physical_bytes = physical_bytes_;
  s.chunks = chunks_.size();
  s.consolidations = consolidations_;
  s.mappings = mappings_;
  for (const auto& sp : spaces_) s.reserved_virtual_bytes += sp->range.size();
  s.spaces = spaces_.size();
  s.mapped_bytes = mapped_bytes_;
  s.largest_space_bytes = largest_space_bytes_;
  s.live_bytes = live_bytes_;
  s.live_blocks = live_.size();
  s.granularity = granularity_;
  s.space_bytes = space_bytes_;
  s.budget_bytes = budget_;
  return s;
}

std::vector<size_t> VmmSpaces::chunk_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<size_t> sizes;
  for (const PhysicalChunk& c : chunks_) sizes.push_back(c.size());
  return sizes;
}

VmmSpaceStats VmmSpaces::space_stats(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  GRT_CHECK(id >= 1 && id <= spaces_.size(), "VMM space {} of {} does not exist ({} spaces)", id, device_.str(),
            spaces_.size());
  const Space& sp = *spaces_[id - 1];
  VmmSpaceStats s;
  s.id = id;
  s.base = sp.range.base();
  s.reserved_bytes = sp.range.size();
  s.mapped_bytes = sp.mapped_end;
  s.mappings = sp.mappings.size();
  s.high_water_bytes = sp.frontier;
  s.live_bytes = sp.live_bytes;
  s.live_blocks = sp.live_blocks;
  return s;
}

}  // namespace grt
