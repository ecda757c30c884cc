#ifndef CHEIF_BASELINE_H
#define CHEIF_BASELINE_H
#include <stddef.h>
#include <stdint.h>

/// Raw libheif and lcms2 calls, the baselines of the HEIC and colour benchmarks: what a C program writes with
/// the libraries' APIs and the same settings as HEIFCoder and LCMSColorConverter.

/// heif_context_alloc + heif_context_read_from_memory_without_copy + tiles on the calling thread +
/// heif_context_get_primary_image_handle + heif_decode_image to interleaved 8-bit RGB (transforms applied), one
/// byte of the plane read, then everything released. 0 on success.
int cb_heif_decode(const uint8_t *heic, size_t length, uint32_t *checksum, int *width, int *height);

/// Encodes 8-bit RGB as HEIC with libheif's HEVC encoder (x265, quality 85, preset "fast": what HEIFCoder writes
/// for quality 0.85 and balanced effort). Returns the size and hands the file over in a malloc'd buffer, or -1.
long cb_heif_encode(const uint8_t *rgb, int width, int height, uint8_t **out);

/// An lcms2 transform from an ICC profile to lcms2's sRGB for 8-bit RGB, made once (what a C program keeps).
void *cb_lcms_transform_rgb8(const uint8_t *profile, size_t length);

/// cmsDoTransform of `count` RGB pixels from `in` to `out`.
void cb_lcms_run(void *transform, const uint8_t *in, uint8_t *out, size_t count);

#endif
