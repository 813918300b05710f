#include "apps/nightly/board_events_section.h"

#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "harness/host/farm/farm.h"
#include "harness/host/store/database.h"
#include "harness/host/store/farm_state.h"
#include "harness/host/store/results.h"

namespace k3nightly {

std::string board_events_section(const std::string& farm_spec, const std::string& root,
                                 const std::string& db_path, double since_unix_s) {
  std::vector<k3store::BoardEventRow> events;
  try {
    if (!std::filesystem::exists(db_path)) return "";
    const std::string farm = k3farm::Farm::load(farm_spec, root).name;
    events =
        k3store::board_events(*k3store::open_database(db_path, k3store::OpenMode::kReadOnly), farm,
                              k3store::utc_us_at(static_cast<std::time_t>(since_unix_s)));
  } catch (const std::exception&) {
    return "";
  }
  if (events.empty()) return "";
  std::string t =
      "\n## Boards during the night\n\n| board | at | event | reason |\n|---|---|---|---|\n";
  for (const auto& e : events)
    t += fmt::format("| {} | {} | {} | {} |\n", e.board, e.at.substr(0, 19),
                     k3store::to_string(e.event), e.reason);
  return t;
}

}  // namespace k3nightly
