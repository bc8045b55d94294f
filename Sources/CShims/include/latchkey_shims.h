#ifndef LATCHKEY_SHIMS_H
#define LATCHKEY_SHIMS_H

// C entry points for the few OpenSSL facilities Swift cannot call directly.
// Each wrapper exists only because the original is a macro, a variadic
// function or otherwise unimportable; the declarations use plain C types so
// this header does not drag OpenSSL's headers into the CShims module.

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Frees memory that OpenSSL allocated and handed to the caller (for example
/// the UTF-8 buffer from ASN1_STRING_to_UTF8).
/// Why a shim: OPENSSL_free is a function-like macro that expands to
/// CRYPTO_free(ptr, OPENSSL_FILE, OPENSSL_LINE); Swift does not import
/// function-like macros.
void lk_openssl_free(void *pointer);

#ifdef __cplusplus
}
#endif

#endif
