#ifndef PUSHWORKER_ALLOCATOR_H
#define PUSHWORKER_ALLOCATOR_H

/// jemalloc's configuration for the `pushworker` executable (jemalloc reads this global, `malloc_conf`, when
/// it starts; the `MALLOC_CONF` environment variable, read after it, overrides any of its options). The
/// executable links jemalloc in release builds only (Package.swift); without jemalloc the string is unused.
extern const char *malloc_conf;

#endif
