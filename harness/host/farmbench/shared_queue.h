// The queue shared by controllers running one command on one database (--shared-queue): a cell
// is measured by the controller whose claim on it stands. The claims are rows of the store
// (harness/host/store/farm_sweeps.h); who may take one over is judged here, like a lease's holder.
#pragma once

#include <string>

#include "harness/host/store/farm_sweeps.h"

namespace k3farmbench {

// Takes the cell unless another live controller holds it or it is done (a claim whose holder
// process is gone -- same host -- is taken over). `holder`, when given, says whose claim was found.
bool claim_cell(k3store::Connection& c, const std::string& queue_key, int cell_index,
                const std::string& sweep_uuid, std::string* holder = nullptr);

}  // namespace k3farmbench
