#ifndef HOTPATCH_CCRYPTO_SHIM_H
#define HOTPATCH_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>

// BIO_get_mem_data is a macro over BIO_ctrl; Swift cannot import it.
static inline long hp_bio_mem_data(BIO *bio, char **out) {
    return BIO_get_mem_data(bio, out);
}
#endif
