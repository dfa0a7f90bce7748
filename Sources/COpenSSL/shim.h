#ifndef PUSHRELAY_COPENSSL_SHIM_H
#define PUSHRELAY_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
/* Function-like macros that Swift cannot import are wrapped here as static inline functions. */
static inline long pushrelay_BIO_pending(BIO *b) { return (long)BIO_pending(b); }

/* SSL_CTX_ctrl / SSL_ctrl macros. */
static inline int pushrelay_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int pushrelay_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long pushrelay_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long pushrelay_SSL_CTX_set_session_cache_mode_off(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
}
static inline int pushrelay_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/* The certificates served after the leaf (SSL_CTX_get0_chain_certs is a macro, sk_X509_* are type-generic). */
static inline int pushrelay_SSL_CTX_chain_count(SSL_CTX *ctx) {
    STACK_OF(X509) *chain = NULL;
    if (SSL_CTX_get0_chain_certs(ctx, &chain) != 1 || chain == NULL) return 0;
    return sk_X509_num(chain);
}
static inline X509 *pushrelay_SSL_CTX_chain_certificate(SSL_CTX *ctx, int index) {
    STACK_OF(X509) *chain = NULL;
    if (SSL_CTX_get0_chain_certs(ctx, &chain) != 1 || chain == NULL) return NULL;
    return sk_X509_value(chain, index);
}

/* Constants built from macros (SSL_OP_BIT and friends are not imported). */
static inline uint64_t pushrelay_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t pushrelay_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t pushrelay_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t pushrelay_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
static inline long pushrelay_SSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline unsigned long pushrelay_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }
/* The reason of the oldest error in the thread's queue, left in the queue (ERR_GET_REASON is a macro). */
static inline int pushrelay_ERR_peek_reason(void) { return ERR_GET_REASON(ERR_peek_error()); }
#endif
