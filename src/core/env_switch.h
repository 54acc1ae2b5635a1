// Environment switches: the GRAPHRT_* A/B and tuning knobs that kernels and runners read once, at
// first use. Unset or empty gives the fallback; a value that is set but not allowed is an error
// naming the variable, its value and what it may be (never a silent fallback).
#pragma once
#include <initializer_list>

namespace grt {

// The integer value of `name`, which must lie in [lo, hi].
int env_int(const char* name, int fallback, int lo, int hi);

// The index in `allowed` of the value of `name` (exact match).
int env_choice(const char* name, std::initializer_list<const char*> allowed, int fallback);

}  // namespace grt
