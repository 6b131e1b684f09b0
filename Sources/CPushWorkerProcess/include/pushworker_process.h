#ifndef PUSHWORKER_PROCESS_H
#define PUSHWORKER_PROCESS_H

// Linux calls the exec worker's event loop needs and Swift's Glibc module does not import: epoll(7),
// eventfd(2), pidfd_open(2) / pidfd_send_signal(2) (through syscall(2): glibc declares them only from 2.36),
// waitid(2) on a pidfd, and prctl(PR_SET_CHILD_SUBREAPER). Each returns what the call returns, -1 with errno
// on failure.

#include <stdint.h>
#include <sys/types.h>

/// `epoll_create1(EPOLL_CLOEXEC)`.
int pw_epoll_create(void);
/// Adds `fd` to `epoll` for `events` (a mask of the PW_EPOLL_* values), with `token` as its user data.
int pw_epoll_add(int epoll, int fd, uint32_t events, uint64_t token);
/// Changes the events of `fd` (already added).
int pw_epoll_modify(int epoll, int fd, uint32_t events, uint64_t token);
/// Removes `fd` from `epoll`.
int pw_epoll_remove(int epoll, int fd);
/// Waits up to `timeout_ms` (-1: no limit) for at most `max` events; fills `tokens` and `events`.
/// Returns how many (0 on timeout), or -1 with errno (EINTR included).
int pw_epoll_wait(int epoll, uint64_t *tokens, uint32_t *events, int max, int timeout_ms);

/// Readable (EPOLLIN).
extern const uint32_t PW_EPOLL_IN;
/// Writable (EPOLLOUT).
extern const uint32_t PW_EPOLL_OUT;
/// The other end has closed (EPOLLHUP).
extern const uint32_t PW_EPOLL_HUP;
/// An error on the descriptor (EPOLLERR).
extern const uint32_t PW_EPOLL_ERR;

/// `eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`.
int pw_eventfd(void);

/// `pidfd_open(pid, 0)` (Linux 5.3): -1 with ENOSYS on older kernels.
int pw_pidfd_open(pid_t pid);
/// `pidfd_send_signal(pidfd, signal, NULL, 0)` (Linux 5.1).
int pw_pidfd_send_signal(int pidfd, int signal);
/// `waitid(P_PIDFD, pidfd, …, WEXITED | WNOHANG)` (Linux 5.4): reaps the process if it has ended. Returns 0
/// and sets `*ended` (0 while it runs), `*exited` (1 when it exited, 0 when a signal ended it) and `*status`
/// (the exit status or the signal); -1 with errno.
int pw_pidfd_reap(int pidfd, int *ended, int *exited, int *status);

/// `prctl(PR_SET_CHILD_SUBREAPER, 1)`: orphaned descendants of this process's children become its children.
int pw_set_child_subreaper(void);
/// `prctl(PR_GET_CHILD_SUBREAPER)`: 1 when set, 0 when not, -1 with errno.
int pw_is_child_subreaper(void);

/// Sets O_NONBLOCK on `fd`.
int pw_set_nonblocking(int fd);

#endif
