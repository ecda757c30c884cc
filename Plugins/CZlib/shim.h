#include <zlib.h>

// inflateInit2 is a macro (it passes zlib's version and the stream's size), which Swift does not import.
static inline int czlib_inflate_init(z_stream *stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}

// deflateInit2 likewise (the tests make coded bodies with it).
static inline int czlib_deflate_init(z_stream *stream, int level, int window_bits) {
    return deflateInit2(stream, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
}
