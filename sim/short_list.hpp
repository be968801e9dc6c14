// Removing one entry from the short, ordered lists the replay keeps per rank (the units running
// on it, the tasks its time split is charging): a few entries each, changed at every event.
#pragma once

#include <cstddef>
#include <vector>

namespace moesim {

// Removes `value` (present once) and keeps the others in order. A plain loop: std::find's unrolled
// search and erase's call to memmove cost more than the work on lists this short.
template <class T>
void remove_in_order(std::vector<T>& list, T value) {
  std::size_t at = 0;
  while (list[at] != value) ++at;
  for (; at + 1 < list.size(); ++at) list[at] = list[at + 1];
  list.pop_back();
}

}  // namespace moesim
