/* The plugin trust rules (core/plugins/loader.c, sshd's StrictModes): first on
 * fabricated stat results, so owners no test user could create are covered
 * too, then on real folders made here. Each refusal's advice is checked:
 * `chmod go-w PATH` only where the user owns PATH and it is not a sticky
 * shared folder; "move the plugin" otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "plugins/loader.h"

static struct stat fake(mode_t type, unsigned perm, uid_t uid)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_mode = type | perm;
    st.st_uid = uid;
    return st;
}

/* judge(...) must give rc, and a message holding want (and not avoid). */
static void judge_g(const char *line, struct stat st, amp_trust_role role, uid_t me, int private_group,
                    int rc, const char *want, const char *avoid)
{
    char err[1024] = "";
    int got = amp_plugin_trust_judge("/p", &st, role, me, private_group, err, sizeof err);
    EXPECT(got == rc, "%s: rc %d, expected %d (%s)", line, got, rc, err);
    if (want)
        EXPECT(strstr(err, want) != NULL, "%s: '%s' lacks '%s'", line, err, want);
    if (avoid)
        EXPECT(strstr(err, avoid) == NULL, "%s: '%s' holds '%s'", line, err, avoid);
}

static void judge(const char *line, struct stat st, amp_trust_role role, uid_t me, int rc,
                  const char *want, const char *avoid)
{
    judge_g(line, st, role, me, 0, rc, want, avoid);
}

static void test_rules(void)
{
    const uid_t me = 1000, other = 1001;
    /* Owners: root or me, for the file and every folder. */
    judge("own file", fake(S_IFREG, 0755, me), AMP_TRUST_FILE, me, 0, NULL, NULL);
    judge("root's file", fake(S_IFREG, 0755, 0), AMP_TRUST_FILE, me, 0, NULL, NULL);
    judge("other's file", fake(S_IFREG, 0755, other), AMP_TRUST_FILE, me, -1,
          "/p: refused: the plugin file belongs to uid 1001, not to you (uid 1000) or root", "chmod");
    judge("other's folder", fake(S_IFDIR, 0755, other), AMP_TRUST_FOLDER, me, -1,
          "the folder holding the plugin belongs to uid 1001", "chmod");
    judge("other's ancestor", fake(S_IFDIR, 0755, other), AMP_TRUST_ANCESTOR, me, -1,
          "the folder above the plugin belongs to uid 1001", "chmod");
    /* Writable by others. */
    judge("g+w file", fake(S_IFREG, 0775, me), AMP_TRUST_FILE, me, -1,
          "writable by group (mode 775), so another user could replace the plugin; run `chmod go-w /p`",
          NULL);
    judge("o+w folder", fake(S_IFDIR, 0757, me), AMP_TRUST_FOLDER, me, -1,
          "the folder holding the plugin is writable by others (mode 757)", NULL);
    judge("o+w ancestor", fake(S_IFDIR, 0777, me), AMP_TRUST_ANCESTOR, me, -1,
          "the folder above the plugin is writable by group and others (mode 777), so another user "
          "could rename what it holds",
          NULL);
    /* Root's writable folder: the user cannot chmod it. */
    judge("root's o+w ancestor", fake(S_IFDIR, 0777, 0), AMP_TRUST_ANCESTOR, me, -1,
          "belongs to root, so another user could replace the plugin; move the plugin", "chmod");
    /* Sticky: fine above the plugin (/tmp), never as its folder, and never
     * `chmod go-w /tmp`. */
    judge("/tmp above", fake(S_IFDIR, 01777, 0), AMP_TRUST_ANCESTOR, me, 0, NULL, NULL);
    judge("/tmp holding", fake(S_IFDIR, 01777, 0), AMP_TRUST_FOLDER, me, -1,
          "is a shared folder (writable by group and others, sticky, mode 1777)", "chmod");
    judge("own sticky holding", fake(S_IFDIR, 01777, me), AMP_TRUST_FOLDER, me, -1,
          "move the plugin into a folder only you can write", "chmod");
    /* A group-writable folder above, whose group is its owner's alone (a
     * user private group, umask 002): fine, as Debian's sshd has it; the
     * same folder with a shared group is not. World-writable stays refused. */
    judge_g("private g+w ancestor", fake(S_IFDIR, 0775, me), AMP_TRUST_ANCESTOR, me, 1, 0, NULL,
            NULL);
    judge_g("shared g+w ancestor", fake(S_IFDIR, 0775, me), AMP_TRUST_ANCESTOR, me, 0, -1,
            "writable by group (mode 775)", NULL);
    judge_g("private o+w ancestor", fake(S_IFDIR, 0777, me), AMP_TRUST_ANCESTOR, me, 1, -1,
            "writable by others (mode 777)", NULL);
    /* The plugin's own folder and file are made go-w by the build: no
     * exemption there. */
    judge_g("private g+w folder", fake(S_IFDIR, 0775, me), AMP_TRUST_FOLDER, me, 1, -1,
            "writable by group", NULL);
    /* As root: only root's (uid 0) things pass, as for sshd. */
    judge("root, user's file", fake(S_IFREG, 0755, me), AMP_TRUST_FILE, 0, -1,
          "belongs to uid 1000, not to you (uid 0) or root", NULL);
}

