/*
 * Tells ThreadSanitizer about the lock and unlock that Swift's Synchronization.Mutex does out of its sight.
 * For ThreadSanitizer runs only; built with the toolchain's clang (it needs `swiftcall`).
 *
 * Why: on Linux, Mutex (swift/stdlib/public/Synchronization/Mutex/LinuxImpl.swift) takes and gives back the
 * lock with an inlined compare-and-swap when it is free (compiled into our instrumented code, so
 * ThreadSanitizer sees it), but under contention it calls _MutexHandle._lockSlow / _unlockSlow in the
 * toolchain's libswiftSynchronization.so. That library is not instrumented, and the slow paths hand the
 * lock over in the kernel (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI). So when a thread gets a contended lock,
 * ThreadSanitizer has seen no acquire, and reports every access made under the lock as a race with the
 * previous owner's accesses ("Swift access race ... in Mutex.withLock"): a false positive outside our
 * code, which appears only when the lock was contended.
 *
 * This library defines the two slow-path functions (same mangled names, Swift calling convention: the
 * handle's address, i.e. its UInt32 lock word, in the `self` register), forwards to the real ones found
 * with dlsym(RTLD_NEXT), and adds the missing edges: __tsan_release on the lock word before the real
 * unlock, __tsan_acquire after the real lock (also after a successful _tryLockSlow). ThreadSanitizer's
 * atomics keep their synchronisation per address, so these pair with the inlined fast paths on the same
 * word. In a process without ThreadSanitizer the __tsan functions are absent (weak) and nothing is added.
 * If the toolchain renames these functions, nothing is interposed and the false reports come back, which
 * the ThreadSanitizer step then shows.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define SWIFTCALL __attribute__((swiftcall))
#define SWIFTSELF __attribute__((swift_context))

void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

typedef SWIFTCALL void (*lock_slow_t)(uint32_t owner, void *SWIFTSELF handle);
typedef SWIFTCALL void (*unlock_slow_t)(void *SWIFTSELF handle);
typedef SWIFTCALL bool (*try_lock_slow_t)(void *SWIFTSELF handle);

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"

/* The real function, looked up once; racing first calls store the same pointer (atomically). */
static void *real(void **cache, const char *name) {
    void *function = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        function = dlsym(RTLD_NEXT, name);
        if (function == NULL) abort();  /* only reached when the program called it, so it exists */
        __atomic_store_n(cache, function, __ATOMIC_RELEASE);
    }
    return function;
}

SWIFTCALL void mutex_lock_slow(uint32_t owner, void *SWIFTSELF handle) __asm__(LOCK_SLOW);
SWIFTCALL void mutex_lock_slow(uint32_t owner, void *SWIFTSELF handle) {
    static void *cache;
    lock_slow_t function = (lock_slow_t)real(&cache, LOCK_SLOW);
    function(owner, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFTCALL void mutex_unlock_slow(void *SWIFTSELF handle) __asm__(UNLOCK_SLOW);
SWIFTCALL void mutex_unlock_slow(void *SWIFTSELF handle) {
    static void *cache;
    unlock_slow_t function = (unlock_slow_t)real(&cache, UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(handle);
    function(handle);
}

SWIFTCALL bool mutex_try_lock_slow(void *SWIFTSELF handle) __asm__(TRY_LOCK_SLOW);
SWIFTCALL bool mutex_try_lock_slow(void *SWIFTSELF handle) {
    static void *cache;
    try_lock_slow_t function = (try_lock_slow_t)real(&cache, TRY_LOCK_SLOW);
    bool locked = function(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}
