// jemalloc's options for the `pushworker` executable; why each, with the measurements: docs/performance.md
// ("The memory allocator").
//
// - narenas:2: two arenas instead of jemalloc's 4 per core. Records are allocated on the consumer thread
//   and freed on the publishing and delivery-report threads; fewer arenas keep fewer partly used pages.
// - dirty_decay_ms:1000: pages freed after a burst go back to the system after about 1 s (jemalloc's
//   default is 10 s), so the resident size follows the load down.
// - muzzy_decay_ms:0: no second, lazily purged stage for those pages.
#include "pushworker_allocator.h"

const char *malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0";
