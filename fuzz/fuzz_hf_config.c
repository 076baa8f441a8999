/* libFuzzer target: a Hugging Face folder's config.json as amptrain [model]
 * keys (core/config/hf_config.c).
 *
 * Input: any bytes, read as config.json. The reader must end with keys or
 * with a message, never a crash; with keys, it names a map and every key,
 * value and source it returns is a NUL-terminated string that an INI line
 * can hold (no newline, no ';' or '#'). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/hf_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t cap) {
    size_t n = strnlen(s, cap);
    if (n == cap || strpbrk(s, "\n\r;#")) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512] = "";
    amp_hf_keys k;
    if (amp_hf_config_parse((const char *)data, size, "fuzz/config.json", &k, err, sizeof err) != 0) {
        if (!err[0]) abort(); /* every failure says why */
        return 0;
    }
    if (!k.map || k.n < 1 || k.n > AMP_HF_MAX_KEYS) abort();
    for (int i = 0; i < k.n; i++) {
        check_text(k.key[i], sizeof k.key[i]);
        check_text(k.value[i], sizeof k.value[i]);
        check_text(k.from[i], sizeof k.from[i]);
        if (!k.key[i][0] || !k.value[i][0]) abort();
    }
    return 0;
}
