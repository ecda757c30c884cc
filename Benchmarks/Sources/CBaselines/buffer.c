#include "CBaselines.h"
#include <stdlib.h>

void cb_buffer_free(cb_buffer *buffer) {
    if (buffer == NULL) return;
    free(buffer->data);
    buffer->data = NULL;
    buffer->size = 0;
    buffer->capacity = 0;
}
