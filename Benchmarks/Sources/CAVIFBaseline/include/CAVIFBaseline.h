#ifndef CAVIF_BASELINE_H
#define CAVIF_BASELINE_H
#include <stddef.h>
#include <stdint.h>

/// Raw libavif calls, the baseline of the AVIF benchmarks: what a C program writes with libavif's API and the
/// same settings as AVIFCoder (one thread, 8-bit output, libavif's automatic codec choice).

/// avifDecoderCreate + avifDecoderSetIOMemory + avifDecoderParse + avifDecoderNextImage, then avifImageYUVToRGB
/// into a freshly malloc'd 8-bit buffer (channels 3 = RGB, 4 = RGBA), then frees all. 0 on success.
int cb_avif_decode(const uint8_t *avif, size_t length, int channels, uint32_t *checksum, int *width, int *height);

/// avifImageCreate (4:2:0, BT.601 full range) + avifImageRGBToYUV + avifEncoderAddImage(SINGLE) +
/// avifEncoderFinish with min = max quantizer `quantizer` and `speed`; returns the file size, or -1. With `out`,
/// the file is handed over in a malloc'd buffer (free it with free()).
long cb_avif_encode(const uint8_t *pixels, int width, int height, int channels, int quantizer, int speed,
                    uint8_t **out);

#endif
