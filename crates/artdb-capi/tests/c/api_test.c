/*
 * api_test.c: drives the C API as a C program would and checks every result.
 *
 * Run by tests/c_api.rs (built against libartdb_capi.a and libartdb_capi.so, and under
 * valgrind when it is installed) as `api_test DIR`, where DIR is an empty directory for its
 * database files. Prints one line per section and "N passed, 0 failed" at the end; exits 1 at
 * the first failed check, naming the line, the code and artdb_errmsg().
 */
#include "artdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks_passed = 0;
static char dir[4096];

#define FAIL(...)                                                                          \
    do {                                                                                   \
        fprintf(stderr, "api_test.c:%d: ", __LINE__);                                      \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fprintf(stderr, "\n  last message: %s\n0 passed, 1 failed\n", artdb_errmsg());   \
        exit(1);                                                                           \
    } while (0)

/* A call that must return `expected`. */
#define EXPECT(expected, call)                                                             \
    do {                                                                                   \
        int code_ = (call);                                                                \
        if (code_ != (expected))                                                           \
            FAIL("%s returned %s, expected %s", #call, artdb_strerror(code_),              \
                 artdb_strerror(expected));                                                \
        checks_passed++;                                                                   \
    } while (0)

#define OK(call) EXPECT(ARTDB_OK, call)

#define CHECK(condition)                                                                   \
    do {                                                                                   \
        if (!(condition))                                                                  \
            FAIL("check failed: %s", #condition);                                          \
        checks_passed++;                                                                   \
    } while (0)

/* A failed call's message names the problem: it contains `needle`. */
#define MESSAGE_HAS(needle)                                                                \
    do {                                                                                   \
        if (strstr(artdb_errmsg(), (needle)) == NULL)                                      \
            FAIL("the message does not mention \"%s\"", (needle));                         \
        checks_passed++;                                                                   \
    } while (0)

static const char *path_of(const char *name) {
    static char paths[8][4200];
    static int next = 0;
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/%s", dir, name);
    return path;
}

static int val_is(artdb_val value, const char *text) {
    return value.len == strlen(text) && (value.len == 0 || memcmp(value.data, text, value.len) == 0);
}

#define S(text) (const uint8_t *)(text), strlen(text)

static int put_one(artdb_db *db, const char *table, const char *key, const char *value) {
    artdb_txn *txn = NULL;
    int code = artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_DEFAULT, &txn);
    if (code != ARTDB_OK) return code;
    code = artdb_txn_put(txn, table, S(key), S(value));
    if (code == ARTDB_OK) code = artdb_txn_commit(txn);
    artdb_txn_free(txn);
    return code;
}

static artdb_db *open_db(const char *path, int create) {
    artdb_options options;
    OK(artdb_options_init(&options));
    /* Fast under valgrind; durability is the engine's, tested there. */
    options.durability = ARTDB_DURABILITY_NOSYNC;
    artdb_db *db = NULL;
    if (create)
        OK(artdb_create(path, &options, &db));
    else
        OK(artdb_open(path, &options, &db));
    CHECK(db != NULL);
    return db;
}

