#include "cli/text_setup.h"

namespace grt {

// Not wired yet: src/text (tokenizer, chat templates) lands from its own branches.
TextSupport text_support_for(const std::string&) { return {}; }

}  // namespace grt
