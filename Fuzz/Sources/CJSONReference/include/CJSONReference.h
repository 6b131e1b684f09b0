#ifndef CJSON_REFERENCE_H
#define CJSON_REFERENCE_H
#include <stddef.h>

/// Parses `length` bytes with cJSON exactly as an independent reader would (cJSON_ParseWithLengthOpts, no
/// trailing data other than JSON whitespace). Returns 1 for a JSON object, 0 for any other JSON value,
/// -1 when cJSON refuses the text.
int cjson_reference_kind(const char *bytes, size_t length);

#endif
