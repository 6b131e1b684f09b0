#ifndef PUSHWORKER_CCJSON_SHIM_H
#define PUSHWORKER_CCJSON_SHIM_H
#include <cjson/cJSON.h>
#endif
