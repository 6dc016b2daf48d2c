/* table.h - server-side Table output (meta.k8s.io/v1 Table) from a CRD's
 * additionalPrinterColumns, as `kubectl get` asks for it
 * (Accept: application/json;as=Table;v=v1;g=meta.k8s.io).  Pure. */
#ifndef AH_KUBE_TABLE_H
#define AH_KUBE_TABLE_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

#include "base/error.h"
#include "base/strbuf.h"

typedef struct table_columns table_columns;

/* Compile printer columns: a JSON array of {name, type, jsonPath, description,
 * priority, format}.  A leading "Name" column (type string, format name) is
 * always added; NULL or [] columns give Name plus "Age" (creationTimestamp),
 * as the API server does for a CRD without printer columns.  Descriptions
 * default as the API server's do ("Custom resource definition column (in
 * JSONPath format): <path>"; for Name and Age, metav1.ObjectMeta's field
 * documentation).  -EINVAL (422) for a column without name, type or
 * jsonPath or with a path jsonpath_compile refuses; -ENOMEM.  A compiled
 * set is immutable and may be shared between threads; free it with
 * table_columns_free. */
int table_columns_compile(const json_t *printer_columns, table_columns **ret, ah_err *err);
void table_columns_free(table_columns *tc);

enum table_include { TABLE_INCLUDE_NONE, TABLE_INCLUDE_METADATA, TABLE_INCLUDE_OBJECT };

/* One row {cells, object} for obj (a new object the caller owns; NULL only
 * on allocation failure).  Cells follow the API server's CRD table
 * convertor:
 *   - the Name cell is metadata.name ("" if absent);
 *   - a path that selects nothing (or fails to evaluate) gives a null cell,
 *     which kubectl prints as "<none>";
 *   - a path selecting several values (e.g. [*]) shows the first one only;
 *   - string: a string as is; any other value printed as Go's fmt prints it
 *     (numbers 5 / 1.5 / 1e+06, true, null as "<nil>", objects as
 *     "map[k:v]", arrays as "[a b]"), as client-go's jsonpath does;
 *   - integer: integers, and floats truncated; number: any number as a
 *     float; boolean: booleans; other JSON types give null;
 *   - date: a string time shown as its age at `now`, as HumanDuration
 *     ("45s", "5m30s", "3h12m", "2d4h", "400d", "3y20d"); "" gives
 *     "<unknown>", an unparsable time "<invalid>", a non-string null.
 * include: TABLE_INCLUDE_METADATA puts a PartialObjectMetadata {kind,
 * apiVersion "meta.k8s.io/v1", metadata (a copy)} in "object";
 * TABLE_INCLUDE_OBJECT a copy of the whole object; NONE omits it. */
json_t *table_row(const table_columns *tc, const json_t *obj, enum table_include include,
		  time_t now);

/* A row prepared once per object revision and finished per request: the
 * cells that do not depend on the time (all but date columns) and the
 * "object" kept as JSON text, so a list of unchanged objects needs no parse.
 * table_row_prepare gives NULL for TABLE_INCLUDE_OBJECT, for columns
 * computed in C (built-in kinds; use table_row then) and on allocation
 * failure.  table_row_finish appends to out exactly the compact JSON text
 * of table_row(tc, obj, include, now); it only reads p (threads may share
 * it while nobody frees it).  bytes: the memory p holds. */
typedef struct table_row_prep table_row_prep;
table_row_prep *table_row_prepare(const table_columns *tc, const json_t *obj, enum table_include include);
int table_row_finish(const table_columns *tc, const table_row_prep *p, time_t now, strbuf *out);
size_t table_row_prep_bytes(const table_row_prep *p);
void table_row_prep_free(table_row_prep *p);

/* The columnDefinitions array for the Table: {name, type, format,
 * description, priority} each (format "" when unset, as the API server
 * writes it).  The caller owns it; NULL on allocation failure. */
json_t *table_column_definitions(const table_columns *tc);

/* apimachinery's duration.HumanDuration of `seconds` into buf: under 2m
 * "Ns"; under 10m "NmSs" ("Nm" when S is 0); under 3h "Nm"; under 8h "NhMm"
 * ("Nh"); under 48h "Nh"; under 8d "NdHh" ("Nd"); under 2y "Nd"; under 8y
 * "NyDd" ("Ny"); then "Ny".  -1 gives "0s", less than that "<invalid>". */
void table_human_duration(long long seconds, char *buf, size_t size);

#endif
