#define _GNU_SOURCE
#include "pushworker_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

const uint32_t PW_EPOLL_IN = EPOLLIN;
const uint32_t PW_EPOLL_OUT = EPOLLOUT;
const uint32_t PW_EPOLL_HUP = EPOLLHUP;
const uint32_t PW_EPOLL_ERR = EPOLLERR;

int pw_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int pw_epoll_add(int epoll, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = {.events = events, .data.u64 = token};
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

int pw_epoll_modify(int epoll, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = {.events = events, .data.u64 = token};
    return epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event);
}

int pw_epoll_remove(int epoll, int fd) {
    struct epoll_event event = {0};
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, &event);
}

int pw_epoll_wait(int epoll, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event ready[64];
    if (max > 64) max = 64;
    int count = epoll_wait(epoll, ready, max, timeout_ms);
    for (int i = 0; i < count; i++) {
        tokens[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
}

int pw_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int pw_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int pw_pidfd_send_signal(int pidfd, int signal) { return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0); }

int pw_pidfd_reap(int pidfd, int *ended, int *exited, int *status) {
    siginfo_t info = {0};
    int result;
    do {
        result = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG);
    } while (result < 0 && errno == EINTR);
    if (result < 0) return -1;
    *ended = info.si_pid != 0;
    *exited = info.si_code == CLD_EXITED ? 1 : 0;
    *status = info.si_status;
    return 0;
}

int pw_set_child_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

int pw_is_child_subreaper(void) {
    int value = 0;
    if (prctl(PR_GET_CHILD_SUBREAPER, &value, 0, 0, 0) < 0) return -1;
    return value != 0;
}

int pw_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}
