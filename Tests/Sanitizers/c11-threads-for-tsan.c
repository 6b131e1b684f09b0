/*
 * C11 threads (<threads.h>) forwarded to POSIX threads, for ThreadSanitizer runs only.
 *
 * Why: Debian's librdkafka (2.0.2) is built with C11 threads: it imports thrd_create, thrd_join,
 * thrd_current, mtx_*, cnd_* and call_once from glibc (see `nm -D --undefined-only librdkafka.so.1`).
 * glibc implements those by calling its *internal* pthread functions directly, so ThreadSanitizer's
 * interceptors of pthread_create, pthread_mutex_lock, pthread_cond_wait, ... never see them:
 *   - a thread started by glibc's thrd_create has no ThreadSanitizer thread state, and the first
 *     intercepted call it makes (malloc, ...) crashes inside the runtime ("ThreadSanitizer: SEGV on
 *     unknown address 0x000000000c38 ... nested bug in the same thread");
 *   - locks taken with mtx_lock and waits on cnd_wait are invisible, so an ordering that only
 *     librdkafka's locks provide (e.g. a delivery report handled on the polling thread after the
 *     producing thread handed over the message) could be reported as a data race. Forwarding the
 *     thread functions alone already ends the crash, and no report in today's suites depends on the
 *     lock functions; they are forwarded so that ThreadSanitizer sees the real synchronisation.
 *
 * This library defines the same functions on top of the public pthread functions. Loaded with
 * LD_PRELOAD into a test binary built with -sanitize=thread, it is found before glibc's definitions
 * when librdkafka's imports are bound, and its pthread calls bind to the ThreadSanitizer runtime's
 * interceptors (the runtime is linked statically into the executable, which comes first in the
 * symbol search order). It is never part of pushworker itself: .ci/run builds it (with
 * swift-mutex-for-tsan.c, into one library, `clang -shared -fPIC`) for the ThreadSanitizer step only
 * (see docs/testing.md).
 *
 * Layouts: glibc declares mtx_t and cnd_t as unions of __SIZEOF_PTHREAD_MUTEX_T /
 * __SIZEOF_PTHREAD_COND_T bytes, the same storage as pthread_mutex_t / pthread_cond_t, and
 * implements mtx_* / cnd_* on that storage as pthread mutexes and condition variables; thrd_t is
 * pthread_t (unsigned long); once_flag is { int } like pthread_once_t. The static assertions below
 * check this at build time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t must be a pthread_mutex_t");
_Static_assert(_Alignof(mtx_t) == _Alignof(pthread_mutex_t), "mtx_t must be a pthread_mutex_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t must be a pthread_cond_t");
_Static_assert(_Alignof(cnd_t) == _Alignof(pthread_cond_t), "cnd_t must be a pthread_cond_t");
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t must be a pthread_t");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag must be a pthread_once_t");

/* C11 result codes from a pthread error number, as glibc's own thrd_err does. */
static int thrd_result(int error) {
    switch (error) {
    case 0: return thrd_success;
    case ENOMEM: return thrd_nomem;
    case ETIMEDOUT: return thrd_timedout;
    case EBUSY: return thrd_busy;
    default: return thrd_error;
    }
}

struct start { thrd_start_t function; void *argument; };

static void *trampoline(void *raw) {
    struct start start = *(struct start *)raw;
    free(raw);
    /* A C11 thread returns int; pthread_join hands it back as a pointer-sized value. */
    return (void *)(intptr_t)start.function(start.argument);
}

int thrd_create(thrd_t *thread, thrd_start_t function, void *argument) {
    struct start *start = malloc(sizeof *start);
    if (start == NULL) return thrd_nomem;
    start->function = function;
    start->argument = argument;
    int error = pthread_create((pthread_t *)thread, NULL, trampoline, start);
    if (error != 0) free(start);
    return thrd_result(error);
}

int thrd_join(thrd_t thread, int *result) {
    void *value = NULL;
    int error = pthread_join((pthread_t)thread, &value);
    if (error == 0 && result != NULL) *result = (int)(intptr_t)value;
    return thrd_result(error);
}

int thrd_detach(thrd_t thread) { return thrd_result(pthread_detach((pthread_t)thread)); }

thrd_t thrd_current(void) { return (thrd_t)pthread_self(); }

int thrd_equal(thrd_t a, thrd_t b) { return pthread_equal((pthread_t)a, (pthread_t)b); }

_Noreturn void thrd_exit(int result) { pthread_exit((void *)(intptr_t)result); }

int mtx_init(mtx_t *mutex, int type) {
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    /* mtx_timed needs nothing extra: every pthread mutex supports pthread_mutex_timedlock. */
    if (type & mtx_recursive) pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
    int error = pthread_mutex_init((pthread_mutex_t *)mutex, &attributes);
    pthread_mutexattr_destroy(&attributes);
    return thrd_result(error);
}

int mtx_lock(mtx_t *mutex) { return thrd_result(pthread_mutex_lock((pthread_mutex_t *)mutex)); }

int mtx_trylock(mtx_t *mutex) { return thrd_result(pthread_mutex_trylock((pthread_mutex_t *)mutex)); }

int mtx_timedlock(mtx_t *restrict mutex, const struct timespec *restrict until) {
    return thrd_result(pthread_mutex_timedlock((pthread_mutex_t *)mutex, until));
}

int mtx_unlock(mtx_t *mutex) { return thrd_result(pthread_mutex_unlock((pthread_mutex_t *)mutex)); }

void mtx_destroy(mtx_t *mutex) { pthread_mutex_destroy((pthread_mutex_t *)mutex); }

int cnd_init(cnd_t *condition) { return thrd_result(pthread_cond_init((pthread_cond_t *)condition, NULL)); }

int cnd_signal(cnd_t *condition) { return thrd_result(pthread_cond_signal((pthread_cond_t *)condition)); }

int cnd_broadcast(cnd_t *condition) { return thrd_result(pthread_cond_broadcast((pthread_cond_t *)condition)); }

int cnd_wait(cnd_t *condition, mtx_t *mutex) {
    return thrd_result(pthread_cond_wait((pthread_cond_t *)condition, (pthread_mutex_t *)mutex));
}

/* C11 measures the deadline on CLOCK_REALTIME, like pthread_cond_timedwait's default clock. */
int cnd_timedwait(cnd_t *restrict condition, mtx_t *restrict mutex, const struct timespec *restrict until) {
    return thrd_result(pthread_cond_timedwait((pthread_cond_t *)condition, (pthread_mutex_t *)mutex, until));
}

void cnd_destroy(cnd_t *condition) { pthread_cond_destroy((pthread_cond_t *)condition); }

void call_once(once_flag *flag, void (*function)(void)) { pthread_once((pthread_once_t *)flag, function); }
