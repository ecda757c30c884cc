#include "CHEIFBaseline.h"
#include <libheif/heif.h>
#include <lcms2.h>
#include <stdlib.h>
#include <string.h>

int cb_heif_decode(const uint8_t *heic, size_t length, uint32_t *checksum, int *width, int *height) {
    struct heif_context *context = heif_context_alloc();
    struct heif_image_handle *handle = NULL;
    struct heif_image *image = NULL;
    int status = -1;
    if (context == NULL) return -1;
    heif_context_set_max_decoding_threads(context, 0);
    if (heif_context_read_from_memory_without_copy(context, heic, length, NULL).code != heif_error_Ok) goto done;
    if (heif_context_get_primary_image_handle(context, &handle).code != heif_error_Ok) goto done;
    if (heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGB, NULL).code != heif_error_Ok)
        goto done;
    int stride = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    *width = heif_image_get_width(image, heif_channel_interleaved);
    *height = heif_image_get_height(image, heif_channel_interleaved);
    if (plane == NULL) goto done;
    *checksum = plane[(size_t)stride * (size_t)(*height / 2)];
    status = 0;
done:
    if (image) heif_image_release(image);
    if (handle) heif_image_handle_release(handle);
    heif_context_free(context);
    return status;
}

struct sink { uint8_t *data; size_t size; };

static struct heif_error write_sink(struct heif_context *ctx, const void *data, size_t size, void *userdata) {
    (void)ctx;
    struct sink *sink = userdata;
    uint8_t *grown = realloc(sink->data, sink->size + size);
    struct heif_error ok = {heif_error_Ok, heif_suberror_Unspecified, "Success"};
    if (grown == NULL) {
        struct heif_error failed = {heif_error_Encoding_error, heif_suberror_Cannot_write_output_data, "oom"};
        return failed;
    }
    memcpy(grown + sink->size, data, size);
    sink->data = grown;
    sink->size += size;
    return ok;
}

long cb_heif_encode(const uint8_t *rgb, int width, int height, uint8_t **out) {
    struct heif_context *context = heif_context_alloc();
    struct heif_encoder *encoder = NULL;
    struct heif_image *image = NULL;
    struct heif_image_handle *handle = NULL;
    struct sink sink = {NULL, 0};
    long size = -1;
    if (heif_context_get_encoder_for_format(context, heif_compression_HEVC, &encoder).code != heif_error_Ok) goto done;
    heif_encoder_set_lossy_quality(encoder, 85);
    heif_encoder_set_parameter_string(encoder, "preset", "fast");
    heif_encoder_set_parameter_string(encoder, "chroma", "420");
    if (heif_image_create(width, height, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image).code != heif_error_Ok)
        goto done;
    if (heif_image_add_plane(image, heif_channel_interleaved, width, height, 8).code != heif_error_Ok) goto done;
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
    for (int y = 0; y < height; y++) memcpy(plane + (size_t)y * stride, rgb + (size_t)y * width * 3, (size_t)width * 3);
    if (heif_context_encode_image(context, image, encoder, NULL, &handle).code != heif_error_Ok) goto done;
    struct heif_writer writer = {1, write_sink};
    if (heif_context_write(context, &writer, &sink).code != heif_error_Ok) goto done;
    size = (long)sink.size;
    if (out) { *out = sink.data; sink.data = NULL; }
done:
    free(sink.data);
    if (handle) heif_image_handle_release(handle);
    if (image) heif_image_release(image);
    if (encoder) heif_encoder_release(encoder);
    heif_context_free(context);
    return size;
}

void *cb_lcms_transform_rgb8(const uint8_t *profile, size_t length) {
    cmsHPROFILE source = cmsOpenProfileFromMem(profile, (cmsUInt32Number)length);
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    cmsHTRANSFORM transform = NULL;
    if (source && srgb) transform = cmsCreateTransform(source, TYPE_RGB_8, srgb, TYPE_RGB_8, INTENT_PERCEPTUAL, 0);
    if (source) cmsCloseProfile(source);
    if (srgb) cmsCloseProfile(srgb);
    return transform;
}

void cb_lcms_run(void *transform, const uint8_t *in, uint8_t *out, size_t count) {
    cmsDoTransform((cmsHTRANSFORM)transform, in, out, (cmsUInt32Number)count);
}