static void test_bad_input(void) {
    artdb_db *db = NULL;
    EXPECT(ARTDB_CANTOPEN, artdb_open(path_of("missing.artdb"), NULL, &db));
    MESSAGE_HAS("does not exist");
    CHECK(db == NULL);
    EXPECT(ARTDB_INVALID, artdb_open(NULL, NULL, &db));
    MESSAGE_HAS("path is a null pointer");
    EXPECT(ARTDB_INVALID, artdb_open(path_of("x.artdb"), NULL, NULL));
    EXPECT(ARTDB_INVALID, artdb_close(NULL));
    EXPECT(ARTDB_INVALID, artdb_table_create(NULL, "t"));
    MESSAGE_HAS("database handle is a null pointer");
    EXPECT(ARTDB_INVALID, artdb_checkpoint(NULL));
    artdb_val value;
    EXPECT(ARTDB_INVALID, artdb_read_get(NULL, "t", S("k"), &value));
    EXPECT(ARTDB_INVALID, artdb_cursor_next(NULL));
    EXPECT(ARTDB_INVALID, artdb_txn_commit(NULL));
    EXPECT(ARTDB_INVALID, artdb_options_init(NULL));
    CHECK(strcmp(artdb_strerror(ARTDB_CONFLICT), "ARTDB_CONFLICT") == 0);
    CHECK(strcmp(artdb_strerror(9999), "ARTDB_UNKNOWN_CODE") == 0);
    CHECK(strlen(artdb_version()) > 0);

    /* A file that is not a database. */
    FILE *text = fopen(path_of("text.artdb"), "w");
    CHECK(text != NULL);
    fputs("just some text, not a database\n", text);
    fclose(text);
    EXPECT(ARTDB_NOTADB, artdb_open(path_of("text.artdb"), NULL, &db));
    MESSAGE_HAS("not an artdb database");
    printf("bad input: ok\n");
}

static void test_tables_and_transactions(artdb_db *db) {
    OK(artdb_table_create(db, "users"));
    OK(artdb_table_create(db, "orders"));
    EXPECT(ARTDB_EXISTS, artdb_table_create(db, "users"));
    MESSAGE_HAS("already exists");
    EXPECT(ARTDB_INVALID, artdb_table_create(db, ""));
    MESSAGE_HAS("invalid");
    OK(artdb_table_create(db, "scratch"));
    OK(artdb_table_drop(db, "scratch"));
    EXPECT(ARTDB_NOTABLE, artdb_table_drop(db, "scratch"));

    artdb_val *names = NULL;
    size_t count = 0;
    OK(artdb_table_names(db, &names, &count));
    CHECK(count == 2);
    CHECK(val_is(names[0], "orders") && strcmp((const char *)names[0].data, "orders") == 0);
    CHECK(val_is(names[1], "users"));
    artdb_free(names);

    artdb_txn *txn = NULL;
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_SYNC, &txn));
    OK(artdb_txn_put(txn, "users", S("alice"), S("likes \x01 bytes")));
    OK(artdb_txn_put(txn, "users", S("bob"), S("2")));
    OK(artdb_txn_put(txn, "users", S("carol"), S("3")));
    OK(artdb_txn_put(txn, "users", NULL, 0, S("the empty key")));
    artdb_val value;
    OK(artdb_txn_get(txn, "users", S("alice"), &value));
    CHECK(val_is(value, "likes \x01 bytes"));
    OK(artdb_txn_delete(txn, "users", S("carol")));
    EXPECT(ARTDB_NOTFOUND, artdb_txn_delete(txn, "users", S("carol")));
    EXPECT(ARTDB_NOTFOUND, artdb_txn_get(txn, "users", S("carol"), &value));
    EXPECT(ARTDB_NOTABLE, artdb_txn_put(txn, "nope", S("k"), S("v")));
    EXPECT(ARTDB_INVALID, artdb_txn_put(txn, "users", NULL, 3, S("v")));
    MESSAGE_HAS("key is a null pointer with a length of 3");

    /* A key past the length limit. */
    static uint8_t long_key[4097];
    memset(long_key, 'k', sizeof long_key);
    EXPECT(ARTDB_TOOBIG, artdb_txn_put(txn, "users", long_key, sizeof long_key, S("v")));
    MESSAGE_HAS("longer than the limit");

    /* Nothing of it is visible before the commit. */
    artdb_read *before = NULL;
    OK(artdb_read_begin(db, &before));
    EXPECT(ARTDB_NOTFOUND, artdb_read_get(before, "users", S("alice"), &value));
    artdb_read_end(before);

    OK(artdb_txn_commit(txn));
    EXPECT(ARTDB_INVALID, artdb_txn_put(txn, "users", S("late"), S("v")));
    MESSAGE_HAS("already committed");
    EXPECT(ARTDB_INVALID, artdb_txn_commit(txn));
    artdb_txn_free(txn);

    /* An aborted transaction leaves nothing. */
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SERIALIZABLE, ARTDB_DURABILITY_DEFAULT, &txn));
    OK(artdb_txn_put(txn, "users", S("dave"), S("4")));
    OK(artdb_txn_abort(txn));
    EXPECT(ARTDB_INVALID, artdb_txn_get(txn, "users", S("dave"), &value));
    MESSAGE_HAS("already aborted");
    artdb_txn_free(txn);
    /* Freed without a commit: aborted. */
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_DEFAULT, &txn));
    OK(artdb_txn_put(txn, "users", S("erin"), S("5")));
    artdb_txn_free(txn);
    EXPECT(ARTDB_INVALID, artdb_txn_begin(db, 7, ARTDB_DURABILITY_DEFAULT, &txn));
    EXPECT(ARTDB_INVALID, artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, 9, &txn));

    artdb_read *read = NULL;
    OK(artdb_read_begin(db, &read));
    OK(artdb_read_get(read, "users", S("alice"), &value));
    CHECK(val_is(value, "likes \x01 bytes"));
    OK(artdb_read_get(read, "users", NULL, 0, &value));
    CHECK(val_is(value, "the empty key"));
    EXPECT(ARTDB_NOTFOUND, artdb_read_get(read, "users", S("carol"), &value));
    EXPECT(ARTDB_NOTFOUND, artdb_read_get(read, "users", S("dave"), &value));
    EXPECT(ARTDB_NOTFOUND, artdb_read_get(read, "users", S("erin"), &value));
    EXPECT(ARTDB_NOTABLE, artdb_read_get(read, "nope", S("alice"), &value));
    MESSAGE_HAS("no table named");
    uint64_t len = 0;
    OK(artdb_read_len(read, "users", &len));
    CHECK(len == 3);
    artdb_read_end(read);
    printf("tables and transactions: ok\n");
}

