// Expressions over knob values, shape and target facts -- search-space constraints ("tcm_workers <=
// workers"), knob bounds ("cpus") and derived quantities ("slab_rows * (k / 2 + k / 8)") --
// evaluated with muParser (Debian's libmuparser). Enum knobs take their value's index, and every
// choice is a constant named <knob>_<choice> ("tcm == tcm_on"), so expressions compare choices by
// name.
#pragma once

#include <map>
#include <string>

namespace k3tuner {

using Variables = std::map<std::string, double>;

// Evaluates `expression` with `variables` bound; throws std::invalid_argument with muParser's
// message (which names the offending token and its position) when it does not parse or uses an
// unknown name.
double evaluate(const std::string& expression, const Variables& variables);

// Whether `expression` parses with exactly these names (values are irrelevant): the check made
// when a search space is loaded, so a typo is reported before anything runs. Empty when it does,
// else the reason.
std::string check_expression(const std::string& expression, const Variables& names);

}  // namespace k3tuner
