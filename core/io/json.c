#include "io/json.h"

#include <math.h>

void amp_json_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

void amp_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
