#ifndef PUSHRELAY_COPENSSL_SHIM_H
#define PUSHRELAY_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
/* Function-like macros that Swift cannot import are wrapped here as static inline functions. */
static inline long pushrelay_BIO_pending(BIO *b) { return (long)BIO_pending(b); }
#endif
