/* drop_config_key IN.amp SECTION KEY OUT.amp: rewrites a checkpoint as one
 * written before [SECTION] KEY existed: its resolved config without that
 * key's line. tests/gpt/activation.sh resumes from such a file to show that
 * an older run keeps the value it ran with (core/config/implied_keys.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/file.h"

/* config without the "KEY = ..." line of [SECTION]; NULL when there is none. */
static char *without_key(const char *config, size_t len, const char *section, const char *key,
                         size_t *outlen) {
    char *out = malloc(len + 1), head[256], line_start[256];
    if (!out) return NULL;
    snprintf(head, sizeof head, "[%s]", section);
    snprintf(line_start, sizeof line_start, "%s = ", key);
    size_t o = 0;
    int in_section = 0, dropped = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(config + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (config + i)) + 1 : len - i;
        const char *line = config + i;
        size_t hl = strlen(head), kl = strlen(line_start);
        if (line[0] == '[') in_section = n >= hl && memcmp(line, head, hl) == 0;
        if (in_section && n >= kl && memcmp(line, line_start, kl) == 0) {
            dropped = 1;
        } else {
            memcpy(out + o, line, n);
            o += n;
        }
        i += n;
    }
    if (!dropped) {
        free(out);
        return NULL;
    }
    *outlen = o;
    return out;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: drop_config_key IN.amp SECTION KEY OUT.amp\n");
        return 2;
    }
    char err[512] = "";
    char *buf = NULL;
    size_t len = 0, clen = 0;
    amp_checkpoint ck;
    if (amp_file_read_all(argv[1], (size_t)1 << 30, &buf, &len, err, sizeof err) != 0 ||
        amp_checkpoint_parse((const uint8_t *)buf, len, &ck, err, sizeof err) != 0) {
        fprintf(stderr, "drop_config_key: %s: %s\n", argv[1], err);
        return 1;
    }
    char *config = without_key(ck.config, ck.config_len, argv[2], argv[3], &clen);
    if (!config) {
        fprintf(stderr, "drop_config_key: %s: no [%s] %s in its config\n", argv[1], argv[2], argv[3]);
        return 1;
    }
    ck.config = config;
    ck.config_len = clen;
    uint8_t *out = NULL;
    size_t outlen = 0;
    FILE *f = NULL;
    if (amp_checkpoint_encode(&ck, &out, &outlen, err, sizeof err) != 0 ||
        !(f = fopen(argv[4], "wb")) || fwrite(out, 1, outlen, f) != outlen || fclose(f) != 0) {
        fprintf(stderr, "drop_config_key: %s: %s\n", argv[4], err[0] ? err : "cannot write");
        return 1;
    }
    free(out);
    free(config);
    free(buf);
    return 0;
}
