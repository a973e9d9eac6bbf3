/* Lifting the literals that depend on a symbolic size out of generated
 * kernel sources, so that one build serves every size.
 *
 * Codegen writes a concrete source per specialisation of a graph with
 * symbolic dimensions: extents, row lengths, element counts and the counts
 * a mean divides by appear as literals (`#define SK 17`, `0x1.1p+4f`). Two
 * sources of one kernel at different sizes usually differ only in such
 * literals. A lift table groups sources by their skeleton (the token stream
 * with every liftable literal replaced by a placeholder of its type) and
 * notes which literals differ between the sources of a group; the group's
 * program is then built once from a generic source in which those literals
 * are kernel parameters (appended to CLF_PARAMS and CLF_ARGS, which every
 * kernel and helper of a generated source takes), and each specialisation
 * passes its own values.
 *
 * A literal is liftable where a run-time value means the same as the
 * literal: in the body of a function that takes CLF_PARAMS, or in a macro
 * used only there, and neither in a preprocessor condition, an attribute,
 * a `__local` declaration nor the bounds of an array declaration; and of
 * type int, uint, long, ulong or float (C's types of unsuffixed and u, l,
 * ul, f-suffixed literals). Anything else that differs (a tile size, a
 * vector width, a `#if` on divisibility) makes a different skeleton: a
 * variant with a build of its own. */
#ifndef CLFUSE_RUNTIME_SOURCE_LIFT_H
#define CLFUSE_RUNTIME_SOURCE_LIFT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime_internal.h"

typedef struct clf__lift_table clf__lift_table;

/* A value for a lifted parameter: its size in bytes (4 or 8) and its
 * bytes as the kernel takes them. */
typedef struct clf__lift_arg {
    uint32_t size;
    unsigned char bytes[8];
} clf__lift_arg;

clf__lift_table *clf__lift_table_new(void);
void clf__lift_table_free(clf__lift_table **t);

/* Records a source without building anything (a probe at another size, so
 * that the first build is already the generic one). as_is: a source worth
 * building as it is even if nothing in it varies (a size such as 1 whose
 * kernels take forms of their own). */
clf_status clf__lift_note(clf__lift_table *t, const char *source, bool as_is);

/* The program for source: its own build while its group has seen no other
 * values, else the group's generic build; *slot its place where the
 * program holds several (its kernel functions are clf__merged_name(entry,
 * *slot)), else SIZE_MAX; *args (heap, *nargs entries, NULL
 * when none) receives the values of the lifted parameters, which come
 * right after the kernel's CLF_PARAMS arguments. A source seen before, or
 * one that differs from a group's first source only in literals the
 * group's generic program takes (most of a new length's), is not lexed.
 * source is a text (util/text.h): the table keeps a reference, and finds
 * the same text again by its address. */
clf_status clf__lift_program(clf_context *ctx, clf__lift_table *t, const char *source, cl_program *prog,
                             size_t *slot, clf__lift_arg **args, uint32_t *nargs, cl_int *build_err);
/* Where the context builds several sources as one program (PoCL:
 * ctx->one_program, program_merge.c): the programs that clf__lift_program
 * would build for the n sources (texts) one at a time, as one program, so
 * that a new size's kernels cost one build. Nothing where they need fewer
 * than two or do not build as one (clf__lift_program then builds them
 * apart, and a failure names its kernel). */
clf_status clf__lift_prepare(clf_context *ctx, clf__lift_table *t, const char *const *sources, size_t n);

/* The kernel name of prog, one cl_kernel shared by every executable of the
 * table (a new cl_kernel per specialisation costs PoCL a load of the
 * kernel's compiled code at its first launch): retained for the caller.
 * Runs that set its arguments and enqueue it hold clf__lift_run_lock. */
clf_status clf__lift_kernel(clf__lift_table *t, cl_program prog, const char *name, cl_kernel *out, cl_int *err);
/* The lock held from setting a shared kernel's arguments to enqueueing it. */
pthread_mutex_t *clf__lift_run_lock(clf__lift_table *t);
/* The completion of the last run of any executable of the table (NULL
 * before the first), read and replaced under clf__lift_run_lock: the next
 * run waits for it, so that runs of a symbolic graph's specialisations
 * follow each other as one executable's do (they share their scratch). */
cl_event *clf__lift_last_run(clf__lift_table *t);

/* Builds the generic program of every group whose literals vary and that
 * has none yet, and the sources noted as_is whose groups do not vary
 * (after probes, so that later sizes find them built). */
clf_status clf__lift_prebuild(clf_context *ctx, clf__lift_table *t);

/* Sets what clf__lift_program calls (once, until set again; NULL: none)
 * before a build: dynamic.c generates the kernels at a size of the same
 * class then, so that a form's first build is its generic program. Called
 * without the table's lock held. */
void clf__lift_set_prober(clf__lift_table *t, void (*prober)(void *arg), void *arg);

/* The number of sources clf__lift_note, clf__lift_program and
 * clf__lift_prepare have lexed.
 * None lexes a source that differs from a group's first source only in
 * liftable literals of the same types (the two texts are compared):
 * clf__lift_note notes those literals as varying, clf__lift_program and
 * clf__lift_prepare pass them to the group's generic program where it
 * takes them all (nor do they lex a source they saw before). */
size_t clf__lift_sources_lexed(clf__lift_table *t);

/* For the tests: the generic source of source's group as the table would
 * build it now (heap; NULL when nothing is lifted or out of memory). */
char *clf__lift_generic_source(clf__lift_table *t, const char *source);

#endif
