/* selector.h - Kubernetes label and field selectors, and label syntax checks.
 * Pure functions; a parsed selector is immutable and may be shared between
 * threads.
 *
 * Label selector string syntax (the `labelSelector` query parameter), all
 * operators: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`,
 * comma-joined requirements (AND).  Errors are 400 BadRequest with messages in
 * the API server's words, e.g. `unable to parse requirement: ...`. */
#ifndef AH_KUBE_SELECTOR_H
#define AH_KUBE_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"

typedef struct label_selector label_selector;

/* Parse the string form.  "" gives a selector that matches everything. */
int label_selector_parse(const char *s, label_selector **ret, ah_err *err);
/* Build from a metav1.LabelSelector object {matchLabels, matchExpressions[]
 * {key, operator In|NotIn|Exists|DoesNotExist, values}}.  NULL or {} matches
 * everything (callers that want "empty selects nothing" check
 * label_selector_is_empty()). */
int label_selector_from_json(const json_t *sel, label_selector **ret, ah_err *err);
bool label_selector_is_empty(const label_selector *sel);
/* labels: the object's metadata.labels (an object), or NULL for none. */
bool label_selector_matches(const label_selector *sel, const json_t *labels);
void label_selector_free(label_selector *sel);
/* The canonical string form, as the API server prints a selector:
 * requirements sorted by key, values sorted and without duplicates
 * ("a in (x,y),!b,c=d").  Parsing it gives an equal selector.  Returns a
 * malloc'd string the caller frees ("" for match-everything), or NULL when
 * out of memory. */
char *label_selector_string(const label_selector *sel);

typedef struct field_selector field_selector;

/* Field selector: `f=v`, `f==v`, `f!=v`, comma-joined.  Only the fields in
 * `allowed` (NULL-terminated, e.g. {"metadata.name", "metadata.namespace",
 * NULL}) are accepted; another gives 400 with `field label not supported: f`.
 * allowed == NULL accepts every field.  In values a backslash escapes a
 * backslash, ',' or '='; nothing is trimmed (as in the API server). */
int field_selector_parse(const char *s, const char *const *allowed, field_selector **ret,
			 ah_err *err);
/* Matches the dotted field paths against obj; a missing field reads as "". */
bool field_selector_matches(const field_selector *sel, const json_t *obj);
void field_selector_free(field_selector *sel);
/* Canonical string form: "==" written "=", values escaped again, terms
 * sorted; parsing it gives the same selector and the same string.  Returns a
 * malloc'd string the caller frees, or NULL when out of memory. */
char *field_selector_string(const field_selector *sel);

/* Validate metadata.labels / metadata.annotations as the API server does
 * (qualified-name keys with optional DNS-subdomain prefix; label values of at
 * most 63 characters matching (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?;
 * annotations total at most 256 KiB).  Appends one cause per problem to
 * `causes` (a JSON array of {reason, message, field}) with field paths like
 * metadata.labels and messages as the API server writes them (the field
 * error body, e.g. `Invalid value: "bad key!": name part must consist of
 * ...`; a Status message joins them as "<field>: <message>").  Returns the
 * number of causes appended. */
int labels_validate(const json_t *labels, json_t *causes);
int annotations_validate(const json_t *annotations, json_t *causes);

#endif