/* Two transactions write one key; the second commit conflicts and is retried. */
static void test_conflict_and_retry(artdb_db *db) {
    artdb_txn *first = NULL, *second = NULL;
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_DEFAULT, &first));
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_DEFAULT, &second));
    OK(artdb_txn_put(first, "orders", S("o1"), S("first")));
    OK(artdb_txn_put(second, "orders", S("o1"), S("second")));
    OK(artdb_txn_commit(first));
    EXPECT(ARTDB_CONFLICT, artdb_txn_commit(second));
    MESSAGE_HAS("conflicted");
    EXPECT(ARTDB_INVALID, artdb_txn_put(second, "orders", S("o1"), S("again")));
    artdb_txn_free(first);
    artdb_txn_free(second);

    int attempts = 0, code;
    do {
        artdb_txn *txn = NULL;
        attempts++;
        OK(artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_DEFAULT, &txn));
        artdb_val value;
        OK(artdb_txn_get(txn, "orders", S("o1"), &value));
        CHECK(val_is(value, "first"));
        OK(artdb_txn_put(txn, "orders", S("o1"), S("second")));
        code = artdb_txn_commit(txn);
        artdb_txn_free(txn);
    } while (code == ARTDB_CONFLICT && attempts < 10);
    OK(code);
    CHECK(attempts == 1);

    artdb_read *read = NULL;
    artdb_val value;
    OK(artdb_read_begin(db, &read));
    OK(artdb_read_get(read, "orders", S("o1"), &value));
    CHECK(val_is(value, "second"));
    artdb_read_end(read);
    printf("conflict and retry: ok\n");
}

