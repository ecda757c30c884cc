#include "CBaselines.h"
#include <gif_lib.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *data;
    size_t length;
    size_t offset;
} memory_reader;

static int read_memory(GifFileType *gif, GifByteType *bytes, int count) {
    memory_reader *reader = gif->UserData;
    size_t left = reader->length - reader->offset;
    size_t n = (size_t)count < left ? (size_t)count : left;
    memcpy(bytes, reader->data + reader->offset, n);
    reader->offset += n;
    return (int)n;
}

int cb_gif_decode(const uint8_t *data, size_t length, uint32_t *checksum) {
    memory_reader reader = {data, length, 0};
    int error = 0;
    GifFileType *gif = DGifOpen(&reader, read_memory, &error);
    if (gif == NULL) return -1;
    if (DGifSlurp(gif) != GIF_OK || gif->ImageCount < 1) {
        DGifCloseFile(gif, &error);
        return -1;
    }
    int width = gif->SWidth, height = gif->SHeight;
    SavedImage *frame = &gif->SavedImages[0];
    ColorMapObject *map = frame->ImageDesc.ColorMap ? frame->ImageDesc.ColorMap : gif->SColorMap;
    int transparent = -1;
    GraphicsControlBlock gcb;
    if (DGifSavedExtensionToGCB(gif, 0, &gcb) == GIF_OK) transparent = gcb.TransparentColor;
    uint8_t *rgba = calloc((size_t)width * height, 4);
    if (rgba == NULL || map == NULL) {
        free(rgba);
        DGifCloseFile(gif, &error);
        return -1;
    }
    // Expand the first frame (clipped to the screen) through its colour map.
    int left = frame->ImageDesc.Left, top = frame->ImageDesc.Top;
    int frameWidth = frame->ImageDesc.Width, frameHeight = frame->ImageDesc.Height;
    for (int y = 0; y < frameHeight; y++) {
        int sy = top + y;
        if (sy < 0 || sy >= height) continue;
        const GifByteType *row = frame->RasterBits + (size_t)y * frameWidth;
        uint8_t *out = rgba + ((size_t)sy * width) * 4;
        for (int x = 0; x < frameWidth; x++) {
            int sx = left + x;
            if (sx < 0 || sx >= width) continue;
            int index = row[x];
            if (index == transparent || index >= map->ColorCount) continue;
            GifColorType color = map->Colors[index];
            uint8_t *p = out + (size_t)sx * 4;
            p[0] = color.Red;
            p[1] = color.Green;
            p[2] = color.Blue;
            p[3] = 255;
        }
    }
    *checksum = rgba[((size_t)width * height * 4) / 2];
    free(rgba);
    DGifCloseFile(gif, &error);
    return 0;
}

static int write_memory(GifFileType *gif, const GifByteType *bytes, int count) {
    cb_buffer *out = gif->UserData;
    if (out->size + (size_t)count > out->capacity) {
        size_t capacity = out->capacity ? out->capacity * 2 : 65536;
        while (capacity < out->size + (size_t)count) capacity *= 2;
        uint8_t *grown = realloc(out->data, capacity);
        if (grown == NULL) return 0;
        out->data = grown;
        out->capacity = capacity;
    }
    memcpy(out->data + out->size, bytes, (size_t)count);
    out->size += (size_t)count;
    return count;
}

int cb_gif_encode(const uint8_t *rgba, int width, int height, cb_buffer *out) {
    size_t count = (size_t)width * height;
    GifByteType *red = malloc(count), *green = malloc(count), *blue = malloc(count), *indices = malloc(count);
    GifColorType palette[256];
    int paletteSize = 256;
    int status = -1;
    GifFileType *gif = NULL;
    ColorMapObject *map = NULL;
    if (!red || !green || !blue || !indices) goto done;
    for (size_t i = 0; i < count; i++) {
        red[i] = rgba[i * 4];
        green[i] = rgba[i * 4 + 1];
        blue[i] = rgba[i * 4 + 2];
    }
    if (GifQuantizeBuffer((unsigned)width, (unsigned)height, &paletteSize, red, green, blue, indices, palette) !=
        GIF_OK)
        goto done;
    map = GifMakeMapObject(256, palette);
    if (map == NULL) goto done;
    out->size = 0;
    int error = 0;
    gif = EGifOpen(out, write_memory, &error);
    if (gif == NULL) goto done;
    EGifSetGifVersion(gif, true);
    if (EGifPutScreenDesc(gif, width, height, 8, 0, map) != GIF_OK) goto done;
    if (EGifPutImageDesc(gif, 0, 0, width, height, false, NULL) != GIF_OK) goto done;
    for (int y = 0; y < height; y++) {
        if (EGifPutLine(gif, indices + (size_t)y * width, width) != GIF_OK) goto done;
    }
    status = 0;
done:
    if (gif != NULL && EGifCloseFile(gif, &error) != GIF_OK) status = -1;
    GifFreeMapObject(map);
    free(red);
    free(green);
    free(blue);
    free(indices);
    return status;
}
