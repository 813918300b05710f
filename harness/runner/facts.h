// k3bench --facts: the runner describes itself and the machine it runs on in one JSON document
// (environment, the kernel path it takes by default, the IME2 gate, the TCM backend and its
// blocks). It is the only self-description the host reads: k3tune's build records, target facts,
// `probe` and the farm's health probe all parse it with k3targets::parse_runner_facts.
#pragma once

#include <nlohmann/json.hpp>

namespace k3runner {

// The facts document. Its layout is versioned by "facts_version"; the host refuses other versions.
nlohmann::json runner_facts();
// Prints the document (--json) or a readable summary; exit 0. `build_b`, when not null, is added
// as "build_b": the second build a `--build-b` plugin would bring (k3bench --facts --build-b P),
// which is how the host checks, before a paired A/B, that this runner loads that plugin.
int run_facts(bool json, const nlohmann::json& build_b = nullptr);

}  // namespace k3runner
