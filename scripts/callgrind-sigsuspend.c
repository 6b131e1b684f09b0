// Preloaded into a pushworker run under valgrind by scripts/callgrind-stages.sh.
//
// Valgrind 3.19 (Debian 12) dies with "VALGRIND INTERNAL ERROR: Valgrind received a signal 11" as soon as
// a Swift program whose main thread runs dispatch_main starts (pushworker before dba3603, or any program
// with a top-level await): the main thread parks in libdispatch's _dispatch_sig_thread, which calls
// sigsuspend() with a signal mask that lives in read-only memory, and valgrind's sigsuspend wrapper writes
// to the mask it is given. This sigsuspend hands the real one a copy on the stack; nothing else changes.
// Builds that do not run dispatch_main never call it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

int sigsuspend(const sigset_t *mask) {
    static int (*real)(const sigset_t *);
    if (!real) real = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    sigset_t copy = *mask;
    return real(&copy);
}