static void mk(const char *path, mode_t mode)
{
    EXPECT(mkdir(path, mode) == 0 && chmod(path, mode) == 0, "mkdir %s", path);
}

static void test_real_folders(void)
{
    char top[] = "/tmp/amp_test_trust_XXXXXX", mid[64], dir[64], so[80], link[80], err[1024];
    if (!mkdtemp(top)) {
        EXPECT(0, "mkdtemp");
        return;
    }
    chmod(top, 0755);
    snprintf(mid, sizeof mid, "%s/mid", top);
    snprintf(dir, sizeof dir, "%s/plugins", mid);
    snprintf(so, sizeof so, "%s/amp_scaler_x.so", dir);
    snprintf(link, sizeof link, "%s/link.so", top);
    mk(mid, 0755);
    mk(dir, 0755);
    FILE *f = fopen(so, "w");
    EXPECT(f != NULL, "create %s", so);
    if (f)
        fclose(f);
    chmod(so, 0755);
    EXPECT(amp_plugin_check_trust(so, err, sizeof err) == 0, "private tree refused: %s", err);

    /* A world-writable folder two levels up: refused, named. */
    chmod(mid, 0777);
    EXPECT(amp_plugin_check_trust(so, err, sizeof err) != 0 && strstr(err, mid) == err &&
               strstr(err, "the folder above the plugin is writable by"),
           "o+w ancestor: %s", err);
    /* Group-writable only: fine when the group holds the folder's owner
     * alone (a user private group; root's group is one where root runs the
     * tests), refused otherwise. */
    chmod(mid, 0775);
    struct stat ms;
    int priv = stat(mid, &ms) == 0 && amp_group_only_owner(ms.st_gid, ms.st_uid);
    int rc = amp_plugin_check_trust(so, err, sizeof err);
    EXPECT(priv ? rc == 0 : rc != 0 && strstr(err, "writable by group (mode 775)"),
           "g+w ancestor, group %s: %s", priv ? "private" : "shared", rc ? err : "accepted");
    /* ... unless sticky, as /tmp is. */
    chmod(mid, 01777);
    EXPECT(amp_plugin_check_trust(so, err, sizeof err) == 0, "sticky ancestor refused: %s", err);
    /* The plugin directly in a sticky shared folder: refused, no chmod. */
    chmod(dir, 01777);
    EXPECT(amp_plugin_check_trust(so, err, sizeof err) != 0 && strstr(err, "shared folder") &&
               !strstr(err, "chmod"),
           "sticky holding folder: %s", err);
    chmod(dir, 0755);
    chmod(mid, 0755);
    /* A symlink in a safe folder to the plugin: the target's folders count
     * too. */
    EXPECT(symlink(so, link) == 0, "symlink");
    EXPECT(amp_plugin_check_trust(link, err, sizeof err) == 0, "symlink refused: %s", err);
    chmod(dir, 0777);
    EXPECT(amp_plugin_check_trust(link, err, sizeof err) != 0 && strstr(err, dir) == err,
           "symlink to a writable folder: %s", err);
    chmod(dir, 0755);

    unlink(link);
    unlink(so);
    rmdir(dir);
    rmdir(mid);
    rmdir(top);
}

int main(void)
{
    test_rules();
    test_real_folders();
    if (amp_test_failures) {
        fprintf(stderr, "test_plugin_trust: %d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("test_plugin_trust: all checks passed\n");
    return 0;
}