/* A snapshot reads the state of its beginning, whatever commits and checkpoints follow. */
static void test_snapshot_isolation(artdb_db *db) {
    artdb_read *old = NULL;
    OK(artdb_read_begin(db, &old));
    artdb_val before;
    OK(artdb_read_get(old, "users", S("bob"), &before));
    CHECK(val_is(before, "2"));
    OK(put_one(db, "users", "bob", "changed"));
    OK(put_one(db, "users", "zed", "new"));
    OK(artdb_checkpoint(db));
    artdb_val value;
    OK(artdb_read_get(old, "users", S("bob"), &value));
    CHECK(val_is(value, "2"));
    CHECK(val_is(before, "2")); /* the borrowed value is still valid */
    EXPECT(ARTDB_NOTFOUND, artdb_read_get(old, "users", S("zed"), &value));
    artdb_read *fresh = NULL;
    OK(artdb_read_begin(db, &fresh));
    OK(artdb_read_get(fresh, "users", S("bob"), &value));
    CHECK(val_is(value, "changed"));
    artdb_read_end(fresh);
    artdb_read_end(old);
    printf("snapshot isolation: ok\n");
}

/* Walks `cursor` from its first key forward (or last key backward) into `out`. */
static void walk(artdb_cursor *cursor, int backward, char *out, size_t room) {
    out[0] = 0;
    int code = backward ? artdb_cursor_last(cursor) : artdb_cursor_first(cursor);
    while (code == ARTDB_OK) {
        artdb_val key, value;
        OK(artdb_cursor_get(cursor, &key, &value));
        strncat(out, (const char *)key.data, key.len < room ? key.len : 0);
        strncat(out, ",", 2);
        code = backward ? artdb_cursor_prev(cursor) : artdb_cursor_next(cursor);
    }
    EXPECT(ARTDB_NOTFOUND, code);
}

static void test_cursors(artdb_db *db) {
    OK(artdb_table_create(db, "words"));
    const char *words[] = {"a", "ab", "abc", "abd", "b", "ba", "c"};
    artdb_txn *txn = NULL;
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_DEFAULT, &txn));
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        OK(artdb_txn_put(txn, "words", S(words[i]), S(words[i])));
    OK(artdb_txn_commit(txn));
    artdb_txn_free(txn);

    artdb_read *read = NULL;
    OK(artdb_read_begin(db, &read));
    char seen[256];
    artdb_cursor *all = NULL;
    OK(artdb_cursor_open(read, "words", &all));
    artdb_val key, value;
    EXPECT(ARTDB_NOTFOUND, artdb_cursor_get(all, &key, &value)); /* not positioned yet */
    EXPECT(ARTDB_NOTFOUND, artdb_cursor_next(all));
    walk(all, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "a,ab,abc,abd,b,ba,c,") == 0);
    walk(all, 1, seen, sizeof seen);
    CHECK(strcmp(seen, "c,ba,b,abd,abc,ab,a,") == 0);
    OK(artdb_cursor_seek(all, S("abz")));
    OK(artdb_cursor_get(all, &key, &value));
    CHECK(val_is(key, "b") && val_is(value, "b"));
    OK(artdb_cursor_prev(all));
    OK(artdb_cursor_get(all, &key, NULL));
    CHECK(val_is(key, "abd"));
    EXPECT(ARTDB_NOTFOUND, artdb_cursor_seek(all, S("d")));
    EXPECT(ARTDB_NOTABLE, artdb_cursor_open(read, "nope", &all));

    artdb_cursor *prefix = NULL;
    OK(artdb_cursor_open_prefix(read, "words", S("ab"), &prefix));
    walk(prefix, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "ab,abc,abd,") == 0);
    walk(prefix, 1, seen, sizeof seen);
    CHECK(strcmp(seen, "abd,abc,ab,") == 0);
    OK(artdb_cursor_seek(prefix, S("a"))); /* below the prefix: its first key */
    OK(artdb_cursor_get(prefix, &key, NULL));
    CHECK(val_is(key, "ab"));
    EXPECT(ARTDB_NOTFOUND, artdb_cursor_seek(prefix, S("abe")));
    artdb_cursor_free(prefix);

    artdb_cursor *range = NULL;
    OK(artdb_cursor_open_range(read, "words", S("ab"), S("b"), 0, &range));
    walk(range, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "ab,abc,abd,") == 0);
    walk(range, 1, seen, sizeof seen);
    CHECK(strcmp(seen, "abd,abc,ab,") == 0);
    artdb_cursor_free(range);
    OK(artdb_cursor_open_range(read, "words", S("ab"), S("ba"),
                               ARTDB_RANGE_EXCLUDE_LOWER | ARTDB_RANGE_INCLUDE_UPPER, &range));
    walk(range, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "abc,abd,b,ba,") == 0);
    walk(range, 1, seen, sizeof seen);
    CHECK(strcmp(seen, "ba,b,abd,abc,") == 0);
    artdb_cursor_free(range);
    OK(artdb_cursor_open_range(read, "words", NULL, 0, S("abc"), 0, &range));
    walk(range, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "a,ab,") == 0);
    artdb_cursor_free(range);
    OK(artdb_cursor_open_range(read, "words", S("b"), NULL, 0, 0, &range));
    walk(range, 1, seen, sizeof seen);
    CHECK(strcmp(seen, "c,ba,b,") == 0);
    artdb_cursor_free(range);
    EXPECT(ARTDB_INVALID, artdb_cursor_open_range(read, "words", NULL, 0, NULL, 0, 64, &range));

    /* get_many: present and absent keys in one call. */
    artdb_val keys[3] = {{(const uint8_t *)"abc", 3}, {(const uint8_t *)"zz", 2},
                         {(const uint8_t *)"a", 1}};
    artdb_val values[3];
    size_t found = 0;
    OK(artdb_read_get_many(read, "words", keys, 3, values, &found));
    CHECK(found == 2);
    CHECK(val_is(values[0], "abc") && values[1].data == NULL && val_is(values[2], "a"));

    /* A cursor holds its snapshot: it outlives artdb_read_end, and later commits. */
    artdb_read_end(read);
    OK(put_one(db, "words", "aa", "aa"));
    walk(all, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "a,ab,abc,abd,b,ba,c,") == 0);
    artdb_cursor_free(all);
    artdb_cursor_free(NULL);
    printf("cursors: ok\n");
}

