/*
 * c_worker: pushworker's job written directly in C on librdkafka and cJSON,
 * in one thread: the benchmark's reference for what the hardware and
 * librdkafka allow.
 *
 *   build: cc -O2 -Wall -o c_worker c_worker.c -lrdkafka -lcjson
 *   usage: ./c_worker -b BOOTSTRAP -g GROUP -t INPUT_TOPIC -r RESULTS_TOPIC
 *                     -n RECORDS [-X PROPERTY=VALUE]...
 *
 * The job, per input record (the consumer reads INPUT_TOPIC in consumer
 * group GROUP):
 *   - parse the value as JSON; aps.content-available must be the number 1
 *     (cJSON keeps no lexical form, so 1.0 passes too; true and "1" do not);
 *   - read "type" and call its handler (a no-op that answers newData);
 *   - produce a result to RESULTS_TOPIC, keyed by the input key:
 *     {"messageId","type","result","reason","source":{topic,partition,
 *     offset},"durationMs"}, with pushworker's outcomes: newData; noData
 *     with reason notSilent; failed with invalidPayload or unknownType;
 *   - store the input offset for commit (rd_kafka_offsets_store) only once
 *     the result's delivery report says the broker has it, and only up to
 *     the first record whose result is not yet delivered (results go to
 *     several partitions, so their reports arrive out of input order).
 * enable.auto.offset.store=false; auto commit at librdkafka's default
 * interval; the producer is idempotent (as pushworker's).
 *
 * Once RECORDS results are delivered it commits the stored offsets
 * synchronously, closes, and prints one line:
 *   BENCH-RESULT {"worker":"c","records":N,"seconds":S,
 *                 "firstTakenMs":T0,"lastDeliveredMs":T1}
 * seconds = from the first record taken (rd_kafka_consumer_poll returned
 * it) to the last delivery report, on the monotonic clock; the two *Ms
 * fields are the same instants on the wall clock (UNIX milliseconds).
 * Exit status 0 on success, 1 on a Kafka error, 2 on bad arguments.
 */
#include <cjson/cJSON.h>
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double monotonic_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- handlers: the types this worker knows ----------------------------- */

typedef const char *(*handler_t)(const cJSON *push);

/* A no-op handler, as pushworker's noop worker with result newData. */
static const char *content_update(const cJSON *push) {
        (void)push;
        return "newData";
}

static handler_t handler_for(const char *type) {
        if (type && strcmp(type, "content-update") == 0)
                return content_update;
        return NULL;
}

/* ---- offsets: what may be committed ------------------------------------ */

/* Per input partition, the records taken and not yet stored, in the order
 * they were taken (which is offset order): a ring of (offset, delivered)
 * indexed by a sequence number that only grows. */
typedef struct {
        int64_t *offsets;
        unsigned char *delivered;
        uint64_t head, tail; /* sequence numbers: [head, tail) pending */
        uint64_t capacity;   /* a power of two */
        int dirty;           /* a report arrived since the last store */
} pending_t;

static struct {
        pending_t *partitions;
        int count;
        long delivered; /* results acknowledged by the broker */
        int failed;     /* a result could not be delivered */
        double last_delivery_s, last_delivery_ms;
} state;

static pending_t *pending_for(int32_t partition) {
        if (partition >= state.count) {
                int count = partition + 1;
                pending_t *grown = realloc(state.partitions,
                                           count * sizeof(*grown));
                if (!grown) {
                        fprintf(stderr, "c_worker: out of memory\n");
                        exit(1);
                }
                memset(grown + state.count, 0,
                       (count - state.count) * sizeof(*grown));
                state.partitions = grown;
                state.count = count;
        }
        return &state.partitions[partition];
}

