#ifndef PUSHWORKER_CRDKAFKA_SHIM_H
#define PUSHWORKER_CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#endif
