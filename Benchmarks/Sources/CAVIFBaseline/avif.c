#include "CAVIFBaseline.h"
#include <avif/avif.h>
#include <stdlib.h>
#include <string.h>

int cb_avif_decode(const uint8_t *avif, size_t length, int channels, uint32_t *checksum, int *width, int *height) {
    avifDecoder *decoder = avifDecoderCreate();
    if (decoder == NULL) return -1;
    decoder->maxThreads = 1;
    int status = -1;
    uint8_t *pixels = NULL;
    if (avifDecoderSetIOMemory(decoder, avif, length) != AVIF_RESULT_OK) goto done;
    if (avifDecoderParse(decoder) != AVIF_RESULT_OK) goto done;
    if (avifDecoderNextImage(decoder) != AVIF_RESULT_OK) goto done;
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, decoder->image);
    rgb.depth = 8;
    rgb.format = channels == 4 ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB;
    rgb.rowBytes = rgb.width * (uint32_t)channels;
    pixels = malloc((size_t)rgb.rowBytes * rgb.height);
    if (pixels == NULL) goto done;
    rgb.pixels = pixels;
    if (avifImageYUVToRGB(decoder->image, &rgb) != AVIF_RESULT_OK) goto done;
    *checksum = pixels[((size_t)rgb.rowBytes * rgb.height) / 2];
    *width = (int)rgb.width;
    *height = (int)rgb.height;
    status = 0;
done:
    free(pixels);
    avifDecoderDestroy(decoder);
    return status;
}

long cb_avif_encode(const uint8_t *pixels, int width, int height, int channels, int quantizer, int speed,
                    uint8_t **out) {
    avifImage *image = avifImageCreate((uint32_t)width, (uint32_t)height, 8, AVIF_PIXEL_FORMAT_YUV420);
    avifEncoder *encoder = avifEncoderCreate();
    avifRWData output = AVIF_DATA_EMPTY;
    long size = -1;
    if (image == NULL || encoder == NULL) goto done;
    image->yuvRange = AVIF_RANGE_FULL;
    image->colorPrimaries = AVIF_COLOR_PRIMARIES_BT709;
    image->transferCharacteristics = AVIF_TRANSFER_CHARACTERISTICS_SRGB;
    image->matrixCoefficients = AVIF_MATRIX_COEFFICIENTS_BT601;
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, image);
    rgb.depth = 8;
    rgb.format = channels == 4 ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB;
    rgb.rowBytes = (uint32_t)(width * channels);
    rgb.pixels = (uint8_t *)pixels;
    if (avifImageRGBToYUV(image, &rgb) != AVIF_RESULT_OK) goto done;
    encoder->maxThreads = 1;
    encoder->speed = speed;
    encoder->minQuantizer = encoder->maxQuantizer = quantizer;
    encoder->minQuantizerAlpha = encoder->maxQuantizerAlpha = quantizer;
    encoder->timescale = 1000;
    if (avifEncoderAddImage(encoder, image, 1, AVIF_ADD_IMAGE_FLAG_SINGLE) != AVIF_RESULT_OK) goto done;
    if (avifEncoderFinish(encoder, &output) != AVIF_RESULT_OK) goto done;
    if (out != NULL) {
        *out = malloc(output.size);
        if (*out == NULL) goto done;
        memcpy(*out, output.data, output.size);
    }
    size = (long)output.size;
done:
    avifRWDataFree(&output);
    if (encoder != NULL) avifEncoderDestroy(encoder);
    if (image != NULL) avifImageDestroy(image);
    return size;
}