struct pairs {
    int next, count, unsorted_at;
    char key[32], value[32];
};

static int next_pair(void *context, artdb_val *key, artdb_val *value) {
    struct pairs *pairs = context;
    if (pairs->next == pairs->count) return 0;
    int n = pairs->next == pairs->unsorted_at ? 0 : pairs->next;
    snprintf(pairs->key, sizeof pairs->key, "key%06d", n);
    snprintf(pairs->value, sizeof pairs->value, "value %d", n);
    key->data = (const uint8_t *)pairs->key;
    key->len = strlen(pairs->key);
    value->data = (const uint8_t *)pairs->value;
    value->len = strlen(pairs->value);
    pairs->next++;
    return 1;
}

static int failing_pair(void *context, artdb_val *key, artdb_val *value) {
    (void)context, (void)key, (void)value;
    return -1;
}

/* A cursor inside a write transaction: it sees the transaction's own puts and deletes, also
 * those made between its moves, keeps its bounds, and is refused once the transaction ends. */
static void test_txn_cursors(artdb_db *db) {
    char seen[256];
    OK(artdb_table_create(db, "tx"));
    const char *words[] = {"a", "ab", "abc", "abd", "b", "ba", "c"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        OK(put_one(db, "tx", words[i], words[i]));
    artdb_txn *txn = NULL;
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SERIALIZABLE, ARTDB_DURABILITY_DEFAULT, &txn));
    OK(artdb_txn_put(txn, "tx", S("aa"), S("new")));  /* tx: a ab abc abd b ba c */
    EXPECT(ARTDB_OK, artdb_txn_delete(txn, "tx", S("abc")));
    artdb_cursor *all = NULL;
    OK(artdb_txn_cursor_open(txn, "tx", NULL, 0, NULL, 0, 0, &all));
    artdb_val key, value;
    EXPECT(ARTDB_NOTFOUND, artdb_cursor_get(all, &key, &value)); /* not positioned yet */
    walk(all, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "a,aa,ab,abd,b,ba,c,") == 0);
    walk(all, 1, seen, sizeof seen);
    CHECK(strcmp(seen, "c,ba,b,abd,ab,aa,a,") == 0);

    /* Changes between moves: the next step sees them. */
    OK(artdb_cursor_seek(all, S("ab")));
    OK(artdb_cursor_get(all, &key, &value));
    CHECK(val_is(key, "ab") && val_is(value, "ab"));
    OK(artdb_txn_put(txn, "tx", S("abb"), S("between")));
    EXPECT(ARTDB_OK, artdb_txn_delete(txn, "tx", S("ab"))); /* the key it stands on */
    OK(artdb_cursor_get(all, &key, &value)); /* its pair is a copy: still readable */
    CHECK(val_is(key, "ab") && val_is(value, "ab"));
    OK(artdb_cursor_next(all));
    OK(artdb_cursor_get(all, &key, &value));
    CHECK(val_is(key, "abb") && val_is(value, "between"));
    EXPECT(ARTDB_OK, artdb_txn_delete(txn, "tx", S("abb")));
    OK(artdb_cursor_prev(all));
    OK(artdb_cursor_get(all, &key, NULL));
    CHECK(val_is(key, "aa"));

    artdb_cursor *range = NULL;
    OK(artdb_txn_cursor_open(txn, "tx", S("aa"), S("b"), ARTDB_RANGE_INCLUDE_UPPER, &range));
    walk(range, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "aa,abd,b,") == 0);
    walk(range, 1, seen, sizeof seen);
    CHECK(strcmp(seen, "b,abd,aa,") == 0);
    OK(artdb_cursor_seek(range, S("0"))); /* below the range: its first key */
    OK(artdb_cursor_get(range, &key, NULL));
    CHECK(val_is(key, "aa"));
    EXPECT(ARTDB_NOTFOUND, artdb_cursor_seek(range, S("ba")));
    EXPECT(ARTDB_INVALID, artdb_txn_cursor_open(txn, "tx", NULL, 0, NULL, 0, 0x40, &range));
    EXPECT(ARTDB_NOTABLE, artdb_txn_cursor_open(txn, "nope", NULL, 0, NULL, 0, 0, &range));
    EXPECT(ARTDB_INVALID, artdb_txn_cursor_open(NULL, "tx", NULL, 0, NULL, 0, 0, &range));
    EXPECT(ARTDB_INVALID, artdb_txn_cursor_open(txn, "tx", NULL, 0, NULL, 0, 0, NULL));

    OK(artdb_txn_commit(txn));
    EXPECT(ARTDB_INVALID, artdb_cursor_first(all)); /* its transaction has ended */
    MESSAGE_HAS("transaction of this cursor has ended");
    artdb_txn_free(txn);
    EXPECT(ARTDB_INVALID, artdb_cursor_next(range)); /* and is freed: still no dangling use */
    artdb_cursor_free(range);
    artdb_cursor_free(all);

    /* What the transaction did is what a snapshot now reads. */
    artdb_read *read = NULL;
    OK(artdb_read_begin(db, &read));
    OK(artdb_cursor_open(read, "tx", &all));
    walk(all, 0, seen, sizeof seen);
    CHECK(strcmp(seen, "a,aa,abd,b,ba,c,") == 0);
    artdb_cursor_free(all);
    artdb_read_end(read);
