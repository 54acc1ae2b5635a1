#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <pcre2.h>

#include "core/error.h"

namespace grt::text {
namespace {

// Per-thread match data and JIT stack: a Regex is shared by threads that encode at once.
struct ThreadScratch {
  pcre2_match_data* md = pcre2_match_data_create(8, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
  ThreadScratch() { pcre2_jit_stack_assign(ctx, nullptr, stack); }
  ~ThreadScratch() {
    pcre2_match_context_free(ctx);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(md);
  }
};

ThreadScratch& scratch() {
  thread_local ThreadScratch s;
  return s;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  GRT_CHECK(code != nullptr, "regex '{}' does not compile at offset {}: {}", pattern, off, pcre2_message(err));
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Regex::next_match(std::string_view subject, size_t pos, size_t& begin, size_t& end) const {
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadScratch& s = scratch();
  auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
  while (pos < subject.size()) {
    int rc = jit_ ? pcre2_jit_match(code, subj, subject.size(), pos, 0, s.md, s.ctx)
                  : pcre2_match(code, subj, subject.size(), pos, PCRE2_NO_UTF_CHECK, s.md, s.ctx);
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    GRT_CHECK(rc >= 0, "regex '{}' failed on a {}-byte text: {}", pattern_, subject.size(), pcre2_message(rc));
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.md);
    if (ov[1] > ov[0]) {
      begin = ov[0];
      end = ov[1];
      return true;
    }
    // An empty match: look again from the next character.
    pos = ov[0] + 1;
    while (pos < subject.size() && (static_cast<unsigned char>(subject[pos]) & 0xC0) == 0x80) ++pos;
  }
  return false;
}

}  // namespace grt::text
