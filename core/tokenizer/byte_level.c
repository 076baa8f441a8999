/* GPT-2's bytes_to_unicode: the printable bytes stand for themselves, the
 * other 68 for U+0100 onwards, in byte order, so every byte string is a
 * string of printable characters the vocabulary can hold. */
#include "tokenizer/tokenizer_internal.h"

static int printable(unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t amp_byte_to_cp(unsigned b) {
    if (printable(b)) return b;
    uint32_t k = 0;
    for (unsigned c = 0; c < b; c++) k += !printable(c);
    return 256 + k;
}

int amp_cp_to_byte(uint32_t cp) {
    if (cp < 256) return printable(cp) ? (int)cp : -1;
    uint32_t k = 256;
    for (unsigned c = 0; c < 256; c++)
        if (!printable(c) && k++ == cp) return (int)c;
    return -1;
}

static size_t put_cp(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | cp >> 6); /* all byte-level points are below U+0800 */
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

size_t amp_byte_level(const unsigned char *s, size_t n, char *out) {
    static char enc[256][2];
    static unsigned char enclen[256];
    if (!enclen[0]) /* idempotent: racing threads write the same values */
        for (unsigned b = 0; b < 256; b++) enclen[b] = (unsigned char)put_cp(amp_byte_to_cp(b), enc[b]);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        out[k] = enc[s[i]][0];
        if (enclen[s[i]] == 2) out[k + 1] = enc[s[i]][1];
        k += enclen[s[i]];
    }
    return k;
}

long amp_byte_level_unmap(const char *s, size_t n, unsigned char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = (unsigned char)s[i];
        uint32_t cp;
        if (c < 0x80) {
            cp = c;
            i++;
        } else if ((c & 0xE0) == 0xC0 && i + 1 < n) {
            cp = (c & 0x1F) << 6 | ((unsigned char)s[i + 1] & 0x3F);
            i += 2;
        } else {
            return -1;
        }
        int b = amp_cp_to_byte(cp);
        if (b < 0) return -1;
        out[k++] = (unsigned char)b;
    }
    return (long)k;
}