/* Appends a taken record; returns its sequence number. */
static uint64_t pending_push(pending_t *p, int64_t offset) {
        if (p->tail - p->head == p->capacity) {
                uint64_t capacity = p->capacity ? p->capacity * 2 : 1024;
                int64_t *offsets = malloc(capacity * sizeof(*offsets));
                unsigned char *delivered = malloc(capacity);
                if (!offsets || !delivered) {
                        fprintf(stderr, "c_worker: out of memory\n");
                        exit(1);
                }
                for (uint64_t s = p->head; s < p->tail; s++) {
                        offsets[s & (capacity - 1)] =
                            p->offsets[s & (p->capacity - 1)];
                        delivered[s & (capacity - 1)] =
                            p->delivered[s & (p->capacity - 1)];
                }
                free(p->offsets);
                free(p->delivered);
                p->offsets = offsets;
                p->delivered = delivered;
                p->capacity = capacity;
        }
        uint64_t seq = p->tail++;
        p->offsets[seq & (p->capacity - 1)] = offset;
        p->delivered[seq & (p->capacity - 1)] = 0;
        return seq;
}

/* The opaque of a result: input partition (high 24 bits) and sequence. */
#define SEQ_BITS 40
static void *opaque_of(int32_t partition, uint64_t seq) {
        return (void *)(uintptr_t)(((uint64_t)partition << SEQ_BITS) | seq);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *result,
                        void *opaque) {
        (void)rk, (void)opaque;
        if (result->err) {
                fprintf(stderr, "c_worker: result not delivered: %s\n",
                        rd_kafka_err2str(result->err));
                state.failed = 1;
                return;
        }
        uint64_t tag = (uint64_t)(uintptr_t)result->_private;
        int32_t partition = (int32_t)(tag >> SEQ_BITS);
        uint64_t seq = tag & ((1ull << SEQ_BITS) - 1);
        if (partition < state.count) {
                pending_t *p = &state.partitions[partition];
                /* A report from before a revocation has no slot any more. */
                if (seq >= p->head && seq < p->tail) {
                        p->delivered[seq & (p->capacity - 1)] = 1;
                        p->dirty = 1;
                }
        }
        state.delivered++;
        state.last_delivery_s = monotonic_s();
        state.last_delivery_ms = wall_ms();
}

/* Stores, per partition, the offset after the last record of the delivered
 * prefix: the next auto commit (or the final commit) commits it. */
static void store_delivered(rd_kafka_t *consumer, const char *topic) {
        if (state.failed) /* nothing after an undelivered result */
                return;
        rd_kafka_topic_partition_list_t *list = NULL;
        for (int32_t i = 0; i < state.count; i++) {
                pending_t *p = &state.partitions[i];
                if (!p->dirty)
                        continue;
                p->dirty = 0;
                int64_t next = -1;
                while (p->head < p->tail &&
                       p->delivered[p->head & (p->capacity - 1)]) {
                        next = p->offsets[p->head & (p->capacity - 1)] + 1;
                        p->head++;
                }
                if (next < 0)
                        continue;
                if (!list)
                        list = rd_kafka_topic_partition_list_new(state.count);
                rd_kafka_topic_partition_list_add(list, topic, i)->offset = next;
        }
        if (!list)
                return;
        rd_kafka_resp_err_t err = rd_kafka_offsets_store(consumer, list);
        if (err)
                fprintf(stderr, "c_worker: offsets_store: %s\n",
                        rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(list);
}

/* ---- the job ------------------------------------------------------------ */

/* Builds the result of one record; returns it malloc()ed (cJSON's
 * allocator is malloc), for librdkafka to free (RD_KAFKA_MSG_F_FREE). */
static char *result_for(const rd_kafka_message_t *record) {
        const char *topic = rd_kafka_topic_name(record->rkt);
        const char *result = "failed", *reason = "invalidPayload";
        double duration_ms = 0;
        cJSON *push = cJSON_ParseWithLength(record->payload, record->len);
        const char *type = NULL;
        if (cJSON_IsObject(push)) {
                /* The getters answer NULL for a missing key or a NULL
                 * object, and cJSON_GetStringValue for a non-string. */
                const cJSON *aps = cJSON_GetObjectItemCaseSensitive(push, "aps");
                const cJSON *available =
                    cJSON_GetObjectItemCaseSensitive(aps, "content-available");
                type = cJSON_GetStringValue(
                    cJSON_GetObjectItemCaseSensitive(push, "type"));
                handler_t handler = handler_for(type);
                if (!cJSON_IsObject(aps)) {
                        reason = "invalidPayload";
                } else if (!cJSON_IsNumber(available) ||
                           available->valuedouble != 1) {
                        result = "noData", reason = "notSilent";
                } else if (!handler) {
                        reason = "unknownType";
                } else {
                        double started = monotonic_s();
                        result = handler(push);
                        duration_ms = (monotonic_s() - started) * 1e3;
                        reason = NULL;
                }
        }

        char message_id[320];
        snprintf(message_id, sizeof(message_id), "%s-%d-%lld", topic,
                 (int)record->partition, (long long)record->offset);
        cJSON *out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "messageId", message_id);
        if (type)
                cJSON_AddStringToObject(out, "type", type);
        else
                cJSON_AddNullToObject(out, "type");
        cJSON_AddStringToObject(out, "result", result);
        if (reason)
                cJSON_AddStringToObject(out, "reason", reason);
        else
                cJSON_AddNullToObject(out, "reason");
        cJSON *source = cJSON_AddObjectToObject(out, "source");
        cJSON_AddStringToObject(source, "topic", topic);
        cJSON_AddNumberToObject(source, "partition", record->partition);
        cJSON_AddNumberToObject(source, "offset", (double)record->offset);
        cJSON_AddNumberToObject(out, "durationMs",
                                (double)(long long)(duration_ms * 1e3) / 1e3);
        char *text = cJSON_PrintUnformatted(out);
        cJSON_Delete(out); /* type points into push: free push after out */
        cJSON_Delete(push);
        return text;
}

