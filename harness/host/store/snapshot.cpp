#include "harness/host/store/maintenance.h"

namespace k3store {

void snapshot_database(Connection& c, const std::string& out_path) {
  auto s = c.query("VACUUM INTO ?1", out_path);
  s.step();
}

}  // namespace k3store
