/* The store tests of test-sqlite.c against src/store/postgres.c on a real
 * PostgreSQL server (see the top of test-sqlite.c). */
#define STORE_TEST_PG 1
/* The SQLite-file tests (open errors, a corrupt page, a full disk) stay
 * defined but are not run here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "test-sqlite.c"
