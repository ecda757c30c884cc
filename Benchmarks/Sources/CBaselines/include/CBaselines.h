// Raw C baselines for the WebImage benchmarks: the libraries called directly, with no SDK in between.
// Every function returns a status (0 = ok) or a small checksum; nothing longjmps, nothing keeps global state.
#ifndef CBASELINES_H
#define CBASELINES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A growable byte buffer owned by C; free with cb_buffer_free.
typedef struct {
    uint8_t *data;
    size_t size;
    size_t capacity;
} cb_buffer;

void cb_buffer_free(cb_buffer *buffer);

// MARK: JPEG (TurboJPEG)

/// Reads the JPEG header; 0 on success.
int cb_jpeg_size(const uint8_t *jpeg, size_t length, int *width, int *height);
/// tjInitDecompress + tjDecompress2 into a freshly malloc'd buffer (channels 3 = RGB, 4 = RGBA), then frees all.
/// Returns 0 on success; *checksum gets a byte of the output so the work cannot be optimised away.
int cb_jpeg_decode_fresh(const uint8_t *jpeg, size_t length, int channels, int flags, uint32_t *checksum);
/// A decompressor handle and an output buffer reused across calls.
typedef struct cb_jpeg_reuse cb_jpeg_reuse;
cb_jpeg_reuse *cb_jpeg_reuse_create(void);
void cb_jpeg_reuse_destroy(cb_jpeg_reuse *context);
int cb_jpeg_decode_reused(cb_jpeg_reuse *context, const uint8_t *jpeg, size_t length, int channels, int flags,
                          uint32_t *checksum);
/// Decodes into `pixels` (caller-owned, width*height*channels bytes) at full size; for building inputs.
int cb_jpeg_decode_into(const uint8_t *jpeg, size_t length, int channels, uint8_t *pixels, int width, int height);
/// tjInitCompress + tjCompress2 (4:2:0, quality) of packed pixels (3 = RGB, 4 = RGBA) into `out` (tj-allocated
/// memory is copied into the cb_buffer and freed).
int cb_jpeg_encode(const uint8_t *pixels, int width, int height, int channels, int quality, cb_buffer *out);

// MARK: PNG (libpng simplified API)

/// png_image_begin_read_from_memory + png_image_finish_read into a fresh buffer (channels 1, 3 or 4).
int cb_png_decode(const uint8_t *png, size_t length, int channels, uint32_t *checksum);
/// png_image_write_to_memory (libpng's default zlib level and filters).
int cb_png_encode(const uint8_t *pixels, int width, int height, int channels, cb_buffer *out);
/// The floor of any PNG decode: the IDAT chunks joined and inflated in one libdeflate call (8-bit, not
/// interlaced), no row filters undone.
int cb_png_inflate(const uint8_t *png, size_t length, uint32_t *checksum);
/// libvips's PNG save settings (zlib level 6, no row filter) through libpng's write API; `out` is reused.
int cb_png_encode_vips(const uint8_t *pixels, int width, int height, int channels, cb_buffer *out);

// MARK: WebP

/// WebPDecodeRGBA (channels 4) or WebPDecodeRGB (channels 3) into a libwebp-allocated buffer, then WebPFree.
int cb_webp_decode(const uint8_t *webp, size_t length, int channels, uint32_t *checksum);
/// WebPEncodeRGBA / WebPEncodeRGB (lossy, quality 0...100, method 4 = libwebp's default).
int cb_webp_encode(const uint8_t *pixels, int width, int height, int channels, float quality, cb_buffer *out);

// MARK: GIF (giflib)

/// DGifOpen (memory reader) + DGifSlurp, then the first frame expanded through its colour map to RGBA.
int cb_gif_decode(const uint8_t *gif, size_t length, uint32_t *checksum);
/// GifQuantizeBuffer (256 colours, median cut) + EGifOpen (memory writer) + one image, EGifPutLine per row.
int cb_gif_encode(const uint8_t *rgba, int width, int height, cb_buffer *out);

// MARK: Thumbnail pipeline

/// Area-average (box) resize of packed pixels: every output pixel is the coverage-weighted mean of the source
/// pixels under it. `dst` holds dstWidth*dstHeight*channels bytes.
void cb_area_resize(const uint8_t *src, int srcWidth, int srcHeight, uint8_t *dst, int dstWidth, int dstHeight,
                    int channels);
/// JPEG → JPEG thumbnail fitting maxWidth x maxHeight: tjDecompress2 with the smallest DCT scaling factor whose
/// output still covers the target, cb_area_resize to the exact fit, tjCompress2 at `quality` (4:2:0).
/// *outWidth / *outHeight receive the thumbnail size.
int cb_jpeg_thumbnail(const uint8_t *jpeg, size_t length, int maxWidth, int maxHeight, int quality, cb_buffer *out,
                      int *outWidth, int *outHeight);

// MARK: Files

/// open + read of the whole file into `buffer` (capacity bytes) + close; returns bytes read or -1.
long cb_read_file(const char *path, uint8_t *buffer, size_t capacity);
/// open(O_CREAT|O_EXCL) a temp name in `directory` + write + close + rename to `name`; 0 on success.
int cb_write_rename(const char *directory, const char *name, const uint8_t *data, size_t length);
/// opendir/readdir over `directory` with stat of every regular entry; returns the number of files and sums sizes
/// and mtimes, or -1.
long cb_walk_stat(const char *directory, long long *totalSize);

#ifdef __cplusplus
}
#endif

#endif