OK(artdb_table_drop(db, "tx"));
    printf("transaction cursors: ok\n");
}

static void test_batch_and_bulk_load(artdb_db *db) {
    artdb_batch *batch = NULL;
    OK(artdb_batch_begin(db, &batch));
    OK(artdb_batch_table(batch, "batched", 1));
    OK(artdb_batch_put(batch, "batched", S("k1"), S("v1")));
    OK(artdb_batch_put(batch, "batched", S("k2"), S("v2")));
    OK(artdb_batch_delete(batch, "batched", S("k2")));
    EXPECT(ARTDB_NOTFOUND, artdb_batch_delete(batch, "batched", S("k2")));
    artdb_val value;
    OK(artdb_batch_get(batch, "batched", S("k1"), &value));
    CHECK(val_is(value, "v1"));
    EXPECT(ARTDB_BUSY, artdb_close(db)); /* the batch borrows the database */
    MESSAGE_HAS("write batch");
    OK(artdb_batch_commit(batch));
    EXPECT(ARTDB_INVALID, artdb_batch_put(batch, "batched", S("k3"), S("v3")));
    OK(artdb_batch_free(batch));
    /* A batch freed without a commit is rolled back. */
    OK(artdb_batch_begin(db, &batch));
    OK(artdb_batch_put(batch, "batched", S("rolled back"), S("v")));
    OK(artdb_batch_free(batch));

    struct pairs pairs = {0, 1000, -1, {0}, {0}};
    uint64_t loaded = 0;
    OK(artdb_bulk_load(db, "loaded", 1, next_pair, &pairs, &loaded));
    CHECK(loaded == 1000);
    struct pairs unsorted = {0, 100, 50, {0}, {0}};
    EXPECT(ARTDB_UNSORTED, artdb_bulk_load(db, "unsorted", 1, next_pair, &unsorted, NULL));
    MESSAGE_HAS("pair 50");
    EXPECT(ARTDB_CALLBACK, artdb_bulk_load(db, "failed", 1, failing_pair, NULL, NULL));
    EXPECT(ARTDB_INVALID, artdb_bulk_load(db, "failed", 1, NULL, NULL, NULL));
    struct pairs again = {0, 10, -1, {0}, {0}};
    EXPECT(ARTDB_NOTEMPTY, artdb_bulk_load(db, "loaded", 0, next_pair, &again, NULL));

    artdb_read *read = NULL;
    OK(artdb_read_begin(db, &read));
    OK(artdb_read_get(read, "batched", S("k1"), &value));
    EXPECT(ARTDB_NOTFOUND, artdb_read_get(read, "batched", S("rolled back"), &value));
    OK(artdb_read_get(read, "loaded", S("key000999"), &value));
    CHECK(val_is(value, "value 999"));
    EXPECT(ARTDB_NOTABLE, artdb_read_get(read, "unsorted", S("key000000"), &value));
    EXPECT(ARTDB_NOTABLE, artdb_read_get(read, "failed", S("key000000"), &value));
    artdb_read_end(read);
    printf("batch and bulk load: ok\n");
}

