#include "CBaselines.h"
#include <png.h>
#include <stdlib.h>
#include <string.h>

static png_uint_32 png_format(int channels) {
    switch (channels) {
    case 1: return PNG_FORMAT_GRAY;
    case 3: return PNG_FORMAT_RGB;
    case 4: return PNG_FORMAT_RGBA;
    default: return 0xffffffffu;
    }
}

int cb_png_decode(const uint8_t *png, size_t length, int channels, uint32_t *checksum) {
    png_uint_32 format = png_format(channels);
    if (format == 0xffffffffu) return -1;
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, png, length)) return -1;
    image.format = format;
    size_t size = PNG_IMAGE_SIZE(image);
    uint8_t *pixels = malloc(size);
    if (pixels == NULL) {
        png_image_free(&image);
        return -1;
    }
    int ok = png_image_finish_read(&image, NULL, pixels, 0, NULL);
    *checksum = pixels[size / 2];
    free(pixels);
    png_image_free(&image);
    return ok ? 0 : -1;
}

int cb_png_encode(const uint8_t *pixels, int width, int height, int channels, cb_buffer *out) {
    png_uint_32 format = png_format(channels);
    if (format == 0xffffffffu) return -1;
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)width;
    image.height = (png_uint_32)height;
    image.format = format;
    // One pass into a buffer of the documented worst-case size (a NULL first call would compress twice).
    png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(image);
    free(out->data);
    out->data = malloc(size);
    if (out->data == NULL) return -1;
    if (!png_image_write_to_memory(&image, out->data, &size, 0, pixels, 0, NULL)) {
        png_image_free(&image);
        return -1;
    }
    out->size = size;
    out->capacity = size;
    return 0;
}