/* ---- rebalances ---------------------------------------------------------- */

static rd_kafka_t *producer;
static const char *input_topic;

/* Before partitions go: deliver what is in flight, store and commit it,
 * and forget the pending records (the next owner starts at the commit). */
static void on_rebalance(rd_kafka_t *consumer, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *partitions,
                         void *opaque) {
        (void)opaque;
        int cooperative =
            strcmp(rd_kafka_rebalance_protocol(consumer), "COOPERATIVE") == 0;
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                if (cooperative)
                        rd_kafka_error_destroy(
                            rd_kafka_incremental_assign(consumer, partitions));
                else
                        rd_kafka_assign(consumer, partitions);
                return;
        }
        rd_kafka_flush(producer, 30000); /* serves the delivery reports */
        store_delivered(consumer, input_topic);
        if (!state.failed &&
            (err = rd_kafka_commit(consumer, NULL, 0)) &&
            err != RD_KAFKA_RESP_ERR__NO_OFFSET)
                fprintf(stderr, "c_worker: commit at revocation: %s\n",
                        rd_kafka_err2str(err));
        for (int i = 0; i < partitions->cnt; i++) {
                int32_t partition = partitions->elems[i].partition;
                if (partition < state.count)
                        state.partitions[partition].head =
                            state.partitions[partition].tail;
        }
        if (cooperative)
                rd_kafka_error_destroy(
                    rd_kafka_incremental_unassign(consumer, partitions));
        else
                rd_kafka_assign(consumer, NULL);
}

/* ---- clients -------------------------------------------------------------- */

static void set(rd_kafka_conf_t *conf, const char *name, const char *value) {
        char errstr[512];
        if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
                fprintf(stderr, "c_worker: %s\n", errstr);
                exit(2);
        }
}

/* -X PROPERTY=VALUE: extra librdkafka properties for both clients (a
 * property of the other kind of client only is ignored by librdkafka with
 * a warning). */
static void set_extra(rd_kafka_conf_t *conf, char **extra, int count) {
        for (int i = 0; i < count; i++) {
                char *eq = strchr(extra[i], '=');
                if (!eq) {
                        fprintf(stderr, "c_worker: -X %s: expected NAME=VALUE\n",
                                extra[i]);
                        exit(2);
                }
                *eq = '\0';
                set(conf, extra[i], eq + 1);
                *eq = '=';
        }
}

static rd_kafka_t *client(rd_kafka_type_t type, rd_kafka_conf_t *conf) {
        char errstr[512];
        rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "c_worker: rd_kafka_new: %s\n", errstr);
                exit(1);
        }
        return rk;
}

