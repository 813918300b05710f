#include "tuner/expression.h"

#include <stdexcept>

#include <muParser.h>

namespace k3tuner {

double evaluate(const std::string& expression, const Variables& variables) {
  try {
    mu::Parser p;
    // muParser binds variables by address: keep copies alive for the evaluation.
    Variables bound = variables;
    for (auto& [name, value] : bound) p.DefineVar(name, &value);
    p.SetExpr(expression);
    return p.Eval();
  } catch (const mu::Parser::exception_type& e) {
    throw std::invalid_argument("expression '" + expression + "': " + e.GetMsg());
  }
}

std::string check_expression(const std::string& expression, const Variables& names) {
  try {
    evaluate(expression, names);
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

}  // namespace k3tuner
