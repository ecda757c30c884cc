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

// MARK: - Stage baselines of the PNG thumbnail (issue 34)

#include <libdeflate.h>
#include <setjmp.h>

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int cb_png_inflate(const uint8_t *png, size_t length, uint32_t *checksum) {
    if (length < 33) return -1;
    uint32_t width = be32(png + 16), height = be32(png + 20);
    int channels = png[25] == 6 ? 4 : (png[25] == 2 ? 3 : (png[25] == 4 ? 2 : 1));
    if (png[24] != 8 || png[28] != 0) return -1;
    size_t filtered = (size_t)height * ((size_t)width * channels + 1);
    uint8_t *idat = malloc(length), *out = malloc(filtered);
    if (idat == NULL || out == NULL) {
        free(idat);
        free(out);
        return -1;
    }
    size_t pos = 8, joined = 0;
    while (pos + 12 <= length) {
        uint32_t size = be32(png + pos);
        if (size > length - pos - 12) break;
        if (memcmp(png + pos + 4, "IDAT", 4) == 0) {
            memcpy(idat + joined, png + pos + 8, size);
            joined += size;
        }
        pos += 12 + (size_t)size;
    }
    struct libdeflate_decompressor *inflater = libdeflate_alloc_decompressor();
    int status = inflater != NULL && libdeflate_zlib_decompress(inflater, idat, joined, out, filtered, NULL) ==
                                         LIBDEFLATE_SUCCESS ? 0 : -1;
    *checksum = out[filtered / 2];
    libdeflate_free_decompressor(inflater);
    free(idat);
    free(out);
    return status;
}

static void vips_like_write(png_structp png, png_bytep bytes, size_t size) {
    cb_buffer *out = png_get_io_ptr(png);
    if (out->size + size > out->capacity) {
        size_t capacity = (out->size + size) * 2;
        uint8_t *grown = realloc(out->data, capacity);
        if (grown == NULL) png_error(png, "out of memory");
        out->data = grown;
        out->capacity = capacity;
    }
    memcpy(out->data + out->size, bytes, size);
    out->size += size;
}

static void vips_like_flush(png_structp png) { (void)png; }

int cb_png_encode_vips(const uint8_t *pixels, int width, int height, int channels, cb_buffer *out) {
    int color = channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : (channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png != NULL ? png_create_info_struct(png) : NULL;
    if (info == NULL) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    out->size = 0;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_set_write_fn(png, out, vips_like_write, vips_like_flush);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 6);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_write_info(png, info);
    for (int y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * width * channels);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}
