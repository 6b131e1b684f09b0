#include "CJSONReference.h"
#include <cjson/cJSON.h>

int cjson_reference_kind(const char *bytes, size_t length) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(bytes, length, &end, 0);
    if (root == NULL) return -1;
    int kind = cJSON_IsObject(root) ? 1 : 0;
    cJSON_Delete(root);
    for (const char *p = end; p != NULL && p < bytes + length; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') return -1;
    }
    return kind;
}
