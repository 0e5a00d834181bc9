#ifndef HOTPATCH_CCURL_SHIM_H
#define HOTPATCH_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one fixed
// signature per argument type.
static inline CURLcode hp_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode hp_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode hp_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode hp_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }

typedef size_t (*hp_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*hp_curl_progress_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode hp_curl_set_write(CURL *h, hp_curl_data_callback f, void *context) {
    curl_easy_setopt(h, CURLOPT_WRITEDATA, context);
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode hp_curl_set_header(CURL *h, hp_curl_data_callback f, void *context) {
    curl_easy_setopt(h, CURLOPT_HEADERDATA, context);
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}
static inline CURLcode hp_curl_set_progress(CURL *h, hp_curl_progress_callback f, void *context) {
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, context);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}
static inline long hp_curl_response_code(CURL *h) {
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    return code;
}
// HTTP/2 over TLS, negotiated through ALPN: APNs' provider API speaks nothing else.
static inline CURLcode hp_curl_use_http2(CURL *h) { return curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS); }
// curl_global_init is not thread-safe, and curl_easy_init calls it when nobody has: a
// program that starts several handles at once on several threads must call it first.
static inline CURLcode hp_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline long hp_curl_http_version(CURL *h) {
    long version = 0;
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
    return version;
}
// The share interface (curl_share_setopt is variadic too): one connection cache and DNS
// cache for many easy handles, guarded by the lock callbacks it is given.
typedef void (*hp_curl_lock_callback)(CURL *handle, curl_lock_data data, curl_lock_access access, void *context);
typedef void (*hp_curl_unlock_callback)(CURL *handle, curl_lock_data data, void *context);
static inline CURLSHcode hp_curl_share_data(CURLSH *s, curl_lock_data data) { return curl_share_setopt(s, CURLSHOPT_SHARE, data); }
static inline CURLSHcode hp_curl_share_set_locks(CURLSH *s, hp_curl_lock_callback lock, hp_curl_unlock_callback unlock, void *context) {
    CURLSHcode code = curl_share_setopt(s, CURLSHOPT_USERDATA, context);
    if (code == CURLSHE_OK) code = curl_share_setopt(s, CURLSHOPT_LOCKFUNC, lock);
    if (code == CURLSHE_OK) code = curl_share_setopt(s, CURLSHOPT_UNLOCKFUNC, unlock);
    return code;
}
static inline CURLcode hp_curl_set_share(CURL *h, CURLSH *s) { return curl_easy_setopt(h, CURLOPT_SHARE, s); }
#endif
