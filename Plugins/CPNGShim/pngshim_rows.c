// See include/pngshim_rows.h. libpng's sequential reader over memory; each entry point owns its setjmp.

#include "pngshim.h"
#include "pngshim_rows.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>

struct pngshim_rows {
    int status;          // first failure, PNGSHIM_OK while healthy
    char message[256];
    png_structp png;
    png_infop info;
    const unsigned char *data;
    size_t size;
    size_t offset;
    uint32_t width;
    uint32_t height;
    uint32_t next_row;
    int channels;
};

static void rows_error(png_structp png, png_const_charp message) {
    pngshim_rows *reader = (pngshim_rows *)png_get_error_ptr(png);
    if (reader != NULL) {
        if (reader->status == PNGSHIM_OK) reader->status = PNGSHIM_ERROR;
        if (reader->message[0] == '\0') {
            strncpy(reader->message, message != NULL ? message : "libpng error", sizeof reader->message - 1);
            reader->message[sizeof reader->message - 1] = '\0';
        }
    }
    png_longjmp(png, 1);
}

static void rows_warning(png_structp png, png_const_charp message) {
    // Benign problems (ancillary CRC errors, unknown chunks) are not failures, as in the full decode.
    (void)png;
    (void)message;
}

static void rows_source(png_structp png, png_bytep bytes, size_t length) {
    pngshim_rows *reader = (pngshim_rows *)png_get_io_ptr(png);
    if (length > reader->size - reader->offset) png_error(png, "unexpected end of data");
    memcpy(bytes, reader->data + reader->offset, length);
    reader->offset += length;
}

static void fail(pngshim_rows *reader, int status, const char *message) {
    reader->status = status;
    strncpy(reader->message, message, sizeof reader->message - 1);
    reader->message[sizeof reader->message - 1] = '\0';
}

void pngshim_rows_destroy(pngshim_rows *reader) {
    if (reader == NULL) return;
    png_destroy_read_struct(&reader->png, &reader->info, NULL);
    free(reader);
}

int pngshim_rows_open(const unsigned char *data, size_t size, uint64_t max_pixels, pngshim_rows **out,
                      char *message, size_t message_capacity) {
    *out = NULL;
    pngshim_rows *reader = (pngshim_rows *)calloc(1, sizeof(pngshim_rows));
    if (reader == NULL) return PNGSHIM_NO_MEMORY;
    reader->data = data;
    reader->size = size;
    reader->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, rows_error, rows_warning);
    reader->info = reader->png != NULL ? png_create_info_struct(reader->png) : NULL;
    if (reader->info == NULL) {
        pngshim_rows_destroy(reader);
        return PNGSHIM_NO_MEMORY;
    }
    if (setjmp(png_jmpbuf(reader->png))) {
        int status = reader->status != PNGSHIM_OK ? reader->status : PNGSHIM_ERROR;
        if (message != NULL && message_capacity > 0) {
            strncpy(message, reader->message, message_capacity - 1);
            message[message_capacity - 1] = '\0';
        }
        pngshim_rows_destroy(reader);
        return status;
    }
    png_set_read_fn(reader->png, reader, rows_source);
    png_read_info(reader->png, reader->info);
    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(reader->png, reader->info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    if ((uint64_t)width * (uint64_t)height > max_pixels) {
        fail(reader, PNGSHIM_TOO_LARGE, "image exceeds the pixel budget");
        png_longjmp(reader->png, 1);
    }
    if (interlace != PNG_INTERLACE_NONE) {
        fail(reader, PNGSHIM_ERROR, "interlaced images are not read row by row");
        png_longjmp(reader->png, 1);
    }
    // The transforms of the full decode (png_image_finish_read with PNG_IMAGE_FLAG_16BIT_sRGB, and the
    // progressive reader in pngshim.c): expand palette, low bit depths and tRNS; 16 bits scaled to 8; gray with
    // alpha widened to RGBA; sRGB output gamma, alpha not premultiplied.
    int has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(reader->png, reader->info, PNG_INFO_tRNS) != 0;
    int is_color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
    png_set_expand(reader->png);
    if (bit_depth == 16) png_set_scale_16(reader->png);
    if (has_alpha && !is_color) png_set_gray_to_rgb(reader->png);
    png_set_alpha_mode(reader->png, PNG_ALPHA_PNG, PNG_DEFAULT_sRGB);
    png_read_update_info(reader->png, reader->info);
    int channels = png_get_channels(reader->png, reader->info);
    if ((channels != 1 && channels != 3 && channels != 4) ||
        png_get_rowbytes(reader->png, reader->info) != (size_t)width * (size_t)channels) {
        png_error(reader->png, "unexpected output layout");
    }
    reader->width = width;
    reader->height = height;
    reader->channels = channels;
    *out = reader;
    return PNGSHIM_OK;
}

void pngshim_rows_geometry(const pngshim_rows *reader, uint32_t *width, uint32_t *height, int *channels) {
    *width = reader->width;
    *height = reader->height;
    *channels = reader->channels;
}

int pngshim_rows_read(pngshim_rows *reader, unsigned char *pixels, size_t bytes_per_row, uint32_t count) {
    if (reader->status != PNGSHIM_OK) return reader->status;
    if (count > reader->height - reader->next_row) {
        fail(reader, PNGSHIM_ERROR, "read past the last row");
        return reader->status;
    }
    if (setjmp(png_jmpbuf(reader->png))) {
        if (reader->status == PNGSHIM_OK) reader->status = PNGSHIM_ERROR;
        return reader->status;
    }
    for (uint32_t r = 0; r < count; r++) {
        png_read_row(reader->png, pixels + (size_t)r * bytes_per_row, NULL);
        reader->next_row += 1;
    }
    return PNGSHIM_OK;
}

const char *pngshim_rows_message(const pngshim_rows *reader) { return reader->message; }
