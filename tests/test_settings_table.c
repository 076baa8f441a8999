/* The key tables themselves: the core's and every registered model's pass
 * amp_settings_table_check (a default out of its range, a condition naming
 * no choice, a key twice), and the check catches each kind of broken row. */
#include <stdio.h>
#include <string.h>

#include "data/dataset.h"
#include "model.h"
#include "config/settings.h"

static int failures;

static void expect_clean(const char *what, const amp_setting *t) {
    char err[512];
    if (amp_settings_table_check(t, err, sizeof err) != 0) {
        printf("FAIL: %s: %s\n", what, err);
        failures++;
    }
}

static void expect_broken(const char *what, const amp_setting *t, const char *want) {
    char err[512] = "";
    if (amp_settings_table_check(t, err, sizeof err) == 0 || !strstr(err, want)) {
        printf("FAIL: %s: expected an error with '%s', got '%s'\n", what, want, err);
        failures++;
    }
}

typedef struct rows {
    int n, pick;
    double x;
    const char *s;
} rows;

static const char *const ab[] = {"a", "b", NULL};
#define AT(f) AMP_SETTING_AT(rows, f)

int main(void) {
    expect_clean("core", amp_settings_core_table());
    int models = 0;
    for (const char *const *n = amp_model_names(); *n; n++, models++) {
        const amp_model_ops *ops = amp_model_find(*n);
        if (ops && ops->settings) expect_clean(*n, ops->settings);
    }
    if (models < 3) {
        printf("FAIL: %d models registered, expected mlp, gpt and cnn\n", models);
        failures++;
    }

    /* [data] dataset stores the index of its choice, which the registry's
     * names give in amp_dataset_kind order */
    const amp_data_kind *const *kinds = amp_data_kinds();
    for (int i = 0; kinds[i]; i++)
        if ((int)kinds[i]->kind != i || strcmp(amp_data_kind_names()[i], kinds[i]->name) != 0) {
            printf("FAIL: dataset kind %d (%s) is out of amp_dataset_kind order\n", i, kinds[i]->name);
            failures++;
        }

    const amp_setting out_of_range[] = {
        {"s", "n", AMP_SETTING_INT, "9", 0, 8, AT(n), .doc = "d"}, {.key = NULL}};
    expect_broken("default above max", out_of_range, "the default '9'");
    const amp_setting bad_number[] = {
        {"s", "x", AMP_SETTING_DOUBLE, "1e", .dmin = 0, .dmax = 2, AT(x), .doc = "d"}, {.key = NULL}};
    expect_broken("default not a number", bad_number, "the default '1e'");
    const amp_setting bad_choice[] = {
        {"s", "pick", AMP_SETTING_CHOICE, "c", .choices = ab, AT(pick), .doc = "d"}, {.key = NULL}};
    expect_broken("default not a choice", bad_choice, "the default 'c'");
    const amp_setting wrong_size[] = {
        {"s", "n", AMP_SETTING_DOUBLE, "1", .dmin = 0, .dmax = 8, AT(n), .doc = "d"}, {.key = NULL}};
    expect_broken("a double into an int", wrong_size, "size");
    const amp_setting no_chooser[] = {
        {"s", "n", AMP_SETTING_INT, "1", 0, 8, AT(n), .when = "pick=a", .doc = "d"}, {.key = NULL}};
    expect_broken("condition without its choice", no_chooser, "the condition 'pick=a'");
    const amp_setting unknown_choice[] = {
        {"s", "pick", AMP_SETTING_CHOICE, "a", .choices = ab, AT(pick), .doc = "d"},
        {"s", "n", AMP_SETTING_INT, "1", 0, 8, AT(n), .when = "pick=a|z", .doc = "d"}, {.key = NULL}};
    expect_broken("condition on a choice the row lacks", unknown_choice, "the condition 'pick=a|z'");
    const amp_setting twice[] = {
        {"s", "n", AMP_SETTING_INT, "1", 0, 8, AT(n), .doc = "d"},
        {"s", "n", AMP_SETTING_INT, "1", 0, 8, AT(n), .doc = "d"}, {.key = NULL}};
    expect_broken("a key twice", twice, "two rows");
    const amp_setting undocumented[] = {
        {"s", "s", AMP_SETTING_STRING, "v", AT(s), .doc = ""}, {.key = NULL}};
    expect_broken("no doc line", undocumented, "a doc line");

    if (failures) return 1;
    printf("ok: the key tables are consistent and the check catches broken rows\n");
    return 0;
}
