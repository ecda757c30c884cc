#include "CJXLBaseline.h"
#include <jxl/decode.h>
#include <jxl/encode.h>
#include <stdlib.h>
#include <string.h>

int cb_jxl_decode(const uint8_t *jxl, size_t length, uint32_t *checksum, int *width, int *height, int *frames) {
    JxlDecoder *decoder = JxlDecoderCreate(NULL);
    if (decoder == NULL) return -1;
    int status = -1;
    uint8_t *pixels = NULL;
    JxlBasicInfo info;
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    *frames = 0;
    if (JxlDecoderSubscribeEvents(decoder, JXL_DEC_BASIC_INFO | JXL_DEC_FULL_IMAGE) != JXL_DEC_SUCCESS) goto done;
    if (JxlDecoderSetInput(decoder, jxl, length) != JXL_DEC_SUCCESS) goto done;
    JxlDecoderCloseInput(decoder);
    for (;;) {
        JxlDecoderStatus result = JxlDecoderProcessInput(decoder);
        if (result == JXL_DEC_BASIC_INFO) {
            if (JxlDecoderGetBasicInfo(decoder, &info) != JXL_DEC_SUCCESS) goto done;
            format.num_channels = info.num_color_channels + (info.alpha_bits > 0 ? 1 : 0);
            *width = (int)info.xsize;
            *height = (int)info.ysize;
        } else if (result == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            size_t size = 0;
            if (JxlDecoderImageOutBufferSize(decoder, &format, &size) != JXL_DEC_SUCCESS) goto done;
            pixels = malloc(size);
            if (pixels == NULL) goto done;
            if (JxlDecoderSetImageOutBuffer(decoder, &format, pixels, size) != JXL_DEC_SUCCESS) goto done;
        } else if (result == JXL_DEC_FULL_IMAGE) {
            *checksum = pixels[(size_t)info.xsize * info.ysize * format.num_channels / 2];
            *frames += 1;
            free(pixels);
            pixels = NULL;
        } else if (result == JXL_DEC_SUCCESS) {
            status = 0;
            goto done;
        } else {
            goto done;
        }
    }
done:
    free(pixels);
    JxlDecoderDestroy(decoder);
    return status;
}

long cb_jxl_encode(const uint8_t *pixels, int width, int height, int channels, int frames, float distance,
                   int effort, uint8_t **out) {
    JxlEncoder *encoder = JxlEncoderCreate(NULL);
    if (encoder == NULL) return -1;
    long size = -1;
    uint8_t *buffer = NULL;
    JxlBasicInfo info;
    JxlEncoderInitBasicInfo(&info);
    info.xsize = (uint32_t)width;
    info.ysize = (uint32_t)height;
    info.bits_per_sample = 8;
    info.num_color_channels = 3;
    info.alpha_bits = channels == 4 ? 8 : 0;
    info.num_extra_channels = channels == 4 ? 1 : 0;
    info.uses_original_profile = distance == 0 ? JXL_TRUE : JXL_FALSE;
    if (frames > 1) {
        info.have_animation = JXL_TRUE;
        info.animation.tps_numerator = 1000;
        info.animation.tps_denominator = 1;
    }
    if (JxlEncoderSetBasicInfo(encoder, &info) != JXL_ENC_SUCCESS) goto done;
    JxlColorEncoding color;
    JxlColorEncodingSetToSRGB(&color, JXL_FALSE);
    if (JxlEncoderSetColorEncoding(encoder, &color) != JXL_ENC_SUCCESS) goto done;
    JxlEncoderFrameSettings *settings = JxlEncoderFrameSettingsCreate(encoder, NULL);
    if (settings == NULL) goto done;
    JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, effort);
    if (distance == 0) {
        if (JxlEncoderSetFrameLossless(settings, JXL_TRUE) != JXL_ENC_SUCCESS) goto done;
    } else if (JxlEncoderSetFrameDistance(settings, distance) != JXL_ENC_SUCCESS) {
        goto done;
    }
    JxlPixelFormat format = {(uint32_t)channels, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    size_t frameBytes = (size_t)width * height * channels;
    for (int i = 0; i < frames; i++) {
        if (frames > 1) {
            JxlFrameHeader header;
            JxlEncoderInitFrameHeader(&header);
            header.duration = 100;
            if (JxlEncoderSetFrameHeader(settings, &header) != JXL_ENC_SUCCESS) goto done;
        }
        if (JxlEncoderAddImageFrame(settings, &format, pixels + i * frameBytes, frameBytes) != JXL_ENC_SUCCESS)
            goto done;
    }
    JxlEncoderCloseInput(encoder);
    size_t capacity = 1 << 16, used = 0;
    buffer = malloc(capacity);
    for (;;) {
        if (buffer == NULL) goto done;
        uint8_t *next = buffer + used;
        size_t available = capacity - used;
        JxlEncoderStatus result = JxlEncoderProcessOutput(encoder, &next, &available);
        used = capacity - available;
        if (result == JXL_ENC_NEED_MORE_OUTPUT) {
            capacity *= 2;
            uint8_t *grown = realloc(buffer, capacity);
            if (grown == NULL) goto done;
            buffer = grown;
            continue;
        }
        if (result != JXL_ENC_SUCCESS) goto done;
        break;
    }
    size = (long)used;
    if (out != NULL) {
        *out = buffer;
        buffer = NULL;
    }
done:
    free(buffer);
    JxlEncoderDestroy(encoder);
    return size;
}
