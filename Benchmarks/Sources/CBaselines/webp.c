#include "CBaselines.h"
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/encode.h>

int cb_webp_decode(const uint8_t *webp, size_t length, int channels, uint32_t *checksum) {
    int width = 0, height = 0;
    uint8_t *pixels = channels == 4 ? WebPDecodeRGBA(webp, length, &width, &height)
                                    : WebPDecodeRGB(webp, length, &width, &height);
    if (pixels == NULL) return -1;
    *checksum = pixels[((size_t)width * height * channels) / 2];
    WebPFree(pixels);
    return 0;
}

int cb_webp_encode(const uint8_t *pixels, int width, int height, int channels, float quality, cb_buffer *out) {
    uint8_t *encoded = NULL;
    size_t size = channels == 4 ? WebPEncodeRGBA(pixels, width, height, width * 4, quality, &encoded)
                                : WebPEncodeRGB(pixels, width, height, width * 3, quality, &encoded);
    if (size == 0 || encoded == NULL) return -1;
    free(out->data);
    out->data = malloc(size);
    if (out->data == NULL) {
        WebPFree(encoded);
        return -1;
    }
    memcpy(out->data, encoded, size);
    out->size = size;
    out->capacity = size;
    WebPFree(encoded);
    return 0;
}
