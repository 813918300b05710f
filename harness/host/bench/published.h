// Published K3 figures of other engines (configs/published/k3.toml): what `k3tune model` prints
// beside its own results, labelled as figures from another machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace k3bench {

struct PublishedFigure {
  std::string model, test, engine, weights, source, note;
  // Set when the figure comes from an earlier revision of its source that the current one no
  // longer carries: which revision, and what the current one says instead.
  std::string earlier_revision;
  double low = 0, high = 0;  // tokens per second (equal for a single figure)
  std::string text() const;  // "381.24" or "501-503"
  // The source as printed: the source line, marked when it is an earlier revision's.
  std::string citation() const;
};

// UserError "file:line: key: what" on a malformed file; no file: nothing.
std::vector<PublishedFigure> load_published(const std::string& path);

}  // namespace k3bench
