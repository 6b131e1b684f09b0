// jemalloc's options for the `pushworker` executable; why each, with the measurements: docs/performance.md
// ("The memory allocator").
//
// - narenas:1: one arena instead of jemalloc's 4 per core. Records are allocated on the consumer thread
//   and freed on the publishing and delivery-report threads; with one arena their pages are reused by
//   every thread (each thread's cache still serves most allocations without the arena's lock).
// - dirty_decay_ms:1000: pages freed after a burst go back to the system after about 1 s (jemalloc's
//   default is 10 s), so the resident size follows the load down.
// - muzzy_decay_ms:0: no second, lazily purged stage for those pages.
#include "pushworker_allocator.h"

const char *malloc_conf = "narenas:1,dirty_decay_ms:1000,muzzy_decay_ms:0";
