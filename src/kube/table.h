/* table.h - server-side Table output (meta.k8s.io/v1 Table) from a CRD's
 * additionalPrinterColumns, as `kubectl get` asks for it
 * (Accept: application/json;as=Table;v=v1;g=meta.k8s.io).  Pure. */
#ifndef AH_KUBE_TABLE_H
#define AH_KUBE_TABLE_H

#include <jansson.h>
#include <time.h>

#include "base/error.h"

typedef struct table_columns table_columns;

/* Compile printer columns: a JSON array of {name, type, jsonPath, description,
 * priority, format}.  A leading "Name" column (type string, format name) is
 * always added; NULL or [] columns give Name plus "Age" (creationTimestamp),
 * as the API server does for a CRD without printer columns. */
int table_columns_compile(const json_t *printer_columns, table_columns **ret, ah_err *err);
void table_columns_free(table_columns *tc);

enum table_include { TABLE_INCLUDE_NONE, TABLE_INCLUDE_METADATA, TABLE_INCLUDE_OBJECT };

/* One row {cells, object} for obj.  Cells follow the API server's rules:
 * type date → a human duration since the time relative to `now` ("5m",
 * "3h12m", "2d", as k8s HumanDuration), integer/number/boolean as JSON values,
 * string as string, missing → null... (the API server writes "<none>"? no:
 * it writes nil, kubectl prints "<none>").  A multi-valued path joins values
 * with ",".  include: TABLE_INCLUDE_METADATA puts a PartialObjectMetadata
 * {kind, apiVersion "meta.k8s.io/v1", metadata} in "object";
 * TABLE_INCLUDE_OBJECT the whole object; NONE omits it. */
json_t *table_row(const table_columns *tc, const json_t *obj, enum table_include include,
		  time_t now);

/* The columnDefinitions array for the Table. */
json_t *table_column_definitions(const table_columns *tc);

#endif
