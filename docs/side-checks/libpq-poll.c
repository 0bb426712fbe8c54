/*
 * Side check for docs/decisions/2026-11-22-why-postgresql-spends-more-per-poll.md: runs the
 * two statements of a quiet incremental poll exactly as Herald does — prepared once per connection,
 * the same parameter types, binary parameters — from N blocking threads, with results in text or in
 * binary format, so that PostgreSQL's CPU per poll can be compared between the two result formats
 * (Herald asks for binary; pgbench gets text).
 *
 *   gcc -O2 -o libpq-poll libpq-poll.c -I/usr/include/postgresql -lpq -lpthread
 *   ./libpq-poll <0 text | 1 binary> <threads> <seconds> <conninfo> <poll.sql> <session hash, hex>
 *
 * poll.sql holds CollectionStore.poll's statement with $1…$8 as Herald binds them (pg_stat_statements
 * shows it verbatim). The polling user is user-1 at the head of its stream (xid 740 in the database
 * the A/B setup leaves behind; edit `XID` for another). Prints the number of polls completed.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <endian.h>

#define XID 740

static int format, seconds;
static const char *conninfo;
static char *pollSQL;
static unsigned char sessionHash[32];
static long total;
static pthread_mutex_t totalLock = PTHREAD_MUTEX_INITIALIZER;

static const char *sessionSQL =
    "SELECT u.key, s.expires_at FROM sessions s JOIN users u ON u.id = s.user_id "
    "WHERE s.user_id = $1 AND s.token_hash = $2 AND s.expires_at > now()";

static void check(PGconn *connection, PGresult *result, ExecStatusType expected) {
    if (PQresultStatus(result) != expected) {
        fprintf(stderr, "%s", PQerrorMessage(connection));
        exit(1);
    }
}

static void *poller(void *unused) {
    (void)unused;
    PGconn *connection = PQconnectdb(conninfo);
    if (PQstatus(connection) != CONNECTION_OK) { fprintf(stderr, "%s", PQerrorMessage(connection)); exit(1); }
    Oid sessionTypes[2] = {25, 17};                      /* text, bytea */
    Oid pollTypes[8] = {20, 25, 20, 20, 20, 25, 25, 20}; /* as Herald binds them */
    PGresult *result = PQprepare(connection, "session", sessionSQL, 2, sessionTypes);
    check(connection, result, PGRES_COMMAND_OK);
    PQclear(result);
    result = PQprepare(connection, "poll", pollSQL, 8, pollTypes);
    check(connection, result, PGRES_COMMAND_OK);
    PQclear(result);

    uint64_t userKey = htobe64(1), xid = htobe64(XID), notification = htobe64(INT64_MAX), limit = htobe64(31);
    const char *sessionValues[2] = {"user-1", (const char *)sessionHash};
    int sessionLengths[2] = {6, 32}, sessionFormats[2] = {0, 1};
    const char *pollValues[8] = {(char *)&userKey, "news", (char *)&userKey, (char *)&xid, (char *)&notification, NULL, NULL, (char *)&limit};
    int pollLengths[8] = {8, 4, 8, 8, 8, 0, 0, 8}, pollFormats[8] = {1, 0, 1, 1, 1, 0, 0, 1};

    time_t end = time(NULL) + seconds;
    long polls = 0;
    while (time(NULL) < end) {
        result = PQexecPrepared(connection, "session", 2, sessionValues, sessionLengths, sessionFormats, format);
        check(connection, result, PGRES_TUPLES_OK);
        if (PQntuples(result) != 1) { fprintf(stderr, "the session was not found\n"); exit(1); }
        PQclear(result);
        result = PQexecPrepared(connection, "poll", 8, pollValues, pollLengths, pollFormats, format);
        check(connection, result, PGRES_TUPLES_OK);
        if (PQntuples(result) != 1) { fprintf(stderr, "expected the one-row quiet poll\n"); exit(1); }
        PQclear(result);
        polls += 1;
    }
    pthread_mutex_lock(&totalLock);
    total += polls;
    pthread_mutex_unlock(&totalLock);
    PQfinish(connection);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 7 || strlen(argv[6]) != 64) {
        fprintf(stderr, "usage: %s <0|1> <threads> <seconds> <conninfo> <poll.sql> <session hash hex>\n", argv[0]);
        return 2;
    }
    format = atoi(argv[1]);
    int threads = atoi(argv[2]);
    seconds = atoi(argv[3]);
    conninfo = argv[4];
    FILE *file = fopen(argv[5], "r");
    if (!file) { perror(argv[5]); return 1; }
    pollSQL = calloc(1, 1 << 16);
    fread(pollSQL, 1, (1 << 16) - 1, file);
    fclose(file);
    for (int i = 0; i < 32; i++) sscanf(argv[6] + 2 * i, "%2hhx", &sessionHash[i]);
    pthread_t ids[64];
    if (threads < 1 || threads > 64) return 2;
    for (int i = 0; i < threads; i++) pthread_create(&ids[i], NULL, poller, NULL);
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    printf("%ld\n", total);
    return 0;
}
