/*
 * linkauth.c - see linkauth.h.
 */
#include "linkauth.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int linkauth_load_key(const char *path, uint8_t key[LINKAUTH_KEY_SIZE], char *err)
{
    uint8_t buf[LINKAUTH_SECRET_MAX + 1];
    struct stat st;
    size_t len = 0;
    int fd;

    if (sodium_init() < 0) {
        snprintf(err, LINKAUTH_ERR_LEN, "cannot initialise libsodium");
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, LINKAUTH_ERR_LEN, "secret file %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, LINKAUTH_ERR_LEN, "secret file %s: not a regular file", path);
        close(fd);
        return -1;
    }
    if ((st.st_mode & 077) != 0) {
        snprintf(err, LINKAUTH_ERR_LEN,
                 "secret file %s: mode %03o lets group or others at it; chmod 600 it", path,
                 (unsigned)(st.st_mode & 0777));
        close(fd);
        return -1;
    }
    while (len < sizeof(buf)) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, LINKAUTH_ERR_LEN, "secret file %s: %s", path, strerror(errno));
            close(fd);
            sodium_memzero(buf, sizeof(buf));
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (len < LINKAUTH_SECRET_MIN || len > LINKAUTH_SECRET_MAX) {
        snprintf(err, LINKAUTH_ERR_LEN,
                 "secret file %s: %s%zu bytes; it must hold %d to %d bytes of random data "
                 "(e.g. head -c 32 /dev/urandom)",
                 path, len > LINKAUTH_SECRET_MAX ? "more than " : "",
                 len > LINKAUTH_SECRET_MAX ? (size_t)LINKAUTH_SECRET_MAX : len,
                 LINKAUTH_SECRET_MIN, LINKAUTH_SECRET_MAX);
        sodium_memzero(buf, sizeof(buf));
        return -1;
    }
    crypto_generichash(key, LINKAUTH_KEY_SIZE, buf, len, NULL, 0);
    sodium_memzero(buf, sizeof(buf));
    return 0;
}

void linkauth_insecure_key(uint8_t key[LINKAUTH_KEY_SIZE])
{
    memset(key, 0, LINKAUTH_KEY_SIZE);
}

void linkauth_nonce(uint8_t nonce[LINKAUTH_NONCE_SIZE])
{
    randombytes_buf(nonce, LINKAUTH_NONCE_SIZE);
}

void linkauth_mac(const uint8_t key[LINKAUTH_KEY_SIZE], enum linkauth_role role,
                  const uint8_t nonce_c[LINKAUTH_NONCE_SIZE],
                  const uint8_t nonce_s[LINKAUTH_NONCE_SIZE], uint8_t mac[LINKAUTH_MAC_SIZE])
{
    uint8_t msg[7 + 2 * LINKAUTH_NONCE_SIZE];

    _Static_assert(crypto_auth_BYTES == LINKAUTH_MAC_SIZE, "MAC size");
    _Static_assert(crypto_auth_KEYBYTES == LINKAUTH_KEY_SIZE, "key size");
    memcpy(msg, role == LINKAUTH_SERVER1 ? "server1" : "server2", 7);
    memcpy(msg + 7, nonce_c, LINKAUTH_NONCE_SIZE);
    memcpy(msg + 7 + LINKAUTH_NONCE_SIZE, nonce_s, LINKAUTH_NONCE_SIZE);
    crypto_auth(mac, msg, sizeof(msg), key);
}

bool linkauth_check(const uint8_t key[LINKAUTH_KEY_SIZE], enum linkauth_role role,
                    const uint8_t nonce_c[LINKAUTH_NONCE_SIZE],
                    const uint8_t nonce_s[LINKAUTH_NONCE_SIZE],
                    const uint8_t mac[LINKAUTH_MAC_SIZE])
{
    uint8_t msg[7 + 2 * LINKAUTH_NONCE_SIZE];

    memcpy(msg, role == LINKAUTH_SERVER1 ? "server1" : "server2", 7);
    memcpy(msg + 7, nonce_c, LINKAUTH_NONCE_SIZE);
    memcpy(msg + 7 + LINKAUTH_NONCE_SIZE, nonce_s, LINKAUTH_NONCE_SIZE);
    return crypto_auth_verify(mac, msg, sizeof(msg), key) == 0;
}
