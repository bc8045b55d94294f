#include <zlib.h>

// inflateInit2 and deflateInit2 are macros (they pass ZLIB_VERSION and sizeof(z_stream) to the
// real functions), which Swift does not import. Raw DEFLATE: windowBits -15, no zlib or gzip
// wrapper, as CTAP 2.1 large blobs and CXF carry it.
static inline int latchkey_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -15);
}

static inline int latchkey_deflate_init_raw(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}
