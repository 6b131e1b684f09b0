#ifndef PUSHWORKER_CRDKAFKA_SHIM_H
#define PUSHWORKER_CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <sys/eventfd.h>
#include <poll.h>

/* One response of `api_key` from broker `broker_id`, failing with `err` (0: none) after `rtt_ms`:
 * a non-variadic call of rd_kafka_mock_broker_push_request_error_rtts, which Swift cannot call. */
static inline rd_kafka_resp_err_t pushworker_mock_push_request_error_rtt(
    rd_kafka_mock_cluster_t *mcluster, int32_t broker_id, int16_t api_key, rd_kafka_resp_err_t err, int rtt_ms) {
    return rd_kafka_mock_broker_push_request_error_rtts(mcluster, broker_id, api_key, 1, err, rtt_ms);
}
#endif
