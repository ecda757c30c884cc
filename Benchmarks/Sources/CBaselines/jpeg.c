#include "CBaselines.h"
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

static int pixel_format(int channels) {
    switch (channels) {
    case 1: return TJPF_GRAY;
    case 3: return TJPF_RGB;
    case 4: return TJPF_RGBA;
    default: return -1;
    }
}

int cb_jpeg_size(const uint8_t *jpeg, size_t length, int *width, int *height) {
    tjhandle tj = tjInitDecompress();
    if (tj == NULL) return -1;
    int subsampling = 0, colorspace = 0;
    int status = tjDecompressHeader3(tj, jpeg, (unsigned long)length, width, height, &subsampling, &colorspace);
    tjDestroy(tj);
    return status;
}

int cb_jpeg_decode_fresh(const uint8_t *jpeg, size_t length, int channels, int flags, uint32_t *checksum) {
    int format = pixel_format(channels);
    if (format < 0) return -1;
    tjhandle tj = tjInitDecompress();
    if (tj == NULL) return -1;
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    int status = tjDecompressHeader3(tj, jpeg, (unsigned long)length, &width, &height, &subsampling, &colorspace);
    if (status == 0) {
        uint8_t *pixels = malloc((size_t)width * (size_t)height * (size_t)channels);
        if (pixels == NULL) {
            status = -1;
        } else {
            status = tjDecompress2(tj, jpeg, (unsigned long)length, pixels, width, 0, height, format, flags);
            *checksum = pixels[((size_t)width * (size_t)height * (size_t)channels) / 2];
            free(pixels);
        }
    }
    tjDestroy(tj);
    return status;
}

struct cb_jpeg_reuse {
    tjhandle tj;
    uint8_t *pixels;
    size_t capacity;
};

cb_jpeg_reuse *cb_jpeg_reuse_create(void) {
    cb_jpeg_reuse *context = calloc(1, sizeof(cb_jpeg_reuse));
    if (context == NULL) return NULL;
    context->tj = tjInitDecompress();
    if (context->tj == NULL) {
        free(context);
        return NULL;
    }
    return context;
}

void cb_jpeg_reuse_destroy(cb_jpeg_reuse *context) {
    if (context == NULL) return;
    tjDestroy(context->tj);
    free(context->pixels);
    free(context);
}

int cb_jpeg_decode_reused(cb_jpeg_reuse *context, const uint8_t *jpeg, size_t length, int channels, int flags,
                          uint32_t *checksum) {
    int format = pixel_format(channels);
    if (format < 0 || context == NULL) return -1;
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    int status = tjDecompressHeader3(context->tj, jpeg, (unsigned long)length, &width, &height, &subsampling,
                                     &colorspace);
    if (status != 0) return status;
    size_t needed = (size_t)width * (size_t)height * (size_t)channels;
    if (needed > context->capacity) {
        uint8_t *grown = realloc(context->pixels, needed);
        if (grown == NULL) return -1;
        context->pixels = grown;
        context->capacity = needed;
    }
    status = tjDecompress2(context->tj, jpeg, (unsigned long)length, context->pixels, width, 0, height, format, flags);
    *checksum = context->pixels[needed / 2];
    return status;
}

int cb_jpeg_decode_into(const uint8_t *jpeg, size_t length, int channels, uint8_t *pixels, int width, int height) {
    int format = pixel_format(channels);
    if (format < 0) return -1;
    tjhandle tj = tjInitDecompress();
    if (tj == NULL) return -1;
    int status = tjDecompress2(tj, jpeg, (unsigned long)length, pixels, width, 0, height, format, 0);
    tjDestroy(tj);
    return status;
}

static int compress_with(tjhandle tj, const uint8_t *pixels, int width, int height, int channels, int quality,
                         cb_buffer *out) {
    int format = pixel_format(channels);
    if (format < 0) return -1;
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    int subsampling = channels == 1 ? TJSAMP_GRAY : TJSAMP_420;
    int status = tjCompress2(tj, pixels, width, 0, height, format, &jpeg, &size, subsampling, quality, 0);
    if (status == 0) {
        free(out->data);
        out->data = malloc(size);
        if (out->data == NULL) {
            status = -1;
        } else {
            memcpy(out->data, jpeg, size);
            out->size = size;
            out->capacity = size;
        }
    }
    tjFree(jpeg);
    return status;
}

int cb_jpeg_encode(const uint8_t *pixels, int width, int height, int channels, int quality, cb_buffer *out) {
    tjhandle tj = tjInitCompress();
    if (tj == NULL) return -1;
    int status = compress_with(tj, pixels, width, height, channels, quality, out);
    tjDestroy(tj);
    return status;
}

int cb_jpeg_thumbnail(const uint8_t *jpeg, size_t length, int maxWidth, int maxHeight, int quality, cb_buffer *out,
                      int *outWidth, int *outHeight) {
    tjhandle tj = tjInitDecompress();
    if (tj == NULL) return -1;
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    int status = tjDecompressHeader3(tj, jpeg, (unsigned long)length, &width, &height, &subsampling, &colorspace);
    if (status != 0) {
        tjDestroy(tj);
        return status;
    }
    // Fit inside maxWidth x maxHeight, aspect ratio kept.
    double scale = (double)maxWidth / width;
    if ((double)maxHeight / height < scale) scale = (double)maxHeight / height;
    if (scale > 1) scale = 1;
    int targetWidth = (int)(width * scale + 0.5), targetHeight = (int)(height * scale + 0.5);
    if (targetWidth < 1) targetWidth = 1;
    if (targetHeight < 1) targetHeight = 1;
    // Smallest DCT scaling factor whose output still covers the target.
    int count = 0;
    tjscalingfactor *factors = tjGetScalingFactors(&count);
    tjscalingfactor best = {1, 1};
    double bestRatio = 1;
    for (int i = 0; i < count; i++) {
        int w = TJSCALED(width, factors[i]), h = TJSCALED(height, factors[i]);
        double ratio = (double)factors[i].num / factors[i].denom;
        if (w >= targetWidth && h >= targetHeight && ratio <= bestRatio) {
            best = factors[i];
            bestRatio = ratio;
        }
    }
    int scaledWidth = TJSCALED(width, best), scaledHeight = TJSCALED(height, best);
    uint8_t *scaled = malloc((size_t)scaledWidth * scaledHeight * 3);
    uint8_t *thumb = malloc((size_t)targetWidth * targetHeight * 3);
    if (scaled == NULL || thumb == NULL) {
        status = -1;
    } else {
        status = tjDecompress2(tj, jpeg, (unsigned long)length, scaled, scaledWidth, 0, scaledHeight, TJPF_RGB, 0);
    }
    tjDestroy(tj);
    if (status == 0) {
        cb_area_resize(scaled, scaledWidth, scaledHeight, thumb, targetWidth, targetHeight, 3);
        tjhandle compressor = tjInitCompress();
        if (compressor == NULL) {
            status = -1;
        } else {
            status = compress_with(compressor, thumb, targetWidth, targetHeight, 3, quality, out);
            tjDestroy(compressor);
        }
    }
    free(scaled);
    free(thumb);
    *outWidth = targetWidth;
    *outHeight = targetHeight;
    return status;
}
