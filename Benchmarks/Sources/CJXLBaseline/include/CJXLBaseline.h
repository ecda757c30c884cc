#ifndef CJXL_BASELINE_H
#define CJXL_BASELINE_H
#include <stddef.h>
#include <stdint.h>

/// Raw libjxl calls, the baseline of the JPEG XL benchmarks: what djxl does for one file, written against libjxl's
/// decoder API with the settings of JXLCoder (one thread: no parallel runner; 8-bit output with the file's own
/// channel count).

/// JxlDecoderCreate, subscribe to basic info and full images, JxlDecoderSetInput + JxlDecoderCloseInput, then
/// JxlDecoderProcessInput until success: at each JXL_DEC_NEED_IMAGE_OUT_BUFFER a freshly malloc'd 8-bit buffer
/// (gray / gray+alpha / RGB / RGBA as the file has), freed at JXL_DEC_FULL_IMAGE. Every frame of an animation is
/// decoded (libjxl's coalesced frames). 0 on success; `frames` counts the full images.
int cb_jxl_decode(const uint8_t *jxl, size_t length, uint32_t *checksum, int *width, int *height, int *frames);

/// Encodes 8-bit pixels (`channels` 3 or 4) as JPEG XL: lossless when `distance` is 0, else lossy at `distance`;
/// `effort` 1-9; `frames` frames of `width × height` one after another in `pixels` (100 ms each; an animation
/// when more than one). Returns the file size, or -1; with `out`, the file in a malloc'd buffer (free()).
long cb_jxl_encode(const uint8_t *pixels, int width, int height, int channels, int frames, float distance,
                   int effort, uint8_t **out);

#endif