static void test_maintenance(artdb_db *db) {
    OK(artdb_checkpoint(db));
    OK(artdb_sync(db));
    OK(artdb_compact(db));
    artdb_stats stats;
    OK(artdb_get_stats(db, &stats));
    CHECK(stats.tables == 5); /* batched, loaded, orders, users, words */
    CHECK(stats.keys == 1000 + 1 + 1 + 4 + 8);
    CHECK(stats.file_bytes > 0 && stats.checkpoint_generation > 0);
    uint64_t problems = 99;
    OK(artdb_verify(db, &problems));
    CHECK(problems == 0);
    OK(artdb_backup(db, path_of("backup.artdb")));
    EXPECT(ARTDB_EXISTS, artdb_backup(db, path_of("backup.artdb")));
    printf("maintenance: ok\n");
}

/* The backup and the reopened database hold what was committed; read-only and locks. */
static void test_reopen(void) {
    const char *paths[] = {path_of("main.artdb"), path_of("backup.artdb")};
    for (int i = 0; i < 2; i++) {
        artdb_db *db = open_db(paths[i], 0);
        artdb_db *second = NULL;
        artdb_options no_wait;
        OK(artdb_options_init(&no_wait));
        CHECK(no_wait.lock_wait_ms == 5000);
        no_wait.lock_wait_ms = 0;
        EXPECT(ARTDB_BUSY, artdb_open(paths[i], &no_wait, &second));
        MESSAGE_HAS("close that one first");
        artdb_read *read = NULL;
        artdb_val value;
        OK(artdb_read_begin(db, &read));
        OK(artdb_read_get(read, "users", S("bob"), &value));
        CHECK(val_is(value, "changed"));
        OK(artdb_read_get(read, "orders", S("o1"), &value));
        CHECK(val_is(value, "second"));
        OK(artdb_read_get(read, "loaded", S("key000500"), &value));
        CHECK(val_is(value, "value 500"));
        /* A snapshot outlives the close of its database (and keeps its file locked). */
        EXPECT(ARTDB_SNAPSHOTS_ALIVE, artdb_close(db));
        MESSAGE_HAS("still alive");
        OK(artdb_read_get(read, "words", S("aa"), &value));
        CHECK(val_is(value, "aa"));
        artdb_read_end(read);
    }

    /* A transaction still open at the close can no longer commit. */
    artdb_db *db = open_db(path_of("main.artdb"), 0);
    artdb_txn *txn = NULL;
    OK(artdb_txn_begin(db, ARTDB_ISOLATION_SNAPSHOT, ARTDB_DURABILITY_DEFAULT, &txn));
    OK(artdb_txn_put(txn, "users", S("after close"), S("v")));
    EXPECT(ARTDB_SNAPSHOTS_ALIVE, artdb_close(db));
    EXPECT(ARTDB_INVALID, artdb_txn_commit(txn));
    MESSAGE_HAS("was closed");
    artdb_txn_free(txn);

    artdb_options options;
    OK(artdb_options_init(&options));
    options.read_only = 1;
    OK(artdb_open(path_of("main.artdb"), &options, &db));
    artdb_read *read = NULL;
    artdb_val value;
    OK(artdb_read_begin(db, &read));
    EXPECT(ARTDB_NOTFOUND, artdb_read_get(read, "users", S("after close"), &value));
    artdb_read_end(read);
    EXPECT(ARTDB_READONLY, put_one(db, "users", "x", "y"));
    MESSAGE_HAS("read-only");
    EXPECT(ARTDB_READONLY, artdb_table_create(db, "new"));
    OK(artdb_close(db));
    options.read_only = 0;
    options.durability = 5;
    EXPECT(ARTDB_INVALID, artdb_open(path_of("main.artdb"), &options, &db));
    printf("reopen: ok\n");
}

