/* Helpers of report.html used by more than one of its files. */
#include "ab/ab_html.h"

static const char *const palette[] = {"#3566b0", "#e0672a", "#27955a", "#b5338a",
                                      "#8a6d3b", "#149cb0", "#6f42c1", "#c0392b"};
#define NPAL (int)(sizeof palette / sizeof palette[0])

const char *amp_ab_html_color(int arm) { return palette[arm % NPAL]; }

void amp_ab_html_esc(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

void amp_ab_fmt_bytes(char *buf, size_t cap, double b) {
    if (b >= 1 << 30) snprintf(buf, cap, "%.2f GiB", b / (1 << 30));
    else if (b >= 1 << 20) snprintf(buf, cap, "%.2f MiB", b / (1 << 20));
    else if (b >= 1 << 10) snprintf(buf, cap, "%.1f KiB", b / (1 << 10));
    else snprintf(buf, cap, "%.0f B", b);
}
