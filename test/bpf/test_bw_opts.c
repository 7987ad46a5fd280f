/* prophet_bw_open's options struct (include/prophet/bw.h): the reader takes only the fields within
 * the caller's sz, takes a larger struct whose unknown tail is zero, and refuses one whose unknown
 * tail is not, or whose sz cannot even hold sz. Needs no privilege: every case either is refused
 * before a source is tried or asks for PROPHET_BW_OPEN_OFF. Exit 0 = pass. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "prophet/bw.h"

/* The caller's struct of a newer library: one more field. */
struct newer_opts {
    prophet_bw_opts_t base;
    long extra;
};

static int fails;

/* Opens with OPTS and checks that it failed with a reason that contains WANT (or, NOT set, that
 * does not). */
static void expect(const char *what, const prophet_bw_opts_t *opts, const char *want, int not )
{
    char why[256] = "";
    prophet_bw_t *bw = prophet_bw_open(opts, why, sizeof(why));
    int has = bw == NULL && strstr(why, want) != NULL;

    if (bw)
        prophet_bw_close(bw);
    if (has == !not ) {
        printf("ok   %s: %s\n", what, bw ? "opened" : why);
        return;
    }
    printf("FAIL %s: %s, want a reason %s\"%s\"\n", what, bw ? "opened" : why,
           not ? "without " : "with ", want);
    fails++;
}

int main(void)
{
    static const char off[] = "throughput probe disabled";
    static const char refused[] = "this library cannot take";
    /* a pin dir that is not bpffs: auto tries no daemon's or host's probe there */
    PROPHET_BW_OPTS(plain, .mode = PROPHET_BW_OPEN_OFF, .pin_dir = "/nonexistent/prophet-bw-opts");
    prophet_bw_opts_t older = plain;
    struct newer_opts newer = {.base = plain};

    expect("mode off", &plain, off, 0);
    /* an older caller, whose struct ends before mode: mode is not read (auto, not off) */
    older.sz = offsetof(prophet_bw_opts_t, mode);
    expect("struct without mode", &older, off, 1);
    expect("struct without mode (not refused)", &older, refused, 1);
    newer.base.sz = sizeof(newer);
    expect("newer struct, unknown field zero", &newer.base, off, 0);
    newer.extra = 1;
    expect("newer struct, unknown field set", &newer.base, refused, 0);
    older.sz = 0;
    expect("sz 0", &older, refused, 0);
    printf("%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
