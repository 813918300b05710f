// What a k3tune child process prints with --json for the programs that drive k3tune as a child
// (the nightly's steps): each form is a documented, versioned JSON schema in configs/schema/, and
// the reader checks a child's output against it before it takes anything from it, so a change to
// a producer that breaks its readers fails where it is made (the producers' tests check their
// output against the same files) instead of leaving a field silently empty.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3bench {

enum class ChildOutput {
  kNone,      // the child's output is text (kept as its log), or none
  kBench,     // `k3tune --json bench` on a target or a farm: k3tune.bench/1
  kTuneFarm,  // `k3tune --json tune --farm`: k3tune.tune-farm/1
  kCount,     // `k3tune --json count`: k3tune.count/1 (an array, one row per counted case)
  kBisect,    // `k3tune --json bisect`: k3tune.bisect/1
};

// "k3tune.bench/1", ...: the form's name and version (the schema's $id, and the "schema" field of
// the forms that are objects).
const char* schema_id(ChildOutput kind);
// <root>/configs/schema/k3tune-<form>.schema.json
std::string schema_path(const std::string& root, ChildOutput kind);
// Where `doc` departs from its form ("<where>: <what>", each once); empty when it follows it.
// Throws UserError when the schema file cannot be read.
std::vector<std::string> child_output_problems(const std::string& root, ChildOutput kind,
                                               const nlohmann::json& doc);

}  // namespace k3bench
