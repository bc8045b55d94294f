// Implementations of the lk_… OpenSSL shims declared in include/latchkey_shims.h.
// See the header for why each one exists.

#include "latchkey_shims.h"

#include <openssl/crypto.h>

void lk_openssl_free(void *pointer) {
    OPENSSL_free(pointer);
}