int main(int argc, char **argv) {
        const char *bootstrap = NULL, *group = NULL, *results_topic = NULL;
        long records = 0;
        char *extra[64];
        int extra_count = 0, opt;
        while ((opt = getopt(argc, argv, "b:g:t:r:n:X:")) != -1) {
                switch (opt) {
                case 'b': bootstrap = optarg; break;
                case 'g': group = optarg; break;
                case 't': input_topic = optarg; break;
                case 'r': results_topic = optarg; break;
                case 'n': records = atol(optarg); break;
                case 'X':
                        if (extra_count < 64)
                                extra[extra_count++] = optarg;
                        break;
                default: return 2;
                }
        }
        if (!bootstrap || !group || !input_topic || !results_topic ||
            records < 1) {
                fprintf(stderr,
                        "usage: %s -b BOOTSTRAP -g GROUP -t INPUT_TOPIC "
                        "-r RESULTS_TOPIC -n RECORDS [-X PROPERTY=VALUE]...\n",
                        argv[0]);
                return 2;
        }

        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        set(conf, "bootstrap.servers", bootstrap);
        set(conf, "enable.idempotence", "true");
        set_extra(conf, extra, extra_count);
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        producer = client(RD_KAFKA_PRODUCER, conf);
        rd_kafka_topic_t *results = rd_kafka_topic_new(producer, results_topic,
                                                       NULL);

        conf = rd_kafka_conf_new();
        set(conf, "bootstrap.servers", bootstrap);
        set(conf, "group.id", group);
        set(conf, "auto.offset.reset", "earliest");
        set(conf, "enable.auto.offset.store", "false");
        set_extra(conf, extra, extra_count);
        rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
        rd_kafka_t *consumer = client(RD_KAFKA_CONSUMER, conf);
        rd_kafka_poll_set_consumer(consumer);

        rd_kafka_topic_partition_list_t *topics =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, input_topic,
                                          RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t err = rd_kafka_subscribe(consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);
        if (err) {
                fprintf(stderr, "c_worker: subscribe: %s\n",
                        rd_kafka_err2str(err));
                return 1;
        }

        long taken = 0;
        double first_s = 0, first_ms = 0;
        while (state.delivered < records && !state.failed) {
                if (taken < records) {
                        rd_kafka_message_t *record =
                            rd_kafka_consumer_poll(consumer, 100);
                        if (record && record->err) {
                                fprintf(stderr, "c_worker: consume: %s\n",
                                        rd_kafka_message_errstr(record));
                        } else if (record) {
                                if (taken++ == 0) {
                                        first_s = monotonic_s();
                                        first_ms = wall_ms();
                                }
                                pending_t *p = pending_for(record->partition);
                                uint64_t seq = pending_push(p, record->offset);
                                char *value = result_for(record);
                                while ((err = rd_kafka_producev(
                                            producer, RD_KAFKA_V_RKT(results),
                                            RD_KAFKA_V_KEY(record->key,
                                                           record->key_len),
                                            RD_KAFKA_V_VALUE(value,
                                                             strlen(value)),
                                            RD_KAFKA_V_MSGFLAGS(
                                                RD_KAFKA_MSG_F_FREE),
                                            RD_KAFKA_V_OPAQUE(opaque_of(
                                                record->partition, seq)),
                                            RD_KAFKA_V_END)) ==
                                       RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                        rd_kafka_poll(producer, 10);
                                if (err) {
                                        fprintf(stderr, "c_worker: produce: %s\n",
                                                rd_kafka_err2str(err));
                                        return 1;
                                }
                        }
                        if (record)
                                rd_kafka_message_destroy(record);
                        rd_kafka_poll(producer, 0);
                } else {
                        rd_kafka_poll(producer, 100); /* the last reports */
                }
                store_delivered(consumer, input_topic);
        }
        if (state.failed)
                return 1;

        err = rd_kafka_commit(consumer, NULL, 0); /* synchronous */
        if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
                fprintf(stderr, "c_worker: commit: %s\n", rd_kafka_err2str(err));
                return 1;
        }
        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_topic_destroy(results);
        rd_kafka_destroy(producer);
        printf("BENCH-RESULT {\"worker\":\"c\",\"records\":%ld,"
               "\"seconds\":%.6f,\"firstTakenMs\":%.3f,"
               "\"lastDeliveredMs\":%.3f}\n",
               state.delivered, state.last_delivery_s - first_s, first_ms,
               state.last_delivery_ms);
        return 0;
}