/* Bytes of a closed database file overwritten: corruption is reported, never wrong data. */
static void test_damaged_file(void) {
    const char *path = path_of("backup.artdb");
    FILE *file = fopen(path, "r+b");
    CHECK(file != NULL);
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    CHECK(size > 8192);
    /* Every page after the header and superblocks, so whatever the tree reads is damaged. */
    for (long at = 8192; at + 64 <= size; at += 512) {
        static uint8_t junk[64];
        memset(junk, 0xA5, sizeof junk);
        fseek(file, at, SEEK_SET);
        fwrite(junk, 1, sizeof junk, file);
    }
    fclose(file);
    artdb_db *db = NULL;
    int code = artdb_open(path, NULL, &db);
    if (code == ARTDB_OK) {
        uint64_t problems = 0;
        EXPECT(ARTDB_CORRUPT, artdb_verify(db, &problems));
        CHECK(problems > 0);
        OK(artdb_close(db));
    } else {
        EXPECT(ARTDB_CORRUPT, code);
    }
    MESSAGE_HAS("corrupt");
    printf("damaged file: ok\n");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: api_test DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    test_bad_input();
    artdb_db *db = open_db(path_of("main.artdb"), 1);
    artdb_db *again = NULL;
    EXPECT(ARTDB_EXISTS, artdb_create(path_of("main.artdb"), NULL, &again));
    test_tables_and_transactions(db);
    test_conflict_and_retry(db);
    test_snapshot_isolation(db);
    test_cursors(db);
    test_txn_cursors(db);
    test_batch_and_bulk_load(db);
    test_maintenance(db);
    OK(artdb_close(db));
    test_reopen();
    test_damaged_file();
    printf("%d passed, 0 failed\n", checks_passed);
    return 0;
}
