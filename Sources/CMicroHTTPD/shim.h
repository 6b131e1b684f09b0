#ifndef PUSHWORKER_CMICROHTTPD_SHIM_H
#define PUSHWORKER_CMICROHTTPD_SHIM_H
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* Swift cannot call C variadic functions: MHD_start_daemon and MHD_get_daemon_info are wrapped here with
   fixed parameters. */

/* Receives libmicrohttpd's error messages, formatted, with errno as it was when the message was logged
   (e.g. EADDRINUSE after a failed bind). */
typedef void (*pushworker_mhd_log_sink)(void *context, const char *message, int error_number);

/* Where libmicrohttpd's messages go; must outlive the daemon. */
struct pushworker_mhd_logger {
    pushworker_mhd_log_sink sink;
    void *context;
};

/* MHD_OPTION_EXTERNAL_LOGGER callback: formats the message and hands it to the logger's sink. */
static void pushworker_mhd_log(void *cls, const char *format, va_list arguments) {
    int saved = errno;
    const struct pushworker_mhd_logger *logger = (const struct pushworker_mhd_logger *)cls;
    char buffer[512];
    vsnprintf(buffer, sizeof buffer, format, arguments);
    if (logger != NULL && logger->sink != NULL) logger->sink(logger->context, buffer, saved);
    errno = saved;
}

/* Starts a daemon with its own polling thread (epoll or poll, chosen by libmicrohttpd), listening on
   `address` (IPv4, or IPv6 with `ipv6` non-zero: then dual-stack where the address allows it). A port of 0
   in `address` picks a free port (read it back with pushworker_mhd_bound_port). Returns NULL on failure;
   the reason went to `logger`. */
static inline struct MHD_Daemon *pushworker_mhd_start(
    const struct sockaddr *address, int ipv6, unsigned int connection_limit, unsigned int connection_timeout_seconds,
    MHD_AccessHandlerCallback handler, void *handler_context, struct pushworker_mhd_logger *logger) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (ipv6) flags |= MHD_USE_DUAL_STACK;
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_context,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
                            MHD_OPTION_EXTERNAL_LOGGER, pushworker_mhd_log, (void *)logger,
                            MHD_OPTION_END);
}

/* The port the daemon listens on (MHD_DAEMON_INFO_BIND_PORT), or 0 if unknown. */
static inline uint16_t pushworker_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info != NULL ? info->port : 0;
}

#endif
