/* A small C bot for the seal's tests (tests/sandbox/test_seal.py): answers
 * hello, pass (the first three cards of its hand) and play (the first legal
 * card), finding the fields it needs in the referee's compact JSON by hand.
 * Compiled with cc by the test; needs only the C library. */
#include <stdio.h>
#include <string.h>

static int field(const char *line, const char *name, char *out, size_t size) {
    char key[32];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = strstr(line, key);
    if (!p) return 0;
    p += strlen(key);
    while (*p == ' ') p++;
    if (*p == '"') p++;
    size_t n = 0;
    while (*p && *p != '"' && *p != ',' && *p != '}' && n + 1 < size) out[n++] = *p++;
    out[n] = 0;
    return 1;
}

/* The i-th card of the array `name` (cards are two characters). */
static int card(const char *line, const char *name, int i, char *out) {
    char key[32];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = strstr(line, key);
    if (!p) return 0;
    p = strchr(p, '[');
    for (int k = 0; p && k <= i; k++) {
        p = strchr(p + 1, '"');
        if (!p) return 0;
        if (k == i) { out[0] = p[1]; out[1] = p[2]; out[2] = 0; return 1; }
        p = strchr(p + 1, '"');
    }
    return 0;
}

int main(void) {
    static char line[1 << 16];
    char type[32], id[32], a[3], b[3], c[3];
    while (fgets(line, sizeof line, stdin)) {
        if (!field(line, "type", type, sizeof type)) continue;
        if (!strcmp(type, "bye")) return 0;
        if (!field(line, "id", id, sizeof id)) continue;
        if (!strcmp(type, "hello")) {
            printf("{\"type\":\"hello\",\"id\":%s,\"name\":\"c-first-legal\"}\n", id);
        } else if (!strcmp(type, "pass") && card(line, "hand", 0, a) && card(line, "hand", 1, b) && card(line, "hand", 2, c)) {
            printf("{\"type\":\"pass\",\"id\":%s,\"cards\":[\"%s\",\"%s\",\"%s\"]}\n", id, a, b, c);
        } else if (!strcmp(type, "play") && card(line, "legal", 0, a)) {
            printf("{\"type\":\"play\",\"id\":%s,\"card\":\"%s\"}\n", id, a);
        }
        fflush(stdout);
    }
    return 0;
}
