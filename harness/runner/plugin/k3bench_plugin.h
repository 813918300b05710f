/* The kernel plugin: one build of the kernel library and of k3bench's op drivers as a shared
 * object behind a narrow C interface, so that a k3bench process can load a second build beside
 * its own (in a link namespace of its own: both builds' symbols coexist) and alternate
 * repetitions between them, A B, B A, ... exactly as it alternates two parameter sets. The
 * interface is C and versioned: the loader refuses a plugin whose version differs in one line,
 * and nothing but C types and JSON text crosses it (the two sides may be different compilers'
 * C++). Every function catches what the build throws; none lets an exception out. */
#ifndef K3BENCH_PLUGIN_H_
#define K3BENCH_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a member below changes meaning, order or signature. */
#define K3BENCH_PLUGIN_INTERFACE_VERSION 1u

/* The symbol the loader looks up. */
#define K3BENCH_PLUGIN_ENTRY "k3bench_plugin_interface"

typedef struct k3bench_plugin_case k3bench_plugin_case;

/* Exit classes of a failed call, k3bench's own exit codes (2 usage, 3 unsupported, 5 internal). */
typedef struct k3bench_plugin_error {
  int exit_code;
  char message[512];
} k3bench_plugin_error;

typedef struct k3bench_plugin {
  uint32_t interface_version; /* K3BENCH_PLUGIN_INTERFACE_VERSION of the plugin's build */
  uint32_t struct_size;       /* sizeof(k3bench_plugin) in the plugin's build */
  /* The plugin's build as k3bench reports its own (environment.runner and environment.build):
   * {"runner": {...}, "build": {...}}. Static text. */
  const char* (*build_json)(void);
  /* The process settings the case runs under (k3bench's --cpus, --pool-wait, --huge-pages,
   * --weight-load): {"cpus": "...", "pool_wait": "...", "huge_pages": true, "weight_load": "..."}.
   * Called once, before the first case. 0 on success. */
  int (*configure)(const char* settings_json, k3bench_plugin_error* error);
  /* A prepared case: {"op", "shape": "k=v,...", "params": "k=v,...", "seed", "path"} with
   * k3bench's meanings. NULL on failure, with the error filled. */
  k3bench_plugin_case* (*create)(const char* case_json, k3bench_plugin_error* error);
  /* The timed call. Must not fail (create and check have validated the case). */
  void (*run_once)(k3bench_plugin_case* c);
  /* The accuracy check against the float64 reference (full != 0: every output), with the
   * output checksum: k3bench's "accuracy" object. NULL on failure. The text lives until the next
   * call on the case. */
  const char* (*check)(k3bench_plugin_case* c, int full, k3bench_plugin_error* error);
  /* What the case is: {"path", "params", "traffic", "rotation"} (params as used so far, traffic
   * as k3bench's "traffic" object). NULL on failure. The text lives until the next call on the
   * case. */
  const char* (*describe)(k3bench_plugin_case* c, k3bench_plugin_error* error);
  void (*destroy)(k3bench_plugin_case* c);
} k3bench_plugin;

/* The entry point: the plugin's table of functions (static storage), whatever version is asked;
 * the loader compares interface_version and struct_size before touching anything else. */
__attribute__((visibility("default"))) const k3bench_plugin* k3bench_plugin_interface(void);

#ifdef __cplusplus
}
#endif

#endif /* K3BENCH_PLUGIN_H_ */
