/*
 * mock_broker: a one-broker Kafka cluster on loopback for the benchmark,
 * made with librdkafka's mock cluster (rdkafka_mock.h).
 *
 *   build: cc -O2 -Wall -o mock_broker mock_broker.c -lrdkafka
 *   usage: ./mock_broker APPENDS_FILE
 *
 * The first stdout line is "bootstrap.servers=HOST:PORT". Then each stdin
 * line "topic NAME PARTITIONS" creates a topic (rd_kafka_mock_topic_create)
 * and is answered "ok" or "error TEXT" on stdout. The broker stops at the
 * end of stdin, or on SIGTERM/SIGINT.
 *
 * APPENDS_FILE gets one line per record batch the broker appends to a
 * partition's log, written when it appends it (before it answers the
 * Produce request), and one per state change of a consumer group:
 *   UNIX_SECONDS.MICROSECONDS append TOPIC PARTITION LOG_START LOG_END
 *   UNIX_SECONDS.MICROSECONDS group GROUP with N member(s) changing state
 *       FROM -> TO: REASON
 * (LOG_END: the partition's end offset after the append; LOG_START above 0:
 * the broker dropped the oldest batches.) The benchmark reads from it when
 * the last result of a run reached the broker, and whether a group
 * rebalanced after its first assignment. The lines come from the mock's
 * debug log (debug=mock): its "Log append" and "Mock consumer group ...
 * changing state" lines of librdkafka 2.0.2.
 *
 * Like Apache Kafka (which sets TCP_NODELAY on every connection), it turns
 * Nagle's algorithm off on the connections it accepts; librdkafka 2.0.2's mock
 * leaves it on, and then a small reply sent right after another one waits
 * for the client's delayed ACK, about 40 ms: late ListOffsets replies at a
 * consumer's start (whose partitions then miss a Fetch of up to
 * fetch.wait.max.ms, 500 ms) and late Produce replies at the end of a run.
 * The mock calls accept() from librdkafka, which this file's accept()
 * interposes (an executable's symbols come first in the dynamic lookup).
 *
 * Why not `pushworker dev --broker-only`: it creates every topic with the
 * same partition count (dev.partitions), and librdkafka 2.0.2's mock has no
 * admin API, while the benchmark needs input topics of 1 to P partitions and
 * results topics with enough partitions that none of them passes the mock's
 * 5 MiB per partition (beyond it the oldest record batches are dropped).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);

/* accept(2) with TCP_NODELAY on the accepted connection (see above). */
int accept(int listener, struct sockaddr *peer, socklen_t *length) {
        static accept_fn real;
        if (!real)
                real = (accept_fn)dlsym(RTLD_NEXT, "accept");
        if (!real) {
                errno = ENOSYS;
                return -1;
        }
        int s = real(listener, peer, length);
        int on = 1;
        if (s >= 0 &&
            setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0)
                perror("mock_broker: TCP_NODELAY");
        return s;
}

static FILE *appends;

/* librdkafka's log: the mock's "Log append" debug lines become lines of
 * APPENDS_FILE; other lines at warning or worse go to stderr. Called on the
 * mock cluster's thread as it appends, so the time is the append's. */
static void on_log(const rd_kafka_t *rk, int level, const char *facility,
                   const char *line) {
        (void)rk;
        const char *append = strstr(line, "Log append ");
        char topic[256];
        int partition;
        long long start, end;
        if (append &&
            sscanf(append,
                   "Log append %255s [%d] %*s messages, %*s bytes at offset "
                   "%*s (log now %lld..%lld",
                   topic, &partition, &start, &end) == 4) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                fprintf(appends, "%lld.%06ld append %s %d %lld %lld\n",
                        (long long)now.tv_sec, now.tv_nsec / 1000, topic,
                        partition, start, end);
                fflush(appends);
        } else if ((append = strstr(line, "Mock consumer group ")) &&
                   strstr(append, " changing state ")) {
                /* "Mock consumer group G with N member(s) changing state
                 * A -> B: REASON" */
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                fprintf(appends, "%lld.%06ld group %s\n", (long long)now.tv_sec,
                        now.tv_nsec / 1000,
                        append + strlen("Mock consumer group "));
                fflush(appends);
        } else if (level <= 4) {
                fprintf(stderr, "mock_broker: %s: %s\n", facility, line);
        }
}

static void on_signal(int sig) {
        (void)sig;
        /* Closing stdin would race with fgets; exit at once instead: the
         * cluster lives in this process only, nothing is left behind. */
        _exit(0);
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s APPENDS_FILE\n", argv[0]);
                return 2;
        }
        appends = fopen(argv[1], "w");
        if (!appends) {
                perror(argv[1]);
                return 1;
        }
        char errstr[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        /* debug=mock: the mock's log appends (see on_log). The owning
         * handle never connects anywhere, and its other lines stay out. */
        if (rd_kafka_conf_set(conf, "debug", "mock", errstr,
                              sizeof(errstr)) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, "mock_broker: %s\n", errstr);
                return 1;
        }
        rd_kafka_conf_set_log_cb(conf, on_log);
        rd_kafka_t *owner =
            rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!owner) {
                fprintf(stderr, "mock_broker: rd_kafka_new: %s\n", errstr);
                return 1;
        }
        rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(owner, 1);
        if (!cluster) {
                fprintf(stderr, "mock_broker: rd_kafka_mock_cluster_new failed\n");
                return 1;
        }
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        printf("bootstrap.servers=%s\n", rd_kafka_mock_cluster_bootstraps(cluster));
        fflush(stdout);

        char line[1024], name[256];
        int partitions;
        while (fgets(line, sizeof(line), stdin)) {
                if (sscanf(line, "topic %255s %d", name, &partitions) != 2 ||
                    partitions < 1) {
                        printf("error expected: topic NAME PARTITIONS\n");
                } else {
                        rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(
                            cluster, name, partitions, 1);
                        if (err)
                                printf("error %s\n", rd_kafka_err2str(err));
                        else
                                printf("ok\n");
                }
                fflush(stdout);
        }
        rd_kafka_mock_cluster_destroy(cluster);
        rd_kafka_destroy(owner);
        return 0;
}
